package eval

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/waystation/waystation/internal/search"
)

// labelled reads every query of set as calibration does, under the hybrid model.
func (fx fixture) labelled(t *testing.T, set querySet, name string) []search.Labelled {
	out := make([]search.Labelled, 0, len(set.queries))
	m := fx.hybrid.Models()[0]
	for _, q := range set.queries {
		kind := q.kind
		if q.off {
			kind = search.KindOffTopic
		}
		l, err := fx.hybrid.Label(context.Background(), fx.snap, m, name, search.Query{ID: q.id, Text: q.text, Relevant: q.relevant, Kind: kind})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, l)
	}
	return out
}

// featureSets are the rows of the ablation: the parts of today's confidence, then
// each kind of evidence added, then all but one kind; each under the reranking
// calibration chooses, and the band's features under the ranking by similarity alone.
var featureSets = []struct {
	name     string
	features []int
	noRerank bool
}{
	{"band features, ranked by similarity alone", search.BandFeatures, true},
	{"similarity parts (sem, lex)", []int{search.FeatSemantic, search.FeatLexical}, false},
	{"+ leads (gap, lead)", []int{search.FeatSemantic, search.FeatLexical, search.FeatGap, search.FeatLead}, false},
	{"+ category agreement", []int{search.FeatSemantic, search.FeatLexical, search.FeatGap, search.FeatLead, search.FeatAgree}, false},
	{"+ concept coverage", []int{search.FeatSemantic, search.FeatLexical, search.FeatGap, search.FeatLead, search.FeatAgree, search.FeatCover, search.FeatCover3}, false},
	{"+ catalog vocabulary", without(search.FeatDomain, search.FeatDomainMin), false},
	{"+ catalog against general English (all)", nil, false},
	{"all but leads", without(search.FeatGap, search.FeatLead), false},
	{"all but coverage", without(search.FeatCover, search.FeatCover3), false},
	{"all but vocabulary", without(search.FeatKnown, search.FeatWords), false},
	{"all but general English", without(search.FeatDomain, search.FeatDomainMin), false},
	{"all but category agreement", without(search.FeatAgree), false},
	{"all but category agreement and general English (the band's)", search.BandFeatures, false},
}

// evidenceBase and evidenceKinds are what the honest row chooses from: the
// similarity's parts always, and any subset of the other kinds of evidence.
var (
	evidenceBase  = []int{search.FeatSimilarity, search.FeatSemantic, search.FeatLexical}
	evidenceKinds = [][]int{{search.FeatGap, search.FeatLead}, {search.FeatAgree}, {search.FeatCover, search.FeatCover3},
		{search.FeatKnown, search.FeatWords}, {search.FeatDomain, search.FeatDomainMin}}
)

func without(drop ...int) []int {
	var out []int
	for i := range search.NumFeatures {
		keep := true
		for _, d := range drop {
			keep = keep && i != d
		}
		if keep {
			out = append(out, i)
		}
	}
	return out
}

// cvFolds and cvRepeats: five folds, shuffled four times.
const (
	cvFolds   = 5
	cvRepeats = 4
)

func meanSD(scores []search.CalibrationScore, f func(search.CalibrationScore) float64) string {
	return search.Spread(scores, f).String()
}

