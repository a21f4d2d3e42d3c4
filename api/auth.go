package api

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/waystation/waystation/internal/app"
	"github.com/waystation/waystation/internal/auth"
	"github.com/waystation/waystation/internal/idempotency"
	"github.com/waystation/waystation/internal/llm"
	"github.com/waystation/waystation/internal/oauth"
	"github.com/waystation/waystation/internal/payment"
	"github.com/waystation/waystation/internal/problem"
	"github.com/waystation/waystation/internal/redact"
	"github.com/waystation/waystation/internal/search"
	"github.com/waystation/waystation/internal/trust"
)

// Subscriber wakes a waiter when an event is appended to a session.
type Subscriber interface {
	Subscribe(sessionID string) (<-chan struct{}, func())
}

// Authenticated is what the authenticated API is served from: the domain's services
// and the secrets and limits it answers under. Without it every authenticated route
// answers 401, since no key can be verified.
type Authenticated struct {
	// Services are the use cases the routes and MCP tools serve. Without Auth (the
	// default: a service without a store) every key is invalid; without Memory,
	// Webhooks or Origins their routes (and resolve, which reads memory) are not
	// served; without Captchas their routes answer 404; without Payments (the
	// default: one without a payer or a store) the payment routes answer 501
	// payer_not_configured; without Guard, a guard over Protected that records
	// nothing.
	app.Services
	// Limits bound waits, bodies and how long answers are remembered.
	Limits
	Idempotency idempotency.Store
	// Pepper is the secret API keys are hashed with, which idempotency records are
	// fingerprinted with too.
	Pepper []byte
	// PublicURL is the service's public origin (https://host), prefixed to approval
	// links; without it they are paths.
	PublicURL string
	// Events wakes long polls and event streams; without it (noEvents) they read
	// again on each heartbeat and recheck.
	Events Subscriber
	// Protected gives a user's protected values, which the LLM proxy blanks out and
	// events and request contexts may not hold; without it (noProtected) those
	// routes fail closed.
	Protected redact.Source
	// LLM is the upstream models of the gateway.
	LLM llm.Config
	// Prober calls sellers for quotes, never paying (default: a prober of default
	// settings).
	Prober Prober
}

// Limits bound what one caller holds of the authenticated API.
type Limits struct {
	// MaxWait bounds a long poll (default 30s); Heartbeat is the event stream's
	// keep-alive interval (default 15s); MaxBody bounds request bodies (default 1 MiB);
	// IdempotencyTTL is how long an Idempotency-Key is remembered (default 24h).
	MaxWait        time.Duration
	Heartbeat      time.Duration
	MaxBody        int64
	IdempotencyTTL time.Duration
	// StreamLife ends an event stream after this long (default 15m); the client
	// resumes with Last-Event-ID. MaxWaitsPerKey caps the event streams and long
	// polls one key holds open at once on a replica (default 4).
	StreamLife     time.Duration
	MaxWaitsPerKey int
	// SessionRetention is how long a closed session is kept before it is deleted
	// (0: for good). A client id (clientSessionId, clientEventId, clientRequestId)
	// is remembered as long, at least IdempotencyTTL; past that a retry is still
	// recognised by the session's own records, but answered afresh.
	SessionRetention time.Duration
}

// noProtected is the source of protected values of a server without one (it has no
// key to seal them): asked for a user's, it fails, so that what needs them fails
// closed with redaction_unavailable.
type noProtected struct{}

func (noProtected) Protected(context.Context, string) ([]string, error) {
	return nil, errors.New("no source of protected values")
}

// noEvents is the subscriber of a server without an event listener: it never wakes
// a waiter, which reads again on its own time.
type noEvents struct{}

func (noEvents) Subscribe(string) (<-chan struct{}, func()) { return nil, func() {} }

// clientIDTTL is how long a client id's answer is remembered: 0 (for good) while
// sessions are kept for good.
func (l Limits) clientIDTTL() time.Duration {
	if l.SessionRetention <= 0 {
		return 0
	}
	return max(l.SessionRetention, l.IdempotencyTTL)
}

// Option adds to what NewServer wires.
type Option func(*Server)

