package trust_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/waystation/waystation/internal/catalog"
	"github.com/waystation/waystation/internal/postgres/pgtest"
	"github.com/waystation/waystation/internal/trust"
)

func TestBudgetTakesTheLongestWaitingWithinEachHostAndTheRound(t *testing.T) {
	now := time.Date(2026, 9, 4, 12, 0, 0, 0, time.UTC)
	target := func(id int64, host string, age time.Duration) trust.Target {
		tg := trust.Target{MethodID: id, Hostname: host}
		if age > 0 {
			tg.LastProbed = now.Add(-age)
		}
		return tg
	}
	ids := func(ts []trust.Target) []int64 {
		var out []int64
		for _, t := range ts {
			out = append(out, t.MethodID)
		}
		return out
	}
	all := func() []trust.Target {
		return []trust.Target{
			target(1, "a", time.Hour), target(2, "a", 0), target(3, "a", 3*time.Hour), target(4, "a", 0),
			target(5, "b", 2*time.Hour), target(6, "b", 0), target(7, "c", 5*time.Hour),
		}
	}
	for _, c := range []struct {
		budget trust.Budget
		want   []int64
	}{
		{trust.Budget{}, []int64{2, 4, 6, 7, 3, 5, 1}},
		{trust.Budget{PerHost: 2}, []int64{2, 4, 6, 7, 5}},
		{trust.Budget{PerRound: 3}, []int64{2, 4, 6}},
		{trust.Budget{PerHost: 1, PerRound: 3}, []int64{2, 6, 7}},
	} {
		if got := ids(c.budget.Pick(all())); !slices.Equal(got, c.want) {
			t.Errorf("%+v: picked %v, want %v", c.budget, got, c.want)
		}
	}
}

// TestRoundsWithinABudgetReachEveryEndpointInTurn probes local sellers under names
// that resolve to loopback for this test alone: each round probes at most its
// budget, per host and in all; what a round leaves comes first in the next, so that
// every endpoint is probed once before any is probed twice; the reserved names take
// no place in the budget.
func TestRoundsWithinABudgetReachEveryEndpointInTurn(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	hits := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits[r.Host+r.URL.Path]++
		mu.Unlock()
		w.WriteHeader(http.StatusPaymentRequired)
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	loopback := netip.MustParseAddr("127.0.0.1")
	hosts := map[string]netip.Addr{"alpha.seller.net": loopback, "beta.seller.net": loopback}

	cat := catalog.Catalog{}
	add := func(host string, n int) {
		p := catalog.Provider{Name: host}
		for i := range n {
			p.Methods = append(p.Methods, catalog.Method{
				Slug: fmt.Sprintf("%s-%d", host[:4], i), Name: host, Category: "data", Kind: catalog.KindX402,
				Endpoint: catalog.Endpoint{Method: "GET", URL: fmt.Sprintf("http://%s:%s/%d", host, u.Port(), i)},
			})
		}
		cat.Providers = append(cat.Providers, p)
	}
	add("alpha.seller.net", 5)
	add("beta.seller.net", 2)
	add("gamma.seller.example", 3) // reserved: never probed
	store := pgtest.New(t)
	if _, err := store.LoadCatalog(ctx, cat, time.Now()); err != nil {
		t.Fatal(err)
	}
	rounds := &trust.Rounds{Store: store, Prober: testProber(hosts), Budget: trust.Budget{PerHost: 2, PerRound: 3}}

	perRound := []struct{ probed, deferred int }{{3, 4}, {3, 4}, {3, 4}}
	for i, want := range perRound {
		before := map[string]int{}
		mu.Lock()
		for k, v := range hits {
			before[k] = v
		}
		mu.Unlock()
		stats, ran, err := rounds.Once(ctx, time.Now())
		if err != nil || !ran || stats.Probed != want.probed || stats.Deferred != want.deferred || stats.Skipped != 3 {
			t.Fatalf("round %d: %+v, ran %v, %v", i+1, stats, ran, err)
		}
		mu.Lock()
		perHost := map[string]int{}
		for k, v := range hits {
			if v > before[k] {
				perHost[k[:5]] += v - before[k]
			}
		}
		total := 0
		for _, n := range hits {
			total += n
		}
		mu.Unlock()
		for host, n := range perHost {
			if n > 2 {
				t.Errorf("round %d: %d probes of %s", i+1, n, host)
			}
		}
		// Seven endpoints: the first three rounds reach each once before any twice.
		mu.Lock()
		for k, n := range hits {
			if total <= 7 && n > 1 {
				t.Errorf("round %d: %s probed %d times before every endpoint was once", i+1, k, n)
			}
		}
		mu.Unlock()
		time.Sleep(10 * time.Millisecond) // the next round's "before" is after this one's probes
	}
	mu.Lock()
	defer mu.Unlock()
	if len(hits) != 7 {
		t.Errorf("after three rounds %d of 7 endpoints probed: %v", len(hits), hits)
	}
}
