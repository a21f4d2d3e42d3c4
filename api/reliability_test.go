package api_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waystation/waystation/api"
	"github.com/waystation/waystation/api/openapitest"
	"github.com/waystation/waystation/generator"
	"github.com/waystation/waystation/internal/app"
	"github.com/waystation/waystation/internal/auth"
	"github.com/waystation/waystation/internal/embedding"
	"github.com/waystation/waystation/internal/memory"
	"github.com/waystation/waystation/internal/postgres"
	"github.com/waystation/waystation/internal/problem"
	"github.com/waystation/waystation/internal/request"
	"github.com/waystation/waystation/internal/session"
)

// TestListThroughputHoldsWhileTheEmbeddingProviderFailsOrStalls runs list requests
// beside a steady stream of novel searches, first with a healthy provider, then with
// one that stalls and one that fails: search answers degraded from the builtin model
// and never an error, and the list keeps at least half its baseline throughput. The
// bound compares phases of the same test, so a slow machine slows all of them.
func TestListThroughputHoldsWhileTheEmbeddingProviderFailsOrStalls(t *testing.T) {
	p := newProvider(t)
	e := newSearchEnv(t, searchOptions{provider: p})
	lists := []string{services, services + "?category=weather", services + "?limit=5&offset=3", services + "?verdict=proceed,caution&payable=true"}
	const listers, searchers, phase = 3, 3, 600 * time.Millisecond
	var novel atomic.Int64
	run := func(mode string) (listed, searched int64) {
		p.set(mode)
		var wg sync.WaitGroup
		var nl, ns atomic.Int64
		stop := time.Now().Add(phase)
		for i := range listers {
			wg.Go(func() {
				for n := i; time.Now().Before(stop); n++ {
					r := e.get(lists[n%len(lists)])
					if r.StatusCode != 200 {
						t.Errorf("%s: list %d while the provider is %q", lists[n%len(lists)], r.StatusCode, mode)
						return
					}
					nl.Add(1)
				}
			})
		}
		for range searchers {
			wg.Go(func() {
				for time.Now().Before(stop) {
					q := "maps of the city number " + strconv.FormatInt(novel.Add(1), 10)
					r := e.get(services + "?q=" + url.QueryEscape(q))
					var b searchBody
					json.Unmarshal(r.body, &b)
					if r.StatusCode != 200 || (mode != "" && (!b.Degraded || b.Model != embedding.BuiltinModel)) {
						t.Errorf("search while the provider is %q: %d %s", mode, r.StatusCode, r.body)
						return
					}
					ns.Add(1)
				}
			})
		}
		wg.Wait()
		return nl.Load(), ns.Load()
	}
	// The modes take turns, and each keeps its best round, so that a burst of load
	// from elsewhere on the machine does not count against one of them.
	best := map[string]int64{}
	searches := map[string]int64{}
	for range 3 {
		for _, mode := range []string{"", "stall", "fail"} {
			listed, searched := run(mode)
			best[mode] = max(best[mode], listed)
			searches[mode] += searched
		}
	}
	t.Logf("best rounds of %s: %d lists healthy, %d stalling, %d failing; searches %v", phase, best[""], best["stall"], best["fail"], searches)
	for _, mode := range []string{"stall", "fail"} {
		if best[mode] < best[""]/2 {
			t.Errorf("provider %s: %d lists in %s at best, under half the %d with a healthy provider", mode, best[mode], phase, best[""])
		}
		if searches[mode] == 0 {
			t.Errorf("provider %s: no search answered", mode)
		}
	}
}

// TestAuthenticatedAPIAnswers503WhenTheDatabaseIsUnreachable serves the API over a
// store whose PostgreSQL does not answer: every authenticated route gets a 503
// database_unavailable problem with Retry-After and no-store, as documented, and the
// error is not logged as an internal one.
func TestAuthenticatedAPIAnswers503WhenTheDatabaseIsUnreachable(t *testing.T) {
	t.Parallel()
	doc := openapitest.Load(t, "openapi.json")
	dir := t.TempDir()
	store, err := postgres.Open(context.Background(), "postgres://postgres@/waystation?host="+url.QueryEscape(filepath.Join(dir, "no-server"))+"&sslmode=disable&connect_timeout=5")
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	var logs lockedLog
	pepper := []byte("test-pepper-of-at-least-32-bytes!!")
	srv := api.NewServer(api.Config{}, slog.New(slog.NewTextHandler(&logs, nil)), generator.NewHolder(), store,
		api.WithAuthenticated(api.Authenticated{Services: app.Services{Auth: auth.NewService(store, auth.Config{Pepper: pepper}), Sessions: &session.Service{Store: store, Protected: memory.Protected{Store: store, Opener: testVault(t)}}, Requests: &request.Service{Store: store, Protected: memory.Protected{Store: store, Opener: testVault(t)}}}, Idempotency: store, Pepper: pepper}))
	agentKey, err := auth.Generate(auth.ScopeAgent, pepper)
	if err != nil {
		t.Fatal(err)
	}
	userKey, _ := auth.Generate(auth.ScopeUser, pepper)
	sid := "/sessions/00000000-0000-4000-8000-000000000000"
	cases := []struct{ method, path, key, body string }{
		{"POST", "/sessions", agentKey.Token, `{"type":"checkout","description":"buy","clientSessionId":"s1"}`},
		{"GET", "/sessions", userKey.Token, ""},
		{"GET", sid, agentKey.Token, ""},
		{"GET", sid + "/events?wait=1", userKey.Token, ""},
		{"POST", sid + "/events", agentKey.Token, `{"type":"runtime.step","clientEventId":"e1"}`},
		{"GET", "/agent/me", agentKey.Token, ""},
		{"GET", "/keys", userKey.Token, ""},
	}
	for _, c := range cases {
		req := httptest.NewRequest(c.method, base+c.path, strings.NewReader(c.body))
		req.Header.Set("Authorization", "Bearer "+c.key)
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, req)
		res := rec.Result()
		r := response{res, rec.Body.Bytes()}
		r.problem(t, http.StatusServiceUnavailable, problem.DatabaseUnavailable)
		if res.Header.Get("Retry-After") == "" || res.Header.Get("Cache-Control") != "no-store" {
			t.Errorf("%s %s: Retry-After %q Cache-Control %q", c.method, c.path, res.Header.Get("Retry-After"), res.Header.Get("Cache-Control"))
		}
		doc.CheckResponse(t, httptest.NewRequest(c.method, base+c.path, nil), res, r.body)
	}
	if strings.Contains(logs.String(), "internal error") {
		t.Errorf("an unreachable database was logged as an internal error:\n%s", logs.String())
	}
	if r := (&env{t: t, srv: srv}).get(services); r.StatusCode != 200 {
		t.Errorf("the list needs no database: %d", r.StatusCode)
	}
}

// lockedLog is a log written from several goroutines.
type lockedLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
