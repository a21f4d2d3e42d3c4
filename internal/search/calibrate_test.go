package search

import (
	"encoding/json"
	"math/rand/v2"
	"testing"
)

// synthetic makes labelled queries whose coverage tells on-topic from off-topic,
// with noise, and whose similarity tells nothing.
func synthetic(n int, seed uint64) []Labelled {
	r := rand.New(rand.NewPCG(seed, 1))
	out := make([]Labelled, n)
	for i := range out {
		off := i%4 == 0
		var e Evidence
		e[FeatSimilarity] = r.Float64()
		e[FeatCover] = 0.6 + 0.2*r.NormFloat64()
		if off {
			e[FeatCover] = 0.2 + 0.2*r.NormFloat64()
		}
		out[i] = Labelled{Set: "s", Kind: "paraphrase", Off: off, Ranking: Ranking{Evidence: e,
			Similarities: []float64{0.5, 0.45, 0.2}, Relevant: []bool{!off, false, false}}}
		if off {
			out[i].Kind = "offtopic"
		}
	}
	return out
}

func TestCalibrationLearnsWhatTellsOnTopicFromOffTopic(t *testing.T) {
	samples := synthetic(400, 1)
	c := Calibrate(samples, CalibrationOptions{MaxFalseMatch: 0.1})
	if c.Weights[FeatCover] <= 0 {
		t.Errorf("coverage weighs %.2f, want positive", c.Weights[FeatCover])
	}
	held := c.Score(synthetic(400, 2))
	// The two kinds overlap: at one false match in ten, about three in four on-topic
	// queries can be told apart.
	if held.Recall() < 0.7 || held.FalseMatchRate() > 0.2 {
		t.Errorf("on fresh queries: recall %.3f, false matches %.3f", held.Recall(), held.FalseMatchRate())
	}
	scores := CrossValidate(samples, CalibrationOptions{Folds: 2}, 5, 1)
	if len(scores) != 5 {
		t.Fatalf("%d fold scores, want 5", len(scores))
	}
	for _, s := range scores {
		if s.On+s.Off < 70 || s.On+s.Off > 90 {
			t.Errorf("a fold of %d queries, want about 80", s.On+s.Off)
		}
	}
}

func TestFoldsSpreadEachKindAndUseEveryQueryOnce(t *testing.T) {
	samples := synthetic(103, 3)
	seen := map[int]int{}
	for _, f := range Folds(samples, 5, 9) {
		off := 0
		for _, i := range f {
			seen[i]++
			if samples[i].Off {
				off++
			}
		}
		if off < 5 || off > 6 {
			t.Errorf("a fold holds %d off-topic queries of 26, want 5 or 6", off)
		}
	}
	if len(seen) != len(samples) {
		t.Fatalf("%d queries in folds, want %d", len(seen), len(samples))
	}
	for i, n := range seen {
		if n != 1 {
			t.Errorf("query %d in %d folds", i, n)
		}
	}
}

func TestACalibrationStoresItsWeightsByName(t *testing.T) {
	var c Calibration
	c.Weights[FeatCover], c.Bias, c.Least, c.Margin, c.Rerank = 2.5, -1, 0.6, 0.15, 0.3
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var back Calibration
	if err := json.Unmarshal(b, &back); err != nil || back != c {
		t.Fatalf("round trip: %+v %v from %s", back, err, b)
	}
	if err := json.Unmarshal([]byte(`{"weights":{"cover":1,"vibes":2},"least":0.5}`), &back); err == nil {
		t.Error("a calibration weighing an unknown feature was read")
	}
}

