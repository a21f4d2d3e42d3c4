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
	trust := directory.Trust{Verdict: directory.VerdictUnknown, Advisory: true}
	method := func(slug, name, description string) directory.Method {
		return directory.Method{Slug: slug, Name: name, Description: description, Provider: "p", Hostname: "api.example", Category: "weather", Kind: "x402", Trust: trust}
	}
	snap, err := directory.NewSnapshot(time.Unix(1, 0), []directory.Method{
		method("near", "Air quality", "Pollen and ozone levels for a city"),
		method("holder", "Tide tables", "High and low tide times for a harbour"),
		method("other", "Sunrise", "Sunrise and sunset times"),
	}, []directory.Merchant{{Hostname: "api.example", Providers: []string{"p"}, Trust: trust}})
	if err != nil {
		t.Fatal(err)
	}
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
