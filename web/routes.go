package web

import (
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/waystation/waystation/internal/resource"
	"github.com/waystation/waystation/internal/telemetry"
)

// routes is the whole surface of the human pages.
func (s *Server) routes() http.Handler {
	r := chi.NewRouter()
	r.Use(telemetry.ChiRoute, appHeaders, withoutTrailingSlash)
	r.NotFound(s.handleNotFound)
	r.MethodNotAllowed(s.handleMethodNotAllowed(r))

	get := func(pattern string, h http.HandlerFunc) {
		r.Get(pattern, h)
		r.Head(pattern, h)
	}
	get("/", s.handleHome())
	get("/categories/{category}", s.handleCategory())
	get("/methods/{slug}", s.handleMethod())
	get("/merchants/{hostname}", s.handleMerchant())
	get("/search", s.handleSearch())
	get("/problems/{code}", s.handleProblem())
	get("/static/{name}", s.handleStatic())
	if s.reference != nil {
		get(referencePath, s.handleReference())
		get(llmsPath, s.handleLLMs())
		get(documentPath, s.handleDocument())
	}
	if s.discovery != nil {
		get(securityTxtPath, s.handleSecurityTxt())
		get(robotsPath, s.handleRobots())
		if s.reference != nil {
			s.discovery.catalog = resource.New(APICatalogType, s.reference.APICatalog(s.discovery.PublicURL))
			get(apiCatalogPath, s.handleAPICatalog())
		}
	}

	// The approval pages: private, unframeable, and only for a signed-in user.
	if s.approvals != nil {
		r.Route(appPath, func(r chi.Router) {
			r.Use(s.sameOrigin)
			get := func(pattern string, h http.HandlerFunc) {
				r.Get(pattern, h)
				r.Head(pattern, h)
			}
			get("/requests", s.handleRequests())
			get("/requests/{id}", s.handleRequest())
			get("/sessions/{id}", s.handleSession())
			if s.approvals.Payments.Keeps() {
				get("/spend", s.handleSpend())
				get("/spend.csv", s.handleSpendCSV())
				r.Post("/agents/{id}/limits", s.handleSetLimits())
				r.Post("/sessions/{id}/payments/{pid}/report", s.handleReport())
			}
			if s.approvals.Memory != nil {
				get("/memory", s.handleMemory())
				r.Post("/memory", s.handleSaveMemory())
				r.Post("/memory/{id}", s.handleEditMemory())
				r.Post("/memory/{id}/archive", s.handleArchiveMemory())
			}
			if s.approvals.Webhooks != nil {
				get("/webhooks", s.handleWebhooks())
				r.Post("/webhooks", s.handleCreateWebhook())
				r.Post("/webhooks/{id}/delete", s.handleDeleteWebhook())
			}
			if s.approvals.Auth.PasskeysOn() {
				get("/passkeys", s.handlePasskeys())
				r.Post("/passkeys/options", s.handlePasskeyOptions())
				r.Post("/passkeys", s.handleAddPasskey())
				r.Post("/passkeys/{id}/delete", s.handleDeletePasskey())
				r.Post("/sign-in/passkey/options", s.handlePasskeySignInOptions())
				r.Post("/sign-in/passkey", s.handlePasskeySignIn())
			}
			if s.approvals.OAuth != nil {
				get(consentPath+"{id}", s.handleConsent())
				r.Post(consentPath+"{id}", s.handleAnswerConsent())
			}
			get("/agents", s.handleAgents())
			get("/keys", s.handleKeys())
			r.Post("/keys", s.handleCreateKey())
			r.Post("/keys/{kid}/revoke", s.handleRevokeKey())
			r.Post("/agents", s.handleCreateAgent())
			r.Post("/agents/{id}/status", s.handleAgentStatus())
			r.Post("/requests/{id}/decision", s.handleDecision())
			get("/sign-in", s.handleSignInPage())
			r.Post("/sign-in", s.handleSignIn())
			r.Post("/sign-out", s.handleSignOut())
		})
	}
	return r
}

// withoutTrailingSlash sends a GET or HEAD of a page's URL with a trailing slash to
// the page itself (301), so that /methods/x/ is /methods/x and caches keep one copy.
// Leading slashes fold into one, so that the redirect never leaves the site
// (//evil.example/ is not a page of ours).
func withoutTrailingSlash(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.EscapedPath()
		if len(p) > 1 && strings.HasSuffix(p, "/") && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
			target := "/" + strings.Trim(p, "/")
			if r.URL.RawQuery != "" {
				target += "?" + r.URL.RawQuery
			}
			http.Redirect(w, r, target, http.StatusMovedPermanently)
			return
		}
		next.ServeHTTP(w, r)
	})
}