func TestTheCalibratedBandKeepsWithinItsMarginOnlyAboveItsLeast(t *testing.T) {
	c := &Calibration{Least: 0.5, Margin: 0.1}
	near := []Neighbour{{Slug: "a", Similarity: 0.6}, {Slug: "b", Similarity: 0.55}, {Slug: "c", Similarity: 0.45}, {Slug: "d", Similarity: 0.44}}
	if got := c.Band(0.49, near, 3); got != nil {
		t.Errorf("under least: %v", got)
	}
	if got := c.Band(0.7, near, 3); len(got) != 2 {
		t.Errorf("within the margin: %v, want a and b", got)
	}
	if got := c.Band(0.7, near, 1); len(got) != 1 {
		t.Errorf("at most one: %v", got)
	}
	r := c.Report(Evidence{}, near)
	if !r.Calibrated || r.Least != 0.5 || r.Margin != 0.1 || r.Confidence != 0.5 {
		t.Errorf("report %+v: the probability of zero evidence with no bias is one half", r)
	}
	// A neighbour of one part under the least probability is not "below the floor":
	// the calibrated band has no floor of similarity.
	if why := whyNot(Neighbour{Similarity: 0.3}, 0.35, 1, r); why != "" {
		t.Errorf("within the margin of a calibrated band: %q", why)
	}
}

// TestCalibrationChoosesTheRerankWeightThatRanksBest: of the rerank weights, the
// least under which most on-topic queries have a relevant method among the nearest
// three is chosen, and the band is fitted and scored under it; NoRerank keeps the
// ranking by similarity.
func TestCalibrationChoosesTheRerankWeightThatRanksBest(t *testing.T) {
	samples := synthetic(200, 4)
	for i, s := range samples {
		for w := range RerankWeights {
			r := Ranking{Evidence: s.Evidence, Similarities: s.Similarities, Relevant: s.Relevant}
			if !s.Off && (w == 0 || (w == 1 && i%2 == 0)) {
				r.Relevant = []bool{false, false, false} // missed by similarity alone, and half of them at 0.1
			}
			samples[i].Rankings = append(samples[i].Rankings, r)
		}
		samples[i] = samples[i].ranked(0)
	}
	c := Calibrate(samples, CalibrationOptions{})
	if c.Rerank != RerankWeights[2] {
		t.Errorf("rerank weight %v, want %v: the least that ranks every on-topic query right", c.Rerank, RerankWeights[2])
	}
	if r := (Calibration{Margin: 1, Rerank: c.Rerank}).Score(samples).Recall(); r != 1 {
		t.Errorf("the nearest three under the chosen weight: recall %.3f, want 1", r)
	}
	if r := (Calibration{Margin: 1}).Score(samples).Recall(); r != 0 {
		t.Errorf("the nearest three by similarity: recall %.3f, want 0", r)
	}
	if c := Calibrate(samples, CalibrationOptions{NoRerank: true}); c.Rerank != 0 {
		t.Errorf("NoRerank: rerank weight %v", c.Rerank)
	}
}

// TestCalibrationChoosesTheEvidenceThatTells: offered kinds of evidence to choose
// from, calibration weighs the one that tells on-topic from off-topic (coverage) and
// leaves out the one that tells nothing (five features of noise, here).
func TestCalibrationChoosesTheEvidenceThatTells(t *testing.T) {
	noise := []int{FeatSimilarity, FeatSemantic, FeatLexical, FeatKnown, FeatWords}
	noisy := func(n int, seed uint64) []Labelled {
		samples := synthetic(n, seed)
		r := rand.New(rand.NewPCG(seed, 2))
		for i := range samples {
			for _, f := range noise {
				samples[i].Evidence[f] = r.NormFloat64()
			}
		}
		return samples
	}
	c := Calibrate(noisy(400, 5), CalibrationOptions{Features: []int{FeatGap}, Choices: [][]int{noise, {FeatCover, FeatCover3}}, MaxFalseMatch: 0.1})
	if c.Weights[FeatCover] <= 0 {
		t.Errorf("coverage weighs %.2f, want positive", c.Weights[FeatCover])
	}
	for _, f := range noise {
		if c.Weights[f] != 0 {
			t.Errorf("%s, which tells nothing, weighs %.2f, want it left out", FeatureNames[f], c.Weights[f])
		}
	}
	if held := c.Score(noisy(400, 6)); held.Recall() < 0.7 || held.FalseMatchRate() > 0.2 {
		t.Errorf("on fresh queries: recall %.3f, false matches %.3f", held.Recall(), held.FalseMatchRate())
	}
}

