package search_test

import (
	"context"
	"math"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waystation/waystation/internal/directory"
	"github.com/waystation/waystation/internal/embedding"
	"github.com/waystation/waystation/internal/search"
)

// vectorStore ranks its vectors exactly, as the store's index would at best, and
// lists them; it counts the vector searches asked of it.
type vectorStore struct {
	vs    []search.SlugVector
	asked *atomic.Int64
	// version, when set, is the vectors' version; else they never change.
	version *atomic.Int64
}

func (s vectorStore) Nearest(_ context.Context, _ search.ModelRecord, v []float32, k int, only []string) ([]search.Neighbour, error) {
	s.asked.Add(1)
	var out []search.Neighbour
	for _, sv := range s.vs {
		if only != nil && !slices.Contains(only, sv.Slug) {
			continue
		}
		var dot, a, b float64
		for j := range v {
			dot += float64(v[j]) * float64(sv.Vector[j])
			a += float64(v[j]) * float64(v[j])
			b += float64(sv.Vector[j]) * float64(sv.Vector[j])
		}
		out = append(out, search.Neighbour{Slug: sv.Slug, Similarity: dot / math.Sqrt(a*b), Vector: slices.Clone(sv.Vector)})
	}
	slices.SortStableFunc(out, func(a, b search.Neighbour) int {
		switch {
		case a.Similarity > b.Similarity:
			return -1
		case a.Similarity < b.Similarity:
			return 1
		}
		return 0
	})
	return out[:min(k, len(out))], nil
}

func (vectorStore) UseAllowance(context.Context, time.Time, int, string, int) (bool, error) {
	return true, nil
}

func (s vectorStore) MethodVectors(context.Context, search.ModelRecord) ([]search.SlugVector, error) {
	return slices.Clone(s.vs), nil
}

func (s vectorStore) VectorsVersion(context.Context, search.ModelRecord) (string, error) {
	if s.version == nil {
		return "1", nil
	}
	return strconv.FormatInt(s.version.Load(), 10), nil
}

// vectorCatalog is a snapshot of a few methods and their builtin model's vectors.
func vectorCatalog(t *testing.T) (*directory.Snapshot, []search.SlugVector) {
	t.Helper()
	trust := directory.Trust{Verdict: directory.VerdictUnknown, Advisory: true}
	texts := map[string][2]string{
		"weather-now":   {"Current weather", "current weather conditions for a city"},
		"weather-week":  {"Weather forecast", "seven day weather forecast for a city"},
		"token-price":   {"Token price", "spot price of a crypto token by ticker"},
		"gas-price":     {"Gas price", "gas price on base and ethereum"},
		"block-height":  {"Block height", "latest ethereum block height"},
		"translate":     {"Translate", "translate text between languages"},
		"image":         {"Generate image", "generate an image from a text prompt"},
		"whois":         {"Whois", "whois record of a domain"},
		"scrape":        {"Scrape page", "scrape a web page to markdown"},
		"tweets":        {"Search tweets", "search recent tweets by keyword"},
		"flights":       {"Flight search", "search flights between two airports"},
		"company":       {"Company enrichment", "enrich a company by its domain"},
		"inflation":     {"Inflation", "us inflation rate from the cpi"},
		"weather-alert": {"Weather alerts", "severe weather alerts for a region"},
	}
	var methods []directory.Method
	var vs []search.SlugVector
	for _, slug := range slices.Sorted(func(yield func(string) bool) {
		for s := range texts {
			if !yield(s) {
				return
			}
		}
	}) {
		tx := texts[slug]
		methods = append(methods, directory.Method{Slug: slug, Name: tx[0], Description: tx[1], Provider: "p", Hostname: "api.example", Category: "data", Kind: "x402", Trust: trust})
		v, err := embedding.Lexhash{}.Embed(context.Background(), []string{embedding.MethodText(tx[0], "p", tx[1], "data", "https://api.example/"+slug)})
		if err != nil {
			t.Fatal(err)
		}
		vs = append(vs, search.SlugVector{Slug: slug, Vector: v[0]})
	}
	snap, err := directory.NewSnapshot(time.Unix(1, 0), methods, []directory.Merchant{{Hostname: "api.example", Providers: []string{"p"}, Trust: trust}})
	if err != nil {
		t.Fatal(err)
	}
	return snap, vs
}

func builtinModel() *search.Model {
	return &search.Model{Embedder: embedding.WithCache(embedding.Lexhash{}, 100), Record: search.ModelRecord{ID: embedding.BuiltinModel,
		Dimensions: embedding.BuiltinDimensions, Floor: search.BuiltinFloor, Margin: search.BuiltinMargin}}
}

