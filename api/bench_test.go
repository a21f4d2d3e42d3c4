package api_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/waystation/waystation/api"
	"github.com/waystation/waystation/generator"
	"github.com/waystation/waystation/internal/postgres/pgtest"
)

// realCatalogServer serves the real 639-method catalog, imported into a fresh
// database, through the real router.
func realCatalogServer(b *testing.B) (http.Handler, *generator.Holder) {
	b.Helper()
	ctx := context.Background()
	store, _ := pgtest.LoadRealCatalog(b)
	snaps := generator.NewHolder()
	if err := snaps.Refresh(ctx, store); err != nil {
		b.Fatal(err)
	}
	return api.NewServer(api.Config{}, slog.New(slog.NewTextHandler(io.Discard, nil)), snaps, store), snaps
}

// discard is a ResponseWriter that keeps nothing, so the benchmarks measure the
// handler and not a recorder's buffer.
type discard struct {
	h      http.Header
	status int
}

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) Write(p []byte) (int, error) { return len(p), nil }
func (d *discard) WriteHeader(s int)           { d.status = s }

func benchRoute(b *testing.B, srv http.Handler, target string, header ...string) {
	req := httptest.NewRequest(http.MethodGet, target, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	w := &discard{h: http.Header{}}
	srv.ServeHTTP(w, req)
	if w.status != http.StatusOK {
		b.Fatalf("%s: status %d", target, w.status)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		clear(w.h)
		srv.ServeHTTP(w, req)
	}
}

func BenchmarkRealCatalog(b *testing.B) {
	srv, snaps := realCatalogServer(b)
	slug := snaps.Current().Methods()[0].Slug
	b.Run("unfiltered list", func(b *testing.B) { benchRoute(b, srv, services) })
	b.Run("unfiltered list gzip", func(b *testing.B) { benchRoute(b, srv, services, "Accept-Encoding", "gzip") })
	b.Run("filtered list", func(b *testing.B) { benchRoute(b, srv, services+"?category=blockchain,finance&payable=true&limit=20") })
	b.Run("slug", func(b *testing.B) { benchRoute(b, srv, services+"/"+slug) })
}
