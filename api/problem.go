package api

import (
	"cmp"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/waystation/waystation/internal/problem"
	"github.com/waystation/waystation/internal/telemetry"
)

// problemBody is a problem as RFC 9457 problem+json. Code is stable: clients branch
// on it, and each has a human page at its type URL.
type problemBody struct {
	Status    int    `json:"status"`
	Code      string `json:"code"`
	Title     string `json:"title"`
	Type      string `json:"type"`
	Detail    string `json:"detail,omitempty"`
	Instance  string `json:"instance,omitempty"`
	Parameter string `json:"parameter,omitempty"`
	RequestID string `json:"requestId,omitempty"`
}

// writeError answers err as problem+json: its status, title and type from the one
// table of codes. The store and the domain return problems already; anything else is
// an internal error, logged with the request id and its text not shown. A problem
// caused by a failure underneath (a database that cannot be reached) is logged too.
func writeError(w http.ResponseWriter, r *http.Request, log *slog.Logger, id, instance string, err error) {
	p, kind := knownProblem(r.Context(), log, id, []any{"method", r.Method, "path", telemetry.LoggedPath(r)}, err)
	var contentType string
	var body []byte
	switch {
	case anthropicRoute(r):
		contentType, body = hdrJSON[0], anthropicErrorBody(kind, p)
	case llmRoute(r):
		contentType, body = hdrJSON[0], llmErrorBody(kind, p)
	default:
		contentType, body = "application/problem+json", problemJSON(kind, p, instance, id)
	}
	if rec, ok := w.(*recorded); ok {
		rec.code = p.Code // so that once knows a refusal that may pass
	}
	h := w.Header()
	h.Set("X-Request-Id", id)
	h.Set("Content-Type", contentType)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Del("ETag")
	h.Del("Content-Encoding")
	switch {
	case kind.Status == http.StatusTooManyRequests || kind.Status >= 500:
		h.Set("Cache-Control", "no-store")
	case kind.Status >= 400 && h.Get("Cache-Control") == "":
		h.Set("Cache-Control", "no-store")
	}
	if p.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(p.RetryAfter))
	}
	w.WriteHeader(kind.Status)
	if r.Method != http.MethodHead {
		w.Write(body)
	}
}

// knownProblem is err as a problem of a known kind, as writeError answers it,
// logged when it is a failure; where names the call in the log. The log lines of a
// request carry its ids through the context (telemetry's logger adds them); served
// without it, id is named too.
func knownProblem(ctx context.Context, log *slog.Logger, id string, where []any, err error) (*problem.Error, problem.Kind) {
	p, ok := problem.As(err)
	if telemetry.From(ctx) == nil {
		where = append(where, "request_id", id)
	}
	switch {
	case ctx.Err() != nil && (!ok || problem.Status(p.Code) >= 500):
		// The client left: nothing failed here, and nobody reads the answer.
		log.DebugContext(ctx, "request ended by the client", append(where, "err", err)...)
		p = problem.New(problem.Internal, "")
	case !ok:
		log.ErrorContext(ctx, "internal error", append(where, "err", err)...)
		p = problem.New(problem.Internal, "")
	case p.Err != nil && problem.Status(p.Code) >= 500:
		log.WarnContext(ctx, p.Code, append(where, "err", p.Err)...)
	}
	kind, known := problem.Lookup(p.Code)
	if !known {
		log.ErrorContext(ctx, "unknown problem code", append(where, "code", p.Code)...)
		p, kind = problem.New(problem.Internal, ""), mustKind(problem.Internal)
	}
	return p, kind
}

// problemJSON is p, of kind, as problem+json.
func problemJSON(kind problem.Kind, p *problem.Error, instance, id string) []byte {
	body, _ := json.Marshal(problemBody{
		Status: kind.Status, Code: p.Code, Title: kind.Title, Type: problem.Type(p.Code),
		Detail: p.Detail, Instance: instance, Parameter: p.Parameter, RequestID: id,
	})
	return body
}

// llmRoute tells whether r is for the LLM proxy, whose clients (OpenAI's SDKs and
// those made like them) read errors in OpenAI's shape, not as problem+json.
func llmRoute(r *http.Request) bool { return strings.HasPrefix(r.URL.Path, BasePath+LLMPath+"/") }

// LLMPath is where the OpenAI-compatible proxy answers, under the API's base path.
const LLMPath = "/llm/v1"

// llmError is a problem in OpenAI's error shape: message, type and param as its
// clients read them, and the problem's code as code.
type llmError struct {
	Error struct {
		Message string `json:"message"`
		Type    string `json:"type"`
		Param   string `json:"param,omitempty"`
		Code    string `json:"code"`
	} `json:"error"`
}

func llmErrorBody(kind problem.Kind, p *problem.Error) []byte {
	var e llmError
	e.Error.Message, e.Error.Param, e.Error.Code = cmp.Or(p.Detail, kind.Title), p.Parameter, p.Code
	e.Error.Type = llmErrorType(kind.Status)
	b, _ := json.Marshal(e)
	return b
}

// llmErrorType is the error type OpenAI's clients, and Anthropic's, know for status.
func llmErrorType(status int) string {
	switch {
	case status == http.StatusUnauthorized:
		return "authentication_error"
	case status == http.StatusForbidden:
		return "permission_error"
	case status == http.StatusNotFound:
		return "not_found_error"
	case status == http.StatusTooManyRequests:
		return "rate_limit_error"
	case status >= 500:
		return "api_error"
	default:
		return "invalid_request_error"
	}
}

// MessagesPath is the Anthropic-compatible proxy's route, under the API's base path.
const MessagesPath = LLMPath + "/messages"

// anthropicRoute tells whether r is for the Anthropic-compatible proxy, whose
// clients (Anthropic's SDKs) read errors in Anthropic's shape.
func anthropicRoute(r *http.Request) bool { return r.URL.Path == BasePath+MessagesPath }

// anthropicError is a problem in Anthropic's error shape: type and message as its
// clients read them, and the problem's code as code.
type anthropicError struct {
	Type  string `json:"type"`
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
		Code    string `json:"code"`
	} `json:"error"`
}

func anthropicErrorBody(kind problem.Kind, p *problem.Error) []byte {
	e := anthropicError{Type: "error"}
	e.Error.Type, e.Error.Message, e.Error.Code = llmErrorType(kind.Status), cmp.Or(p.Detail, kind.Title), p.Code
	if kind.Status == http.StatusRequestEntityTooLarge {
		e.Error.Type = "request_too_large"
	}
	b, _ := json.Marshal(e)
	return b
}

func mustKind(code string) problem.Kind {
	k, _ := problem.Lookup(code)
	return k
}