// TestEngineSearchesVectorsInMemory: an engine that holds a small catalog's vectors
// answers every query as the store's exact ranking does, with the same similarities,
// without asking the store; one whose catalog is larger than it holds asks the store.
func TestEngineSearchesVectorsInMemory(t *testing.T) {
	ctx := context.Background()
	snap, vs := vectorCatalog(t)
	var storeAsked, memAsked, bigAsked atomic.Int64
	viaStore, err := search.NewEngine(search.Config{}, vectorStore{vs: vs, asked: &storeAsked}, builtinModel(), nil)
	if err != nil {
		t.Fatal(err)
	}
	inMemory, err := search.NewEngine(search.Config{MemoryVectors: 100}, vectorStore{vs: vs, asked: &memAsked}, builtinModel(), nil)
	if err != nil {
		t.Fatal(err)
	}
	tooBig, err := search.NewEngine(search.Config{MemoryVectors: snap.Len() - 1}, vectorStore{vs: vs, asked: &bigAsked}, builtinModel(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if n, _, err := inMemory.LoadVectors(ctx, snap); err != nil || n != len(vs) {
		t.Fatalf("loaded %d vectors of %d: %v", n, len(vs), err)
	}
	if n, _, err := tooBig.LoadVectors(ctx, snap); err != nil || n != 0 {
		t.Fatalf("a catalog over the limit loaded %d vectors: %v", n, err)
	}
	queries := []string{"weather forecast in paris", "price of a token", "ethereum block", "translate some text", "a recipe for banana bread", "scrape web page"}
	filters := []directory.Filter{{}, {Hostname: "api.example"}}
	for _, q := range queries {
		for _, f := range filters {
			want, err := viaStore.Search(ctx, "", snap, q, f)
			if err != nil {
				t.Fatal(err)
			}
			got, err := inMemory.Search(ctx, "", snap, q, f)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tooBig.Search(ctx, "", snap, q, f); err != nil {
				t.Fatal(err)
			}
			if got.Match != want.Match || len(got.Hits) != len(want.Hits) || len(got.Nearest) != len(want.Nearest) {
				t.Fatalf("%q: in memory %+v, through the store %+v", q, got, want)
			}
			for i := range got.Hits {
				if got.Hits[i].Pos != want.Hits[i].Pos || math.Abs(got.Hits[i].Similarity-want.Hits[i].Similarity) > 1e-6 {
					t.Errorf("%q hit %d: in memory %+v, through the store %+v", q, i, got.Hits[i], want.Hits[i])
				}
			}
			for i := range got.Nearest {
				if got.Nearest[i].Pos != want.Nearest[i].Pos {
					t.Errorf("%q nearest %d: in memory %+v, through the store %+v", q, i, got.Nearest[i], want.Nearest[i])
				}
			}
		}
	}
	if n := memAsked.Load(); n != 0 {
		t.Errorf("the engine holding the vectors asked the store %d times", n)
	}
	if n := bigAsked.Load(); n != int64(len(queries)*len(filters)) {
		t.Errorf("the engine over its limit asked the store %d times, want %d", n, len(queries)*len(filters))
	}
}

// TestEngineLoadsVectorsInTheBackground: an engine asked about a snapshot whose
// vectors it does not hold answers through the store at once, and loads them for
// the searches after.
func TestEngineLoadsVectorsInTheBackground(t *testing.T) {
	ctx := context.Background()
	snap, vs := vectorCatalog(t)
	var asked atomic.Int64
	e, err := search.NewEngine(search.Config{MemoryVectors: 100}, vectorStore{vs: vs, asked: &asked}, builtinModel(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Search(ctx, "", snap, "forecast of the weather", directory.Filter{}); err != nil {
		t.Fatal(err)
	}
	if asked.Load() != 1 {
		t.Fatalf("the first search asked the store %d times, want 1", asked.Load())
	}
	deadline := time.Now().Add(5 * time.Second)
	for i := 0; ; i++ {
		before := asked.Load()
		if _, err := e.Search(ctx, "", snap, "token price "+string(rune('a'+i%26))+string(rune('a'+i/26%26)), directory.Filter{}); err != nil {
			t.Fatal(err)
		}
		if asked.Load() == before {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the vectors were never loaded into memory")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestEngineReloadsVectorsThatChanged: a method embedded again after its snapshot
// was loaded (its text changed, or its vector was still missing) is searched by its
// new vector once the store says the vectors changed, within the minute the
// neighbour cache keeps an answer; not before the engine asks.
func TestEngineReloadsVectorsThatChanged(t *testing.T) {
	ctx := context.Background()
	snap, vs := vectorCatalog(t)
	var asked, version atomic.Int64
	now := time.Unix(1000, 0)
	var clock atomic.Pointer[time.Time]
	clock.Store(&now)
	store := &vectorStore{vs: vs, asked: &asked, version: &version}
	e, err := search.NewEngine(search.Config{MemoryVectors: 100, Now: func() time.Time { return *clock.Load() }}, store, builtinModel(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.LoadVectors(ctx, snap); err != nil {
		t.Fatal(err)
	}
	first := func(q string) string {
		res, err := e.Search(ctx, "", snap, q, directory.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Hits) == 0 {
			return ""
		}
		return snap.Methods()[res.Hits[0].Pos].Slug
	}
	if got := first("whois record of a domain"); got != "whois" {
		t.Fatalf("first hit %q, want whois", got)
	}
	// The whois method is embedded again as the weather alerts' text.
	var alerts []float32
	for _, v := range vs {
		if v.Slug == "weather-alert" {
			alerts = v.Vector
		}
	}
	store.vs = slices.Clone(vs)
	for i := range store.vs {
		if store.vs[i].Slug == "whois" {
			store.vs[i] = search.SlugVector{Slug: "whois", Vector: alerts}
		}
	}
	version.Add(1)
	if got := first("whois record of the domain"); got != "whois" {
		t.Fatalf("before the engine asks, first hit %q, want whois as held", got)
	}
	later := now.Add(time.Minute)
	clock.Store(&later)
	deadline := time.Now().Add(5 * time.Second)
	for i := 0; ; i++ {
		if got := first("whois record for domain " + strconv.Itoa(i)); got != "whois" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the vector embedded again was never loaded")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if asked.Load() != 0 {
		t.Errorf("the store was asked %d vector searches", asked.Load())
	}
}
