package api

import (
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/waystation/waystation/internal/auth"
	"github.com/waystation/waystation/internal/llm"
	"github.com/waystation/waystation/internal/problem"
	"github.com/waystation/waystation/internal/telemetry"
)

// routes is the whole HTTP surface of the API.
func (s *Server) routes() chi.Router {
	r := chi.NewRouter()
	r.Use(telemetry.ChiRoute, s.recoverer)
	r.NotFound(s.handleNotFound)
	r.MethodNotAllowed(s.handleMethodNotAllowed(r))

	if s.svc.OAuth != nil {
		// The metadata of the authorization server and of each protected resource,
		// at the origin's well-known locations (RFC 8414, RFC 9728).
		r.Handle(AuthServerPath, s.publicRead(s.handleAuthServer()))
		r.Handle(ProtectedResourcePath+BasePath+MCPPath, s.publicRead(s.handleProtectedResource(true)))
		r.Handle(ProtectedResourcePath+BasePath, s.publicRead(s.handleProtectedResource(false)))
	}

	r.Route(BasePath, func(r chi.Router) {
		r.Handle("/", s.publicRead(s.handleDiscovery()))
		r.Handle("/health", s.publicRead(s.handleHealth()))
		r.Handle("/openapi.json", s.publicRead(s.handleOpenAPI()))
		r.Handle("/docs/openapi.json", s.publicRead(s.handleOpenAPI()))

		// The public directory: key-less, read-only, cacheable, any origin.
		r.Handle("/api/public/v1/services", s.publicRead(s.handleServices()))
		r.Handle("/api/public/v1/services/{slug}", s.publicRead(s.handleService()))
		r.Handle("/api/public/v1/merchants/{hostname}", s.publicRead(s.handleMerchant()))

		// The authorization server MCP hosts sign in with: public clients, any
		// origin.
		if s.svc.OAuth != nil {
			r.With(keyedCORS).Post(OAuthRegisterPath, s.handleRegister())
			r.Get(OAuthAuthorizePath, s.handleAuthorize())
			r.With(keyedCORS).Post(OAuthTokenPath, s.handleToken())
			r.With(keyedCORS).Post(OAuthRevokePath, s.handleRevoke())
		}

		// The MCP server, with its own key check: the directory's tools need none.
		r.Post(MCPPath, s.handleMCP().ServeHTTP)

		// The authenticated API: a Bearer key on every call, checked every time. Any
		// browser origin may call it with a key (see keyedCORS).
		r.Group(func(r chi.Router) {
			r.Use(keyedCORS, s.authenticate, s.screenRequest)
			agent, user := s.requireScope(auth.ScopeAgent), s.requireScope(auth.ScopeUser)
			once := s.idempotencyKey
			paying := s.ready(s.svc.Payments.CheckPayer)
			// read routes GET and HEAD to one handler, so that HEAD answers with the same
			// key check, status and headers as GET; net/http drops the body.
			read := func(r chi.Router, pattern string, h http.HandlerFunc) {
				r.Get(pattern, h)
				r.Head(pattern, h)
			}

			read(r.With(agent), "/agent/me", s.handleAgentMe())
			read(r.With(agent), "/agent/stats", s.handleAgentStats())
			r.With(agent, once).Post("/agent/keys/current/revoke", s.handleRevokeCurrentKey())

			read(r.With(user), "/agents", s.handleAgents())
			r.With(user, once).Post("/agents", s.handleCreateAgent())
			r.With(user).Patch("/agents/{id}", s.handleSetAgentStatus())
			read(r.With(user), "/keys", s.handleKeys())
			r.With(user).Post("/keys", s.handleCreateKey()) // never cached: the answer holds the secret
			r.With(user).Delete("/keys/{kid}", s.handleRevokeKey())
			if s.svc.Webhooks != nil {
				r.With(user).Post("/webhooks", s.handleCreateWebhook()) // never replayed: the answer holds the secret
				read(r.With(user), "/webhooks", s.handleWebhooks())
				r.With(user).Delete("/webhooks/{id}", s.handleDeleteWebhook())
				read(r.With(user), "/webhooks/{id}/deliveries", s.handleDeliveries())
			}

			if s.svc.Origins != nil {
				r.With(user).Post("/origins", s.handleSubmitOrigin()) // listing again is harmless
				read(r.With(user), "/origins", s.handleOrigin())
			}

			r.With(agent, once).Post("/sessions", s.handleCreateSession())
			read(r, "/sessions", s.handleSessions())
			read(r, "/sessions/{id}", s.handleSession())
			r.With(agent, once).Post("/sessions/{id}/complete", s.handleCompleteSession())
			r.With(user, once).Post("/sessions/{id}/stop", s.handleStopSession())
			read(r, "/sessions/{id}/events", s.handleEvents())
			r.With(agent, once).Post("/sessions/{id}/events", s.handleAppendEvent())

			r.With(agent, once).Post("/sessions/{id}/requests", s.handleCreateRequest())
			read(r, "/sessions/{id}/requests", s.handleRequests())
			read(r, "/sessions/{id}/requests/{rid}", s.handleRequest())
			r.With(user, once).Post("/sessions/{id}/requests/{rid}/decision", s.handleDecision())
			r.With(agent, once).Post("/sessions/{id}/requests/{rid}/cancel", s.handleCancelRequest())
			r.With(agent, once).Post("/sessions/{id}/requests/{rid}/claim", s.handleClaim())

			if s.svc.Memory != nil {
				read(r, "/memory/items", s.handleMemoryItems())
				r.With(once).Post("/memory/items", s.handleCreateMemoryItem())
				read(r, "/memory/items/{id}", s.handleMemoryItem())
				r.With(user).Patch("/memory/items/{id}", s.handleUpdateMemoryItem())
				r.With(user).Delete("/memory/items/{id}", s.handleArchiveMemoryItem())
				read(r.With(agent), "/sessions/{id}/memory/catalog", s.handleMemoryCatalog())
				r.With(agent).Post("/sessions/{id}/materialize", s.handleMaterialize()) // never replayed
				r.With(agent, once).Post("/sessions/{id}/resolve", s.handleResolve())
			}

			r.With(once).Post("/traces", s.handleTraces())
			r.With(once).Post("/v1/traces", s.handleTraces()) // where an OTLP exporter sends, given the base
			r.With(agent).Post("/tools/merchant-checks", s.handleMerchantCheck())
			r.With(agent).Post("/tools/x402/quote", s.handleQuote())
			r.With(agent, paying).Post("/sessions/{id}/x402/payments", s.handleCreatePayment()) // idempotent by clientRequestId
			read(r.With(paying), "/sessions/{id}/x402/payments/{pid}", s.handlePayment())
			r.Post("/sessions/{id}/x402/payments/{pid}/report", s.handleReportDelivery()) // once per payment
			read(r.With(user, paying), "/agents/{id}/spending-limits", s.handleSpendingLimits())
			if s.svc.Captchas != nil {
				r.With(agent).Post("/sessions/{id}/captcha/tasks", s.handleCreateTask()) // idempotent by clientTaskId
				read(r, "/sessions/{id}/captcha/tasks", s.handleTasks())
				read(r, "/sessions/{id}/captcha/tasks/{tid}", s.handleTask())
			}
			r.With(user, paying).Put("/agents/{id}/spending-limits", s.handleSetSpendingLimits())
			read(r, "/sessions/{id}/traces", s.handleSessionTraces())

			// The OpenAI-compatible proxy: the user's protected values never reach it.
			read(r, LLMPath+llm.Models.Route, s.handleLLMModels(llm.Models))
			r.With(agent).Post(LLMPath+llm.ChatCompletions.Route, s.handleModelCall(llm.ChatCompletions)) // never replayed: a stream
			r.With(agent).Post(LLMPath+llm.Responses.Route, s.handleModelCall(llm.Responses))
			r.With(agent).Post(LLMPath+llm.Messages.Route, s.handleModelCall(llm.Messages)) // Anthropic's; the key may come as x-api-key
		})
	})
	return r
}

