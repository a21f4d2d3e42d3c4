package search

import (
	"math"
	"testing"

	"github.com/waystation/waystation/internal/embedding"
)

// TestQueryNeighboursReadTheNearestLabelledQueries: the off-topic share weighs the
// nearest k by similarity, the best similarities to an off-topic and an on-topic
// query are read, knn_on3 counts only an on-topic query whose method the ranking
// offers, and a query is never its own neighbour; the features before them are left.
func TestQueryNeighboursReadTheNearestLabelledQueries(t *testing.T) {
	sims := map[string]float64{"on1": 0.9, "on2": 0.5, "off1": 0.6, "off2": 0.1, "q": 1}
	ref := []Labelled{
		{Set: "s", ID: "on1", Labels: []string{"https://a"}},
		{Set: "s", ID: "on2", Labels: []string{"https://b"}},
		{Set: "s", ID: "off1", Off: true},
		{Set: "s", ID: "off2", Off: true},
		{Set: "s", ID: "q", Labels: []string{"https://b"}},
	}
	q := Labelled{Set: "s", ID: "q", Ranking: Ranking{Keys: []string{"https://b", "https://c"}}}
	q.Evidence[FeatCover] = 0.5
	q.Rankings = []Ranking{{Keys: []string{"https://a"}}, {Keys: []string{"https://c"}}}
	n := QueryNeighbours{K: 3, Similarity: func(a, b Labelled) float64 { return sims[b.ID] }}
	got := n.Apply([]Labelled{q}, ref)[0]
	e := got.Evidence
	if want := 0.6 / (0.9 + 0.6 + 0.5); math.Abs(e[FeatKNNOff]-want) > 1e-9 {
		t.Errorf("knn_off %v, want %v (the nearest three: on1, off1, on2; q itself left out)", e[FeatKNNOff], want)
	}
	if e[FeatKNNOffBest] != 0.6 || e[FeatKNNOnBest] != 0.9 {
		t.Errorf("knn_off_best %v, knn_on_best %v, want 0.6 and 0.9", e[FeatKNNOffBest], e[FeatKNNOnBest])
	}
	if e[FeatKNNOn3] != 0.5 {
		t.Errorf("knn_on3 %v, want 0.5 (on2 wants b, among the three; q's own label is not its neighbour)", e[FeatKNNOn3])
	}
	if got.Rankings[0].Evidence[FeatKNNOn3] != 0.9 || got.Rankings[1].Evidence[FeatKNNOn3] != 0 {
		t.Errorf("knn_on3 by ranking %v, %v, want 0.9 and 0", got.Rankings[0].Evidence[FeatKNNOn3], got.Rankings[1].Evidence[FeatKNNOn3])
	}
	if e[FeatCover] != 0.5 || q.Rankings[0].Evidence[FeatKNNOn3] != 0 {
		t.Error("Apply changed a feature before its own, or its input")
	}
}

// TestAnExpandedMethodHoldsTheWordsOfTheQueriesThatWantIt: with an expansion, a
// query's words that only a labelled query of the method holds count in its
// coverage; without one, as the service runs, nothing changes.
func TestAnExpandedMethodHoldsTheWordsOfTheQueriesThatWantIt(t *testing.T) {
	snap := thesaurusSnapshot(t)
	plain := newTextIndex(snap, nil, nil, nil)
	rich := newTextIndex(snap, nil, nil, map[string][]string{"outlook": {"prognosis for tomorrow"}})
	near := []Neighbour{{Slug: "outlook", Similarity: 0.6}, {Slug: "vehicles", Similarity: 0.4}}
	q := embedding.NormalizeQuery("prognosis for my city")
	before, after := plain.Gather(q, near, nil), rich.Gather(q, near, nil)
	if after[FeatCover] <= before[FeatCover] {
		t.Errorf("cover %v expanded, %v plain: want more", after[FeatCover], before[FeatCover])
	}
	if again := newTextIndex(snap, nil, nil, nil).Gather(q, near, nil); again != before {
		t.Errorf("without an expansion the evidence changed: %v, %v", again, before)
	}
}

// TestALearnerAndAPreparationReplaceTheirDefaults: a Learner fits the probability in
// place of the logistic model, and Prepare reads each fold again before the fit.
func TestALearnerAndAPreparationReplaceTheirDefaults(t *testing.T) {
	samples := synthetic(200, 5)
	prepared := 0
	o := CalibrationOptions{
		Learner: func(s []Labelled, features []int) func(Evidence) float64 {
			return func(e Evidence) float64 { return min(max(e[FeatCover], 0), 1) }
		},
		Prepare: func(train, test []Labelled) ([]Labelled, []Labelled) { prepared++; return train, test },
	}
	scores := CrossValidate(samples, o, 4, 1)
	if prepared != 4 {
		t.Errorf("prepared %d times, want once a fold", prepared)
	}
	if r := Spread(scores, CalibrationScore.Recall).Mean; r < 0.6 {
		t.Errorf("recall %.3f under a learner that reads coverage, want most", r)
	}
	c := Calibrate(samples, o)
	if c.Weights[FeatCover] <= 0 {
		t.Errorf("Calibrate weighs coverage %v: it should fit its logistic model, not the learner", c.Weights[FeatCover])
	}
}

// TestTheQueryFormTellsAQuestionFromARequestForAnAct: a question word first (or a
// question mark) is a question; first_held reads whether the nearest method holds the
// query's first concept.
func TestTheQueryFormTellsAQuestionFromARequestForAnAct(t *testing.T) {
	x := newTextIndex(thesaurusSnapshot(t), nil, nil, nil)
	for _, c := range []struct {
		query, nearest string
		ask, first     float64
	}{
		{"what is the outlook for paris", "outlook", 1, 1},
		{"vehicle plate owner", "outlook", 0, 0},
		{"vehicle plate owner", "vehicles", 0, 1},
		{"outlook for rome?", "outlook", 1, 1},
	} {
		e := x.Gather(embedding.NormalizeQuery(c.query), []Neighbour{{Slug: c.nearest, Similarity: 0.5}}, nil)
		if e[FeatAsk] != c.ask || e[FeatFirstHeld] != c.first {
			t.Errorf("%q, %s nearest: ask %v, first_held %v, want %v and %v", c.query, c.nearest, e[FeatAsk], e[FeatFirstHeld], c.ask, c.first)
		}
	}
}
