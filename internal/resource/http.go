package resource

import (
	"net/http"
	"os"
	"strconv"
	"strings"
)

// Header values every answer shares; net/http only reads them.
var (
	hdrVary   = []string{"Accept-Encoding"}
	hdrGzip   = []string{"gzip"}
	hdrBrotli = []string{"br"}
)

// Serve answers r with res and status: brotli or gzip when the client takes it (see
// Encoding), Vary, Content-Type and Content-Length, and no body to a HEAD. Only a 200
// carries the representation's ETag and becomes a 304 when If-None-Match names it:
// another status (a page saying what was not found, or why a search failed) answers
// this request alone. Headers the caller set before, such as caching and CORS, are
// kept; a 304 carries no Content-Type, as net/http would drop it anyway. Serving
// allocates nothing, so the directory's hottest routes stay free of garbage.
//
// The error, when not nil, is that of a resource whose body is left in its file (see
// NewBodyStore) when the file no longer holds it: nothing was written, for the caller
// to answer it.
func Serve(w http.ResponseWriter, r *http.Request, res *Resource, status int) error {
	h := w.Header()
	form, coding := identity, []string(nil)
	switch Encoding(r.Header, res) {
	case "br":
		form, coding = brotliForm, hdrBrotli
	case "gzip":
		form, coding = gzipForm, hdrGzip
	}
	h["Vary"] = hdrVary
	if status == http.StatusOK {
		h["Etag"] = res.header(hETag + form)
		if inm := r.Header["If-None-Match"]; len(inm) > 0 && etagMatch(inm, res) {
			w.WriteHeader(http.StatusNotModified)
			return nil
		}
	}
	var (
		body []byte
		file *os.File
	)
	if res.at != nil && (form != identity || res.Body == nil) {
		var err error
		if body, file, err = res.form(form, true, true); err != nil && form != identity {
			// A stored form that cannot be had is not offered: the body goes instead.
			form, coding = identity, nil
			if status == http.StatusOK {
				h["Etag"] = res.header(hETag)
			}
			if body, err = res.Body, nil; body == nil {
				body, file, err = res.form(identity, true, true)
			}
		}
		if err != nil {
			delete(h, "Etag")
			return err
		}
		if file != nil && r.Method == http.MethodHead {
			file.Close()
		}
	}
	if res.ContentType != "" {
		h["Content-Type"] = res.header(hType)
	}
	if coding != nil {
		h["Content-Encoding"] = coding
	}
	h["Content-Length"] = res.header(hLength + form)
	w.WriteHeader(status)
	switch {
	case r.Method == http.MethodHead:
	case res.InFiles():
		res.mem.files[form].send(w, r)
	case file != nil:
		sendFile(w, r, file, res.size(form))
	case body != nil:
		w.Write(body)
	default:
		w.Write([...][]byte{res.Body, res.Gzip(), res.Brotli()}[form])
	}
	return nil
}

// etagMatch applies If-None-Match's weak comparison: any listed tag, with or without
// W/, that names any representation of the resource, or "*". Every form's tag matches
// because a cache may hold another form from before its client's Accept-Encoding
// changed, and all forms carry the same content.
func etagMatch(values []string, res *Resource) bool {
	for _, v := range values {
		for v != "" {
			var tag string
			tag, v, _ = strings.Cut(v, ",")
			tag = strings.TrimPrefix(strings.TrimSpace(tag), "W/")
			if tag == "*" || tag == res.ETag || tag == res.GzipETag || tag == res.BrotliETag {
				return true
			}
		}
	}
	return false
}

// Encoding is the content coding Serve answers r with for res: "br", "gzip" or ""
// (identity). Each coding's weight is its own entry's q, else that of "*", else 0; a
// q of 0 refuses; of the forms res has, the one of higher weight wins, brotli on a
// tie (it is the smaller). Identity, which every client takes, is the answer
// otherwise.
func Encoding(h http.Header, res *Resource) string {
	br, gz := weights(h)
	switch {
	case res.has(brotliForm) && br > 0 && (br >= gz || !res.has(gzipForm)):
		return "br"
	case res.has(gzipForm) && gz > 0:
		return "gzip"
	}
	return ""
}

// AcceptsGzip reports whether a request's Accept-Encoding takes gzip, for an answer
// made for one request and offered as gzip or identity only.
func AcceptsGzip(h http.Header) bool {
	_, gz := weights(h)
	return gz > 0
}

// weights reads Accept-Encoding: the weights of br and of gzip. An entry naming a
// coding decides over "*", whatever their order; several header lines are one list.
func weights(h http.Header) (br, gz float64) {
	br, gz, star := -1.0, -1.0, -1.0
	for _, v := range h["Accept-Encoding"] {
		for v != "" {
			var entry string
			entry, v, _ = strings.Cut(v, ",")
			coding, params, _ := strings.Cut(entry, ";")
			coding = strings.TrimSpace(coding)
			switch {
			case strings.EqualFold(coding, "br"):
				br = max(br, quality(params))
			case strings.EqualFold(coding, "gzip"):
				gz = max(gz, quality(params))
			case coding == "*":
				star = max(star, quality(params))
			}
		}
	}
	if br < 0 {
		br = max(star, 0)
	}
	if gz < 0 {
		gz = max(star, 0)
	}
	return br, gz
}

// quality reads an entry's q ("q=0.5", "Q = 0.000"). A missing or malformed q counts
// as 1: taken, as it always has been.
func quality(params string) float64 {
	for params != "" {
		var p string
		p, params, _ = strings.Cut(params, ";")
		name, value, ok := strings.Cut(p, "=")
		if !ok || !strings.EqualFold(strings.TrimSpace(name), "q") {
			continue
		}
		q, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil || q < 0 || q > 1 {
			return 1
		}
		return q
	}
	return 1
}
