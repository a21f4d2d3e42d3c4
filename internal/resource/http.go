package resource

import (
	"net/http"
	"strings"
)

// Header values every answer shares; net/http only reads them.
var (
	hdrVary = []string{"Accept-Encoding"}
	hdrGzip = []string{"gzip"}
)

// Serve answers r with res and status: gzip when the client takes it, Vary,
// Content-Type and Content-Length, and no body to a HEAD. Only a 200 carries the
// representation's ETag and becomes a 304 when If-None-Match names it: another status
// (a page saying what was not found, or why a search failed) answers this request
// alone. Headers the caller set before, such as caching and CORS, are kept; a 304
// carries no Content-Type, as net/http would drop it anyway. Serving allocates
// nothing, so the directory's hottest routes stay free of garbage.
func Serve(w http.ResponseWriter, r *http.Request, res *Resource, status int) {
	h := w.Header()
	body, etag, length := res.Body, res.etagHeader, res.lengthHeader
	gz := res.Gzip != nil && AcceptsGzip(r.Header)
	if gz {
		body, etag, length = res.Gzip, res.gzipETagHeader, res.gzipLengthHeader
	}
	h["Vary"] = hdrVary
	if status == http.StatusOK {
		h["Etag"] = etag
		if inm := r.Header["If-None-Match"]; len(inm) > 0 && etagMatch(inm, res) {
			w.WriteHeader(http.StatusNotModified)
			return
		}
	}
	if res.typeHeader != nil {
		h["Content-Type"] = res.typeHeader
	}
	if gz {
		h["Content-Encoding"] = hdrGzip
	}
	h["Content-Length"] = length
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		w.Write(body)
	}
}

// etagMatch applies If-None-Match's weak comparison: any listed tag, with or without
// W/, that names either representation of the resource, or "*". Either tag matches
// because a cache may hold the other form from before its client's Accept-Encoding
// changed, and both forms carry the same content.
func etagMatch(values []string, res *Resource) bool {
	for _, v := range values {
		for v != "" {
			var tag string
			tag, v, _ = strings.Cut(v, ",")
			tag = strings.TrimPrefix(strings.TrimSpace(tag), "W/")
			if tag == "*" || tag == res.ETag || tag == res.GzipETag {
				return true
			}
		}
	}
	return false
}

// AcceptsGzip reports whether a request's Accept-Encoding takes gzip. An entry naming
// gzip decides over "*", whatever their order, and a q of 0 refuses; without either
// the answer is identity, which every client takes. Preferences between non-zero q
// values are ignored: gzip is the only encoding on offer.
func AcceptsGzip(h http.Header) bool {
	var namedGzip, takesGzip, takesStar bool
	for _, v := range h["Accept-Encoding"] {
		for v != "" {
			var entry string
			entry, v, _ = strings.Cut(v, ",")
			coding, params, _ := strings.Cut(entry, ";")
			coding = strings.TrimSpace(coding)
			switch {
			case strings.EqualFold(coding, "gzip"):
				namedGzip = true
				takesGzip = takesGzip || !refused(params)
			case coding == "*":
				takesStar = takesStar || !refused(params)
			}
		}
	}
	if namedGzip {
		return takesGzip
	}
	return takesStar
}

// refused reports whether an entry's parameters give it a q of 0 ("q=0", "q=0.0",
// "Q = 0.000"). A missing or malformed q counts as taken, as it always has.
func refused(params string) bool {
	for params != "" {
		var p string
		p, params, _ = strings.Cut(params, ";")
		name, value, ok := strings.Cut(p, "=")
		if !ok || !strings.EqualFold(strings.TrimSpace(name), "q") {
			continue
		}
		value = strings.TrimSpace(value)
		if value == "" || value[0] != '0' {
			return false
		}
		if len(value) == 1 {
			return true
		}
		if value[1] != '.' {
			return false
		}
		return strings.Trim(value[2:], "0") == ""
	}
	return false
}
