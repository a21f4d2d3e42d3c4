package api

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/waystation/waystation/internal/auth"
	"github.com/waystation/waystation/internal/request"
	"github.com/waystation/waystation/internal/session"
)

// Store is what the authenticated API keeps in the database.
type Store interface {
	StoredKey(ctx context.Context, kid string) (auth.StoredKey, error)
	TouchKey(ctx context.Context, kid string) error
	InsertKey(ctx context.Context, k auth.NewKey, userID, agentID string) (auth.Key, error)
	Keys(ctx context.Context, userID string) ([]auth.Key, error)
	RevokeKey(ctx context.Context, userID, agentID, kid string) error
	Agent(ctx context.Context, userID, id string) (auth.Agent, error)
	Agents(ctx context.Context, userID string) ([]auth.Agent, error)
	CreateAgent(ctx context.Context, userID, name string) (auth.Agent, error)
	AgentStats(ctx context.Context, agentID string) (session.Stats, error)

	CreateSession(ctx context.Context, p auth.Principal, n session.New) (session.Session, error)
	Session(ctx context.Context, p auth.Principal, id string) (session.Session, error)
	Sessions(ctx context.Context, p auth.Principal, after *session.Cursor, limit int) ([]session.Session, *session.Cursor, error)
	CompleteSession(ctx context.Context, p auth.Principal, id string, c session.Completion) (session.Session, bool, error)
	StopSession(ctx context.Context, p auth.Principal, id, reason string) (session.Session, error)
	AppendEvent(ctx context.Context, p auth.Principal, id string, a session.Append) (session.Event, error)
	Events(ctx context.Context, p auth.Principal, id string, after int64, limit int) ([]session.Event, session.Session, error)

	CreateRequest(ctx context.Context, p auth.Principal, sessionID string, n request.New) (request.Request, error)
	Request(ctx context.Context, p auth.Principal, sessionID, id string) (request.Request, error)
	Requests(ctx context.Context, p auth.Principal, sessionID string, after *session.Cursor, limit int) ([]request.Request, *session.Cursor, error)
	Decide(ctx context.Context, p auth.Principal, id string, o request.Outcome) (request.Request, error)
	CancelRequest(ctx context.Context, p auth.Principal, sessionID, id string) (request.Request, error)
	ClaimArtifact(ctx context.Context, p auth.Principal, sessionID, id string) (request.Artifact, time.Time, error)

	ClaimIdempotency(ctx context.Context, kid, route, key string, sha []byte, ttl time.Duration) (*auth.Idempotent, error)
	FinishIdempotency(ctx context.Context, kid, route, key string, status int, contentType string, response []byte) error
	ReleaseIdempotency(ctx context.Context, kid, route, key string) error
}

// Subscriber wakes a waiter when an event is appended to a session.
type Subscriber interface {
	Subscribe(sessionID string) (<-chan struct{}, func())
}

// Auth is what the authenticated API needs: without it every authenticated route
// answers 401, since no key can be verified.
type Auth struct {
	Store  Store
	Pepper []byte
	// Sealer encrypts the values people provide through requests; without it such
	// approvals fail.
	Sealer request.Sealer
	// PublicURL is the service's public origin (https://host), prefixed to approval
	// links; without it they are paths.
	PublicURL string
	// Events wakes long polls and event streams; without it they wait out their time.
	Events Subscriber
	// MaxWait bounds a long poll (default 30s); Heartbeat is the event stream's
	// keep-alive interval (default 15s); MaxBody bounds request bodies (default 1 MiB);
	// IdempotencyTTL is how long an Idempotency-Key is remembered (default 24h).
	MaxWait        time.Duration
	Heartbeat      time.Duration
	MaxBody        int64
	IdempotencyTTL time.Duration
}

// Option adds to what NewServer wires.
type Option func(*Server)

// WithAuth serves the authenticated API from a.
func WithAuth(a Auth) Option {
	return func(s *Server) {
		if a.MaxWait <= 0 {
			a.MaxWait = 30 * time.Second
		}
		if a.Heartbeat <= 0 {
			a.Heartbeat = 15 * time.Second
		}
		if a.MaxBody <= 0 {
			a.MaxBody = 1 << 20
		}
		if a.IdempotencyTTL <= 0 {
			a.IdempotencyTTL = 24 * time.Hour
		}
		s.auth = a
	}
}

// Header values of the authenticated API.
var (
	hdrNoStore           = []string{"no-store"}
	hdrChallenge         = []string{`Bearer realm="api"`}
	hdrChallengeInvalid  = []string{`Bearer realm="api", error="invalid_token"`}
	hdrChallengeAgent    = []string{`Bearer error="insufficient_scope", scope="agent"`}
	hdrChallengeUser     = []string{`Bearer error="insufficient_scope", scope="user"`}
	hdrIdempotentReplays = []string{"true"}
)

