package resource

import (
	"bytes"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"testing"
)

// TestPublishedAnswersAsNewDoes makes a resource from a body's ETags alone and the
// sizes of its published forms, as a server that starts from a published site does,
// and checks that, stored where they are, it answers every form with the headers and
// bytes New's does, and that its form read again from the body (its file gone) is
// New's: the levels are New's too.
func TestPublishedAnswersAsNewDoes(t *testing.T) {
	// One body of a method's size, and one past LargeBody, whose brotli New makes at
	// LargeBrotli, as Published assumes.
	large := make([]byte, 0, LargeBody+LargeBody/4)
	for i := 0; len(large) <= LargeBody; i++ {
		large = fmt.Appendf(large, `{"slug":"method-%d","price":%d,"score":%d},`, i, i*7919%100003, i*104729%997)
	}
	for _, body := range [][]byte{bytes.Repeat([]byte(`{"slug":"a-method","b":[1,2,3]},`), 40), large} {
		t.Run(strconv.Itoa(len(body)), func(t *testing.T) { publishedAnswersAsNewDoes(t, body) })
	}
}

func publishedAnswersAsNewDoes(t *testing.T, body []byte) {
	mem := New(JSON, body)
	path := published(t, mem)
	res := NewIdentity(JSON, body).Published(len(mem.Gzip), len(mem.Brotli))
	if res.Gzip != nil || res.Brotli != nil || res.ETag != mem.ETag || res.GzipETag != mem.GzipETag || res.BrotliETag != mem.BrotliETag {
		t.Fatalf("published: gzip held %v, brotli held %v, ETags %s %s %s", res.Gzip != nil, res.Brotli != nil, res.ETag, res.GzipETag, res.BrotliETag)
	}
	stored := res.Stored(NewStore(filepath.Dir(path), NewCache(8)), filepath.Base(path))
	for _, c := range formsOf(mem) {
		w := serveStored(stored, http.MethodGet, c.ae, "")
		if !bytes.Equal(w.Body.Bytes(), c.want) || w.Header().Get("Content-Encoding") != c.coding || w.Header().Get("Etag") != c.etag ||
			w.Header().Get("Content-Length") != strconv.Itoa(len(c.want)) {
			t.Errorf("%s: %d bytes, %v", c.ae, w.Body.Len(), w.Header())
		}
	}
	gone := res.Stored(NewStore(t.TempDir(), NewCache(8)), "gone")
	enc, err := gone.Encoded()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(enc.Gzip, mem.Gzip) || !bytes.Equal(enc.Brotli, mem.Brotli) {
		t.Errorf("encoded again without its files: %d and %d bytes, New's %d and %d", len(enc.Gzip), len(enc.Brotli), len(mem.Gzip), len(mem.Brotli))
	}
}
