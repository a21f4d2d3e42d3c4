package search_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/waystation/waystation/internal/directory"
	"github.com/waystation/waystation/internal/embedding"
	"github.com/waystation/waystation/internal/search"
)

func reading(p float64, slugs ...string) search.Reading {
	r := search.Reading{P: p}
	for i, s := range slugs {
		r.Near = append(r.Near, search.Neighbour{Slug: s, Similarity: 0.9 - 0.1*float64(i)})
	}
	return r
}

// TestFusionAnswersOnlyWhenPhrasingsAgree: a query whose phrasings are each
// probably answerable and come near the same method is answered, best fused first;
// one whose phrasings are unsure, or each near another method, is not, however sure
// one of them is.
func TestFusionAnswersOnlyWhenPhrasingsAgree(t *testing.T) {
	f := search.Fusion{Least: 0.5, Top: 2, K: 1}
	got := f.Fuse([]search.Reading{reading(0.9, "a", "b", "c"), reading(0.7, "b", "a", "d"), reading(0.6, "a", "e", "f"), reading(0.2, "x", "y", "z")}, 3, nil)
	if len(got.Kept) != 3 || got.Kept[0].Slug != "a" || got.Kept[1].Slug != "b" || got.Agreed != 3 {
		t.Fatalf("agreeing phrasings: %+v", got)
	}
	for i := 1; i < len(got.Scores); i++ {
		if got.Scores[i] > got.Scores[i-1] {
			t.Errorf("scores not descending: %v", got.Scores)
		}
	}
	// Sure, but each near something else: only one holds the fused first.
	if got := f.Fuse([]search.Reading{reading(0.95, "a", "b", "c"), reading(0.9, "d", "e", "f"), reading(0.9, "g", "h", "i"), reading(0.9, "j", "k", "l")}, 3, nil); len(got.Kept) != 0 || got.Agreed != 1 {
		t.Errorf("disagreeing phrasings answered: %+v", got)
	}
	// Agreeing, but unsure on the whole.
	if got := f.Fuse([]search.Reading{reading(0.9, "a"), reading(0.3, "a"), reading(0.2, "a"), reading(0.1, "a")}, 3, nil); len(got.Kept) != 0 || got.Share >= 0.5 {
		t.Errorf("unsure phrasings answered: %+v", got)
	}
	// One phrasing alone needs only itself.
	if got := f.Fuse([]search.Reading{reading(0.6, "a", "b")}, 1, nil); len(got.Kept) != 1 || got.Kept[0].Slug != "a" {
		t.Errorf("one phrasing: %+v", got)
	}
	if got := f.Fuse(nil, 3, nil); len(got.Kept) != 0 {
		t.Errorf("no phrasing: %+v", got)
	}
}

// TestFusionReadsAGroupAsOne: phrasings that each rank another of one group's
// near-duplicates first agree on the group, which is answered once, under the
// member read first; a phrasing's own twins count once.
func TestFusionReadsAGroupAsOne(t *testing.T) {
	f := search.Fusion{Least: 0.5, Top: 2, K: 1}
	group := func(slug string) string {
		if slug == "a1" || slug == "a2" || slug == "a3" {
			return "#a"
		}
		return slug
	}
	rs := []search.Reading{reading(0.8, "a1", "b", "c"), reading(0.8, "a2", "d", "e"), reading(0.7, "a3", "f", "g")}
	if got := f.Fuse(rs, 3, nil); len(got.Kept) != 0 {
		t.Errorf("without groups, three twins ranked first by one phrasing each read as agreement: %+v", got)
	}
	got := f.Fuse(rs, 3, group)
	if len(got.Kept) != 3 || got.Kept[0].Slug != "a1" || got.Agreed != 3 {
		t.Fatalf("a group ranked first by each phrasing: %+v", got)
	}
	for _, n := range got.Kept[1:] {
		if group(n.Slug) == "#a" {
			t.Errorf("the group answered twice: %+v", got.Kept)
		}
	}
	if got := f.Fuse([]search.Reading{reading(0.9, "a1", "a2", "a3", "b")}, 2, group); len(got.Kept) != 2 || got.Kept[1].Slug != "b" {
		t.Errorf("one phrasing's twins: %+v", got.Kept)
	}
}

// batches counts the calls to a model and the texts of each.
type batches struct {
	embedding.Embedder
	mu    sync.Mutex
	calls []int
	// failBatches makes every call of more than one text fail.
	failBatches bool
}

func (b *batches) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	b.mu.Lock()
	b.calls = append(b.calls, len(texts))
	b.mu.Unlock()
	if b.failBatches && len(texts) > 1 {
		return nil, errors.New("the batch failed")
	}
	return b.Embedder.Embed(ctx, texts)
}

