package resource

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/andybalholm/brotli"
)

// TestAcceptEncodingDecidesGzipByQValues pins the negotiation: a gzip entry decides
// over "*" in either order, a q of 0 in any spelling refuses, and an encoding we do
// not make, or no header at all, gets identity.
func TestAcceptEncodingDecidesGzipByQValues(t *testing.T) {
	for _, c := range []struct {
		ae   string
		gzip bool
	}{
		{"gzip", true},
		{"GZIP", true},
		{"gzip;q=0", false},
		{"gzip;q=0.0", false},
		{"gzip; Q = 0.000", false},
		{"gzip;q=0.001", true},
		{"gzip;q=1", true},
		{"*", true},
		{"*;q=0", false},
		{"*;q=0, gzip", true},
		{"gzip;q=0, *", false},
		{"identity", false},
		{"br", false},
		{"", false},
		{"deflate, gzip;q=0.5", true},
		{"br, gzip;q=0.8", true},
		{"gzip, deflate, br", true},
		{"gzipx, xgzip", false},
		{" , ;q=0, gzip ;q=0.9", true},
	} {
		h := http.Header{}
		if c.ae != "" {
			h.Set("Accept-Encoding", c.ae)
		}
		if got := AcceptsGzip(h); got != c.gzip {
			t.Errorf("Accept-Encoding %q: gzip %v, want %v", c.ae, got, c.gzip)
		}
	}
	// Several header lines are one list.
	h := http.Header{"Accept-Encoding": {"*;q=0", "gzip"}}
	if !AcceptsGzip(h) {
		t.Error("gzip on a second Accept-Encoding line was not taken")
	}
}

// TestIfNoneMatchComparesWeaklyAgainstEitherForm pins revalidation: "*", the identity
// tag or the gzip tag, with or without W/, alone or in a list, get 304; anything
// else gets the body.
func TestIfNoneMatchComparesWeaklyAgainstEitherForm(t *testing.T) {
	res := New(JSON, []byte(`{"ok":true}`))
	for _, c := range []struct {
		inm  []string
		want bool
	}{
		{[]string{"*"}, true},
		{[]string{res.ETag}, true},
		{[]string{res.GzipETag}, true},
		{[]string{"W/" + res.ETag}, true},
		{[]string{"W/" + res.GzipETag}, true},
		{[]string{`"other", ` + res.ETag}, true},
		{[]string{`"other",W/` + res.GzipETag + `, "more"`}, true},
		{[]string{`"other"`, res.ETag}, true},
		{[]string{`"other"`}, false},
		{[]string{`"other", W/"more"`}, false},
		{[]string{strings.Trim(res.ETag, `"`)}, false},
		{[]string{""}, false},
	} {
		if got := etagMatch(c.inm, res); got != c.want {
			t.Errorf("If-None-Match %q: match %v, want %v", c.inm, got, c.want)
		}
	}
}

