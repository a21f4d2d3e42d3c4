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
// each kind of evidence added, then all but one kind.
var featureSets = []struct {
	name     string
	features []int
}{
	{"similarity parts (sem, lex)", []int{search.FeatSemantic, search.FeatLexical}},
	{"+ leads (gap, lead)", []int{search.FeatSemantic, search.FeatLexical, search.FeatGap, search.FeatLead}},
	{"+ category agreement", []int{search.FeatSemantic, search.FeatLexical, search.FeatGap, search.FeatLead, search.FeatAgree}},
	{"+ concept coverage", []int{search.FeatSemantic, search.FeatLexical, search.FeatGap, search.FeatLead, search.FeatAgree, search.FeatCover, search.FeatCover3}},
	{"+ catalog vocabulary", without(search.FeatDomain, search.FeatDomainMin)},
	{"+ catalog against general English (all)", nil},
	{"all but leads", without(search.FeatGap, search.FeatLead)},
	{"all but coverage", without(search.FeatCover, search.FeatCover3)},
	{"all but vocabulary", without(search.FeatKnown, search.FeatWords)},
	{"all but general English", without(search.FeatDomain, search.FeatDomainMin)},
	{"all but category agreement", without(search.FeatAgree)},
}

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
func cvTable(title string, samples []search.Labelled, kinds []string) string {
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
		scores := search.CrossValidate(samples, search.CalibrationOptions{Features: fs.features}, cvFolds, cvRepeats)
		fmt.Fprintf(&b, "| %s | %s |", fs.name, meanSD(scores, search.CalibrationScore.Recall))
		for _, k := range kinds {
			fmt.Fprintf(&b, " %s |", meanSD(scores, func(s search.CalibrationScore) float64 { return s.KindRecall(k) }))
		}
		fmt.Fprintf(&b, " %s |\n", meanSD(scores, search.CalibrationScore.FalseMatchRate))
	}
	// The ranking alone, every query answered with its nearest three: the ceiling.
	all := search.Calibration{Least: 0, Margin: 1}.Score(samples)
	fmt.Fprintf(&b, "| no band (the nearest three, always) | %.3f |", all.Recall())
	for _, k := range kinds {
		fmt.Fprintf(&b, " %.3f |", all.KindRecall(k))
	}
	fmt.Fprintf(&b, " %.3f |\n", all.FalseMatchRate())
	return b.String()
}

// calibrationTables are the cross-validated tables (make eval): over the development
// set and the project's own labelled queries, each alone and together.
func (fx fixture) calibrationTables(t *testing.T, dev, own []search.Labelled) string {
	kinds := []string{"paraphrase", "task", "keyword"}
	return cvTable("dev set", dev, kinds) + cvTable("own labelled set ("+NewSetPath+")", own, kinds) +
		cvTable("dev and own sets together", append(slices.Clone(dev), own...), kinds)
}

// checkBuiltinCalibration fits the builtin hybrid's band on every labelled query (the
// project's own and the development set), as make calibrate does, and checks that
// search.HybridCalibration is that fit: a change to the evidence, the model or the
// labels must come with the calibration it gives. On a mismatch it prints the literal
// to paste.
func checkBuiltinCalibration(t *testing.T, samples []search.Labelled) {
	got := search.Calibrate(samples, search.CalibrationOptions{Features: search.BandFeatures})
	want := search.HybridCalibration
	same := math.Abs(got.Least-want.Least) < 1e-3 && got.Margin == want.Margin
	for _, s := range samples {
		same = same && math.Abs(got.Probability(s.Evidence)-want.Probability(s.Evidence)) < 1e-3
	}
	if !same {
		t.Errorf("search.HybridCalibration is not the fit of the labelled queries; paste:\n%#v", got)
	}
}
