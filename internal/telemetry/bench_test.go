package telemetry_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/waystation/waystation/internal/telemetry"
)

// BenchmarkObserved is what the middleware adds to a request whose handler costs
// nothing: compare "bare" with the others in one run. "metrics" is the production
// default at LOG_LEVEL=WARN (the access line filtered out), "metrics+access-log" logs
// every request as JSON.
func BenchmarkObserved(b *testing.B) {
	r := chi.NewRouter()
	r.Use(telemetry.ChiRoute)
	r.Get("/things/{id}", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) })
	quiet, _ := telemetry.NewLogger(io.Discard, "json", slog.LevelWarn)
	loud, _ := telemetry.NewLogger(io.Discard, "json", slog.LevelInfo)
	for _, c := range []struct {
		name string
		h    http.Handler
	}{
		{"bare", r},
		{"metrics", telemetry.HTTP{AccessLog: quiet, Metrics: telemetry.NewMetrics()}.Wrap(r)},
		{"metrics+access-log", telemetry.HTTP{AccessLog: loud, Metrics: telemetry.NewMetrics()}.Wrap(r)},
	} {
		b.Run(c.name, func(b *testing.B) {
			req := httptest.NewRequest("GET", "/things/7", nil)
			req.Header.Set("X-Request-Id", "bench-1")
			w := httptest.NewRecorder()
			b.ReportAllocs()
			for b.Loop() {
				w.Body.Reset()
				c.h.ServeHTTP(w, req)
			}
		})
	}
}