type principalKey struct{}

// principal is who the authenticated request acts for.
func principal(r *http.Request) auth.Principal {
	p, _ := r.Context().Value(principalKey{}).(auth.Principal)
	return p
}

// authenticate lets through requests that carry a valid, unrevoked key in
// Authorization: Bearer, checked against the database on every call. The header is
// never logged.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Cache-Control"] = hdrNoStore
		values := r.Header.Values("Authorization")
		if len(values) == 0 {
			w.Header()["Www-Authenticate"] = hdrChallenge
			s.error(w, r, problemf(CodeUnauthenticated, "Send an API key in the Authorization header: Bearer sk_..."))
			return
		}
		invalid := func(code, detail string) {
			w.Header()["Www-Authenticate"] = hdrChallengeInvalid
			s.error(w, r, problemf(code, detail))
		}
		scheme, token, _ := strings.Cut(values[0], " ")
		if len(values) > 1 || !strings.EqualFold(scheme, "Bearer") {
			invalid(CodeInvalidAPIKey, "Send exactly one API key as Authorization: Bearer sk_...")
			return
		}
		scope, kid, secret, err := auth.Parse(strings.TrimSpace(token))
		if err != nil || s.auth.Store == nil {
			invalid(CodeInvalidAPIKey, "The API key is not valid.")
			return
		}
		stored, err := s.auth.Store.StoredKey(r.Context(), kid)
		if errors.Is(err, auth.ErrNotFound) {
			invalid(CodeInvalidAPIKey, "The API key is not valid.")
			return
		}
		if err != nil {
			s.error(w, r, err)
			return
		}
		if !auth.Verify(s.auth.Pepper, secret, stored.SecretHash) || stored.Scope != scope {
			invalid(CodeInvalidAPIKey, "The API key is not valid.")
			return
		}
		if stored.Revoked {
			invalid(CodeKeyRevoked, "The API key was revoked.")
			return
		}
		if err := s.auth.Store.TouchKey(r.Context(), kid); err != nil {
			s.error(w, r, err)
			return
		}
		ctx := context.WithValue(r.Context(), principalKey{}, stored.Principal)
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// requireScope refuses keys of another scope with 403.
func (s *Server) requireScope(scope auth.Scope) func(http.Handler) http.Handler {
	challenge := hdrChallengeAgent
	if scope == auth.ScopeUser {
		challenge = hdrChallengeUser
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if principal(r).Scope != scope {
				w.Header()["Www-Authenticate"] = challenge
				s.error(w, r, problemf(CodeWrongKeyScope, "This route takes a "+string(scope)+" key."))
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// readBody reads a request body of at most the configured size.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.auth.MaxBody))
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return nil, problemf(CodePayloadTooLarge, "The body is larger than "+strconv.FormatInt(tooLarge.Limit, 10)+" bytes.")
	}
	if err != nil {
		return nil, problemf(CodeValidationFailed, "The body could not be read.")
	}
	return body, nil
}

// validator is a request body that checks itself once decoded.
type validator interface {
	validate() error
}

// readJSON reads a bounded request body and decodes it into req, which validates
// itself; the raw body is returned for idempotency checks.
func (s *Server) readJSON(w http.ResponseWriter, r *http.Request, req validator) ([]byte, error) {
	body, err := s.readBody(w, r)
	if err != nil {
		return nil, err
	}
	return body, decode(body, req)
}

// decode reads exactly one JSON object into v, refusing unknown members, and
// validates it.
func decode(body []byte, v validator) error {
	d := json.NewDecoder(bytes.NewReader(body))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return problemf(CodeValidationFailed, "The body is not the JSON object this route takes: "+jsonErrorText(err))
	}
	if d.More() {
		return problemf(CodeValidationFailed, "The body holds more than one JSON value.")
	}
	if _, err := d.Token(); err != io.EOF {
		return problemf(CodeValidationFailed, "The body holds more than one JSON value.")
	}
	return v.validate()
}

var memberName = regexp.MustCompile(`^"[a-zA-Z][a-zA-Z0-9_]{0,63}"$`)

// decodeSealed is decode for bodies that carry values people provide: its errors
// name no member and no value, since a misplaced value could sit in either.
func decodeSealed(body []byte, v validator) error {
	err := decode(body, v)
	var p *Problem
	if errors.As(err, &p) && strings.HasPrefix(p.Detail, "The body is not the JSON object") {
		return problemf(CodeValidationFailed, "The body is not the JSON object this route takes.")
	}
	return err
}

