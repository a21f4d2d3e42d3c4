package api

import (
	"net/http"

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
