package resource

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/andybalholm/brotli"
)

// published writes res's forms as a site does: path, path.gz and path.br.
func published(t *testing.T, res *Resource) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "index.json")
	for i, b := range [...][]byte{res.Body, res.Gzip(), res.Brotli()} {
		if err := os.WriteFile(path+[...]string{"", ".gz", ".br"}[i], b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// TestFromFilesAnswersAsFromMemory checks that a resource sent from its files answers
// every form, HEAD and revalidation with the headers and bytes of the one in memory,
// to many clients at once (each needs a file offset of its own), and goes on sending
// what it opened after the files are replaced.
func TestFromFilesAnswersAsFromMemory(t *testing.T) {
	body := bytes.Repeat([]byte(`{"a":"directory","b":[1,2,3]},`), 20000)
	mem := New(JSON, body)
	path := published(t, mem)
	res, err := mem.FromFiles(path)
	if err != nil {
		t.Fatal(err)
	}
	if res.Body != nil || res.ETag != mem.ETag {
		t.Fatalf("from files: body held %v, ETag %s", res.Body != nil, res.ETag)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		Serve(w, r, res, http.StatusOK)
	}))
	defer srv.Close()
	get := func(method, ae, inm string) (*http.Response, []byte) {
		req, _ := http.NewRequest(method, srv.URL, nil)
		req.Header.Set("Accept-Encoding", ae)
		if inm != "" {
			req.Header.Set("If-None-Match", inm)
		}
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Error(err)
			return nil, nil
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Error(err)
		}
		return resp, b
	}
	check := func() {
		var wg sync.WaitGroup
		for range 16 {
			wg.Go(func() {
				for _, c := range formsOf(mem) {
					resp, b := get(http.MethodGet, c.ae, "")
					if resp == nil {
						return
					}
					if !bytes.Equal(b, c.want) || resp.Header.Get("Content-Encoding") != c.coding || resp.Header.Get("Etag") != c.etag ||
						resp.Header.Get("Content-Length") != strconv.Itoa(len(c.want)) {
						t.Errorf("%s: %d bytes, %v", c.ae, len(b), resp.Header)
					}
				}
			})
		}
		wg.Wait()
	}
	check()
	if resp, b := get(http.MethodHead, "gzip", ""); resp.StatusCode != 200 || len(b) != 0 || resp.ContentLength != int64(len(mem.Gzip())) {
		t.Errorf("HEAD: %d, %d bytes, length %d", resp.StatusCode, len(b), resp.ContentLength)
	}
	if resp, _ := get(http.MethodGet, "gzip", mem.ETag); resp.StatusCode != http.StatusNotModified || resp.Header.Get("Etag") != mem.GzipETag {
		t.Errorf("If-None-Match: %d %v", resp.StatusCode, resp.Header)
	}
	// A publisher removes and writes files anew, never in place.
	for _, x := range []string{"", ".gz", ".br"} {
		if err := os.Remove(path + x); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path+x, []byte("another snapshot's"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	check()
	zr, err := gzip.NewReader(bytes.NewReader(mem.Gzip()))
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := io.ReadAll(zr); !bytes.Equal(b, body) {
		t.Error("the gzip form does not hold the body")
	}
	if b, _ := io.ReadAll(brotli.NewReader(bytes.NewReader(mem.Brotli()))); !bytes.Equal(b, body) {
		t.Error("the brotli form does not hold the body")
	}
}

// TestFromFilesRefusesFilesOfAnotherSize checks that a file that cannot hold the form
// is refused rather than served with a wrong Content-Length.
func TestFromFilesRefusesFilesOfAnotherSize(t *testing.T) {
	mem := New(JSON, []byte(`{"object":"list"}`))
	path := published(t, mem)
	if err := os.WriteFile(path+".gz", []byte("short"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := mem.FromFiles(path); err == nil {
		t.Error("a gzip file of another size was taken")
	}
	if _, err := mem.FromFiles(filepath.Join(t.TempDir(), "none")); err == nil {
		t.Error("a missing file was taken")
	}
}
