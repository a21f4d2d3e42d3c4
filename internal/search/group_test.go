package search_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/waystation/waystation/internal/directory"
	"github.com/waystation/waystation/internal/embedding"
	"github.com/waystation/waystation/internal/search"
)

// twinSnapshot holds near-duplicates of the kinds a real listing has, and methods
// that only look like them.
func twinSnapshot(t *testing.T) *directory.Snapshot {
	t.Helper()
	score := func(n int) *int { return &n }
	calls := func(n int64) *directory.Listing {
		return &directory.Listing{Source: "x402-bazaar", Payers30d: &n, Calls30d: &n}
	}
	m := func(slug, host, name, desc string, trust *int, l *directory.Listing) directory.Method {
		return directory.Method{Slug: slug, Name: name, Provider: host, Hostname: host, Description: desc, Category: "data", Kind: "x402",
			Trust: directory.Trust{Verdict: directory.VerdictUnknown, Score: trust, Advisory: true}, SourceListing: l}
	}
	resold := "Latest price of a stock ticker from the exchange feed, delayed 15 minutes."
	methods := []directory.Method{
		// The same API resold on three hosts: the same words, numbers aside.
		m("quote-a", "a.example", "Stock quote", resold, score(60), nil),
		m("quote-b", "b.example", "Ticker price", "Latest price of a stock ticker, from the exchange feed; delayed 20 minutes!", score(90), calls(5)),
		m("quote-c", "c.example", "Quote", resold, nil, calls(900)),
		// One host's templated endpoints.
		m("land-crop", "geo.example", "Cropland share", "Share of satellite pixels classified as cropland within one kilometre of the coordinate given, from the 2021 land cover map.", nil, nil),
		m("land-built", "geo.example", "Built-up share", "Share of satellite pixels classified as built-up within one kilometre of the coordinate given, from the 2021 land cover map.", nil, nil),
		// The same template on another host is not the same host's endpoint.
		m("land-water", "other.example", "Water share", "Share of satellite pixels classified as water within one kilometre of the coordinate given, from the 2021 land cover map.", nil, nil),
		// A name that is another's with one more word, on one host.
		m("units", "eth.example", "Eth unit convert", "Convert between wei, gwei and ether.", nil, nil),
		m("units-v2", "eth.example", "Eth unit convert v2", "Wei, gwei, ether: any to any.", nil, nil),
		// One word and one more is not a variant: a price is not its history.
		m("price", "eth.example", "Price", "Current ether price in dollars from several venues.", nil, nil),
		m("price-history", "eth.example", "Price history", "Daily ether closing prices for a year.", nil, nil),
	}
	snap, err := directory.NewSnapshot(time.Unix(1, 0), methods, nil)
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

// TestNearDuplicatesAreOneAnswer: a search whose nearest methods are near-duplicates
// answers one of each group, the one the query ranks first (or, of those it ranks
// alike, the most trusted, then the most in demand), names the others as similar,
// and keeps methods that only look alike apart.
func TestNearDuplicatesAreOneAnswer(t *testing.T) {
	snap := twinSnapshot(t)
	nb := func(slug string, sim float64) search.Neighbour { return search.Neighbour{Slug: slug, Similarity: sim} }
	slug := func(p int) string { return snap.Methods()[p].Slug }
	cases := []struct {
		name    string
		near    []search.Neighbour
		items   []string
		similar [][]string
	}{
		// The three resellers rank alike: the most trusted leads, and the others,
		// the one with more payers first, are named.
		{"resold", []search.Neighbour{nb("quote-a", 0.9), nb("quote-c", 0.895), nb("quote-b", 0.893), nb("price", 0.85)},
			[]string{"quote-b", "price"}, [][]string{{"quote-a", "quote-c"}, nil}},
		// The query ranks one templated endpoint clearly first: it leads its group.
		{"templated", []search.Neighbour{nb("land-built", 0.9), nb("land-crop", 0.8), nb("land-water", 0.79)},
			[]string{"land-built", "land-water"}, [][]string{{"land-crop"}, nil}},
		{"variant", []search.Neighbour{nb("units-v2", 0.9), nb("units", 0.88), nb("price", 0.86)},
			[]string{"units-v2", "price"}, [][]string{{"units"}, nil}},
		{"alike, not the same", []search.Neighbour{nb("price", 0.9), nb("price-history", 0.88)},
			[]string{"price", "price-history"}, [][]string{nil, nil}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var asked int
			model := &search.Model{Embedder: embedding.Lexhash{}, Record: search.ModelRecord{ID: embedding.BuiltinModel, Dimensions: embedding.BuiltinDimensions, Floor: 0.5, Margin: 0.2}}
			eng, err := search.NewEngine(search.Config{}, fixedStore{c.near, &asked}, model, nil)
			if err != nil {
				t.Fatal(err)
			}
			res, err := eng.Search(context.Background(), "", snap, "stock ticker price", directory.Filter{})
			if err != nil {
				t.Fatal(err)
			}
			var items []string
			var similar [][]string
			for _, h := range res.Hits {
				items = append(items, slug(h.Pos))
				var s []string
				for _, p := range h.Similar {
					s = append(s, slug(p))
				}
				similar = append(similar, s)
			}
			if !slices.Equal(items, c.items) || !slices.EqualFunc(similar, c.similar, slices.Equal) {
				t.Errorf("items %v similar %v, want %v %v", items, similar, c.items, c.similar)
			}
		})
	}
}

