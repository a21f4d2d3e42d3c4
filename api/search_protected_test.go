package api_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/waystation/waystation/api"
	"github.com/waystation/waystation/api/openapitest"
	"github.com/waystation/waystation/internal/app"
	"github.com/waystation/waystation/internal/auth"
	"github.com/waystation/waystation/internal/memory"
	"github.com/waystation/waystation/internal/postgres"
	"github.com/waystation/waystation/internal/problem"
)

// A hostile agent that puts one of its user's saved values in a search query gets
// protected_value_detected from the route and from search_sellers, and the value
// reaches no embedding provider (nor the engine's caches behind it) and no answer;
// the same query without a key, which has no saved values, still searches.
func TestAKeyedSearchHoldingASavedValueIsRefusedBeforeAnyModelSeesIt(t *testing.T) {
	p := newProvider(t)
	e := newSearchEnv(t, searchOptions{provider: p, perMin: 600, burst: 100, authenticated: func(store *postgres.Store) api.Authenticated {
		return api.Authenticated{Services: app.Services{Auth: auth.NewService(store, auth.Config{Pepper: searchPepper}),
			Memory: memory.NewService(store, memory.Config{Sealer: testVault(t), Opener: testVault(t)})}, Pepper: searchPepper,
			Protected: memory.Protected{Store: store, Opener: testVault(t)}}
	}})
	ctx := context.Background()
	u, err := e.store.EnsureUser(ctx, "ada")
	if err != nil {
		t.Fatal(err)
	}
	a, err := e.store.EnsureAgent(ctx, u.ID, "scout")
	if err != nil {
		t.Fatal(err)
	}
	key := func(scope auth.Scope, agent string) string {
		k, err := auth.Generate(scope, searchPepper)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.store.InsertKey(ctx, k, u.ID, agent, 0); err != nil {
			t.Fatal(err)
		}
		return k.Token
	}
	userKey, agentKey := key(auth.ScopeUser, ""), key(auth.ScopeAgent, a.ID)
	const canary = "Quartz_Canary_4417"
	post := func(path, key, body string, header ...string) response {
		req := httptest.NewRequest(http.MethodPost, base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		rec := httptest.NewRecorder()
		e.srv.ServeHTTP(rec, req)
		return response{rec.Result(), rec.Body.Bytes()}
	}
	if r := post("/memory/items", userKey, `{"label":"Door","fields":[{"fieldRef":"code","label":"Code","secret":true,"value":"`+canary+`"}]}`); r.StatusCode != 201 {
		t.Fatalf("saving the value: %d %s", r.StatusCode, r.body)
	}
	sentValue := func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, s := range p.sent {
			if strings.Contains(strings.ToLower(s), "canary") {
				return true
			}
		}
		return false
	}

	// The provider is the one a keyed search goes to.
	if r := e.get(services+"?q=weather+forecast", "Authorization", "Bearer "+agentKey); r.StatusCode != 200 || p.calls.Load() == 0 {
		t.Fatalf("a keyed search: %d, %d provider calls", r.StatusCode, p.calls.Load())
	}
	doc := openapitest.Load(t, "openapi.json")
	for _, k := range []string{agentKey, userKey} {
		for _, q := range []string{"weather at " + canary, strings.ToUpper(canary) + " hotels"} {
			target := services + "?q=" + url.QueryEscape(q)
			r := e.get(target, "Authorization", "Bearer "+k)
			req := httptest.NewRequest(http.MethodGet, target, nil)
			req.Header.Set("Authorization", "Bearer "+k)
			doc.CheckResponse(t, req, r.Response, r.body)
			if r.StatusCode != 422 || !strings.Contains(string(r.body), "protected_value_detected") || strings.Contains(strings.ToLower(string(r.body)), "canary") {
				t.Errorf("search for %q: %d %s", q, r.StatusCode, r.body)
			}
		}
	}
	mcp := post("/mcp", agentKey, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search_sellers","arguments":{"query":"weather at `+canary+`"}}}`,
		"Accept", "application/json, text/event-stream")
	if body := string(mcp.body); !strings.Contains(body, "protected_value_detected") || strings.Contains(strings.ToLower(body), "canary") {
		t.Errorf("search_sellers: %d %s", mcp.StatusCode, body)
	}
	// The search page asks the API the same of the key its request carries.
	page := httptest.NewRequest(http.MethodGet, "/search", nil)
	page.Header.Set("Authorization", "Bearer "+agentKey)
	if err := e.srv.(*api.Server).ScreenSearch(page, "weather at "+canary); problem.CodeOf(err) != problem.ProtectedValueDetected {
		t.Errorf("the page's screen: %v", err)
	}
	if err := e.srv.(*api.Server).ScreenSearch(httptest.NewRequest(http.MethodGet, "/search", nil), "weather at "+canary); err != nil {
		t.Errorf("the page's screen without a key: %v", err)
	}
	if sentValue() {
		t.Fatal("the saved value was sent to the embedding provider")
	}
	// Without a key there are no saved values to hold: the search goes on.
	if r := e.get(services + "?q=" + url.QueryEscape("weather at "+canary)); r.StatusCode != 200 {
		t.Errorf("a keyless search: %d %s", r.StatusCode, r.body)
	}
}
