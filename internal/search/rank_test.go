package search_test

import (
	"slices"
	"testing"

	"github.com/waystation/waystation/internal/embedding"
	"github.com/waystation/waystation/internal/search"
)

// TestRankFeaturesReadEachPartOfAMethod: a candidate's coverage is read of its text
// overall and of its name, path and description apart, its place and its distance
// under the nearest; a method the snapshot lacks has only its similarities.
func TestRankFeaturesReadEachPartOfAMethod(t *testing.T) {
	snap := tideSnapshot(t)
	eng, err := search.NewEngine(search.Config{}, fixedStore{}, &search.Model{Embedder: embedding.Lexhash{},
		Record: search.ModelRecord{ID: embedding.BuiltinModel, Dimensions: embedding.BuiltinDimensions}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	near := []search.Neighbour{{Slug: "near", Similarity: 0.62}, {Slug: "holder", Similarity: 0.6, Parts: true, Semantic: 0.5, Lexical: 0.7}, {Slug: "gone", Similarity: 0.4}}
	fs := eng.RankIndex(snap).Features("tide tables", near)
	if len(fs) != 3 {
		t.Fatalf("%d candidates' features, want 3", len(fs))
	}
	h := fs[1]
	if h[search.RankCover] != 1 || h[search.RankCoverName] != 1 || h[search.RankCoverText] <= 0 || h[search.RankCoverPath] != 0 {
		t.Errorf("holder's coverage: overall %v, name %v, description %v, path %v; want 1, 1, some, 0",
			h[search.RankCover], h[search.RankCoverName], h[search.RankCoverText], h[search.RankCoverPath])
	}
	if h[search.RankNameIn] != 1 || h[search.RankFirstHeld] != 1 || h[search.RankSemantic] != 0.5 || h[search.RankLexical] != 0.7 {
		t.Errorf("holder: name_in %v, first_held %v, parts %v %v", h[search.RankNameIn], h[search.RankFirstHeld], h[search.RankSemantic], h[search.RankLexical])
	}
	if n := fs[0]; n[search.RankCover] != 0 || n[search.RankPosition] != 0 || n[search.RankBehind] != 0 {
		t.Errorf("near: cover %v, position %v, behind %v; want 0", n[search.RankCover], n[search.RankPosition], n[search.RankBehind])
	}
	if g := fs[2]; g[search.RankCover] != 0 || g[search.RankLength] != 0 || g[search.RankSimilarity] != 0.4 || g[search.RankBehind] < 0.2199 {
		t.Errorf("a method the snapshot lacks: %v", g)
	}
}

// TestCoveringListsTheMethodsThatHoldMostOfTheQuery: the methods holding the larger
// share of a query's concepts come first, of equal shares the one of fewer concepts,
// at most k of them; a method holding none of them, or a query of no concept the
// catalog knows, lists nothing.
func TestCoveringListsTheMethodsThatHoldMostOfTheQuery(t *testing.T) {
	snap := tideSnapshot(t)
	eng, err := search.NewEngine(search.Config{}, fixedStore{}, &search.Model{Embedder: embedding.Lexhash{},
		Record: search.ModelRecord{ID: embedding.BuiltinModel, Dimensions: embedding.BuiltinDimensions}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	x := eng.RankIndex(snap)
	for _, c := range []struct {
		query string
		k     int
		want  []string
	}{
		{"tide times", 4, []string{"holder", "other"}},
		{"tide times", 1, []string{"holder"}},
		{"times", 4, []string{"other", "holder"}},
		{"zebra crossings", 4, nil},
		{"tide times", 0, nil},
	} {
		if got := x.Covering(c.query, c.k); !slices.Equal(got, c.want) {
			t.Errorf("Covering(%q, %d) = %v, want %v", c.query, c.k, got, c.want)
		}
	}
}

// TestFitRankerLearnsWhatRanksTheRelevantFirst: on lists where the relevant candidate
// holds the query's words but is a little less similar, the fitted ranking weighs the
// words above the similarity, and orders the relevant one first.
func TestFitRankerLearnsWhatRanksTheRelevantFirst(t *testing.T) {
	var lists []search.RankList
	for i := range 30 {
		sim := 0.5 + float64(i%7)/100
		lists = append(lists, search.RankList{
			Features: [][]float64{{sim + 0.05, 0}, {sim, 1}, {sim - 0.1, 0}, {sim - 0.2, 1}},
			Relevant: []bool{false, true, false, false},
		})
	}
	for _, top := range []int{0, 3} {
		w := search.FitRanker(lists, 1, top)
		if w[1] <= 0 {
			t.Errorf("top %d: weights %v, want the words' positive", top, w)
		}
		for _, l := range lists {
			score := make([]float64, len(l.Features))
			for j, f := range l.Features {
				score[j] = search.RankScore(w, f)
			}
			near := []search.Neighbour{{Slug: "a"}, {Slug: "b"}, {Slug: "c"}, {Slug: "d"}}
			if got := search.OrderBy(near, score); got[0].Slug != "b" {
				t.Fatalf("top %d: order %v under weights %v, want b first", top, got, w)
			}
		}
	}
	if w := search.FitRanker(nil, 1, 0); len(w) != 0 {
		t.Errorf("no lists: weights %v", w)
	}
}

// TestStripFrameKeepsWhatTheQueryAsksFor: the openings that say how a query asks are
// stripped, one after another; a query that is all frame, or has none, stays.
func TestStripFrameKeepsWhatTheQueryAsksFor(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"how do i get the gas price on base?", "get the gas price on base?"},
		{"is there an api that translates japanese", "translates japanese"},
		{"can you please tell me the tide in brest", "the tide in brest"},
		{"i need a service to send an sms", "send an sms"},
		{"tide tables for brest", "tide tables for brest"},
		{"how do i", "how do i"},
		{"how does a swap work", "how does a swap work"},
	} {
		if got := search.StripFrame(c.in); got != c.want {
			t.Errorf("StripFrame(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if !slices.Contains([]string{"x"}, search.StripFrame("please x")) {
		t.Error("a frame before one word is not stripped")
	}
}
