package api

import (
	"net/http"
	"regexp"
	"strings"

	"github.com/waystation/waystation/internal/problem"
	"github.com/waystation/waystation/internal/resource"
)

// Header values shared by every response; net/http only reads them.
var (
	hdrJSON        = []string{resource.JSON}
	hdrCachePublic = []string{"public, max-age=300"}
	hdrAnyOrigin   = []string{"*"}
	hdrExpose      = []string{"ETag, Retry-After, RateLimit-Policy, RateLimit"}
	// hdrCachePrivate is a search answer to a caller named by its key: its own.
	hdrCachePrivate = []string{"private, max-age=300"}
	hdrAllowRead    = []string{"GET, HEAD, OPTIONS"}
	hdrAllowHdrs    = []string{"Accept, Accept-Encoding, Authorization, Content-Type, If-None-Match"}
	hdrMaxAge       = []string{"86400"}
	// hdrExposeKeyed are the headers a page may read of the authenticated API's answers.
	hdrExposeKeyed = []string{"Location, Retry-After, RateLimit-Policy, RateLimit, Idempotent-Replayed, X-Request-Id, X-Redactions, ETag"}
)

// publicRead wraps a read-only public handler: every browser origin, five minutes of
// caching unless the handler says otherwise, the CORS preflight, and 405 with Allow
// for anything but GET, HEAD and OPTIONS.
func (s *Server) publicRead(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		publicHeaders(h)
		switch r.Method {
		case http.MethodGet, http.MethodHead:
			next.ServeHTTP(w, r)
		case http.MethodOptions:
			h["Access-Control-Allow-Methods"] = hdrAllowRead
			h["Access-Control-Allow-Headers"] = hdrAllowHdrs
			h["Access-Control-Max-Age"] = hdrMaxAge
			h["Allow"] = hdrAllowRead
			w.WriteHeader(http.StatusNoContent)
		default:
			h["Allow"] = hdrAllowRead
			s.error(w, r, problem.New(problem.MethodNotAllowed, "The directory is read-only: it takes GET, HEAD and OPTIONS."))
		}
	})
}

// publicHeaders sets what every public read answers with: any origin, the headers a
// browser script may read, five minutes of caching.
func publicHeaders(h http.Header) {
	h["Access-Control-Allow-Origin"] = hdrAnyOrigin
	h["Access-Control-Expose-Headers"] = hdrExpose
	h["Cache-Control"] = hdrCachePublic
}

// keyedCORS lets any browser origin call the authenticated API, and read its
// answers, errors included. It is safe because a key is never ambient: it travels in
// the Authorization header (or an API's own key header) that the page's script sets,
// never in a cookie, and credentials are not allowed, so a page can do with the API
// only what the key its script already holds allows. The console's cookie-signed
// pages live outside the API and answer no other origin.
func keyedCORS(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(r.Header["Origin"]) > 0 {
			h := w.Header()
			h["Access-Control-Allow-Origin"] = hdrAnyOrigin
			h["Access-Control-Expose-Headers"] = hdrExposeKeyed
		}
		next.ServeHTTP(w, r)
	})
}

// preflight answers OPTIONS on a path of the API that has no OPTIONS route of its
// own: 204 with the methods it takes, and, to a browser's CORS preflight, leave to
// send the method and headers it asks for from any origin (the MCP server: only from
// the origins it answers), without credentials. A path that takes nothing is 404.
func (s *Server) preflight(w http.ResponseWriter, r *http.Request, allowed []string) {
	if len(allowed) == 1 {
		s.handleNotFound(w, r)
		return
	}
	h := w.Header()
	h.Set("Allow", strings.Join(allowed, ", "))
	if len(r.Header["Origin"]) > 0 {
		if r.URL.Path == BasePath+MCPPath {
			if !s.mcpOrigin(r.Header.Values("Origin")) {
				s.error(w, r, problem.New(problem.OriginNotAllowed, "This MCP server answers pages of the service's own origin and of this machine only."))
				return
			}
			h["Access-Control-Allow-Origin"] = r.Header["Origin"]
			h.Add("Vary", "Origin")
		} else {
			h["Access-Control-Allow-Origin"] = hdrAnyOrigin
		}
		h.Set("Access-Control-Allow-Methods", strings.Join(allowed, ", "))
		if asked := r.Header.Get("Access-Control-Request-Headers"); asked != "" && len(asked) <= 1024 && headerList.MatchString(asked) {
			h.Set("Access-Control-Allow-Headers", asked)
		}
		h["Access-Control-Max-Age"] = hdrMaxAge
	}
	w.WriteHeader(http.StatusNoContent)
}

// headerList is a list of header names, as a preflight asks for them.
var headerList = regexp.MustCompile(`^[A-Za-z0-9!#$%&'*+.^_` + "`" + `|~-]+(\s*,\s*[A-Za-z0-9!#$%&'*+.^_` + "`" + `|~-]+)*$`)
