package search_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/waystation/waystation/internal/directory"
	"github.com/waystation/waystation/internal/embedding"
	"github.com/waystation/waystation/internal/problem"
	"github.com/waystation/waystation/internal/ratelimit"
	"github.com/waystation/waystation/internal/search"
)

// counter is a store that answers no neighbours and counts the allowance and each
// caller's share as the database does.
type counter struct {
	mu      sync.Mutex
	used    int
	callers map[string]int
}

func (*counter) Nearest(context.Context, search.ModelRecord, []float32, int, []string) ([]search.Neighbour, error) {
	return nil, nil
}

func (c *counter) UseAllowance(_ context.Context, _ time.Time, limit int, caller string, share int) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.used >= limit || (caller != "" && share > 0 && c.callers[caller] >= share) {
		return false, nil
	}
	c.used++
	c.callers[caller]++
	return true, nil
}

func newService(t *testing.T, cfg search.Config, lim *ratelimit.Limiter) (*search.Service, *directory.Snapshot) {
	t.Helper()
	snap, err := directory.NewSnapshot(time.Now(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	model := &search.Model{Embedder: embedding.Lexhash{}, Record: search.ModelRecord{ID: embedding.BuiltinModel, Dimensions: embedding.BuiltinDimensions}}
	eng, err := search.NewEngine(cfg, &counter{callers: map[string]int{}}, nil, model)
	if err != nil {
		t.Fatal(err)
	}
	return &search.Service{Engine: eng, Limiter: lim}, snap
}

// keyed is a caller named by its key's user, from the address every test caller
// shares.
func keyed(user string) search.Caller { return search.Caller{User: user, RemoteAddr: "192.0.2.1:1234"} }

// TestCallersOfOneUserShareOneSearchBucket: a user's searches (from any of its keys
// or its agents', which the API names by the user) share one bucket; another user and
// an address keep their own. The API's TestKeysOfOneUserShareItsSearchQuota checks
// that its keys name their user.
func TestCallersOfOneUserShareOneSearchBucket(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	s, snap := newService(t, search.Config{}, ratelimit.NewLimiter(60, 2, 100, func() time.Time { return now }))
	ctx := context.Background()
	for i := range 2 {
		a, err := s.Search(ctx, keyed("u1"), snap, "weather", directory.Filter{})
		if err != nil || !a.Keyed {
			t.Fatalf("search %d of the user: %v (keyed %v)", i, err, a.Keyed)
		}
	}
	if _, err := s.Search(ctx, keyed("u1"), snap, "weather", directory.Filter{}); problem.CodeOf(err) != problem.RateLimited {
		t.Fatalf("a user whose bucket is empty: %v, want rate_limited", err)
	}
	if _, err := s.Search(ctx, keyed("u2"), snap, "weather", directory.Filter{}); err != nil {
		t.Fatalf("another user: %v", err)
	}
	if a, err := s.Search(ctx, search.Caller{RemoteAddr: "192.0.2.1:1234"}, snap, "weather", directory.Filter{}); err != nil || a.Keyed {
		t.Fatalf("an address: %v (keyed %v)", err, a.Keyed)
	}
}

// TestCallerSpendsOnlyItsShareOfTheAllowance: past its share of the daily allowance
// a caller (all its keys together) is refused as when the allowance is spent, with
// Retry-After, while another caller still searches.
func TestCallerSpendsOnlyItsShareOfTheAllowance(t *testing.T) {
	s, snap := newService(t, search.Config{DailyAllowance: 10, CallerShare: 0.2}, nil)
	ctx := context.Background()
	for i := range 2 {
		if _, err := s.Search(ctx, keyed("u1"), snap, "novel query "+strconv.Itoa(i), directory.Filter{}); err != nil {
			t.Fatalf("novel query %d within the share: %v", i, err)
		}
	}
	_, err := s.Search(ctx, keyed("u1"), snap, "novel query 2", directory.Filter{})
	p, ok := problem.As(err)
	if !ok || p.Code != problem.AllowanceExhausted || p.RetryAfter < 1 || p.RetryAfter > 86400 {
		t.Fatalf("past the share: %v, want search_allowance_exhausted with Retry-After", err)
	}
	if _, err := s.Search(ctx, keyed("u1"), snap, "novel query 0", directory.Filter{}); err != nil {
		t.Fatalf("a repeated query past the share: %v", err)
	}
	for i := range 2 {
		if _, err := s.Search(ctx, keyed("u2"), snap, "other query "+strconv.Itoa(i), directory.Filter{}); err != nil {
			t.Fatalf("another caller's novel query %d: %v", i, err)
		}
	}
	if _, err := s.Search(ctx, search.Caller{RemoteAddr: "192.0.2.1:1234"}, snap, "anonymous query", directory.Filter{}); err != nil {
		t.Fatalf("an address's novel query: %v", err)
	}
}

// heard is an Observer that keeps what it hears.
type heard struct {
	mu       sync.Mutex
	searches []string
	embeds   []string
}

func (h *heard) Searched(outcome, model string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.searches = append(h.searches, outcome+"/"+model)
}

func (h *heard) Embedded(model string, took time.Duration, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	r := "ok"
	if err != nil || took < 0 {
		r = "error"
	}
	h.embeds = append(h.embeds, model+"/"+r)
}

// The observer hears every search's outcome and every novel embedding, and only
// those: a repeated query embeds nothing.
func TestObserverHearsOutcomesAndNovelEmbeddings(t *testing.T) {
	h := &heard{}
	now := time.Now()
	s, snap := newService(t, search.Config{DailyAllowance: 2, Observer: h}, ratelimit.NewLimiter(60, 4, 100, func() time.Time { return now }))
	ctx := context.Background()
	caller := search.Caller{RemoteAddr: "192.0.2.9:1"}
	for _, q := range []string{"first query", "first query", "second query", "third query", "fourth query"} {
		s.Search(ctx, caller, snap, q, directory.Filter{})
	}
	m := embedding.BuiltinModel
	want := []string{"unmatched/" + m, "unmatched/" + m, "unmatched/" + m, "allowance_exhausted/", "rate_limited/"}
	if fmt.Sprint(h.searches) != fmt.Sprint(want) {
		t.Errorf("searches heard %v, want %v", h.searches, want)
	}
	if fmt.Sprint(h.embeds) != fmt.Sprint([]string{m + "/ok", m + "/ok"}) {
		t.Errorf("embeddings heard %v", h.embeds)
	}
}
