package api

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/waystation/waystation/internal/postgres"
)

// Problem is an error answered as RFC 9457 problem+json. Code is stable: clients
// branch on it, and each has a human page at /problems/{code}.
type Problem struct {
	Status    int    `json:"status"`
	Code      string `json:"code"`
	Title     string `json:"title"`
	Type      string `json:"type"`
	Detail    string `json:"detail,omitempty"`
	Instance  string `json:"instance,omitempty"`
	Parameter string `json:"parameter,omitempty"`
	RequestID string `json:"requestId,omitempty"`

	// RetryAfter, in seconds, is sent as the Retry-After header when positive.
	RetryAfter int `json:"-"`
}

func (p *Problem) Error() string { return p.Code + ": " + p.Detail }

// Problem codes of the directory and the service as a whole.
const (
	CodeVerifiedReserved   = "verified_reserved"
	CodeQueryTooLong       = "query_too_long"
	CodeInvalidParameter   = "invalid_parameter"
	CodeUnknownParameter   = "unknown_parameter"
	CodeNotFound           = "not_found"
	CodeMethodNotAllowed   = "method_not_allowed"
	CodeRateLimited        = "rate_limited"
	CodeAllowanceExhausted = "search_allowance_exhausted"
	CodeSearchUnavailable  = "search_unavailable"
	CodeInternal           = "internal"
)

// CodeDatabaseUnavailable answers any route that needs the database while it cannot
// be reached; the directory never needs it, answering from its snapshot.
const CodeDatabaseUnavailable = "database_unavailable"

// databaseRetryAfter is the Retry-After, in seconds, of database_unavailable.
const databaseRetryAfter = 5

// Problem codes of the authenticated API.
const (
	CodeUnauthenticated        = "unauthenticated"
	CodeInvalidAPIKey          = "invalid_api_key"
	CodeKeyRevoked             = "key_revoked"
	CodeWrongKeyScope          = "wrong_key_scope"
	CodeValidationFailed       = "validation_failed"
	CodeIdempotencyConflict    = "idempotency_conflict"
	CodeIdempotencyInProgress  = "idempotency_in_progress"
	CodeSessionClosed          = "session_closed"
	CodePayloadTooLarge        = "payload_too_large"
	CodeInvalidStateTransition = "invalid_state_transition"
	CodeRequestExpired         = "request_expired"
	CodeArtifactAlreadyClaimed = "artifact_already_claimed"
)

// problemKinds maps every code to its status and title, once.
var problemKinds = map[string]struct {
	status int
	title  string
}{
	CodeVerifiedReserved:   {http.StatusBadRequest, "Parameter reserved"},
	CodeQueryTooLong:       {http.StatusBadRequest, "Query too long"},
	CodeInvalidParameter:   {http.StatusBadRequest, "Invalid parameter"},
	CodeUnknownParameter:   {http.StatusBadRequest, "Unknown parameter"},
	CodeNotFound:           {http.StatusNotFound, "Not found"},
	CodeMethodNotAllowed:   {http.StatusMethodNotAllowed, "Method not allowed"},
	CodeRateLimited:        {http.StatusTooManyRequests, "Rate limited"},
	CodeAllowanceExhausted: {http.StatusServiceUnavailable, "Search allowance exhausted"},
	CodeSearchUnavailable:  {http.StatusServiceUnavailable, "Search unavailable"},
	CodeInternal:           {http.StatusInternalServerError, "Internal error"},

	CodeDatabaseUnavailable: {http.StatusServiceUnavailable, "Database unavailable"},

	CodeUnauthenticated:        {http.StatusUnauthorized, "Authentication required"},
	CodeInvalidAPIKey:          {http.StatusUnauthorized, "Invalid API key"},
	CodeKeyRevoked:             {http.StatusUnauthorized, "API key revoked"},
	CodeWrongKeyScope:          {http.StatusForbidden, "Wrong key scope"},
	CodeValidationFailed:       {http.StatusUnprocessableEntity, "Validation failed"},
	CodeIdempotencyConflict:    {http.StatusConflict, "Idempotency conflict"},
	CodeIdempotencyInProgress:  {http.StatusConflict, "Idempotent request in progress"},
	CodeSessionClosed:          {http.StatusConflict, "Session closed"},
	CodePayloadTooLarge:        {http.StatusRequestEntityTooLarge, "Payload too large"},
	CodeInvalidStateTransition: {http.StatusConflict, "Invalid state transition"},
	CodeRequestExpired:         {http.StatusGone, "Request expired"},
	CodeArtifactAlreadyClaimed: {http.StatusConflict, "Artifact already claimed"},
}

// ProblemCodes lists every code, for the problem pages and the OpenAPI document.
func ProblemCodes() []string {
	out := make([]string, 0, len(problemKinds))
	for c := range problemKinds {
		out = append(out, c)
	}
	return out
}

// ProblemKind returns the status and title of a code, for its human page.
func ProblemKind(code string) (status int, title string, ok bool) {
	k, ok := problemKinds[code]
	return k.status, k.title, ok
}

// problemf makes a problem of a known code.
func problemf(code, detail string) *Problem {
	k, ok := problemKinds[code]
	if !ok {
		k = problemKinds[CodeInternal]
		code = CodeInternal
	}
	return &Problem{
		Status: k.status, Code: code, Title: k.title, Detail: detail,
		Type: "/problems/" + strings.ReplaceAll(code, "_", "-"),
	}
}

// paramProblem is a problem about one query parameter.
func paramProblem(code, param, detail string) *Problem {
	p := problemf(code, detail)
	p.Parameter = param
	return p
}

// writeError answers err as problem+json. Errors that are not a *Problem are mapped
// here, once for every route: a value the database refuses as text is a 422, a
// database that cannot be reached a 503 database_unavailable, and anything else an
// internal error, logged with the request id and its text not shown.
func writeError(w http.ResponseWriter, r *http.Request, log *slog.Logger, id string, err error) {
	var p *Problem
	switch {
	case errors.As(err, &p):
	case r.Context().Err() != nil:
		// The client left: nothing failed here, and nobody reads the answer.
		log.Debug("request ended by the client", "err", err, "method", r.Method, "path", r.URL.Path, "request_id", id)
		p = problemf(CodeInternal, "")
	case postgres.InvalidText(err):
		p = problemf(CodeValidationFailed, "A value is not text the service can keep: it holds a NUL character or bytes that are not UTF-8.")
	case postgres.Unavailable(err):
		log.Warn("database unavailable", "err", err, "method", r.Method, "path", r.URL.Path, "request_id", id)
		p = problemf(CodeDatabaseUnavailable, "The database cannot be reached right now; retry after Retry-After seconds. The public directory still answers.")
		p.RetryAfter = databaseRetryAfter
	default:
		log.Error("internal error", "err", err, "method", r.Method, "path", r.URL.Path, "request_id", id)
		p = problemf(CodeInternal, "")
	}
	c := *p
	c.Instance = r.URL.Path
	c.RequestID = id
	body, _ := json.Marshal(c)
	h := w.Header()
	h.Set("X-Request-Id", id)
	h.Set("Content-Type", "application/problem+json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Del("ETag")
	h.Del("Content-Encoding")
	switch {
	case c.Status == http.StatusTooManyRequests || c.Status >= 500:
		h.Set("Cache-Control", "no-store")
	case c.Status >= 400 && h.Get("Cache-Control") == "":
		h.Set("Cache-Control", "no-store")
	}
	if c.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(c.RetryAfter))
	}
	w.WriteHeader(c.Status)
	if r.Method != http.MethodHead {
		w.Write(body)
	}
}