// WithAuthenticated serves the authenticated API from a.
func WithAuthenticated(a Authenticated) Option {
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
		if a.StreamLife <= 0 {
			a.StreamLife = 15 * time.Minute
		}
		if a.MaxWaitsPerKey <= 0 {
			a.MaxWaitsPerKey = 4
		}
		if a.Auth == nil {
			a.Auth = auth.NewService(nil, auth.Config{})
		}
		if a.LLM.Timeout <= 0 {
			a.LLM.Timeout = 120 * time.Second
		}
		if a.Protected == nil {
			a.Protected = noProtected{}
		}
		a.Guard = guardOf(a)
		if a.Events == nil {
			a.Events = noEvents{}
		}
		if a.Payments == nil {
			a.Payments = &payment.Service{}
		}
		if a.Prober == nil {
			a.Prober = trust.NewProber(trust.ProberConfig{}, s.log)
		}
		s.svc = a
		s.waits = &waits{open: map[string]int{}}
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
func principal(r *http.Request) auth.Principal { return principalOf(r.Context()) }

// principalOf is the principal of the authenticated request ctx serves: a route's,
// or the MCP request's that a tool serves.
func principalOf(ctx context.Context) auth.Principal {
	p, _ := ctx.Value(principalKey{}).(auth.Principal)
	return p
}

// keyOwner is the user whose key the request carries (see keyPrincipal); "" for
// none.
func (s *Server) keyOwner(r *http.Request) string { return s.keyPrincipal(r).UserID }

// keyPrincipal is who the key the request carries acts for: the principal once
// authenticated, else that of the valid key of its Authorization header (a public
// route, or a route that does not exist, answers before authentication); the zero
// Principal for none.
func (s *Server) keyPrincipal(r *http.Request) auth.Principal {
	if p := principal(r); p.UserID != "" {
		return p
	}
	token, _, ok := requestKey(r)
	if !ok {
		return auth.Principal{}
	}
	if oauth.IsToken(token) {
		p, _ := s.svc.OAuth.Use(r.Context(), token, s.resourceOf(r))
		return p
	}
	stored, err := s.svc.Auth.Authenticate(r.Context(), token)
	if err != nil {
		return auth.Principal{}
	}
	return stored.Principal
}

// use authenticates token for a call of r: an access token for r's resource (see
// oauth.Service.Use), or an API key.
func (s *Server) use(r *http.Request, token string) (auth.Principal, error) {
	if oauth.IsToken(token) {
		return s.svc.OAuth.Use(r.Context(), token, s.resourceOf(r))
	}
	return s.svc.Auth.Use(r.Context(), token)
}

// searchCaller is who a search is charged to: the key's user (see keyOwner), else
// the client's address as the request and a trusted proxy tell it.
func (s *Server) searchCaller(r *http.Request) search.Caller {
	return callerOf(r, s.keyOwner(r))
}

// callerOf is the search caller of r, whose key's user is user ("" for none).
func callerOf(r *http.Request, user string) search.Caller {
	return search.Caller{User: user, RemoteAddr: r.RemoteAddr, ForwardedFor: r.Header.Values("X-Forwarded-For")}
}

// requestKey is the API key r carries (see auth.RequestKey): in Authorization: Bearer, or
// on an LLM route whose provider's clients send it in a header of their own (see
// llm.Provider.KeyHeader), in that one.
func requestKey(r *http.Request) (token string, sent, ok bool) {
	var apiKey []string
	if h := keyHeader(r); h != "" {
		apiKey = r.Header.Values(h)
	}
	return auth.RequestKey(r.Header.Values("Authorization"), apiKey)
}

// keyHeader is the header besides Authorization in which the clients of r's route
// send their key; "" for none.
func keyHeader(r *http.Request) string {
	if p := llmProvider(r); p != nil {
		return p.KeyHeader()
	}
	return ""
}

// authenticate lets through requests that carry a valid, unrevoked key in
// Authorization: Bearer (or x-api-key, see requestKey), checked against the database
// on every call. The headers are never logged.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Cache-Control"] = hdrNoStore
		token, sent, ok := requestKey(r)
		missing, malformed := "Send an API key in the Authorization header: Bearer sk_...", "Send exactly one API key as Authorization: Bearer sk_..."
		if h := strings.ToLower(keyHeader(r)); h != "" {
			missing, malformed = "Send an API key in the "+h+" header, or as Authorization: Bearer sk_...", "Send exactly one API key, in "+h+" or as Authorization: Bearer sk_..."
			if r.Header.Get(h) != "" && r.Header.Get("Authorization") != "" {
				malformed = "The " + h + " and Authorization headers carry different keys: send one key, in either (the same key in both is taken)."
			}
		}
		if !sent {
			w.Header()["Www-Authenticate"] = s.challenge(r, false)
			s.error(w, r, problem.New(problem.Unauthenticated, missing))
			return
		}
		if !ok {
			w.Header()["Www-Authenticate"] = s.challenge(r, true)
			s.error(w, r, problem.New(problem.InvalidAPIKey, malformed))
			return
		}
		p, err := s.use(r, token)
		if err != nil {
			if c := problem.CodeOf(err); c == problem.InvalidAPIKey || c == problem.KeyRevoked {
				// A key that is not live has no values to check an echo against, and may
				// be a paused agent's: its answer repeats nothing of the request.
				w.Header()["Www-Authenticate"] = s.challenge(r, true)
				writeError(w, r, s.log, requestID(r), "", err)
				return
			}
			s.error(w, r, err)
			return
		}
		ctx := context.WithValue(r.Context(), principalKey{}, p)
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
				s.error(w, r, problem.New(problem.WrongKeyScope, "This route takes a "+string(scope)+" key."))
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}