// TestOurOwnOrganicPayersChooseATwinsFace: near-twins that tie on everything the
// query, the score and the listing say differ only in the use the service itself
// saw of their sellers. The seller paying agents came back to (on another day) leads
// the group; one agent paying a seller forty times in one day buys nothing over
// that (a burst is one payer of one day: a quarter, rounded down), nor over a twin
// nobody paid.
func TestOurOwnOrganicPayersChooseATwinsFace(t *testing.T) {
	score := 70
	n := int64(12)
	listing := &directory.Listing{Source: "x402-bazaar", Calls30d: &n, Payers30d: &n}
	desc := "Hourly air quality index and pollutant readings for any city, from public monitoring stations."
	twin := func(slug string, demand *directory.ServiceDemand) directory.Method {
		host := slug + ".example"
		return directory.Method{Slug: slug, Name: "Air quality", Provider: host, Hostname: host, Description: desc, Category: "data", Kind: "x402",
			Trust: directory.Trust{Verdict: directory.VerdictCaution, Score: &score, Advisory: true, Demand: demand}, SourceListing: listing}
	}
	var (
		burst    = directory.NewServiceDemand(40, 1, 0) // one agent, forty payments, one day
		cameBack = directory.NewServiceDemand(4, 2, 2)  // two agents, each back on another day
	)
	cases := []struct {
		name          string
		first, second *directory.ServiceDemand
		face          string
	}{
		{"agents came back to the second", nil, cameBack, "second"},
		{"a burst against agents that came back", burst, cameBack, "second"},
		{"a burst against nobody: the tie stands", nil, burst, "first"},
		{"nobody against a burst: the tie stands", burst, nil, "first"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			snap, err := directory.NewSnapshot(time.Unix(1, 0), []directory.Method{twin("first", c.first), twin("second", c.second)}, nil)
			if err != nil {
				t.Fatal(err)
			}
			var asked int
			near := []search.Neighbour{{Slug: "first", Similarity: 0.9}, {Slug: "second", Similarity: 0.9}}
			model := &search.Model{Embedder: embedding.Lexhash{}, Record: search.ModelRecord{ID: embedding.BuiltinModel, Dimensions: embedding.BuiltinDimensions, Floor: 0.5, Margin: 0.2}}
			eng, err := search.NewEngine(search.Config{}, fixedStore{near, &asked}, model, nil)
			if err != nil {
				t.Fatal(err)
			}
			res, err := eng.Search(context.Background(), "", snap, "air quality in a city", directory.Filter{})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Hits) != 1 || snap.Methods()[res.Hits[0].Pos].Slug != c.face || len(res.Hits[0].Similar) != 1 {
				var got []string
				for _, h := range res.Hits {
					got = append(got, snap.Methods()[h.Pos].Slug)
				}
				t.Errorf("hits %v, want the face %s and its twin named similar", got, c.face)
			}
		})
	}
}

// TestATwinOfTheLabelledMethodIsAHit: a group of near-duplicates is one answer, so a
// query labelled with one reseller of an API is answered when the group's face is
// another (the most trusted): labelled relevant, as calibration and the evaluation
// count it. A method outside the group is not made relevant by it.
func TestATwinOfTheLabelledMethodIsAHit(t *testing.T) {
	snap := twinSnapshot(t)
	ms := slices.Clone(snap.Methods())
	for i := range ms {
		ms[i].Endpoint = directory.Endpoint{Method: "GET", URL: "https://" + ms[i].Hostname + "/" + ms[i].Slug}
	}
	snap, err := directory.NewSnapshot(time.Unix(1, 0), ms, nil)
	if err != nil {
		t.Fatal(err)
	}
	nb := func(slug string, sim float64) search.Neighbour { return search.Neighbour{Slug: slug, Similarity: sim} }
	near := []search.Neighbour{nb("quote-a", 0.9), nb("quote-c", 0.895), nb("quote-b", 0.893), nb("price", 0.85), nb("price-history", 0.8)}
	var asked int
	model := &search.Model{Embedder: embedding.Lexhash{}, Record: search.ModelRecord{ID: embedding.BuiltinModel, Dimensions: embedding.BuiltinDimensions, Floor: 0.5, Margin: 0.2}}
	eng, err := search.NewEngine(search.Config{}, fixedStore{near, &asked}, model, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		label string
		want  []bool
	}{
		{"https://a.example/quote-a", []bool{true, false, false}}, // the face is quote-b, the most trusted
		{"https://eth.example/price-history", []bool{false, false, true}},
	} {
		l, err := eng.Label(context.Background(), snap, model, "t", search.Query{ID: "q", Text: "stock ticker price", Relevant: []string{c.label}, Kind: "task"})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(l.Slugs, []string{"quote-b", "price", "price-history"}) || !slices.Equal(l.Relevant, c.want) {
			t.Errorf("labelled %s: ranked %v relevant %v, want %v", c.label, l.Slugs, l.Relevant, c.want)
		}
	}
	if got := eng.Twins(snap, "quote-b"); !slices.Equal(slices.Sorted(slices.Values(got)), []string{"quote-a", "quote-b", "quote-c"}) {
		t.Errorf("twins of quote-b: %v", got)
	}
	if got := eng.Twins(snap, "price"); !slices.Equal(got, []string{"price"}) {
		t.Errorf("twins of price: %v", got)
	}
}
