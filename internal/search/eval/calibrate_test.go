package eval

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
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
	for i := range search.FeatAct { // the kinds the table was made of, not the act's read since
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

// calibrationKinds are the on-topic kinds the calibration tables have a column for.
var calibrationKinds = []string{"paraphrase", "task", "keyword"}

// cvTable is a cross-validated table: a title, then a row per line, each figure the
// mean and spread over the scores of queries the calibration was not fitted on.
type cvTable struct{ b strings.Builder }

func newCVTable(title string, samples []search.Labelled, note string) *cvTable {
	t := &cvTable{}
	off := 0
	for _, s := range samples {
		if s.Off {
			off++
		}
	}
	fmt.Fprintf(&t.b, "\n%s: %d on-topic and %d off-topic queries; %s\n\n| calibration | recall@3 |", title, len(samples)-off, off, note)
	for _, k := range calibrationKinds {
		fmt.Fprintf(&t.b, " %s |", k)
	}
	fmt.Fprintf(&t.b, " false matches |\n|---|---:|")
	for range calibrationKinds {
		fmt.Fprintf(&t.b, "---:|")
	}
	fmt.Fprintf(&t.b, "---:|\n")
	return t
}

func (t *cvTable) row(name string, scores []search.CalibrationScore) {
	fmt.Fprintf(&t.b, "| %s | %s |", name, meanSD(scores, search.CalibrationScore.Recall))
	for _, k := range calibrationKinds {
		fmt.Fprintf(&t.b, " %s |", meanSD(scores, func(s search.CalibrationScore) float64 { return s.KindRecall(k) }))
	}
	fmt.Fprintf(&t.b, " %s |\n", meanSD(scores, search.CalibrationScore.FalseMatchRate))
}

// cross adds the row of calibrations fitted under o, cross-validated over samples.
func (t *cvTable) cross(name string, samples []search.Labelled, o search.CalibrationOptions) {
	t.row(name, search.CrossValidate(samples, o, cvFolds, cvRepeats))
}

// ceilings add the rows of the ranking alone, every query answered with its nearest
// three: by similarity and reranked under each weight, and with the weight chosen on
// the other folds (recall@3 with the nearest methods counted).
func (t *cvTable) ceilings(samples []search.Labelled, all bool) {
	if all {
		for _, w := range search.RerankWeights {
			t.row(fmt.Sprintf("no band (the nearest three, always), rerank weight %.1f", w),
				[]search.CalibrationScore{search.Calibration{Least: 0, Margin: 1, Rerank: w}.Score(samples)})
		}
	}
	var cv []search.CalibrationScore
	for r := range cvRepeats {
		for _, fold := range search.Folds(samples, cvFolds, uint64(r)*7919+1) {
			train, test := search.Split(samples, fold)
			c := search.Calibrate(train, search.CalibrationOptions{Features: search.BandFeatures})
			cv = append(cv, search.Calibration{Least: 0, Margin: 1, Rerank: c.Rerank}.Score(test))
		}
	}
	t.row("no band, rerank weight chosen on the other folds", cv)
}

// The band's calibration and the variants the ablation weighs against it.
var (
	bandOptions = search.CalibrationOptions{Features: search.BandFeatures}
	// categoryGroups give the dense categories, where most near misses fall, an
	// intercept each, or every category one.
	categoryGroups = map[string][][]string{
		"blockchain and finance together": {{"blockchain", "finance"}},
		"blockchain, finance apart":       {{"blockchain"}, {"finance"}},
		"every category": {{"blockchain"}, {"finance"}, {"weather"}, {"news"}, {"search"}, {"media"}, {"ai"}, {"geo"},
			{"communication"}, {"security"}, {"social"}, {"travel"}, {"commerce"}, {"data"}, {"developer"}},
	}
	// budgets are the false-match budgets a calibration may choose by cross-validation
	// inside its training folds, under budgetCeiling.
	budgets       = []float64{0.08, 0.10, 0.12, 0.15, 0.18, 0.20}
	budgetCeiling = 0.18
	// lambdas are the L2 penalties a calibration may choose inside its training folds.
	lambdas = []float64{0.1, 0.3, 1, 3, 10, 30}
)

// calibrationTables are the cross-validated tables (make eval): the development set
// alone; the older labelled queries (the development set and the own set's first
// ones) alone, as the band was measured before the newer queries were written; every
// labelled query, with the ablation of evidence and of the ways to fit the band; and
// the newer queries held out.
func calibrationTables(dev, older, newer []search.Labelled) string {
	all := append(slices.Clone(older), newer...)
	note := fmt.Sprintf("%d folds × %d shuffles, thresholds chosen on other folds than the one scored", cvFolds, cvRepeats)
	var b strings.Builder

	t := newCVTable("dev set", dev, note)
	t.cross("the band's evidence", dev, bandOptions)
	t.ceilings(dev, false)
	b.WriteString(t.b.String())

	t = newCVTable("older labelled queries (the dev set and "+NewSetPath+" up to "+lastOlderQuery+")", older, note)
	t.cross("the band's evidence", older, bandOptions)
	t.cross("the kinds of evidence chosen inside each training fold", older, search.CalibrationOptions{Features: evidenceBase, Choices: evidenceKinds})
	t.ceilings(older, false)
	b.WriteString(t.b.String())

	t = newCVTable("every labelled query (the older and the "+strconv.Itoa(len(newer))+" newer ones)", all, note)
	for _, fs := range featureSets {
		t.cross(fs.name, all, search.CalibrationOptions{Features: fs.features, NoRerank: fs.noRerank})
	}
	t.cross("the kinds of evidence chosen inside each training fold", all, search.CalibrationOptions{Features: evidenceBase, Choices: evidenceKinds})
	for _, name := range slices.Sorted(maps.Keys(categoryGroups)) {
		o := bandOptions
		o.Groups = categoryGroups[name]
		t.cross("the band + an intercept per category of the nearest method: "+name, all, o)
	}
	o := bandOptions
	o.Budgets, o.Ceiling = budgets, budgetCeiling
	t.cross(fmt.Sprintf("the band, its false-match budget chosen inside each training fold (under %.2f there)", budgetCeiling), all, o)
	o = bandOptions
	o.Lambdas = lambdas
	t.cross("the band, its L2 penalty chosen inside each training fold", all, o)
	for _, b := range []float64{0.12, 0.18, 0.20} {
		o := bandOptions
		o.MaxFalseMatch = b
		t.cross(fmt.Sprintf("the band under a budget of %.2f false matches (the service's: 0.15)", b), all, o)
	}
	t.ceilings(all, true)
	b.WriteString(t.b.String())

	// The newer queries, held out: the band fitted on the older ones as the service's
	// was before them, and the folds of every query scored on the older and newer
	// queries apart.
	t = newCVTable("the newer queries held out", newer, "the band fitted on the older queries alone (one figure), then cross-validated over every query and scored on the newer and older queries of each fold apart")
	t.row("fitted on the older queries", []search.CalibrationScore{search.Calibrate(older, bandOptions).Score(newer)})
	var onNew, onOld []search.CalibrationScore
	for r := range cvRepeats {
		for _, fold := range search.Folds(all, cvFolds, bandOptions.Seed+uint64(r)*7919+1) {
			train, _ := search.Split(all, fold)
			c := search.Calibrate(train, bandOptions)
			var n, o []search.Labelled
			for _, i := range fold {
				if i >= len(older) {
					n = append(n, all[i])
				} else {
					o = append(o, all[i])
				}
			}
			onNew, onOld = append(onNew, c.Score(n)), append(onOld, c.Score(o))
		}
	}
	t.row("cross-validated over every query, scored on the newer", onNew)
	t.row("cross-validated over every query, scored on the older", onOld)
	b.WriteString(t.b.String())
	return b.String()
}

// originTable is the builtin band as the service ships it (search.HybridCalibration)
// on the labelled queries by origin: the development set and the own set's older
// queries, in-sample; the own set's newer ones up to lastFittedQuery, in-sample too;
// those written after the band was fitted, held out from it; and the sums. Every
// figure is one count over those queries, not a mean over folds.
func originTable(dev []search.Labelled, own querySet, mine []search.Labelled) string {
	type origin struct {
		name    string
		samples []search.Labelled
	}
	var older, fitted, held []search.Labelled
	var first, last, firstHeld string
	for i, q := range own.queries {
		if first == "" {
			first = q.id
		}
		last = q.id
		switch {
		case upTo(q.id, lastOlderQuery):
			older = append(older, mine[i])
		case upTo(q.id, lastFittedQuery):
			fitted = append(fitted, mine[i])
		default:
			if firstHeld == "" {
				firstHeld = q.id
			}
			held = append(held, mine[i])
		}
	}
	newer := append(slices.Clone(fitted), held...)
	origins := []origin{
		{"dev set (fitted on)", dev},
		{fmt.Sprintf("own %s–%s (fitted on)", first, lastOlderQuery), older},
		{fmt.Sprintf("own, after %s up to %s (fitted on)", lastOlderQuery, lastFittedQuery), fitted},
	}
	if len(held) > 0 {
		origins = append(origins, origin{fmt.Sprintf("own %s–%s (written after the fit: held out)", firstHeld, last), held})
	}
	origins = append(origins,
		origin{"older: the dev set and own to " + lastOlderQuery, append(slices.Clone(dev), older...)},
		origin{"newer: own after " + lastOlderQuery, newer},
		origin{"every labelled query", append(append(slices.Clone(dev), older...), newer...)})
	var b strings.Builder
	fmt.Fprintf(&b, "\nthe builtin band (search.HybridCalibration, fitted on the dev set and %s up to %s) by origin of the labelled queries; one count each, in-sample except where held out\n\n| origin | queries | recall@3 |", NewSetPath, lastFittedQuery)
	for _, k := range calibrationKinds {
		fmt.Fprintf(&b, " %s |", k)
	}
	b.WriteString(" false matches |\n|---|---:|---:|")
	for range calibrationKinds {
		b.WriteString("---:|")
	}
	b.WriteString("---:|\n")
	ratio := func(hits, n int) string {
		return fmt.Sprintf("%.3f (%d/%d)", float64(hits)/float64(max(1, n)), hits, n)
	}
	for _, o := range origins {
		s := search.HybridCalibration.Score(o.samples)
		fmt.Fprintf(&b, "| %s | %d | %s |", o.name, len(o.samples), ratio(s.Hits, s.On))
		for _, k := range calibrationKinds {
			fmt.Fprintf(&b, " %s |", ratio(s.Kinds[k][0], s.Kinds[k][1]))
		}
		fmt.Fprintf(&b, " %s |\n", ratio(s.False, s.Off))
	}
	return b.String()
}

// checkBuiltinCalibration fits the builtin hybrid's band on samples, the labelled
// queries it was fitted on (the development set and the project's own up to
// lastFittedQuery), as make calibrate does over every query it is given, and checks
// that search.HybridCalibration is that fit: a change to the evidence, the model or
// those labels must come with the calibration it gives. On a mismatch it prints the
// literal to paste.
func checkBuiltinCalibration(t *testing.T, samples []search.Labelled) {
	got := search.Calibrate(samples, search.CalibrationOptions{Features: search.BandFeatures})
	want := search.HybridCalibration
	same := math.Abs(got.Least-want.Least) < 1e-3 && got.Margin == want.Margin && got.Rerank == want.Rerank
	for _, s := range samples {
		same = same && math.Abs(got.Probability(s.Evidence)-want.Probability(s.Evidence)) < 1e-3
	}
	if !same {
		t.Errorf("search.HybridCalibration is not the fit of the labelled queries up to %s and the dev set; paste (and to fit the newer ones too, move lastFittedQuery to the last id first):\n%#v", lastFittedQuery, got)
	}
}