// TestPhrasingsAreEmbeddedInOneBatch: a novel query's novel phrasings cost the model
// one pass, not one each, and the allowance one each; asked again, nothing. The
// query has a pass of its own (beside the phrasings', at once), so that its vector
// is the one it has asked alone.
func TestPhrasingsAreEmbeddedInOneBatch(t *testing.T) {
	snap := nearSnapshot(t)
	model := &batches{Embedder: embedding.Lexhash{}}
	c := search.HybridCalibration
	m := &search.Model{Embedder: embedding.WithCache(model, 100), Record: search.ModelRecord{ID: embedding.BuiltinModel, Dimensions: embedding.BuiltinDimensions, Calibration: &c}}
	store := &counter{callers: map[string]int{}}
	var asked int
	eng, err := search.NewEngine(search.Config{DailyAllowance: 100}, countedStore{fixedStore{[]search.Neighbour{{Slug: "a", Similarity: 0.8}, {Slug: "b", Similarity: 0.7}}, &asked}, store}, m, nil)
	if err != nil {
		t.Fatal(err)
	}
	rewrites := []string{"weather forecast", "city weather api", "forecast lookup", "weather"}
	for range 2 {
		if _, err := eng.SearchPhrased(context.Background(), "caller", snap, "weather in a city", rewrites, directory.Filter{}); err != nil {
			t.Fatal(err)
		}
	}
	if calls := slices.Sorted(slices.Values(model.calls)); !slices.Equal(calls, []int{1, 4}) || store.used != 5 {
		t.Errorf("model calls %v (want the query, then its four phrasings in one), allowance used %d (want 5)", model.calls, store.used)
	}
}

// TestAFailedBatchIsNotChargedTwice: when the one pass over a query's phrasings
// fails and each is embedded again alone, each is charged to the allowance once.
func TestAFailedBatchIsNotChargedTwice(t *testing.T) {
	snap := nearSnapshot(t)
	model := &batches{Embedder: embedding.Lexhash{}, failBatches: true}
	c := search.HybridCalibration
	m := &search.Model{Embedder: embedding.WithCache(model, 100), Record: search.ModelRecord{ID: embedding.BuiltinModel, Dimensions: embedding.BuiltinDimensions, Calibration: &c}}
	store := &counter{callers: map[string]int{}}
	var asked int
	eng, err := search.NewEngine(search.Config{DailyAllowance: 100}, countedStore{fixedStore{[]search.Neighbour{{Slug: "a", Similarity: 0.8}, {Slug: "b", Similarity: 0.7}}, &asked}, store}, m, nil)
	if err != nil {
		t.Fatal(err)
	}
	rewrites := []string{"weather forecast", "city weather api", "forecast lookup"}
	if _, err := eng.SearchPhrased(context.Background(), "caller", snap, "weather in a city", rewrites, directory.Filter{}); err != nil {
		t.Fatal(err)
	}
	if len(model.calls) != 5 || store.used != 4 {
		t.Errorf("model calls %v (want the query, the failed batch of three, then each alone), allowance used %d (want 4)", model.calls, store.used)
	}
}

// countedStore answers as its fixedStore, from any number of goroutines at once (a
// query's phrasings are looked up together), and counts the allowance as its counter.
type countedStore struct {
	fixedStore
	c *counter
}

func (s countedStore) Nearest(ctx context.Context, m search.ModelRecord, v []float32, k int, only []string) ([]search.Neighbour, error) {
	var asked int
	return fixedStore{s.near, &asked}.Nearest(ctx, m, v, k, only)
}

func (s countedStore) UseAllowance(ctx context.Context, now time.Time, limit int, caller string, share int) (bool, error) {
	return s.c.UseAllowance(ctx, now, limit, caller, share)
}

