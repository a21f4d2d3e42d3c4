package search

import (
	"testing"

	"github.com/waystation/waystation/internal/embedding"
)

func loadTestVectors(t *testing.T) *WordVectors {
	t.Helper()
	v, err := LoadWordVectors("testdata/wordvec", WordVectorRanks)
	if err != nil {
		t.Fatal(err)
	}
	v.Threshold = 0.3
	return v
}

// TestLoadWordVectors keeps the words a concept can be read from: not a stop word,
// not one with a capital, and not one past the rank asked for.
func TestLoadWordVectors(t *testing.T) {
	v := loadTestVectors(t)
	if v.Words() != 11 {
		t.Errorf("%d words, want 11 (not the stop word, not the capitalised one)", v.Words())
	}
	for _, w := range []string{"the", "Paris"} {
		if _, ok := v.index[w]; ok {
			t.Errorf("%q kept", w)
		}
	}
	few, err := LoadWordVectors("testdata/wordvec", 5)
	if err != nil {
		t.Fatal(err)
	}
	if few.Words() != 4 {
		t.Errorf("ranks under 5: %d words, want 4", few.Words())
	}
	q := make([]float32, 4)
	v.add(q, "prognosis", 1)
	o := make([]float32, 4)
	v.add(o, "outlook", 1)
	if c := dot(q, o); c < 0.94 || c > 0.97 {
		t.Errorf("cosine of prognosis and outlook %v, want about 0.954", c)
	}
}

// TestWordVectorEvidence: a query's concept the nearest method does not hold but
// holds a word near it counts in vec_cover, over cover; a far one counts nothing
// (under the threshold); one held exactly counts 1; vec_known reads the catalog's
// concepts the same way; and the features that were there before read the same with
// word vectors and without, the vectors' being 0 without.
func TestWordVectorEvidence(t *testing.T) {
	v := loadTestVectors(t)
	snap := thesaurusSnapshot(t)
	plain, rich := newTextIndex(snap, nil, nil, nil), newTextIndex(snap, nil, v, nil)
	near := []Neighbour{{Slug: "outlook", Similarity: 0.6}, {Slug: "vehicles", Similarity: 0.4}}
	for _, c := range []struct {
		query      string
		soft, full bool
	}{
		{"prognosis for my city", true, false}, // near outlook
		{"banana for my city", false, false},   // near nothing
		{"daily outlook for any city", false, true},
	} {
		q := embedding.NormalizeQuery(c.query)
		before, after := plain.Gather(q, near, nil), rich.Gather(q, near, nil)
		for i := range FeatVecCover {
			if before[i] != after[i] {
				t.Errorf("%q: %s %v with word vectors, %v without", c.query, FeatureNames[i], after[i], before[i])
			}
		}
		for i := FeatVecCover; i <= FeatVecSimilarity; i++ {
			if before[i] != 0 {
				t.Errorf("%q without word vectors: %s %v", c.query, FeatureNames[i], before[i])
			}
		}
		if got := after[FeatVecCover] > after[FeatCover]+0.01; got != c.soft {
			t.Errorf("%q: vec_cover %v, cover %v", c.query, after[FeatVecCover], after[FeatCover])
		}
		if got := after[FeatVecKnown] > after[FeatKnown]+0.01; got != c.soft {
			t.Errorf("%q: vec_known %v, known %v", c.query, after[FeatVecKnown], after[FeatKnown])
		}
		if c.full && (after[FeatVecCover] != 1 || after[FeatVecKnown] != 1) {
			t.Errorf("%q: vec_cover %v, vec_known %v, want 1", c.query, after[FeatVecCover], after[FeatVecKnown])
		}
		if after[FeatVecCover3] < after[FeatVecCover] {
			t.Errorf("%q: vec_cover3 %v under vec_cover %v", c.query, after[FeatVecCover3], after[FeatVecCover])
		}
		if after[FeatVecSimilarity] == 0 || after[FeatVecSimilarity] < -1.0001 || after[FeatVecSimilarity] > 1.0001 {
			t.Errorf("%q: vec_similarity %v", c.query, after[FeatVecSimilarity])
		}
	}
}

// TestWordVectorRerank: with a weight, a method that holds a word near the query's
// climbs over one a little more similar that holds nothing near it.
func TestWordVectorRerank(t *testing.T) {
	v := loadTestVectors(t)
	snap := thesaurusSnapshot(t)
	near := []Neighbour{{Slug: "vehicles", Similarity: 0.62}, {Slug: "outlook", Similarity: 0.6}}
	q := embedding.NormalizeQuery("prognosis")
	for _, w := range []float64{0, 0.5} {
		v.Weight = w
		got := newTextIndex(snap, nil, v, nil).Rerank(q, near, 1)
		if want := map[float64]string{0: "vehicles", 0.5: "outlook"}[w]; got[0].Slug != want {
			t.Errorf("weight %v: first %s, want %s", w, got[0].Slug, want)
		}
	}
}
