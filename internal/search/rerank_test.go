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

// TestACalibratedBandReranksByTheQuerysWords: under a calibration with a rerank
// weight, a method that holds the query's words climbs over one only a little more
// similar; the similarities stay the model's, and a repeated query (its neighbours
// cached) is ranked alike. Without the weight, the order is the similarity's.
func TestACalibratedBandReranksByTheQuerysWords(t *testing.T) {
	snap := tideSnapshot(t)
	near := []search.Neighbour{{Slug: "near", Similarity: 0.62}, {Slug: "holder", Similarity: 0.6}, {Slug: "other", Similarity: 0.4}}
	for _, c := range []struct {
		rerank float64
		want   []string
	}{{0, []string{"near", "holder", "other"}}, {0.5, []string{"holder", "near", "other"}}} {
		var asked int
		cal := &search.Calibration{Bias: 5, Least: 0.5, Margin: 1, Rerank: c.rerank}
		model := &search.Model{Embedder: embedding.Lexhash{}, Record: search.ModelRecord{ID: embedding.BuiltinModel, Dimensions: embedding.BuiltinDimensions, Calibration: cal}}
		eng, err := search.NewEngine(search.Config{}, fixedStore{near, &asked}, model, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, run := range []string{"novel", "repeated"} {
			res, err := eng.Search(context.Background(), "", snap, "when is high tide in the harbour", directory.Filter{})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, h := range res.Hits {
				m := snap.Methods()[h.Pos]
				got = append(got, m.Slug)
				if i := slices.IndexFunc(near, func(n search.Neighbour) bool { return n.Slug == m.Slug }); h.Similarity != near[i].Similarity {
					t.Errorf("rerank %v, %s: %s has similarity %v, want the model's %v", c.rerank, run, m.Slug, h.Similarity, near[i].Similarity)
				}
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("rerank %v, %s: %v, want %v", c.rerank, run, got, c.want)
			}
		}
	}
	if near[0].Slug != "near" {
		t.Errorf("the store's neighbours were reordered in place: %v", near)
	}
}

// tideSnapshot holds four methods, only one of which, "holder", speaks of tides.
func tideSnapshot(t *testing.T) *directory.Snapshot {
	t.Helper()
	trust := directory.Trust{Verdict: directory.VerdictUnknown, Advisory: true}
	method := func(slug, name, description string) directory.Method {
		return directory.Method{Slug: slug, Name: name, Description: description, Provider: "p", Hostname: "api.example",
			Category: "weather", Kind: "x402", Trust: trust, Endpoint: directory.Endpoint{URL: "https://api.example/" + slug}}
	}
	snap, err := directory.NewSnapshot(time.Unix(1, 0), []directory.Method{
		method("near", "Air quality", "Pollen and ozone levels for a city"),
		method("holder", "Tide tables", "High and low tide times for a harbour"),
		method("other", "Sunrise", "Sunrise and sunset times"),
		method("fourth", "Snow depth", "Snow depth at ski resorts"),
	}, []directory.Merchant{{Hostname: "api.example", Providers: []string{"p"}, Trust: trust}})
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

// TestLabelReadsAQueryUnderEveryRerankWeight: a labelled query is read under each
// rerank weight, from as many neighbours as the band reranks; its own fields are the
// ranking by similarity, where a method fourth by similarity that holds the query's
// words is out of the three, and under a weight it is in.
func TestLabelReadsAQueryUnderEveryRerankWeight(t *testing.T) {
	snap := tideSnapshot(t)
	near := []search.Neighbour{{Slug: "near", Similarity: 0.62}, {Slug: "other", Similarity: 0.61}, {Slug: "fourth", Similarity: 0.6}, {Slug: "holder", Similarity: 0.5}}
	var asked int
	model := &search.Model{Embedder: embedding.Lexhash{}, Record: search.ModelRecord{ID: embedding.BuiltinModel, Dimensions: embedding.BuiltinDimensions}}
	eng, err := search.NewEngine(search.Config{}, fixedStore{near, &asked}, model, nil)
	if err != nil {
		t.Fatal(err)
	}
	l, err := eng.Label(context.Background(), snap, model, "own", search.Query{Text: "when is high tide in the harbour", Relevant: []string{"https://api.example/holder"}, Kind: "paraphrase"})
	if err != nil {
		t.Fatal(err)
	}
	if asked < search.Reranked {
		t.Errorf("the store was asked for %d neighbours, want at least %d", asked, search.Reranked)
	}
	if len(l.Rankings) != len(search.RerankWeights) {
		t.Fatalf("%d rankings, want one per weight (%d)", len(l.Rankings), len(search.RerankWeights))
	}
	if slices.Contains(l.Relevant, true) || !slices.Equal(l.Relevant, l.Rankings[0].Relevant) || l.Evidence != l.Rankings[0].Evidence {
		t.Errorf("by similarity: relevant %v, want none of the three, as ranking 0 reads it", l.Relevant)
	}
	last := l.Rankings[len(l.Rankings)-1]
	if !last.Relevant[0] || last.Similarities[0] != 0.5 {
		t.Errorf("under weight %v: relevant %v, similarities %v; want the tide method first, at its own similarity", search.RerankWeights[len(l.Rankings)-1], last.Relevant, last.Similarities)
	}
}

// TestRerankKeepsTheNeighboursTheBandReads: reranked or not, and for a query of no
// concept to rerank by too, the band reads the first search.Neighbours of the
// methods reranked, so that a lead over "the others" is over as many of them for
// every query.
func TestRerankKeepsTheNeighboursTheBandReads(t *testing.T) {
	snap := tideSnapshot(t)
	var near []search.Neighbour
	for i := range search.Reranked {
		near = append(near, search.Neighbour{Slug: []string{"near", "holder", "other", "fourth"}[i%4], Similarity: 0.9 - float64(i)*0.01})
	}
	model := &search.Model{Embedder: embedding.Lexhash{}, Record: search.ModelRecord{ID: embedding.BuiltinModel, Dimensions: embedding.BuiltinDimensions}}
	eng, err := search.NewEngine(search.Config{}, fixedStore{near, new(int)}, model, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"when is high tide in the harbour", "what is it"} {
		for _, w := range []float64{0, 1} {
			if got := eng.Rerank(snap, q, near, w); len(got) != search.Neighbours {
				t.Errorf("%q under weight %v: %d neighbours, want %d", q, w, len(got), search.Neighbours)
			}
		}
	}
}