// TestPhrasingsNeverCostTheQueryItsAnswer: when the phrasings fall short of agreeing,
// a query its band answers alone is answered as without them, its band reported
// with the phrasings' agreement beside it; when the band refuses it too, nothing is.
func TestPhrasingsNeverCostTheQueryItsAnswer(t *testing.T) {
	snap := nearSnapshot(t)
	rewrites := []string{"weather forecast", "city weather api"}
	for _, tc := range []struct {
		least float64
		hits  bool
	}{{least: 0, hits: true}, {least: 2, hits: false}} {
		c := search.HybridCalibration
		c.Least = tc.least
		c.Fusion = &search.Fusion{Least: 2, Top: 2, K: 1} // the phrasings never agree enough
		m := &search.Model{Embedder: embedding.WithCache(embedding.Lexhash{}, 100), Record: search.ModelRecord{ID: embedding.BuiltinModel, Dimensions: embedding.BuiltinDimensions, Calibration: &c}}
		var asked int
		store := countedStore{fixedStore{[]search.Neighbour{{Slug: "a", Similarity: 0.8}, {Slug: "b", Similarity: 0.7}}, &asked}, &counter{callers: map[string]int{}}}
		eng, err := search.NewEngine(search.Config{}, store, m, nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := eng.SearchPhrased(context.Background(), "caller", snap, "weather in a city", rewrites, directory.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		if got := len(res.Hits) > 0; got != tc.hits {
			t.Errorf("band least %v: hits %v, want %v", tc.least, res.Hits, tc.hits)
		}
		if res.Band == nil || res.Band.Phrasings != 3 || res.Band.Needed != 2 {
			t.Errorf("band least %v: band %+v, want the three phrasings' agreement reported", tc.least, res.Band)
		}
	}
}

// failing is a provider that is down.
type failing struct{ embedding.Embedder }

func (failing) Embed(context.Context, []string) ([][]float32, error) {
	return nil, errors.New("the provider is down")
}

// TestPhrasingsFollowTheQueryToTheFallback: when the provider fails on a query said
// several ways, the fallback answers the query and its phrasings are read under it,
// each charged to the allowance once, as the query is.
func TestPhrasingsFollowTheQueryToTheFallback(t *testing.T) {
	snap := nearSnapshot(t)
	c := search.HybridCalibration
	primary := &search.Model{Embedder: embedding.WithCache(failing{embedding.Lexhash{}}, 100), Record: search.ModelRecord{ID: "provider", Dimensions: embedding.BuiltinDimensions, Calibration: &c}}
	fallback := &search.Model{Embedder: embedding.WithCache(embedding.Lexhash{}, 100), Record: search.ModelRecord{ID: embedding.BuiltinModel, Dimensions: embedding.BuiltinDimensions, Calibration: &c}}
	allowance := &counter{callers: map[string]int{}}
	var asked int
	eng, err := search.NewEngine(search.Config{DailyAllowance: 100}, countedStore{fixedStore{[]search.Neighbour{{Slug: "a", Similarity: 0.8}, {Slug: "b", Similarity: 0.7}}, &asked}, allowance}, primary, fallback)
	if err != nil {
		t.Fatal(err)
	}
	rewrites := []string{"weather forecast", "city weather api", "forecast lookup"}
	res, err := eng.SearchPhrased(context.Background(), "caller", snap, "weather in a city", rewrites, directory.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Model != embedding.BuiltinModel || !res.Degraded || res.Band == nil || res.Band.Phrasings != 4 || allowance.used != 4 {
		t.Errorf("model %q, degraded %v, band %+v, allowance used %d: want the fallback's answer of the four phrasings, each charged once", res.Model, res.Degraded, res.Band, allowance.used)
	}
}

// TestALargeCatalogIsAnsweredByItsOwnBand: a calibration with a band for large
// catalogs answers a snapshot of at least LargeFrom methods with that band, alone
// and with phrasings, and a smaller one with its own; stored and read back, it keeps
// both.
func TestALargeCatalogIsAnsweredByItsOwnBand(t *testing.T) {
	snap := nearSnapshot(t)
	answers, refuses := search.HybridCalibration, search.HybridCalibration
	answers.Least, refuses.Least = 0, 2
	refusing := search.Fusion{Least: 2, Top: 2, K: 1}
	refuses.Fusion = &refusing
	near := []search.Neighbour{{Slug: "a", Similarity: 0.8}, {Slug: "b", Similarity: 0.7}}
	for _, c := range []struct {
		from   int
		answer bool
	}{{snap.Len(), false}, {snap.Len() + 1, true}} {
		cal := answers
		cal.Large, cal.LargeFrom = &refuses, c.from
		b, err := json.Marshal(cal)
		if err != nil {
			t.Fatal(err)
		}
		var read search.Calibration
		if err := json.Unmarshal(b, &read); err != nil {
			t.Fatal(err)
		}
		if read.Large == nil || read.LargeFrom != c.from || read.Large.Least != 2 || read.Large.Fusion == nil {
			t.Fatalf("read back %s: %+v", b, read)
		}
		var asked int
		m := &search.Model{Embedder: embedding.Lexhash{}, Record: search.ModelRecord{ID: embedding.BuiltinModel, Dimensions: embedding.BuiltinDimensions, Calibration: &read}}
		eng, err := search.NewEngine(search.Config{}, countedStore{fixedStore{near, &asked}, &counter{callers: map[string]int{}}}, m, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, rewrites := range [][]string{nil, {"weather forecast", "city weather api"}} {
			res, err := eng.SearchPhrased(context.Background(), "caller", snap, "weather in a city", rewrites, directory.Filter{})
			if err != nil {
				t.Fatal(err)
			}
			if got := len(res.Hits) > 0; got != c.answer {
				t.Errorf("%d methods, large from %d, %d phrasings: answered %v, want %v (band %+v)", snap.Len(), c.from, len(rewrites), got, c.answer, res.Band)
			}
		}
	}
}
