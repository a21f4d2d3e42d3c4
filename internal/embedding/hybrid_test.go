package embedding_test

import (
	"context"
	"math"
	"os"
	"testing"

	"github.com/waystation/waystation/internal/embedding"
	"github.com/waystation/waystation/internal/embedding/sentence"
)

func hybrid(t *testing.T) *embedding.Hybrid {
	dir := os.Getenv("WAYSTATION_SENTENCE_MODEL")
	if dir == "" {
		t.Skip("WAYSTATION_SENTENCE_MODEL is not set (make test sets it)")
	}
	enc, err := sentence.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return embedding.NewHybrid(enc)
}

func TestHybridVectorsAreUnitAndSplitIntoTheirParts(t *testing.T) {
	h := hybrid(t)
	method := embedding.MethodText("Bitcoin price", "Coins", "The latest BTC price in US dollars.", "crypto/prices", "https://api.coins.example/v1/btc")
	texts := []string{"how much is one bitcoin in dollars right now", method, "zzzz", ""}
	vs, err := h.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range vs {
		if len(v) != embedding.HybridDimensions {
			t.Fatalf("%q: %d dimensions", texts[i], len(v))
		}
		var n float64
		for _, x := range v {
			n += float64(x) * float64(x)
		}
		if math.Abs(n-1) > 1e-4 && texts[i] != "" {
			t.Errorf("%q: norm² %.5f", texts[i], n)
		}
	}
	sem, lex := h.Parts(vs[0], vs[1])
	fused := 0.0
	for j := range vs[0] {
		fused += float64(vs[0][j]) * float64(vs[1][j])
	}
	want := embedding.SemanticShare*sem + (1-embedding.SemanticShare)*lex
	if math.Abs(fused-want) > 1e-4 || sem <= 0.3 || lex <= 0 {
		t.Fatalf("fused %.4f, parts %.4f and %.4f make %.4f", fused, sem, lex, want)
	}
	if s, l := h.Parts(vs[1], vs[1]); math.Abs(s-1) > 1e-4 || math.Abs(l-1) > 1e-4 {
		t.Fatalf("a vector against itself: %.4f, %.4f", s, l)
	}
}

func TestHybridReweighsQueriesWhenTheCatalogChanges(t *testing.T) {
	h := hybrid(t)
	ctx := context.Background()
	before, _ := h.Embed(ctx, []string{"weather tides"})
	texts := []string{embedding.MethodText("Tides", "C", "weather tides", "weather", "https://c.example/t")}
	if !h.SetFrequencies(embedding.NewFrequencies(texts)) {
		t.Fatal("new frequencies not reported as a change")
	}
	if h.SetFrequencies(embedding.NewFrequencies(texts)) {
		t.Fatal("the same frequencies reported as a change")
	}
	after, _ := h.Embed(ctx, []string{"weather tides"})
	same := true
	for j := range before[0] {
		same = same && before[0][j] == after[0][j]
	}
	if same {
		t.Fatal("the query's vector ignores the catalog's frequencies")
	}
}
