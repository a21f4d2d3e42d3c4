package api_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waystation/waystation/api"
	"github.com/waystation/waystation/api/openapitest"
	"github.com/waystation/waystation/internal/app"
	"github.com/waystation/waystation/internal/auth"
	"github.com/waystation/waystation/internal/embedding"
	"github.com/waystation/waystation/internal/memory"
	"github.com/waystation/waystation/internal/postgres"
	"github.com/waystation/waystation/internal/ratelimit"
	"github.com/waystation/waystation/internal/search"
)

// provider is an OpenAI-compatible embeddings server on loopback that embeds with the
// builtin model's recipe, and can be told to fail or to stall.
type provider struct {
	srv   *httptest.Server
	calls atomic.Int64
	mu    sync.Mutex
	mode  string   // "", "fail" or "stall"
	sent  []string // every text it was asked to embed
}

func newProvider(t *testing.T) *provider {
	p := &provider{}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.calls.Add(1)
		p.mu.Lock()
		mode := p.mode
		p.mu.Unlock()
		switch mode {
		case "fail":
			http.Error(w, "overloaded", http.StatusInternalServerError)
			return
		case "stall":
			select {
			case <-r.Context().Done():
			case <-time.After(2 * time.Second):
			}
			return
		}
		var req struct {
			Input []string `json:"input"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		p.mu.Lock()
		p.sent = append(p.sent, req.Input...)
		p.mu.Unlock()
		type datum struct {
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		}
		var out struct {
			Data []datum `json:"data"`
		}
		for i, text := range req.Input {
			out.Data = append(out.Data, datum{i, embedding.Lexhash{}.Vector(text)})
		}
		json.NewEncoder(w).Encode(out)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *provider) set(mode string) {
	p.mu.Lock()
	p.mode = mode
	p.mu.Unlock()
}

type searchOptions struct {
	provider  *provider
	allowance int
	share     float64
	perMin    float64
	burst     int
	trusted   []netip.Prefix
	// calibrated gives the builtin model the hybrid's calibrated band, which reads
	// the caller's rewrites.
	calibrated bool
	// authenticated, when set, serves the authenticated API from what it gives for
	// the test's store, in place of keys alone.
	authenticated func(*postgres.Store) api.Authenticated
}

// newSearchEnv is newEnv with search: the builtin model, and the provider when given,
// wrapped as the server wraps them, with every method embedded.
func newSearchEnv(t *testing.T, o searchOptions) *env {
	t.Helper()
	e := newEnv(t)
	ctx := context.Background()
	builtin := embedding.WithCache(embedding.Lexhash{}, 100)
	record := search.ModelRecord{ID: builtin.Model(), Dimensions: builtin.Dimensions(), Floor: search.BuiltinFloor, Margin: search.BuiltinMargin}
	if o.calibrated {
		c := search.HybridCalibration
		record.Calibration = &c
	}
	rec, err := e.store.RegisterModel(ctx, record)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := search.Sync(ctx, e.store, builtin); err != nil {
		t.Fatal(err)
	}
	fallback := &search.Model{Embedder: builtin, Record: rec}
	var primary *search.Model
	if o.provider != nil {
		client, err := embedding.NewClient(embedding.ClientConfig{URL: o.provider.srv.URL + "/v1", Model: "test-embed", Dimensions: embedding.BuiltinDimensions, Timeout: 300 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := search.Sync(ctx, e.store, client); err == nil {
			t.Fatal("embedding under an unregistered model must fail")
		}
		prec, err := e.store.RegisterModel(ctx, search.ModelRecord{ID: client.Model(), Dimensions: client.Dimensions(), Floor: search.BuiltinFloor, Margin: search.BuiltinMargin})
		if err != nil {
			t.Fatal(err)
		}
		// The client's short timeout is for the stall tests; on a loaded machine a
		// batch may outlast it, and a retry embeds only what is still missing.
		for attempt := 1; ; attempt++ {
			_, err := search.Sync(ctx, e.store, client)
			if err == nil {
				break
			}
			if attempt == 5 {
				t.Fatal(err)
			}
		}
		o.provider.calls.Store(0)
		primary = &search.Model{Embedder: embedding.WithCache(embedding.WithBreaker(client, embedding.BreakerConfig{Failures: 2, OpenFor: breakerOpenFor}), 100), Record: prec}
	}
	engine, err := search.NewEngine(search.Config{DailyAllowance: o.allowance, CallerShare: o.share}, e.store, primary, fallback)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	a := api.Authenticated{Services: app.Services{Auth: auth.NewService(e.store, auth.Config{Pepper: searchPepper})}, Pepper: searchPepper,
		Protected: memory.Protected{Store: e.store, Opener: testVault(t)}}
	if o.authenticated != nil {
		a = o.authenticated(e.store)
	}
	left := func(ctx context.Context) (int, bool, error) {
		used, err := e.store.AllowanceUsed(ctx, time.Now())
		return o.allowance - used, o.allowance > 0, err
	}
	e.srv = api.NewServer(api.Config{}, log, e.snaps, e.store, api.WithSearch(&search.Service{
		Engine: engine, Limiter: ratelimit.NewLimiter(o.perMin, o.burst, 100, nil), TrustedProxies: o.trusted, Log: log,
	}), api.WithAuthenticated(a), api.WithAllowance(left))
	return e
}

type searchBody struct {
	Object   string            `json:"object"`
	Query    string            `json:"query"`
	Match    string            `json:"match"`
	Model    string            `json:"model"`
	Degraded bool              `json:"degraded"`
	Items    []json.RawMessage `json:"items"`
	Count    int               `json:"count"`
}

func (e *env) search(t *testing.T, q string, extra ...string) searchBody {
	t.Helper()
	r := e.get(services + "?q=" + url.QueryEscape(q) + strings.Join(extra, ""))
	if r.StatusCode != 200 {
		t.Fatalf("q=%s: %d %s", q, r.StatusCode, r.body)
	}
	if r.Header.Get("Cache-Control") != "public, max-age=300" || r.Header.Get("ETag") == "" {
		t.Errorf("q=%s: Cache-Control %q ETag %q", q, r.Header.Get("Cache-Control"), r.Header.Get("ETag"))
	}
	var b searchBody
	r.json(t, &b)
	if b.Object != "search" || b.Count != len(b.Items) || b.Query != strings.TrimSpace(q) {
		t.Fatalf("q=%s: %+v", q, b)
	}
	return b
}

func (e *env) allowanceUsed(t *testing.T) int {
	var used int
	e.store.Pool().QueryRow(context.Background(), `SELECT coalesce(sum(used), 0) FROM search_allowance`).Scan(&used)
	return used
}

func TestSearchExactMatchesCostNoEmbedding(t *testing.T) {
	p := newProvider(t)
	e := newSearchEnv(t, searchOptions{provider: p, allowance: 100})
	m := e.snaps.Current().Methods()[3]
	cases := []struct{ q, match string }{
		{m.Slug, "slug"},
		{strings.ToUpper(m.Slug), "slug"},
		{"  " + strings.ReplaceAll(m.Name, " ", "   ") + " ", "method"},
		{strings.ToLower(m.Provider), "provider"},
	}
	for _, c := range cases {
		b := e.search(t, c.q)
		if b.Match != c.match || b.Count == 0 || b.Degraded {
			t.Errorf("%q: match %s count %d, want %s", c.q, b.Match, b.Count, c.match)
		}
	}
	if n := p.calls.Load(); n != 0 {
		t.Errorf("exact matches called the provider %d times", n)
	}
	if used := e.allowanceUsed(t); used != 0 {
		t.Errorf("exact matches used %d of the allowance", used)
	}
	// A provider's every method, narrowed by limit.
	if b := e.search(t, m.Provider, "&limit=1"); b.Count != 1 {
		t.Errorf("limit=1: %d items", b.Count)
	}
}

func TestSearchItemsAreSnapshotItemsWithSimilarity(t *testing.T) {
	t.Parallel()
	e := newSearchEnv(t, searchOptions{})
	snap := e.snaps.Current()
	b := e.search(t, "weather forecast for a city")
	if b.Match != "semantic" || b.Count == 0 || b.Count > 3 || b.Model != embedding.BuiltinModel {
		t.Fatalf("%+v", b)
	}
	prev := 2.0
	for _, raw := range b.Items {
		var it struct {
			Slug       string  `json:"slug"`
			Similarity float64 `json:"similarity"`
			RankScore  float64 `json:"rank_score"`
		}
		json.Unmarshal(raw, &it)
		pos, ok := snap.Position(it.Slug)
		if !ok {
			t.Fatalf("%s is not in the snapshot", it.Slug)
		}
		item := snap.Item(pos)
		want := append(append([]byte{}, item[:len(item)-1]...), []byte(`,"similarity":`+strconv.FormatFloat(it.Similarity, 'f', -1, 64)+
			`,"rank_score":`+strconv.FormatFloat(it.RankScore, 'f', -1, 64)+"}")...)
		if !bytes.Equal(raw, want) {
			t.Errorf("%s: item differs from the snapshot's\n%s\n%s", it.Slug, raw, want)
		}
		if it.RankScore > prev || it.Similarity < search.BuiltinFloor {
			t.Errorf("%s: rank score %v out of order, or similarity %v under the floor", it.Slug, it.RankScore, it.Similarity)
		}
		prev = it.RankScore
	}
	if b := e.search(t, "weather forecast for a city", "&limit=1"); b.Count != 1 {
		t.Errorf("limit=1 gave %d items", b.Count)
	}
	if b := e.search(t, "weather forecast for a city", "&category=blockchain"); b.Count != 0 && b.Match != "none" {
		for _, raw := range b.Items {
			if !bytes.Contains(raw, []byte(`"category":"blockchain"`)) {
				t.Errorf("a filtered search returned %s", raw)
			}
		}
	}
	if b := e.search(t, "zzzqqq xxyyzz"); b.Match != "none" || b.Count != 0 || string(e.get(services+"?q=zzzqqq+xxyyzz").body) == "" {
		t.Errorf("nonsense: %+v", b)
	}
	if b := e.search(t, strings.Repeat("é", 512)); b.Count != 0 && b.Match == "" {
		t.Errorf("1024-byte query: %+v", b)
	}
	e.get(services+"?q=%ff").problem(t, 400, "invalid_parameter")
	e.get(services+"?q=").problem(t, 400, "invalid_parameter")
	e.get(services+"?q="+strings.Repeat("a", 1025)).problem(t, 400, "query_too_long")
}

func TestSearchCachesQueryVectors(t *testing.T) {
	p := newProvider(t)
	e := newSearchEnv(t, searchOptions{provider: p, allowance: 100})
	first := e.search(t, "current weather conditions")
	second := e.search(t, "  Current   WEATHER conditions ")
	if n := p.calls.Load(); n != 1 {
		t.Fatalf("two identical queries called the provider %d times", n)
	}
	if e.allowanceUsed(t) != 1 {
		t.Errorf("allowance used %d, want 1", e.allowanceUsed(t))
	}
	if first.Model != "openai:test-embed" || first.Degraded || first.Count != second.Count {
		t.Errorf("first %+v second %+v", first, second)
	}
}

// breakerOpenFor is how long the search tests' breaker stays open: long enough that
// four queries on a loaded machine all meet it open (a shorter time let a third call
// through, half-open, before the fourth query).
const breakerOpenFor = 1500 * time.Millisecond

func TestSearchDegradesWhenTheProviderFailsAndRecovers(t *testing.T) {
	for _, mode := range []string{"fail", "stall"} {
		t.Run(mode, func(t *testing.T) {
			p := newProvider(t)
			e := newSearchEnv(t, searchOptions{provider: p})
			p.set(mode)
			for i := range 4 {
				b := e.search(t, "weather in paris number "+strconv.Itoa(i))
				if !b.Degraded || b.Model != embedding.BuiltinModel {
					t.Fatalf("query %d while the provider fails: %+v", i, b)
				}
			}
			if n := p.calls.Load(); n != 2 {
				t.Errorf("the open breaker let %d calls through, want 2", n)
			}
			var h struct {
				Search string `json:"search"`
			}
			e.get(base+"/health").json(t, &h)
			if h.Search != "degraded" {
				t.Errorf("health search %q while the breaker is open", h.Search)
			}
			if r := e.get(services + "?category=weather"); r.StatusCode != 200 {
				t.Errorf("the list failed while search degraded: %d", r.StatusCode)
			}
			p.set("")
			// Once the breaker's open time has passed, the next query tries the
			// provider again, and its success closes the breaker.
			time.Sleep(breakerOpenFor)
			if b := e.search(t, "weather in rome"); b.Degraded || b.Model != "openai:test-embed" {
				t.Errorf("after recovery: %+v", b)
			}
			e.get(base+"/health").json(t, &h)
			if h.Search != "ok" {
				t.Errorf("health search %q after recovery", h.Search)
			}
		})
	}
}

// searchPepper hashes the keys of the search tests.
var searchPepper = []byte("search-test-pepper-of-32-bytes-or-more")

func TestSearchRateLimit(t *testing.T) {
	t.Parallel()
	e := newSearchEnv(t, searchOptions{perMin: 1, burst: 2})
	for i := range 2 {
		r := e.get(services + "?q=weather")
		// A public answer that a CDN may replay to anyone tells no caller's quota.
		if r.StatusCode != 200 || r.Header.Get("RateLimit") != "" || r.Header.Get("RateLimit-Policy") != "" ||
			r.Header.Get("Cache-Control") != "public, max-age=300" {
			t.Fatalf("search %d: %d RateLimit %q/%q, Cache-Control %q", i, r.StatusCode, r.Header.Get("RateLimit-Policy"), r.Header.Get("RateLimit"), r.Header.Get("Cache-Control"))
		}
	}
	r := e.get(services + "?q=weather")
	r.problem(t, 429, "rate_limited")
	// Two queries a bucket, one a minute: the bucket refills in 120 s.
	if ra, _ := strconv.Atoi(r.Header.Get("Retry-After")); ra < 1 || ra > 60 || r.Header.Get("Cache-Control") != "no-store" ||
		r.Header.Get("RateLimit-Policy") != `"search";q=2;w=120` || !strings.HasPrefix(r.Header.Get("RateLimit"), `"search";r=0;t=`) {
		t.Errorf("429 headers %v", r.Header)
	}
	if r := e.get(services); r.StatusCode != 200 {
		t.Errorf("the list answers %d while search is limited", r.StatusCode)
	}
	if r := e.get(services + "?kind=x402"); r.StatusCode != 200 {
		t.Errorf("a filtered list answers %d while search is limited", r.StatusCode)
	}
	// Another caller has its own bucket.
	req := httptest.NewRequest(http.MethodGet, services+"?q=weather", nil)
	req.RemoteAddr = "198.51.100.7:4000"
	rec := httptest.NewRecorder()
	e.srv.ServeHTTP(rec, req)
	if rec.Code != 200 {
		t.Errorf("another caller got %d", rec.Code)
	}
}

func TestSearchDailyAllowance(t *testing.T) {
	t.Parallel()
	e := newSearchEnv(t, searchOptions{allowance: 2})
	slug := e.snaps.Current().Methods()[0].Slug
	e.search(t, "weather forecast")
	e.search(t, "token price")
	r := e.get(services + "?q=" + url.QueryEscape("airline tickets between cities"))
	r.problem(t, 503, "search_allowance_exhausted")
	// What /health says agrees with what search answers.
	var h struct{ Status, Search string }
	e.get(base+"/health").json(t, &h)
	if h.Status != "degraded" || h.Search != "allowance_exhausted" {
		t.Errorf("health says %+v with the allowance spent", h)
	}
	ra, _ := strconv.Atoi(r.Header.Get("Retry-After"))
	if ra < 1 || ra > 86400 || r.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("503 Retry-After %q Cache-Control %q", r.Header.Get("Retry-After"), r.Header.Get("Cache-Control"))
	}
	now := time.Now().UTC()
	midnight := time.Date(now.Year(), now.Month(), now.Day()+1, 0, 0, 0, 0, time.UTC)
	if d := time.Duration(ra)*time.Second - midnight.Sub(now); d < -5*time.Second || d > 5*time.Second {
		t.Errorf("Retry-After %ds is not the next UTC midnight", ra)
	}
	if b := e.search(t, "weather forecast"); b.Match == "" {
		t.Error("a cached query must still answer")
	}
	if b := e.search(t, slug); b.Match != "slug" {
		t.Error("an exact query must still answer")
	}
	if r := e.get(services); r.StatusCode != 200 {
		t.Errorf("the list answers %d with the allowance spent", r.StatusCode)
	}
}

func TestSearchUnavailableWhenNothingCanAnswer(t *testing.T) {
	t.Parallel()
	e := newSearchEnv(t, searchOptions{})
	e.store.Close()
	r := e.get(services + "?q=weather")
	r.problem(t, 503, "search_unavailable")
	if r.Header.Get("Retry-After") == "" || r.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("503 headers %v", r.Header)
	}
	if r := e.get(services); r.StatusCode != 200 {
		t.Errorf("the list answers %d without the database", r.StatusCode)
	}
	var h struct {
		Search string `json:"search"`
	}
	e.get(base+"/health").json(t, &h)
	if h.Search != "unavailable" {
		t.Errorf("health search %q without the database", h.Search)
	}
}

func TestSearchCallerIsTheClientOrWhatATrustedProxySaw(t *testing.T) {
	t.Parallel()
	e := newSearchEnv(t, searchOptions{perMin: 1, burst: 1, trusted: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}})
	status := func(remote, xff string) int {
		req := httptest.NewRequest(http.MethodGet, services+"?q=weather", nil)
		req.RemoteAddr = remote
		if xff != "" {
			req.Header.Set("X-Forwarded-For", xff)
		}
		rec := httptest.NewRecorder()
		e.srv.ServeHTTP(rec, req)
		return rec.Code
	}
	// Through the trusted proxy, each client has its own bucket.
	if status("10.1.2.3:5000", "203.0.113.5") != 200 || status("10.1.2.3:5000", "203.0.113.6") != 200 {
		t.Fatal("two clients behind the proxy share a bucket")
	}
	if status("10.1.2.3:5000", "203.0.113.5") != 429 {
		t.Error("a client behind the proxy was not limited")
	}
	// A client cannot pick its name: an untrusted peer's X-Forwarded-For is ignored,
	// and a forged first hop before the proxy's is too.
	if status("198.51.100.9:1", "203.0.113.77") != 200 || status("198.51.100.9:1", "203.0.113.78") != 429 {
		t.Error("an untrusted peer chose its own name")
	}
	if status("10.1.2.3:5000", "203.0.113.99, 203.0.113.5") != 429 {
		t.Error("a forged first hop chose the caller's name")
	}
}

// A search answer is gzipped only for clients that take gzip, and its two ETags
// are the same whichever client asked: each names the other's representation too.
func TestSearchAnswersAreGzippedOnlyForClientsThatTakeIt(t *testing.T) {
	t.Parallel()
	e := newSearchEnv(t, searchOptions{})
	target := services + "?q=" + url.QueryEscape(e.snaps.Current().Methods()[0].Slug)
	plain := e.get(target)
	zipped := e.get(target, "Accept-Encoding", "gzip")
	if plain.StatusCode != 200 || plain.Header.Get("Content-Encoding") != "" || zipped.Header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("encodings %q and %q", plain.Header.Get("Content-Encoding"), zipped.Header.Get("Content-Encoding"))
	}
	zr, err := gzip.NewReader(bytes.NewReader(zipped.body))
	if err != nil {
		t.Fatal(err)
	}
	unzipped, _ := io.ReadAll(zr)
	if !bytes.Equal(unzipped, plain.body) {
		t.Error("the gzip answer is not the plain one")
	}
	tag, gzTag := plain.Header.Get("ETag"), zipped.Header.Get("ETag")
	if gzTag != strings.TrimSuffix(tag, `"`)+`-gzip"` {
		t.Errorf("ETags %s and %s", tag, gzTag)
	}
	for _, inm := range []string{tag, gzTag} {
		for _, ae := range []string{"", "gzip"} {
			if r := e.get(target, "Accept-Encoding", ae, "If-None-Match", inm); r.StatusCode != 304 {
				t.Errorf("If-None-Match %s, Accept-Encoding %q: %d", inm, ae, r.StatusCode)
			}
		}
	}
}

// A repeated query is answered from the neighbour cache: no embedding and no
// database round trip (here the vectors are gone from the database, and the repeat
// still answers as before), while each filter is a search of its own.
func TestSearchRepeatedQueriesComeFromTheNeighbourCache(t *testing.T) {
	t.Parallel()
	e := newSearchEnv(t, searchOptions{})
	const q = "current weather conditions"
	first := e.search(t, q)
	if first.Count == 0 || first.Match != "semantic" {
		t.Fatalf("first: %+v", first)
	}
	if _, err := e.store.Pool().Exec(context.Background(), `DELETE FROM method_embeddings`); err != nil {
		t.Fatal(err)
	}
	again := e.search(t, "  CURRENT weather   conditions")
	if again.Count != first.Count || string(again.Items[0]) != string(first.Items[0]) {
		t.Errorf("the repeat: %+v, want %+v", again, first)
	}
	if other := e.search(t, q, "&category=weather"); other.Count != 0 {
		t.Errorf("a new filter answered %d items from the emptied database", other.Count)
	}
}

// TestKeyedSearchesAreTheCallersOwn: a caller with a valid key is charged by key, and
// its answers, which then tell its quota, are private.
func TestKeyedSearchesAreTheCallersOwn(t *testing.T) {
	t.Parallel()
	e := newSearchEnv(t, searchOptions{perMin: 60, burst: 5})
	ctx := context.Background()
	u, err := e.store.EnsureUser(ctx, "searcher")
	if err != nil {
		t.Fatal(err)
	}
	k, err := auth.Generate(auth.ScopeUser, searchPepper)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.InsertKey(ctx, k, u.ID, "", 0); err != nil {
		t.Fatal(err)
	}
	doc := openapitest.Load(t, "openapi.json")
	target := services + "?q=weather"
	r := e.get(target, "Authorization", "Bearer "+k.Token)
	req := httptest.NewRequest(http.MethodGet, target, nil)
	req.Header.Set("Authorization", "Bearer "+k.Token)
	doc.CheckResponse(t, req, r.Response, r.body)
	if r.StatusCode != 200 || r.Header.Get("Cache-Control") != "private, max-age=300" ||
		r.Header.Get("RateLimit-Policy") != `"search";q=5;w=5` || !strings.HasPrefix(r.Header.Get("RateLimit"), `"search";r=4;t=`) {
		t.Errorf("keyed search: %d, Cache-Control %q, RateLimit %q / %q", r.StatusCode, r.Header.Get("Cache-Control"), r.Header.Get("RateLimit-Policy"), r.Header.Get("RateLimit"))
	}
	// Another caller, by address, has its own bucket and a public answer.
	r = e.get(services + "?q=weather")
	if r.StatusCode != 200 || r.Header.Get("Cache-Control") != "public, max-age=300" || r.Header.Get("RateLimit") != "" {
		t.Errorf("anonymous search after a keyed one: %d, %q, %q", r.StatusCode, r.Header.Get("Cache-Control"), r.Header.Get("RateLimit"))
	}
}

// TestKeysOfOneUserShareItsSearchQuota: a second key, or an agent's, of a user whose
// bucket is empty is refused too, and past the user's share of the daily allowance
// every key of it is refused as when the allowance is spent, while an address still
// searches.
func TestKeysOfOneUserShareItsSearchQuota(t *testing.T) {
	t.Parallel()
	// One token a minute: the bucket the three keys empty does not refill while the
	// test runs, however slowly a busy machine answers.
	e := newSearchEnv(t, searchOptions{perMin: 1, burst: 3, allowance: 10, share: 0.2})
	ctx := context.Background()
	u, err := e.store.EnsureUser(ctx, "minter")
	if err != nil {
		t.Fatal(err)
	}
	a, err := e.store.EnsureAgent(ctx, u.ID, "scout")
	if err != nil {
		t.Fatal(err)
	}
	var tokens []string
	for _, agentID := range []string{"", "", a.ID} {
		scope := auth.ScopeUser
		if agentID != "" {
			scope = auth.ScopeAgent
		}
		k, err := auth.Generate(scope, searchPepper)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.store.InsertKey(ctx, k, u.ID, agentID, 0); err != nil {
			t.Fatal(err)
		}
		tokens = append(tokens, "Bearer "+k.Token)
	}
	if r := e.get(services+"?q="+url.QueryEscape("weather forecast"), "Authorization", tokens[0]); r.StatusCode != 200 {
		t.Fatalf("first novel query: %d %s", r.StatusCode, r.body)
	}
	if r := e.get(services+"?q="+url.QueryEscape("token price"), "Authorization", tokens[1]); r.StatusCode != 200 {
		t.Fatalf("second novel query, another key: %d %s", r.StatusCode, r.body)
	}
	r := e.get(services+"?q="+url.QueryEscape("airline tickets between cities"), "Authorization", tokens[2])
	r.problem(t, 503, "search_allowance_exhausted")
	if ra, _ := strconv.Atoi(r.Header.Get("Retry-After")); ra < 1 || ra > 86400 {
		t.Errorf("Retry-After %q", r.Header.Get("Retry-After"))
	}
	// The three keys took the user's three tokens: a fourth key is no new bucket.
	r = e.get(services+"?q=weather", "Authorization", tokens[0])
	r.problem(t, 429, "rate_limited")
	if r := e.get(services + "?q=" + url.QueryEscape("airline tickets between cities")); r.StatusCode != 200 {
		t.Errorf("an address after the user's share was spent: %d %s", r.StatusCode, r.body)
	}
}

// TestSearchCarriesTheNearestMethodsWhenTheBandKeepsFewerThanThree: an embedded query
// whose band keeps fewer than three methods also answers the nearest others in
// nearest, under the same filters and limit, each the list's item with its similarity
// and not_a_match, which says why, never one of the items; items stay the band's. An
// exact match and the list have no nearest, and every answer is the document's.
func TestSearchCarriesTheNearestMethodsWhenTheBandKeepsFewerThanThree(t *testing.T) {
	t.Parallel()
	e := newSearchEnv(t, searchOptions{})
	doc := openapitest.Load(t, "openapi.json")
	snap := e.snaps.Current()
	type notAMatch struct {
		Reason                    string
		Confidence, Least, Margin float64
	}
	type answer struct {
		Match string
		Band  *struct{ Confidence, Least, Margin float64 }
		Items []struct {
			Slug, Category string
			Similarity     float64
		}
		Nearest []struct {
			Slug, Category string
			Similarity     float64
			NotAMatch      *notAMatch `json:"not_a_match"`
		}
		Raw map[string]json.RawMessage `json:"-"`
	}
	get := func(target string) answer {
		t.Helper()
		r := e.get(target)
		doc.CheckResponse(t, httptest.NewRequest(http.MethodGet, target, nil), r.Response, r.body)
		var a answer
		r.json(t, &a)
		r.json(t, &a.Raw)
		return a
	}
	reasons := map[string]int{}
	for _, c := range []struct {
		q, extra string
		want     int // how many items and nearest together
	}{
		{"bake a chocolate cake", "", 3},
		{"zzzqqq xxyyzz", "", 3},
		{"weather forecast for a city", "", 3},
		{"current weather conditions", "", 3},
		{"ethereum block height", "", 3},
		{"bake a chocolate cake", "&limit=1", 1},
		{"weather forecast for a city", "&limit=1", 1},
		{"bake a chocolate cake", "&category=blockchain", 3},
		{"bake\a a chocolate\x7f cake", "&category=weather,blockchain&limit=2", 2},
	} {
		target := services + "?q=" + url.QueryEscape(c.q) + c.extra
		a := get(target)
		if a.Band == nil || len(a.Items)+len(a.Nearest) != c.want {
			t.Errorf("%s: band %v, %d items and %d nearest, want %d", target, a.Band, len(a.Items), len(a.Nearest), c.want)
			continue
		}
		if _, ok := a.Raw["nearest"]; ok != (len(a.Items) < c.want) {
			t.Errorf("%s: nearest present %v with %d items", target, ok, len(a.Items))
		}
		var raws []json.RawMessage
		json.Unmarshal(a.Raw["nearest"], &raws)
		prev := 2.0
		for i, n := range a.Nearest {
			for _, it := range a.Items {
				if it.Slug == n.Slug {
					t.Errorf("%s: %s is both an item and nearest", target, n.Slug)
				}
			}
			if strings.Contains(c.extra, "category") && !strings.Contains(c.extra, n.Category) {
				t.Errorf("%s: nearest %s of category %s", target, n.Slug, n.Category)
			}
			if n.Similarity > prev {
				t.Errorf("%s: nearest out of order", target)
			}
			prev = n.Similarity
			m := n.NotAMatch
			if m == nil || m.Confidence != a.Band.Confidence || m.Least != a.Band.Least || m.Margin != a.Band.Margin {
				t.Errorf("%s: %s: not_a_match %+v, band %+v", target, n.Slug, m, a.Band)
				continue
			}
			reasons[m.Reason]++
			switch m.Reason {
			case search.ReasonBelowConfidence:
				if len(a.Items) > 0 || a.Match != "none" || m.Confidence >= m.Least {
					t.Errorf("%s: %s below confidence with %d items, confidence %v", target, n.Slug, len(a.Items), m.Confidence)
				}
			case search.ReasonOutsideMargin:
				if len(a.Items) == 0 || n.Similarity >= a.Items[0].Similarity-m.Margin+1e-4 {
					t.Errorf("%s: %s at %v is within %v of %v", target, n.Slug, n.Similarity, m.Margin, a.Items)
				}
			case search.ReasonBelowFloor:
				if len(a.Items) == 0 || n.Similarity >= m.Least {
					t.Errorf("%s: %s at %v is not under the floor %v", target, n.Slug, n.Similarity, m.Least)
				}
			default:
				t.Errorf("%s: reason %q", target, m.Reason)
			}
			// The list's item, byte for byte, then the similarity and not_a_match.
			pos, _ := snap.Position(n.Slug)
			item := snap.Item(pos)
			if !bytes.HasPrefix(raws[i], item[:len(item)-1]) || !bytes.Contains(raws[i][len(item)-1:], []byte(`,"similarity":`)) {
				t.Errorf("%s: %s differs from the list's item:\n%s", target, n.Slug, raws[i])
			}
		}
	}
	for _, r := range search.Reasons {
		if reasons[r] == 0 {
			t.Errorf("no query gave a nearest method %s (%v)", r, reasons)
		}
	}
	// An exact match, and the list, have none.
	m := snap.Methods()[3]
	for _, target := range []string{services + "?q=" + url.QueryEscape(m.Slug), services + "?q=" + url.QueryEscape(m.Name), services + "?category=" + m.Category} {
		if a := get(target); a.Raw["nearest"] != nil || len(a.Raw) == 0 {
			t.Errorf("%s: %s", target, a.Raw["nearest"])
		}
	}
}

// TestMCPSearchSellersCarriesTheNearestApart: the MCP tool answers the nearest
// methods of a query nothing matches in nearest, each saying why it is no match, and
// its results stay the matches alone.
func TestMCPSearchSellersCarriesTheNearestApart(t *testing.T) {
	t.Parallel()
	e := newSearchEnv(t, searchOptions{})
	call := func(query string) map[string]any {
		t.Helper()
		out, failure := e.tool(t, "search_sellers", map[string]string{"query": query})
		if failure != "" || out == nil {
			t.Fatalf("%s: %q %v", query, failure, out)
		}
		return out
	}
	out := call("bake a chocolate cake")
	nearest, _ := out["nearest"].([]any)
	if results, _ := out["results"].([]any); len(results) != 0 || len(nearest) != 3 || !strings.Contains(out["note"].(string), "none of them a match") {
		t.Fatalf("no match: %v", out)
	}
	for _, n := range nearest {
		why, _ := n.(map[string]any)["not_a_match"].(map[string]any)
		if why["reason"] != search.ReasonBelowConfidence || why["least"] == nil || n.(map[string]any)["slug"] == "" {
			t.Errorf("nearest %v", n)
		}
	}
	out = call("weather forecast for a city")
	results, _ := out["results"].([]any)
	nearest, _ = out["nearest"].([]any)
	if len(results) == 0 || len(results)+len(nearest) != 3 || out["note"] != nil {
		t.Fatalf("some matches: %v", out)
	}
	for _, r := range results {
		if _, ok := r.(map[string]any)["not_a_match"]; ok {
			t.Errorf("a match marked as none: %v", r)
		}
	}
	for _, n := range nearest {
		if why, _ := n.(map[string]any)["not_a_match"].(map[string]any); why["reason"] != search.ReasonOutsideMargin && why["reason"] != search.ReasonBelowFloor {
			t.Errorf("nearest %v", n)
		}
	}
	if out := call("send an email"); out["nearest"] != nil {
		t.Errorf("an exact match has nearest: %v", out)
	}
}
