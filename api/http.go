package api

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/waystation/waystation/internal/directory"
	"github.com/waystation/waystation/internal/problem"
)

// Header values shared by every response; net/http only reads them.
var (
	hdrJSON        = []string{"application/json; charset=utf-8"}
	hdrCachePublic = []string{"public, max-age=300"}
	hdrVary        = []string{"Accept-Encoding"}
	hdrGzip        = []string{"gzip"}
	hdrAnyOrigin   = []string{"*"}
	hdrExpose      = []string{"ETag, Retry-After, RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset"}
	hdrAllowRead   = []string{"GET, HEAD, OPTIONS"}
	hdrAllowHdrs   = []string{"Accept, Accept-Encoding, Authorization, Content-Type, If-None-Match"}
	hdrMaxAge      = []string{"86400"}
)

// serveResource answers with a pre-encoded body: gzip when the client takes it, its
// strong ETag, and 304 when If-None-Match names the representation's tag.
func serveResource(w http.ResponseWriter, r *http.Request, res *directory.Resource) {
	h := w.Header()
	body, etag, length := res.Body, res.ETagHeader, res.LengthHeader
	gz := acceptsGzip(r.Header["Accept-Encoding"])
	if gz {
		body, etag, length = res.Gzip, res.GzipETagHeader, res.GzipLengthHeader
	}
	h["Vary"] = hdrVary
	h["Etag"] = etag
	if inm := r.Header["If-None-Match"]; len(inm) > 0 && etagMatch(inm, res) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h["Content-Type"] = hdrJSON
	if gz {
		h["Content-Encoding"] = hdrGzip
	}
	h["Content-Length"] = length
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		w.Write(body)
	}
}

// etagMatch applies If-None-Match's weak comparison: any listed tag, with or without
// W/, that names either representation of the resource, or "*".
func etagMatch(values []string, res *directory.Resource) bool {
	for _, v := range values {
		for v != "" {
			var tag string
			tag, v, _ = strings.Cut(v, ",")
			tag = strings.TrimSpace(tag)
			tag = strings.TrimPrefix(tag, "W/")
			if tag == "*" || tag == res.ETag || tag == res.GzipETag {
				return true
			}
		}
	}
	return false
}

// acceptsGzip reports whether Accept-Encoding allows gzip (a q of 0 refuses it).
func acceptsGzip(values []string) bool {
	for _, v := range values {
		for v != "" {
			var part string
			part, v, _ = strings.Cut(v, ",")
			name, params, _ := strings.Cut(part, ";")
			name = strings.TrimSpace(name)
			if !strings.EqualFold(name, "gzip") && name != "*" {
				continue
			}
			q := strings.TrimSpace(params)
			if strings.HasPrefix(q, "q=") || strings.HasPrefix(q, "Q=") {
				if f, err := strconv.ParseFloat(q[2:], 64); err == nil && f == 0 {
					return false
				}
			}
			return true
		}
	}
	return false
}

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
			s.error(w, r, problem.New(problem.MethodNotAllowed, r.Method+" is not allowed here: the directory is read-only."))
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
