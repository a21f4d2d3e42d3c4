package resource

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkServe answers a method's body (about 1.5 KB, as the directory's hottest
// route) from memory and stored (its encoded forms from the cache), in each form a
// client asks for, to a writer that discards it: the cost of Serve alone.
func BenchmarkServe(b *testing.B) {
	mem := New(JSON, bytes.Repeat([]byte(`{"slug":"a-method","name":"A method"},`), 40))
	dir := b.TempDir()
	for i, form := range [...][]byte{mem.Body, mem.Gzip(), mem.Brotli()} {
		if err := os.WriteFile(filepath.Join(dir, "m"+suffixes[i]), form, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	stored := mem.Stored(NewStore(dir, NewCache(8)), "m")
	for _, res := range []struct {
		name string
		res  *Resource
	}{{"memory", mem}, {"stored", stored}} {
		for _, ae := range []string{"identity", "gzip", "br"} {
			b.Run(res.name+"/"+ae, func(b *testing.B) {
				r := httptest.NewRequest(http.MethodGet, "/", nil)
				r.Header.Set("Accept-Encoding", ae)
				w := &discard{h: http.Header{}}
				b.ReportAllocs()
				for b.Loop() {
					clear(w.h)
					Serve(w, r, res.res, http.StatusOK)
				}
			})
		}
	}
}
