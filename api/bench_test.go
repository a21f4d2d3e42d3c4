package api_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strconv"
	"testing"

	"github.com/waystation/waystation/api"
	"github.com/waystation/waystation/generator"
	"github.com/waystation/waystation/internal/directory"
	"github.com/waystation/waystation/internal/embedding"
	"github.com/waystation/waystation/internal/postgres/pgtest"
	"github.com/waystation/waystation/internal/ratelimit"
	"github.com/waystation/waystation/internal/search"
)

// catalogServer serves the real catalog, imported into a fresh database and grown to
// total methods with synthetic ones when total is above its size, through the real
// router, with search on the builtin model and a per-caller limit that never refuses;
// with embed, every method has its vector, as search needs.
func catalogServer(b *testing.B, total int, embed bool) (http.Handler, *directory.Snapshot) {
	b.Helper()
	ctx := context.Background()
	store, _ := pgtest.LoadRealCatalog(b)
	if err := pgtest.GrowCatalog(ctx, store, total); err != nil {
		b.Fatal(err)
	}
	snaps := generator.NewHolder()
	if err := snaps.Refresh(ctx, store, nil); err != nil {
		b.Fatal(err)
	}
	builtin := embedding.Lexhash{}
	model, err := store.RegisterModel(ctx, search.ModelRecord{ID: builtin.Model(), Dimensions: builtin.Dimensions(), Floor: search.BuiltinFloor, Margin: search.BuiltinMargin})
	if err != nil {
		b.Fatal(err)
	}
	if embed {
		if _, err := search.Sync(ctx, store, builtin); err != nil {
			b.Fatal(err)
		}
	}
	engine, err := search.NewEngine(search.Config{}, store, &search.Model{Embedder: builtin, Record: model}, nil)
	if err != nil {
		b.Fatal(err)
	}
	limiter := ratelimit.NewLimiter(1e9, 1e9, 100, nil)
	srv := api.NewServer(api.Config{}, slog.New(slog.NewTextHandler(io.Discard, nil)), snaps, store, api.WithSearch(&search.Service{Engine: engine, Limiter: limiter}))
	return srv, snaps.Current()
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

// benchRoutes measures each directory route the load run of make bench measures,
// on the first method of the list and its merchant.
func benchRoutes(b *testing.B, srv http.Handler, snap *directory.Snapshot) {
	m := snap.Methods()[0]
	b.Run("unfiltered list", func(b *testing.B) { benchRoute(b, srv, services) })
	b.Run("unfiltered list gzip", func(b *testing.B) { benchRoute(b, srv, services, "Accept-Encoding", "gzip") })
	b.Run("slug", func(b *testing.B) { benchRoute(b, srv, services+"/"+m.Slug) })
	b.Run("merchant", func(b *testing.B) { benchRoute(b, srv, base+"/api/public/v1/merchants/"+m.Hostname) })
	b.Run("filtered list", func(b *testing.B) { benchRoute(b, srv, services+"?category=blockchain,finance&payable=true&limit=20") })
	b.Run("exact search", func(b *testing.B) { benchRoute(b, srv, services+"?q="+url.QueryEscape(m.Slug)) })
}

// BenchmarkRealCatalog measures the directory routes on the real catalog.
func BenchmarkRealCatalog(b *testing.B) {
	srv, snap := catalogServer(b, 0, false)
	benchRoutes(b, srv, snap)
}

// BenchmarkCatalog100k measures the directory routes on the real catalog grown to
// 100,000 methods. Building it takes a while, so it runs only with
// WAYSTATION_BENCH_100K set (make bench sets it).
func BenchmarkCatalog100k(b *testing.B) {
	if os.Getenv("WAYSTATION_BENCH_100K") == "" {
		b.Skip("set WAYSTATION_BENCH_100K=1 (make bench) to run the 100k-method benchmark")
	}
	srv, snap := catalogServer(b, 100_000, false)
	benchRoutes(b, srv, snap)
}

// BenchmarkSearch measures a search through the real router on the real catalog: a
// repeated query (its neighbours come from the engine's cache), a repeated one that
// nothing in the catalog answers, and a novel one (embedded, then ranked by pgvector).
func BenchmarkSearch(b *testing.B) {
	srv, _ := catalogServer(b, 0, true)
	for _, c := range []struct{ name, q, match string }{
		{"repeated", "ethereum block height", "semantic"},
		{"repeated unmatched", "bake a chocolate cake", "none"},
	} {
		b.Run(c.name, func(b *testing.B) {
			target := services + "?q=" + url.QueryEscape(c.q)
			rec := httptest.NewRecorder()
			srv.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, target, nil))
			var body struct{ Match string }
			if json.Unmarshal(rec.Body.Bytes(), &body); body.Match != c.match {
				b.Fatalf("%q: match %q, want %q", c.q, body.Match, c.match)
			}
			benchRoute(b, srv, target)
		})
	}
	b.Run("novel", func(b *testing.B) {
		w := &discard{h: http.Header{}}
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			clear(w.h)
			srv.ServeHTTP(w, httptest.NewRequest(http.MethodGet, services+"?q="+url.QueryEscape("token price by ticker "+strconv.Itoa(i)), nil))
			if w.status != http.StatusOK {
				b.Fatalf("status %d", w.status)
			}
		}
	})
}
