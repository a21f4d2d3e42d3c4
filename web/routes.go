package web

import (
	"net/http"

	"github.com/go-chi/chi/v5"
)

// routes is the whole surface of the human pages.
func (s *Server) routes() http.Handler {
	r := chi.NewRouter()
	r.NotFound(s.handleNotFound)
	r.MethodNotAllowed(s.handleMethodNotAllowed)

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

	// The approval pages: private, unframeable, and only for a signed-in user.
	if s.approvals != nil {
		r.Route(appPath, func(r chi.Router) {
			r.Use(appHeaders)
			get := func(pattern string, h http.HandlerFunc) {
				r.Get(pattern, h)
				r.Head(pattern, h)
			}
			get("/requests", s.handleRequests())
			get("/requests/{id}", s.handleRequest())
			r.Post("/requests/{id}/decision", s.handleDecision())
			r.Post("/sign-in", s.handleSignIn())
			r.Post("/sign-out", s.handleSignOut())
		})
	}
	return r
}
