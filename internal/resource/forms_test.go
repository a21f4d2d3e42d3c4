package resource

import (
	"bytes"
	"crypto/sha256"
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
	res := NewIdentity(JSON, body).Published(len(mem.Gzip()), len(mem.Brotli()))
	if res.Gzip() != nil || res.Brotli() != nil || res.ETag != mem.ETag || res.GzipETag != mem.GzipETag || res.BrotliETag != mem.BrotliETag {
		t.Fatalf("published: gzip held %v, brotli held %v, ETags %s %s %s", res.Gzip() != nil, res.Brotli() != nil, res.ETag, res.GzipETag, res.BrotliETag)
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
	if !bytes.Equal(enc.Gzip(), mem.Gzip()) || !bytes.Equal(enc.Brotli(), mem.Brotli()) {
		t.Errorf("encoded again without its files: %d and %d bytes, New's %d and %d", len(enc.Gzip()), len(enc.Brotli()), len(mem.Gzip()), len(mem.Brotli()))
	}
}

// TestBrotliWriterMakesBrotlisBytes writes a body to a BrotliWriter in parts of many
// sizes, from a byte to more than a block, and checks that it makes the bytes Brotli
// makes of the body whole: at quality 1, which a body past LargeBody is compressed
// at, and where the encoder compresses each write as it comes, for a body of more
// than a block; and at the default quality for a small one.
func TestBrotliWriterMakesBrotlisBytes(t *testing.T) {
	large := make([]byte, 0, BrotliBlock+BrotliBlock/2+100)
	for i := 0; len(large) < cap(large)-100; i++ {
		large = fmt.Appendf(large, `{"slug":"method-%d","price":%d,"score":%d},`, i, i*7919%100003, i*104729%997)
	}
	small := bytes.Repeat([]byte(`{"slug":"a-method","b":[1,2,3]},`), 400)
	for _, c := range []struct {
		body    []byte
		quality int
	}{{large, LargeBrotli}, {small, Default.Brotli}} {
		want := Brotli(c.body, c.quality)
		for _, part := range []int{1 << 30, BrotliBlock, BrotliBlock + 1, 300 << 10, 4093, 1} {
			if part == 1 && len(c.body) > 1<<20 {
				continue // a byte at a time is slow at this size
			}
			bw := NewBrotliWriter(c.quality)
			for rest := c.body; len(rest) > 0; {
				k := min(part, len(rest))
				if n, err := bw.Write(rest[:k]); n != k || err != nil {
					t.Fatalf("write: %d of %d, %v", n, k, err)
				}
				rest = rest[k:]
			}
			if got := bw.Bytes(); !bytes.Equal(got, want) {
				t.Errorf("%d bytes at quality %d written %d at a time: %d bytes of brotli, Brotli makes %d", len(c.body), c.quality,
					part, len(got), len(want))
			}
		}
	}
}

// TestAnUnheldResourceIsAnsweredFromItsFilesAsNewIs makes a resource from a body's
// hash and length and its forms, without the body, and checks that its ETags and
// lengths are New's, and that answered from its published files it sends what New's
// sends.
func TestAnUnheldResourceIsAnsweredFromItsFilesAsNewIs(t *testing.T) {
	body := bytes.Repeat([]byte(`{"slug":"a-method","b":[1,2,3]},`), 400)
	mem := New(JSON, body)
	res := NewFormsUnheld(JSON, sha256.Sum256(body), len(body), mem.Gzip(), mem.Brotli())
	if res.Body != nil || res.ETag != mem.ETag || res.GzipETag != mem.GzipETag || res.BrotliETag != mem.BrotliETag ||
		res.lengths != mem.lengths || res.InFiles() {
		t.Fatalf("unheld: %+v, New: %+v", res, mem)
	}
	files, err := res.FromFiles(published(t, mem))
	if err != nil {
		t.Fatal(err)
	}
	if !files.InFiles() {
		t.Fatal("answered from its files, it says it is not")
	}
	for _, c := range formsOf(mem) {
		w := serve(files, http.StatusOK, http.MethodGet, "Accept-Encoding", c.ae)
		if !bytes.Equal(w.Body.Bytes(), c.want) || w.Header().Get("Etag") != c.etag || w.Header().Get("Content-Length") != strconv.Itoa(len(c.want)) {
			t.Errorf("%s: %d bytes, %v", c.ae, w.Body.Len(), w.Header())
		}
	}
}
