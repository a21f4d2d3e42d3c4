package eval

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/waystation/waystation/internal/embedding"
	"github.com/waystation/waystation/internal/embedding/adapt"
	"github.com/waystation/waystation/internal/embedding/sentence"
	"github.com/waystation/waystation/internal/postgres"
	"github.com/waystation/waystation/internal/search"
)

// catalogVectors are the encoder's vectors of the catalog's method texts, computed
// once for every map fitted on them.
var catalogVectors [][]float32

// adaptedHybrid is the hybrid model with its encoder's vectors mapped to the
// catalog's domain as spec (WAYSTATION_SENTENCE_ADAPT, which make eval's tables
// read too) says: "top:N", the catalog's mean and its N strongest directions removed;
// "contrast:STEPS", contrastHybrid's. The map is fitted on the catalog's method texts
// alone, never on a labelled query, so the tables stay honest.
func adaptedHybrid(t *testing.T, store *postgres.Store, enc *sentence.Encoder, spec string) *embedding.Hybrid {
	kind, arg, _ := strings.Cut(spec, ":")
	n, err := strconv.Atoi(arg)
	if (kind != "top" && kind != "contrast") || err != nil || n < 0 {
		t.Fatalf("WAYSTATION_SENTENCE_ADAPT=%q: want top:N or contrast:STEPS", spec)
	}
	if kind == "contrast" {
		return contrastHybrid(t, store, enc, n)
	}
	if catalogVectors == nil {
		texts, err := store.MethodTexts(context.Background(), embedding.HybridModel)
		if err != nil {
			t.Fatal(err)
		}
		all := make([]string, len(texts))
		for i, m := range texts {
			all[i] = embedding.MethodText(m.Name, m.Provider, m.Description, m.Category, m.Endpoint)
		}
		catalogVectors = embedding.NewHybrid(enc).SentenceVectors(all)
	}
	start := time.Now()
	m, err := adapt.FitTop(catalogVectors, n)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("map %s fitted on %d method vectors in %v", m.ID(), len(catalogVectors), time.Since(start).Round(time.Millisecond))
	return embedding.NewAdaptedHybrid(enc, m)
}

// TestAdaptAblation prints the cross-validated table of the maps that adapt the
// encoder's vectors to the catalog's domain (make eval-adapt): over the dev and own
// labelled queries together, the band's evidence under the plain encoder, then under
// each map (WAYSTATION_SENTENCE_ADAPTS, specs apart by commas, as
// WAYSTATION_SENTENCE_ADAPT reads them), each row with its paired difference from the
// plain encoder's on the same folds and the ranking's recall@3 with no band.
func TestAdaptAblation(t *testing.T) {
	fx := newAblationFixture(t, "eval-adapt", "WAYSTATION_SENTENCE_ADAPTS")
	enc, err := sentence.Load(os.Getenv("WAYSTATION_SENTENCE_MODEL"))
	if err != nil {
		t.Fatal(err)
	}
	label := func(g fixture) []search.Labelled {
		all, _ := fx.labelUnder(t, g)
		return all
	}
	a := newAblation(t, "the encoder adapted to the catalog's domain", "encoder", "the plain encoder", false)
	row := func(name string, samples []search.Labelled) { a.row(name, samples, nil, bandOptions) }
	row("plain ("+embedding.HybridModel+")", label(fx.fixture))
	ctx := context.Background()
	for _, spec := range strings.Split(os.Getenv("WAYSTATION_SENTENCE_ADAPTS"), ",") {
		h := adaptedHybrid(t, fx.store, enc, spec)
		rec, err := fx.store.RegisterModel(ctx, search.ModelRecord{ID: h.Model(), Dimensions: embedding.HybridDimensions,
			Floor: search.HybridFloor, Margin: search.HybridMargin})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := search.Sync(ctx, fx.store, h); err != nil {
			t.Fatal(err)
		}
		g := fx.fixture
		g.hybridModel, g.hybridRecord = h, rec
		if g.hybrid, err = search.NewEngine(search.Config{}, fx.store, &search.Model{Embedder: h, Record: rec}, nil); err != nil {
			t.Fatal(err)
		}
		row(spec+" ("+h.Model()+")", label(g))
	}
	fmt.Print(a)
}

// contrastHybrid is the hybrid model under a map fitted contrastively on pairs of the
// catalog's own texts: the head of a method's description (up to its first " - ",
// ": " or ". ") against its name and the rest, as a query names a need and a listing
// explains it.
func contrastHybrid(t *testing.T, store *postgres.Store, enc *sentence.Encoder, steps int) *embedding.Hybrid {
	texts, err := store.MethodTexts(context.Background(), embedding.HybridModel)
	if err != nil {
		t.Fatal(err)
	}
	var heads, rests []string
	for _, m := range texts {
		for _, sep := range []string{" - ", " — ", ": ", ". "} {
			head, rest, ok := strings.Cut(m.Description, sep)
			if ok && len(strings.Fields(head)) >= 2 && len(strings.Fields(rest)) >= 3 {
				heads = append(heads, strings.ToLower(head))
				rests = append(rests, strings.ToLower(m.Name+". "+rest))
				break
			}
		}
	}
	start := time.Now()
	a, b := enc.Embed(heads), enc.Embed(rests)
	pairs := make([]adapt.Pair, len(a))
	for i := range a {
		pairs[i] = adapt.Pair{A: a[i], B: b[i]}
	}
	m, err := adapt.FitContrast(pairs, adapt.ContrastOptions{Steps: steps})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("map %s fitted on %d pairs of %d method texts in %v", m.ID(), len(pairs), len(texts), time.Since(start).Round(time.Millisecond))
	return embedding.NewAdaptedHybrid(enc, m)
}