func serve(res *Resource, status int, method string, hdr ...string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, "/", nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Set(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	Serve(w, r, res, status)
	return w
}

// TestServeAnswersEitherFormWithItsHeaders checks what each answer carries: the
// form's ETag, Content-Type, Content-Encoding and Content-Length, Vary always, no
// body to HEAD, and only the validators on a 304.
func TestServeAnswersEitherFormWithItsHeaders(t *testing.T) {
	body := bytes.Repeat([]byte(`{"a":"directory"}`), 50)
	res := New(JSON, body)
	plain := serve(res, http.StatusOK, http.MethodGet)
	if plain.Code != 200 || !bytes.Equal(plain.Body.Bytes(), body) ||
		plain.Header().Get("Etag") != res.ETag || plain.Header().Get("Content-Type") != JSON ||
		plain.Header().Get("Content-Length") != "850" || plain.Header().Get("Vary") != "Accept-Encoding" ||
		plain.Header().Get("Content-Encoding") != "" {
		t.Fatalf("identity: %d %v", plain.Code, plain.Header())
	}
	gz := serve(res, http.StatusOK, http.MethodGet, "Accept-Encoding", "gzip")
	if gz.Header().Get("Content-Encoding") != "gzip" || gz.Header().Get("Etag") != res.GzipETag ||
		gz.Header().Get("Content-Length") != strconv.Itoa(len(res.Gzip())) {
		t.Fatalf("gzip: %v", gz.Header())
	}
	zr, err := gzip.NewReader(gz.Body)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := io.ReadAll(zr); !bytes.Equal(b, body) {
		t.Error("the gzip form does not hold the body")
	}
	head := serve(res, http.StatusOK, http.MethodHead, "Accept-Encoding", "gzip")
	if head.Body.Len() != 0 || head.Header().Get("Content-Length") != gz.Header().Get("Content-Length") {
		t.Errorf("HEAD: %d bytes, %v", head.Body.Len(), head.Header())
	}
	nm := serve(res, http.StatusOK, http.MethodGet, "Accept-Encoding", "gzip", "If-None-Match", res.ETag)
	want := http.Header{"Etag": {res.GzipETag}, "Vary": {"Accept-Encoding"}}
	if nm.Code != http.StatusNotModified || nm.Body.Len() != 0 || !reflect.DeepEqual(nm.Header(), want) {
		t.Errorf("304: %d %v, want %v", nm.Code, nm.Header(), want)
	}
}

// TestServeGivesOtherStatusesNoETag checks the answer made for one request (a page
// saying what was not found): its status, no ETag, and never a 304.
func TestServeGivesOtherStatusesNoETag(t *testing.T) {
	res := New(HTML, []byte("<p>Nothing here</p>"))
	w := serve(res, http.StatusNotFound, http.MethodGet, "If-None-Match", "*", "Accept-Encoding", "gzip")
	if w.Code != http.StatusNotFound || w.Header().Get("Etag") != "" || w.Header().Get("Content-Encoding") != "gzip" ||
		w.Header().Get("Content-Type") != HTML {
		t.Errorf("404: %d %v", w.Code, w.Header())
	}
}

// TestServeKeepsTheCallersHeaders checks that caching set by the caller survives and
// that a resource without a content type leaves the caller's.
func TestServeKeepsTheCallersHeaders(t *testing.T) {
	res := New("", []byte("body"))
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	w := httptest.NewRecorder()
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Type", "text/plain")
	Serve(w, r, res, http.StatusOK)
	if w.Header().Get("Cache-Control") != "no-store" || w.Header().Get("Content-Type") != "text/plain" {
		t.Errorf("headers %v", w.Header())
	}
}

// TestIdentityResourceIsNeverServedGzipped checks a resource made for a client that
// does not take gzip: it has no gzip bytes, but its gzip tag still revalidates.
func TestIdentityResourceIsNeverServedGzipped(t *testing.T) {
	body := []byte(`{"object":"search"}`)
	res, full := NewIdentity(JSON, body), New(JSON, body)
	if res.Gzip() != nil || res.ETag != full.ETag || res.GzipETag != full.GzipETag {
		t.Fatalf("identity resource %+v", res)
	}
	w := serve(res, http.StatusOK, http.MethodGet, "Accept-Encoding", "gzip")
	if w.Header().Get("Content-Encoding") != "" || w.Body.String() != string(body) || w.Header().Get("Etag") != res.ETag {
		t.Errorf("gzip asked of an identity resource: %v %q", w.Header(), w.Body)
	}
	if w := serve(res, http.StatusOK, http.MethodGet, "If-None-Match", full.GzipETag); w.Code != http.StatusNotModified {
		t.Errorf("gzip tag on an identity resource: %d", w.Code)
	}
}

// TestServeDoesNotAllocate holds Serve to what the directory's fast path needs.
func TestServeDoesNotAllocate(t *testing.T) {
	res := New(JSON, []byte(`{"object":"list"}`))
	w := &discard{h: http.Header{}}
	for _, hdr := range []http.Header{
		{},
		{"Accept-Encoding": {"gzip, deflate, br"}},
		{"Accept-Encoding": {"*;q=0, gzip;q=0.5"}},
		{"Accept-Encoding": {"br;q=0.9, gzip"}},
		{"If-None-Match": {`"other", W/` + res.GzipETag}},
	} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.Header = hdr
		if n := testing.AllocsPerRun(100, func() { clear(w.h); Serve(w, r, res, http.StatusOK) }); n != 0 {
			t.Errorf("%v: %v allocations", hdr, n)
		}
	}
}

