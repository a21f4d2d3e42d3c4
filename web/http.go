package web

import (
	"net/http"
	"strings"
	"time"

	"github.com/waystation/waystation/internal/directory"
)

// searchTimeout bounds how long the search page waits for the search engine.
const searchTimeout = 10 * time.Second

// Cache-Control values: pages as long as the directory's JSON, static files for a
// year under their versioned URLs, search results not at all.
var (
	cachePublic    = []string{"public, max-age=300"}
	cacheImmutable = []string{"public, max-age=31536000, immutable"}
	cacheNone      = []string{"no-store"}
	typeHTML       = []string{"text/html; charset=utf-8"}
	varyEncoding   = []string{"Accept-Encoding"}
	gzipEncoding   = []string{"gzip"}
)

// serve answers 200 with a rendered page: gzip when the client takes it, its strong
// ETag, and 304 when If-None-Match names it (the same rules as the directory's JSON).
func serve(w http.ResponseWriter, r *http.Request, res *directory.Resource, cache []string) {
	serveStatus(w, r, res, cache, http.StatusOK)
}

func serveStatus(w http.ResponseWriter, r *http.Request, res *directory.Resource, cache []string, status int) {
	h := w.Header()
	body, etag, length := res.Body, res.ETagHeader, res.LengthHeader
	gz := acceptsGzip(r.Header.Get("Accept-Encoding"))
	if gz {
		body, etag, length = res.Gzip, res.GzipETagHeader, res.GzipLengthHeader
	}
	h["Vary"] = varyEncoding
	h["Cache-Control"] = cache
	h["X-Content-Type-Options"] = []string{"nosniff"}
	if _, ok := h["Content-Type"]; !ok {
		h["Content-Type"] = typeHTML
	}
	if status == http.StatusOK {
		h["Etag"] = etag
		if inm := r.Header.Get("If-None-Match"); inm != "" && etagMatch(inm, res) {
			w.WriteHeader(http.StatusNotModified)
			return
		}
	}
	if gz {
		h["Content-Encoding"] = gzipEncoding
	}
	h["Content-Length"] = length
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		w.Write(body)
	}
}

func etagMatch(inm string, res *directory.Resource) bool {
	for tag := range strings.SplitSeq(inm, ",") {
		tag = strings.TrimPrefix(strings.TrimSpace(tag), "W/")
		if tag == "*" || tag == res.ETag || tag == res.GzipETag {
			return true
		}
	}
	return false
}

func acceptsGzip(ae string) bool {
	for part := range strings.SplitSeq(ae, ",") {
		name, params, _ := strings.Cut(part, ";")
		name = strings.TrimSpace(name)
		if !strings.EqualFold(name, "gzip") && name != "*" {
			continue
		}
		q := strings.ReplaceAll(strings.TrimSpace(params), " ", "")
		return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
	}
	return false
}
