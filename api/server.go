// Package api is the HTTP surface under /functions/v1/api: the public directory,
// health, the OpenAPI document and the authenticated API of agents and their users.
// routes.go lists every route.
package api

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync"

	"github.com/go-chi/chi/v5"

	"github.com/waystation/waystation/internal/directory"
	"github.com/waystation/waystation/internal/problem"
	"github.com/waystation/waystation/internal/resource"
	"github.com/waystation/waystation/internal/search"
	"github.com/waystation/waystation/internal/telemetry"
)

// Version is the API contract's version.
const Version = "1.1.0"

// BasePath is where every API route hangs.
const BasePath = "/functions/v1/api"

// Pinger tells whether the database answers.
type Pinger interface {
	Ping(ctx context.Context) error
}

// Config holds the server's settings.
type Config struct {
	// ListCacheEntries bounds the cache of encoded filtered lists (see
	// directory.NewService).
	ListCacheEntries int
}

// Server answers the API. It holds no request state of its own beyond caches, so
// any number of replicas can run side by side.
type Server struct {
	cfg    Config
	log    *slog.Logger
	dir    *directory.Service
	db     Pinger
	router chi.Router
	svc    Authenticated
	waits  *waits // event streams and long polls open per key
	search *search.Service
	// allowance says how much of search's daily allowance is left, for /health.
	allowance AllowanceLeft

	// draining is closed by Drain: long polls and event streams end early.
	draining  chan struct{}
	drainOnce sync.Once
}

// NewServer wires the routes; options add the authenticated API.
func NewServer(cfg Config, log *slog.Logger, snapshots directory.Snapshots, db Pinger, opts ...Option) *Server {
	s := &Server{cfg: cfg, log: log, dir: directory.NewService(snapshots, cfg.ListCacheEntries), db: db, draining: make(chan struct{})}
	WithAuthenticated(Authenticated{})(s)
	for _, o := range opts {
		o(s)
	}
	s.router = s.routes()
	return s
}

// ServeHTTP answers a hit on a snapshot route (see snapshotResource) before the
// router, because chi's route context, path values and pattern cost seven allocations
// a request there, where the answer itself is stored bytes and costs none. The
// headers are publicRead's and the rest resource.Serve's, so the answer is the
// router's byte for byte; everything else, misses and errors included, goes to the
// router.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if res, route := s.snapshotResource(r); res != nil {
		defer s.recoverPanic(w, r) // as the router's recoverer would
		telemetry.SetRoute(r.Context(), route)
		publicHeaders(w.Header())
		if err := resource.Serve(w, r, res, http.StatusOK); err != nil {
			s.error(w, r, err) // a merchant's record its published file no longer holds
		}
		return
	}
	s.router.ServeHTTP(w, r)
}

// Drain makes long polls answer at once with what they have and event streams end,
// so that a graceful shutdown does not wait out (or cut) requests that would hold
// on for up to their full wait; clients poll again, or resume with Last-Event-ID, on
// another replica. Every other request runs to its end.
func (s *Server) Drain() { s.drainOnce.Do(func() { close(s.draining) }) }

// requestID names a request in a problem body and the log line of an internal
// error: the id the telemetry middleware gave it (and put in X-Request-Id), or,
// served without it, a random one.
func requestID(r *http.Request) string { return requestIDOf(r.Context()) }

// requestIDOf is the id of the request ctx serves, or a new one.
func requestIDOf(ctx context.Context) string {
	if id := telemetry.RequestID(ctx); id != "" {
		return id
	}
	return telemetry.NewID()
}

// recoverer turns a panic into a logged 500 problem instead of a dropped connection.
func (s *Server) recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer s.recoverPanic(w, r)
		next.ServeHTTP(w, r)
	})
}

// recoverPanic, deferred, answers a panic with a logged 500 problem.
func (s *Server) recoverPanic(w http.ResponseWriter, r *http.Request) {
	if v := recover(); v != nil {
		if v == http.ErrAbortHandler {
			panic(v)
		}
		w.Header().Set("Cache-Control", "no-store")
		s.error(w, r, fmt.Errorf("panic: %v", v))
	}
}

// error answers err as problem+json. An answer to a user's key repeats nothing the
// request sent (its path as instance, a parameter's name, a detail quoting it)
// unless that passed the check for the user's protected values: an answer that
// would repeat one, or cannot be checked, says its code alone and why.
func (s *Server) error(w http.ResponseWriter, r *http.Request, err error) {
	instance, err := s.unechoed(r.Context(), s.keyOwner(r), r.URL.EscapedPath(), err)
	writeError(w, r, s.log, requestID(r), instance, err)
}

// unechoed is err, and the instance it names, as they may be answered to user's key
// (see echoesProtected): when they would repeat one of the user's protected values,
// the problem's code alone and why, with no instance.
func (s *Server) unechoed(ctx context.Context, user, instance string, err error) (string, error) {
	why := s.echoesProtected(ctx, user, err, instance)
	if why == "" {
		return instance, err
	}
	if p, ok := problem.As(err); ok {
		err = &problem.Error{Code: p.Code, Detail: why, RetryAfter: p.RetryAfter, Err: p.Err}
	}
	return "", err
}

// echoesProtected says why the answer of err to user's key may not repeat the
// request: it would repeat one of the user's protected values, or they cannot be
// loaded to check; "" when it may. Without a source of protected values there are
// none, since nothing can be sealed.
func (s *Server) echoesProtected(ctx context.Context, user string, err error, instance string) string {
	if _, none := s.svc.Protected.(noProtected); none || user == "" {
		return ""
	}
	set, serr := s.protectedSet(ctx, user)
	if serr != nil {
		return "The user's protected values could not be loaded to check this answer, so it repeats nothing of the request."
	}
	p, ok := problem.As(err)
	if set.Contains(instance) || ok && (set.Contains(p.Detail) || set.Contains(p.Parameter)) {
		return "The request holds one of the user's protected values, in some written form; this answer repeats none of it."
	}
	return ""
}