type discard struct{ h http.Header }

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) Write(p []byte) (int, error) { return len(p), nil }
func (d *discard) WriteHeader(int)             {}

// TestEncodingPrefersTheHeavierFormAndBrotliOnATie pins the choice between the forms
// a resource has: each coding weighs its own q, else that of "*"; q=0 refuses; the
// heavier wins, brotli on a tie; identity otherwise.
func TestEncodingPrefersTheHeavierFormAndBrotliOnATie(t *testing.T) {
	full := New(JSON, bytes.Repeat([]byte(`{"a":"directory"}`), 50))
	noBrotli := NewLevels(JSON, full.Body, Levels{Gzip: 1})
	for _, c := range []struct {
		ae         string
		full, nobr string
	}{
		{"", "", ""},
		{"identity", "", ""},
		{"br", "br", ""},
		{"gzip", "gzip", "gzip"},
		{"gzip, deflate, br", "br", "gzip"},
		{"br;q=0.5, gzip", "gzip", "gzip"},
		{"gzip;q=0.5, br;q=0.5", "br", "gzip"},
		{"br;q=0, *", "gzip", "gzip"},
		{"*", "br", "gzip"},
		{"*;q=0, br", "br", ""},
		{"*;q=0, gzip", "gzip", "gzip"},
		{"BR;Q=0.000, gzip;q=0", "", ""},
		{"deflate", "", ""},
		{"br;q=abc", "br", ""},
	} {
		h := http.Header{}
		if c.ae != "" {
			h.Set("Accept-Encoding", c.ae)
		}
		if got := Encoding(h, full); got != c.full {
			t.Errorf("Accept-Encoding %q: %q, want %q", c.ae, got, c.full)
		}
		if got := Encoding(h, noBrotli); got != c.nobr {
			t.Errorf("Accept-Encoding %q without a brotli form: %q, want %q", c.ae, got, c.nobr)
		}
	}
}

// TestServeAnswersBrotliThatDecodesToTheBody checks the brotli form: its headers, that
// it holds the body, and that its tag revalidates any form.
func TestServeAnswersBrotliThatDecodesToTheBody(t *testing.T) {
	body := bytes.Repeat([]byte(`{"a":"directory"}`), 50)
	res := New(JSON, body)
	w := serve(res, http.StatusOK, http.MethodGet, "Accept-Encoding", "gzip, br")
	if w.Header().Get("Content-Encoding") != "br" || w.Header().Get("Etag") != res.BrotliETag ||
		w.Header().Get("Content-Length") != strconv.Itoa(len(res.Brotli())) || len(res.Brotli()) >= len(res.Gzip()) {
		t.Fatalf("brotli: %v (%d bytes, gzip %d)", w.Header(), len(res.Brotli()), len(res.Gzip()))
	}
	if b, err := io.ReadAll(brotli.NewReader(w.Body)); err != nil || !bytes.Equal(b, body) {
		t.Fatalf("the brotli form does not hold the body: %v", err)
	}
	if w := serve(res, http.StatusOK, http.MethodGet, "If-None-Match", "W/"+res.BrotliETag); w.Code != http.StatusNotModified {
		t.Errorf("brotli tag: %d", w.Code)
	}
	again := New(JSON, body)
	if !bytes.Equal(again.Brotli(), res.Brotli()) {
		t.Error("the brotli bytes differ between two encodings of one body")
	}
}