// TestAGroupOfCategoriesGetsItsOwnIntercept: where the nearest method's category
// tells what the evidence does not (here, off-topic queries come near methods of
// category "b" and coverage overlaps more), the group's intercept is learnt against
// it and the cross-validated recall at the same false matches rises. Calibrate,
// whose Calibration has no intercept per group, leaves the groups out.
func TestAGroupOfCategoriesGetsItsOwnIntercept(t *testing.T) {
	samples := synthetic(400, 7)
	r := rand.New(rand.NewPCG(7, 3))
	for i := range samples {
		samples[i].Category = "a"
		if samples[i].Off || r.Float64() < 0.1 {
			samples[i].Category = "b"
		}
		samples[i].Evidence[FeatCover] += 0.3 * r.NormFloat64()
	}
	o := CalibrationOptions{Features: []int{FeatCover}, MaxFalseMatch: 0.1, NoRerank: true}
	withGroups := o
	withGroups.Groups = [][]string{{"b"}}
	m := fitLogistic(samples, withGroups.withDefaults())
	if m.offset("b") >= 0 || m.offset("a") != 0 {
		t.Errorf("intercepts: b %.2f, a %.2f; want b negative, a none", m.offset("b"), m.offset("a"))
	}
	plain := Spread(CrossValidate(samples, o, 5, 2), CalibrationScore.Recall)
	grouped := Spread(CrossValidate(samples, withGroups, 5, 2), CalibrationScore.Recall)
	if grouped.Mean <= plain.Mean {
		t.Errorf("cross-validated recall with the group's intercept %v, without %v", grouped, plain)
	}
	if c := Calibrate(samples, withGroups); c.Weights[FeatCover] <= 0 || c != Calibrate(samples, o) {
		t.Errorf("Calibrate with groups: %+v, want the calibration without them", c)
	}
}

// TestTheBudgetIsChosenWithinTheCeilingOnFoldsItWasNotFittedOn: of the budgets, the
// one that answers most on-topic queries while its false matches on held-out folds
// stay within the ceiling; none within it: the least.
func TestTheBudgetIsChosenWithinTheCeilingOnFoldsItWasNotFittedOn(t *testing.T) {
	samples := synthetic(400, 8)
	o := CalibrationOptions{Features: []int{FeatCover}, NoRerank: true, Budgets: []float64{0.02, 0.1, 0.4}}
	if b := chooseBudget(samples, withCeiling(o, 0.6).withDefaults()); b != 0.4 {
		t.Errorf("under a ceiling of 0.6: budget %v, want 0.4, the most recall", b)
	}
	if b := chooseBudget(samples, withCeiling(o, 0.15).withDefaults()); b != 0.1 {
		t.Errorf("under a ceiling of 0.15: budget %v, want 0.1", b)
	}
	if b := chooseBudget(samples, withCeiling(o, 0.001).withDefaults()); b != 0.02 {
		t.Errorf("under a ceiling none meets: budget %v, want the least", b)
	}
	tight := Calibrate(samples, withCeiling(o, 0.15))
	loose := Calibrate(samples, withCeiling(o, 0.6))
	if tight.Least <= loose.Least {
		t.Errorf("the band of the lower ceiling answers from %.3f, the higher's from %.3f", tight.Least, loose.Least)
	}
}

func withCeiling(o CalibrationOptions, c float64) CalibrationOptions {
	o.Ceiling = c
	return o
}

// TestThePenaltyIsChosenByOutOfFoldLogLoss: a penalty so large that the model weighs
// nothing predicts worse than a moderate one, and is not chosen.
func TestThePenaltyIsChosenByOutOfFoldLogLoss(t *testing.T) {
	samples := synthetic(400, 9)
	o := CalibrationOptions{Features: []int{FeatCover, FeatSimilarity}, NoRerank: true, Lambdas: []float64{1, 1e6}}.withDefaults()
	if l := chooseLambda(samples, o); l != 1 {
		t.Errorf("penalty %v, want 1", l)
	}
	if c := Calibrate(samples, o); c.Weights[FeatCover] < 1 {
		t.Errorf("coverage weighs %.2f under the chosen penalty", c.Weights[FeatCover])
	}
}
