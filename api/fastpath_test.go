package api

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
	"time"

	"github.com/waystation/waystation/internal/directory"
)

type fixedSnapshot struct{ s *directory.Snapshot }

func (f fixedSnapshot) Current() *directory.Snapshot { return f.s }

func fastPathServer(t testing.TB) *Server {
	t.Helper()
	trust := directory.Trust{Verdict: directory.VerdictUnknown, Advisory: true}
	methods := []directory.Method{
		{Slug: "weather-now", Name: "Weather now", Provider: "p", Hostname: "api.weather.example", Category: "weather", Kind: "x402", Trust: trust},
		{Slug: "block-height", Name: "Block height", Provider: "p", Hostname: "xn--bcher-kva.example", Category: "blockchain", Kind: "x402", Trust: trust},
	}
	merchants := []directory.Merchant{
		{Hostname: "api.weather.example", Providers: []string{"p"}, Trust: trust},
		{Hostname: "xn--bcher-kva.example", Providers: []string{"p"}, Trust: trust},
	}
	snap, err := directory.NewSnapshot(time.Unix(1, 0), methods, merchants)
	if err != nil {
		t.Fatal(err)
	}
	return NewServer(Config{}, slog.New(slog.NewTextHandler(io.Discard, nil)), fixedSnapshot{snap}, nil)
}

// TestSnapshotFastPathAnswersAsTheRouter sends every kind of request the fast path in
// ServeHTTP looks at, hits and near misses, to ServeHTTP and to the router alone: the
// status, headers and body must be the same.
func TestSnapshotFastPathAnswersAsTheRouter(t *testing.T) {
	t.Parallel()
	s := fastPathServer(t)
	const dir = BasePath + "/api/public/v1"
	type req struct{ method, target, header, value string }
	var reqs []req
	for _, target := range []string{
		dir + "/services", dir + "/services?", dir + "/services?limit=1", dir + "/services?verified=true",
		dir + "/services/", dir + "/services//", dir + "/services/weather-now", dir + "/services/weather-now/",
		dir + "/services/weather-now?x=1", dir + "/services/Weather-Now", dir + "/services/no-such",
		dir + "/services/weather%2Dnow", dir + "/services/weather%2Fnow", dir + "/services/a/b",
		dir + "/merchants/api.weather.example", dir + "/merchants/API.Weather.Example.",
		dir + "/merchants/api%2Eweather%2Eexample", dir + "/merchants/b%C3%BCcher.example", dir + "/merchants/bücher.example",
		dir + "/merchants/xn--bcher-kva.example", dir + "/merchants/", dir + "/merchants/bad_host",
		dir + "/merchants/unknown.example", dir + "/merchants/127.0.0.1", dir + "/merchants/api.weather.example?verified",
		dir + "/merchants/%25", dir + "//services", BasePath + "/api/public/v1/services/../services",
	} {
		for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodPost, "get"} {
			reqs = append(reqs, req{method: m, target: target})
		}
		reqs = append(reqs,
			req{http.MethodGet, target, "Accept-Encoding", "gzip, deflate"},
			req{http.MethodGet, target, "Accept-Encoding", "gzip;q=0"},
			req{http.MethodHead, target, "Accept-Encoding", "gzip"},
			req{http.MethodGet, target, "If-None-Match", "*"},
			req{http.MethodGet, target, "If-None-Match", `"other"`})
	}
	for _, q := range reqs {
		do := func(h http.Handler) *httptest.ResponseRecorder {
			r := httptest.NewRequest(q.method, q.target, nil)
			if q.header != "" {
				r.Header.Set(q.header, q.value)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			return w
		}
		fast, routed := do(s), do(s.router)
		sameBody := fast.Body.String() == routed.Body.String()
		if fast.Code >= 400 {
			// A problem names its request, with an id that differs from call to call.
			for _, w := range []*httptest.ResponseRecorder{fast, routed} {
				w.Header().Del("X-Request-Id")
				w.Header().Del("Content-Length")
			}
			sameBody = true
		}
		if fast.Code != routed.Code || !reflect.DeepEqual(fast.Header(), routed.Header()) || !sameBody {
			t.Errorf("%s %s %s: %s\nServeHTTP: %d %v %.200s\nrouter:    %d %v %.200s", q.method, q.target, q.header, q.value,
				fast.Code, fast.Header(), fast.Body, routed.Code, routed.Header(), routed.Body)
		}
	}
}

// TestSnapshotRoutesDoNotAllocate holds the fast path to its point: the unfiltered
// list, a method and a merchant answer without a single allocation of their own.
func TestSnapshotRoutesDoNotAllocate(t *testing.T) {
	s := fastPathServer(t)
	const dir = BasePath + "/api/public/v1"
	for _, target := range []string{dir + "/services", dir + "/services/weather-now", dir + "/merchants/api.weather.example"} {
		for _, gzip := range []string{"", "gzip"} {
			r := httptest.NewRequest(http.MethodGet, target, nil)
			r.Header.Set("Accept-Encoding", gzip)
			w := &headerOnly{h: http.Header{}}
			allocs := testing.AllocsPerRun(100, func() {
				clear(w.h)
				s.ServeHTTP(w, r)
			})
			if w.status != http.StatusOK || allocs != 0 {
				t.Errorf("%s (Accept-Encoding %q): status %d, %v allocations a request", target, gzip, w.status, allocs)
			}
		}
	}
}

// headerOnly is a ResponseWriter that keeps the headers and status and drops the body.
type headerOnly struct {
	h      http.Header
	status int
}

func (w *headerOnly) Header() http.Header         { return w.h }
func (w *headerOnly) Write(p []byte) (int, error) { return len(p), nil }
func (w *headerOnly) WriteHeader(s int)           { w.status = s }