// jsonErrorText describes a decoding error without echoing the body's values.
func jsonErrorText(err error) string {
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) {
		return "member " + strconv.Quote(typeErr.Field) + " must be " + typeErr.Type.String() + "."
	}
	var syntaxErr *json.SyntaxError
	if errors.As(err, &syntaxErr) {
		return "malformed JSON at byte " + strconv.FormatInt(syntaxErr.Offset, 10) + "."
	}
	if msg := err.Error(); strings.HasPrefix(msg, "json: unknown field ") {
		// Named only when it looks like a member name, not like a misplaced value.
		if name := strings.TrimPrefix(msg, "json: unknown field "); memberName.MatchString(name) {
			return "unknown member " + name + "."
		}
		return "an unknown member."
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return "the body is empty or cut short."
	}
	return "not a JSON object."
}

func invalidf(detail string) error { return problemf(CodeValidationFailed, detail) }

// writeJSON answers v as JSON that no cache keeps.
func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		panic(err) // only our own types reach here
	}
	writeBody(w, status, hdrJSON[0], body)
}

func writeBody(w http.ResponseWriter, status int, contentType string, body []byte) {
	h := w.Header()
	h.Set("Content-Type", contentType)
	h["Cache-Control"] = hdrNoStore
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	w.Write(body)
}

// recorded is a response held back so it can be stored before it is sent.
type recorded struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (rec *recorded) Header() http.Header { return rec.header }
func (rec *recorded) Write(b []byte) (int, error) {
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	return rec.body.Write(b)
}
func (rec *recorded) WriteHeader(status int) {
	if rec.status == 0 {
		rec.status = status
	}
}

// once answers a request at most once per (key, route, idempotency key): the first
// time it runs serve and keeps its response (unless it failed with a 5xx); a retry
// with the same body replays that response byte for byte with Idempotent-Replayed,
// as 200 if it was a 201; a retry with another body gets 409. ttl 0 remembers the
// key for good.
func (s *Server) once(w http.ResponseWriter, r *http.Request, route, key string, body []byte, ttl time.Duration, serve func(w http.ResponseWriter)) {
	p := principal(r)
	sum := sha256.Sum256(body)
	prev, err := s.auth.Store.ClaimIdempotency(r.Context(), p.KID, route, key, sum[:], ttl)
	if err != nil {
		s.error(w, r, err)
		return
	}
	if prev != nil {
		switch {
		case !bytes.Equal(prev.BodySHA256, sum[:]):
			s.error(w, r, problemf(CodeIdempotencyConflict, "This idempotency key was used with another body."))
		case prev.Status == 0:
			p := problemf(CodeIdempotencyInProgress, "The first request with this idempotency key is still being answered.")
			p.RetryAfter = 1
			s.error(w, r, p)
		default:
			status := prev.Status
			if status == http.StatusCreated {
				status = http.StatusOK
			}
			w.Header()["Idempotent-Replayed"] = hdrIdempotentReplays
			writeBody(w, status, prev.ContentType, prev.Response)
		}
		return
	}
	rec := &recorded{header: http.Header{}}
	serve(rec)
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	ctx := context.WithoutCancel(r.Context())
	if rec.status >= 500 {
		if err := s.auth.Store.ReleaseIdempotency(ctx, p.KID, route, key); err != nil {
			s.log.Error("release idempotency key", "err", err)
		}
	} else if err := s.auth.Store.FinishIdempotency(ctx, p.KID, route, key, rec.status, rec.header.Get("Content-Type"), rec.body.Bytes()); err != nil {
		s.auth.Store.ReleaseIdempotency(ctx, p.KID, route, key)
		s.error(w, r, err)
		return
	}
	for k, v := range rec.header {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.status)
	w.Write(rec.body.Bytes())
}

// idempotencyKey makes a route idempotent under the Idempotency-Key header.
func (s *Server) idempotencyKey(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get("Idempotency-Key")
		if key == "" {
			next.ServeHTTP(w, r)
			return
		}
		if len(key) > 255 || len(r.Header.Values("Idempotency-Key")) > 1 {
			s.error(w, r, invalidf("Idempotency-Key must be one value of at most 255 characters."))
			return
		}
		body, err := s.readBody(w, r)
		if err != nil {
			s.error(w, r, err)
			return
		}
		s.once(w, r, r.Method+" "+r.URL.Path, "header:"+key, body, s.auth.IdempotencyTTL, func(w http.ResponseWriter) {
			r.Body = io.NopCloser(bytes.NewReader(body))
			next.ServeHTTP(w, r)
		})
	})
}

// uuidPattern is the form of every id of the authenticated API; any other id names
// nothing.
var uuidPattern = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

func notFound(what string) error {
	return problemf(CodeNotFound, "No "+what+" with this id is visible to this key.")
}