// cvTable is the cross-validated table: a row per feature set, each figure the mean
// and spread over the folds of queries the calibration was not fitted on.
func cvTable(title string, samples []search.Labelled, kinds []string, honest bool) string {
	var b strings.Builder
	off := 0
	for _, s := range samples {
		if s.Off {
			off++
		}
	}
	fmt.Fprintf(&b, "\n%s: %d on-topic and %d off-topic queries, %d folds × %d shuffles; thresholds chosen on other folds than the one scored\n\n",
		title, len(samples)-off, off, cvFolds, cvRepeats)
	fmt.Fprintf(&b, "| evidence | recall@3 |")
	for _, k := range kinds {
		fmt.Fprintf(&b, " %s |", k)
	}
	fmt.Fprintf(&b, " false matches |\n|---|---:|")
	for range kinds {
		fmt.Fprintf(&b, "---:|")
	}
	fmt.Fprintf(&b, "---:|\n")
	for _, fs := range featureSets {
		scores := search.CrossValidate(samples, search.CalibrationOptions{Features: fs.features, NoRerank: fs.noRerank}, cvFolds, cvRepeats)
		fmt.Fprintf(&b, "| %s | %s |", fs.name, meanSD(scores, search.CalibrationScore.Recall))
		for _, k := range kinds {
			fmt.Fprintf(&b, " %s |", meanSD(scores, func(s search.CalibrationScore) float64 { return s.KindRecall(k) }))
		}
		fmt.Fprintf(&b, " %s |\n", meanSD(scores, search.CalibrationScore.FalseMatchRate))
	}
	if honest {
		// The band's kinds of evidence were chosen by the rows above, on every query:
		// this row chooses them inside each training fold instead, so that no choice
		// is made on the fold it is scored on.
		scores := search.CrossValidate(samples, search.CalibrationOptions{Features: evidenceBase, Choices: evidenceKinds}, cvFolds, cvRepeats)
		fmt.Fprintf(&b, "| the kinds of evidence chosen inside each training fold | %s |", meanSD(scores, search.CalibrationScore.Recall))
		for _, k := range kinds {
			fmt.Fprintf(&b, " %s |", meanSD(scores, func(s search.CalibrationScore) float64 { return s.KindRecall(k) }))
		}
		fmt.Fprintf(&b, " %s |\n", meanSD(scores, search.CalibrationScore.FalseMatchRate))
	}
	// The ranking alone, every query answered with its nearest three: the ceiling,
	// by similarity and reranked under each weight (cross-validated: the weight chosen
	// on the other folds).
	ceiling := func(name string, scores []search.CalibrationScore) {
		fmt.Fprintf(&b, "| %s | %s |", name, meanSD(scores, search.CalibrationScore.Recall))
		for _, k := range kinds {
			fmt.Fprintf(&b, " %s |", meanSD(scores, func(s search.CalibrationScore) float64 { return s.KindRecall(k) }))
		}
		fmt.Fprintf(&b, " %s |\n", meanSD(scores, search.CalibrationScore.FalseMatchRate))
	}
	for _, w := range search.RerankWeights {
		all := search.Calibration{Least: 0, Margin: 1, Rerank: w}.Score(samples)
		ceiling(fmt.Sprintf("no band (the nearest three, always), rerank weight %.1f", w), []search.CalibrationScore{all})
	}
	var cv []search.CalibrationScore
	for r := range cvRepeats {
		for _, fold := range search.Folds(samples, cvFolds, uint64(r)*7919+1) {
			train, test := search.Split(samples, fold)
			c := search.Calibrate(train, search.CalibrationOptions{Features: search.BandFeatures})
			cv = append(cv, search.Calibration{Least: 0, Margin: 1, Rerank: c.Rerank}.Score(test))
		}
	}
	ceiling("no band, rerank weight chosen on the other folds", cv)
	return b.String()
}

// calibrationTables are the cross-validated tables (make eval): over the development
// set and the project's own labelled queries, each alone and together.
func (fx fixture) calibrationTables(t *testing.T, dev, own []search.Labelled) string {
	kinds := []string{"paraphrase", "task", "keyword"}
	return cvTable("dev set", dev, kinds, false) + cvTable("own labelled set ("+NewSetPath+")", own, kinds, false) +
		cvTable("dev and own sets together", append(slices.Clone(dev), own...), kinds, true)
}

// checkBuiltinCalibration fits the builtin hybrid's band on every labelled query (the
// project's own and the development set), as make calibrate does, and checks that
// search.HybridCalibration is that fit: a change to the evidence, the model or the
// labels must come with the calibration it gives. On a mismatch it prints the literal
// to paste.
func checkBuiltinCalibration(t *testing.T, samples []search.Labelled) {
	got := search.Calibrate(samples, search.CalibrationOptions{Features: search.BandFeatures})
	want := search.HybridCalibration
	same := math.Abs(got.Least-want.Least) < 1e-3 && got.Margin == want.Margin && got.Rerank == want.Rerank
	for _, s := range samples {
		same = same && math.Abs(got.Probability(s.Evidence)-want.Probability(s.Evidence)) < 1e-3
	}
	if !same {
		t.Errorf("search.HybridCalibration is not the fit of the labelled queries; paste:\n%#v", got)
	}
}