// ready refuses every request with check's error while it has one: the routes of a
// service that cannot serve them answer what the service says (a payment service
// without a payer: payer_not_configured).
func (s *Server) ready(check func() error) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if err := check(); err != nil {
				s.error(w, r, err)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

func (s *Server) handleNotFound(w http.ResponseWriter, r *http.Request) {
	// A missing route is as cacheable, and as public, as the directory itself.
	w.Header()["Access-Control-Allow-Origin"] = hdrAnyOrigin
	w.Header()["Cache-Control"] = hdrCachePublic
	s.error(w, r, errNoRoute())
}

// errNoRoute is a call of a route the server does not serve.
func errNoRoute() error {
	return problem.New(problem.NotFound, "No route here; the API's routes are listed at "+BasePath+"/openapi.json.")
}

// handleMethodNotAllowed answers 405 with the Allow header listing the methods the
// path does take, found by asking the router.
func (s *Server) handleMethodNotAllowed(mux chi.Routes) http.HandlerFunc {
	methods := []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut,
		http.MethodPatch, http.MethodDelete, http.MethodOptions}
	return func(w http.ResponseWriter, r *http.Request) {
		allowed := []string{}
		for _, m := range methods {
			if mux.Match(chi.NewRouteContext(), m, r.URL.Path) {
				allowed = append(allowed, m)
			}
		}
		if r.Method == http.MethodOptions {
			s.preflight(w, r, append(allowed, http.MethodOptions))
			return
		}
		w.Header().Set("Allow", strings.Join(allowed, ", "))
		// The method is not named: any token is a method, so it is the caller's text.
		s.error(w, r, problem.New(problem.MethodNotAllowed, "This path does not take this method; the Allow header lists those it takes."))
	}
}
