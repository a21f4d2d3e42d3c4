package search

import (
	"testing"
	"time"

	"github.com/waystation/waystation/internal/directory"
	"github.com/waystation/waystation/internal/embedding"
)

// thesaurusSnapshot holds a method that speaks of an outlook and one of vehicles.
func thesaurusSnapshot(t *testing.T) *directory.Snapshot {
	t.Helper()
	trust := directory.Trust{Verdict: directory.VerdictUnknown, Advisory: true}
	method := func(slug, name, description string) directory.Method {
		return directory.Method{Slug: slug, Name: name, Description: description, Provider: "p", Hostname: "api.example",
			Category: "misc", Kind: "x402", Trust: trust}
	}
	snap, err := directory.NewSnapshot(time.Unix(1, 0), []directory.Method{
		method("outlook", "Outlook", "The daily outlook for any city"),
		method("vehicles", "Vehicles", "Vehicle registry lookup by plate"),
	}, []directory.Merchant{{Hostname: "api.example", Providers: []string{"p"}, Trust: trust}})
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

// TestThesaurusEvidence: a query's concept the nearest method holds only through a
// WordNet relative (a synonym, a derivationally related form; a hypernym when the
// thesaurus counts them) counts in syn_cover, not in cover; one the catalog lacks but
// has a relative of counts in syn_known; a relative two steps away counts for
// nothing; and the features that were there before read the same with a thesaurus
// and without.
func TestThesaurusEvidence(t *testing.T) {
	th, err := LoadThesaurus("testdata/wordnet")
	if err != nil {
		t.Fatal(err)
	}
	snap := thesaurusSnapshot(t)
	plain, rich := newTextIndex(snap, nil, nil, nil), newTextIndex(snap, th, nil, nil)
	near := func(first string) []Neighbour {
		other := map[string]string{"outlook": "vehicles", "vehicles": "outlook"}[first]
		return []Neighbour{{Slug: first, Similarity: 0.6}, {Slug: other, Similarity: 0.4}}
	}
	for _, c := range []struct {
		query, first      string
		hypernyms         bool
		synCover, synKnow bool
	}{
		{"prognosis for my city", "outlook", false, true, true},         // a synonym
		{"prognosticating for my city", "outlook", false, false, false}, // two steps: a derived form's synonym
		{"motorcar registry", "vehicles", false, false, false},          // a hypernym, not counted
		{"motorcar registry", "vehicles", true, true, true},             // counted
		{"daily outlook for any city", "outlook", false, false, false},  // held exactly
	} {
		th.Hypernyms = c.hypernyms
		q := embedding.NormalizeQuery(c.query)
		before, after := plain.Gather(q, near(c.first), nil), rich.Gather(q, near(c.first), nil)
		for i := range FeatSynCover {
			if before[i] != after[i] {
				t.Errorf("%q: %s %v with a thesaurus, %v without", c.query, FeatureNames[i], after[i], before[i])
			}
		}
		if before[FeatSynCover] != 0 || before[FeatSynCover3] != 0 || before[FeatSynKnown] != 0 {
			t.Errorf("%q without a thesaurus: syn features %v", c.query, before[FeatSynCover:])
		}
		if got := after[FeatSynCover] > 0; got != c.synCover {
			t.Errorf("%q (hypernyms %v): syn_cover %v", c.query, c.hypernyms, after[FeatSynCover])
		}
		if got := after[FeatSynKnown] > 0; got != c.synKnow {
			t.Errorf("%q (hypernyms %v): syn_known %v", c.query, c.hypernyms, after[FeatSynKnown])
		}
		if after[FeatSynCover3] < after[FeatSynCover] {
			t.Errorf("%q: syn_cover3 %v under syn_cover %v", c.query, after[FeatSynCover3], after[FeatSynCover])
		}
	}
}

// TestThesaurusRerank: with a weight, a method that holds a query's concept through
// a relative climbs over one a little more similar that holds none of it.
func TestThesaurusRerank(t *testing.T) {
	th, err := LoadThesaurus("testdata/wordnet")
	if err != nil {
		t.Fatal(err)
	}
	snap := thesaurusSnapshot(t)
	near := []Neighbour{{Slug: "vehicles", Similarity: 0.62}, {Slug: "outlook", Similarity: 0.6}}
	q := embedding.NormalizeQuery("prognosis")
	for _, w := range []float64{0, 0.5} {
		th.Weight = w
		got := newTextIndex(snap, th, nil, nil).Rerank(q, near, 1)
		if want := map[float64]string{0: "vehicles", 0.5: "outlook"}[w]; got[0].Slug != want {
			t.Errorf("weight %v: first %s, want %s", w, got[0].Slug, want)
		}
	}
}
