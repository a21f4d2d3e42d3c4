package eval

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/waystation/waystation/internal/postgres/pgtest"
	"github.com/waystation/waystation/internal/search"
)

// DevRewritesPath holds, for each query of the development set, three phrasings an
// agent that saw only the query wrote for a search tool.
const DevRewritesPath = "../shared/eval/dev-rewrites.jsonl"

// readRewrites reads the phrasings by query id, or skips the test when the file is
// not beside the repository.
func readRewrites(t *testing.T) map[string][]string {
	path := filepath.Join(pgtest.RepoRoot(t), DevRewritesPath)
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		t.Skipf("the development rewrites %s are not beside the repository", DevRewritesPath)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]string{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		var l struct {
			ID       string   `json:"id"`
			Rewrites []string `json:"rewrites"`
		}
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("%s:%d: %v", DevRewritesPath, n, err)
		}
		if len(l.Rewrites) == 0 || len(l.Rewrites) > search.MaxRewrites {
			t.Fatalf("%s:%d: %d rewrites, want 1 to %d", DevRewritesPath, n, len(l.Rewrites), search.MaxRewrites)
		}
		out[l.ID] = l.Rewrites
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// phrased is one labelled query with the readings of each of its phrasings, its own
// first.
type phrased struct {
	search.Labelled
	phrasings []search.Labelled
}

// labelPhrased reads each dev query and each of its phrasings as calibration does.
func (fx fixture) labelPhrased(t *testing.T, set querySet, dev []search.Labelled, rewrites map[string][]string) []phrased {
	out := make([]phrased, len(dev))
	m := fx.hybrid.Models()[0]
	for i, q := range set.queries {
		out[i] = phrased{Labelled: dev[i], phrasings: []search.Labelled{dev[i]}}
		for _, r := range rewrites[q.id] {
			l, err := fx.hybrid.Label(context.Background(), fx.snap, m, "dev-rewrite", search.Query{ID: q.id, Text: r, Relevant: q.relevant, Kind: dev[i].Kind})
			if err != nil {
				t.Fatal(err)
			}
			out[i].phrasings = append(out[i].phrasings, l)
		}
	}
	return out
}

// readings are q's phrasings as the band c reads them.
func (fx fixture) readings(q phrased, c search.Calibration) []search.Reading {
	w := max(0, slices.Index(search.RerankWeights, c.Rerank))
	out := make([]search.Reading, len(q.phrasings))
	for i, s := range q.phrasings {
		s.Ranking = s.Rankings[w]
		out[i] = search.Reading{Near: fx.hybrid.Rerank(fx.snap, s.Query, s.Near, c.Rerank), P: c.Probability(s.Evidence)}
	}
	return out
}

// fusionScore is how a fusion does over queries read under one band: recall@3 per
// kind and false matches, as CalibrationScore counts them.
// With bands (one per query), a query the fusion refuses is answered as the search
// does, by the query alone where its band answers.
func (fx fixture) fusionScore(qs []phrased, reads [][]search.Reading, f search.Fusion, bands []search.Calibration) search.CalibrationScore {
	sc := search.CalibrationScore{Kinds: map[string][2]int{}}
	for i, q := range qs {
		got := fx.hybrid.Fuse(fx.snap, f, reads[i], search.MaxResults)
		if len(got.Kept) == 0 && bands != nil {
			got.Kept = bands[i].Band(reads[i][0].P, reads[i][0].Near, search.MaxResults)
		}
		if q.Off {
			sc.Off++
			if len(got.Kept) > 0 {
				sc.False++
			}
			continue
		}
		sc.On++
		k := sc.Kinds[q.Kind]
		k[1]++
		if fx.anyRelevant(q.Labels, got.Kept) {
			sc.Hits++
			k[0]++
		}
		sc.Kinds[q.Kind] = k
	}
	return sc
}

// anyRelevant tells whether a method of kept, or a near-duplicate of its group (one
// answer, search.Collapse), is one of labels (endpoint keys).
func (fx fixture) anyRelevant(labels []string, kept []search.Neighbour) bool {
	for _, n := range kept {
		for _, s := range fx.hybrid.Twins(fx.snap, n.Slug) {
			if slices.Contains(labels, normURL(fx.urlOf[s])) {
				return true
			}
		}
	}
	return false
}

// fusionGrid is what chooseFusion chooses from: the least share of probability, with
// HybridFusion's agreement and constant.
func fusionGrid() []search.Fusion {
	var out []search.Fusion
	for t := 0.05; t < 0.96; t += 0.0125 {
		out = append(out, search.Fusion{Least: math.Round(t*1e4) / 1e4, Top: search.HybridFusion.Top, K: search.HybridFusion.K})
	}
	return out
}

// chooseFusion is the fusion of the grid with the best recall@3 on qs whose false
// matches stay within budget; of equal recalls, the higher threshold.
//
// With bands, the query alone answers where the fusion refuses, so the budget is at
// least the false-match rate of the query alone on qs: the fusion may add no false
// match beyond budget or what the query makes without phrasings, whichever is more.
func (fx fixture) chooseFusion(qs []phrased, reads [][]search.Reading, budget float64, bands []search.Calibration) search.Fusion {
	never := search.Fusion{Least: math.Inf(1), Top: search.HybridFusion.Top, K: search.HybridFusion.K}
	if bands != nil {
		budget = max(budget, fx.fusionScore(qs, reads, never, bands).FalseMatchRate())
	}
	best, bestRecall := search.Fusion{Least: 1, Top: search.HybridFusion.Top, K: search.HybridFusion.K}, -1.0
	var recalls []float64
	for _, f := range fusionGrid() {
		sc := fx.fusionScore(qs, reads, f, bands)
		if sc.FalseMatchRate() > budget {
			recalls = append(recalls, -1)
			continue
		}
		r := sc.Recall()
		recalls = append(recalls, r)
		if r > bestRecall+1e-9 || (r > bestRecall-1e-9 && f.Least > best.Least) {
			best, bestRecall = f, r
		}
	}
	if spare > 0 {
		// The highest threshold within spare on-topic queries of the best recall.
		on := 0
		for _, q := range qs {
			if !q.Off {
				on++
			}
		}
		for i, f := range fusionGrid() {
			if recalls[i] >= bestRecall-float64(spare)/float64(on)-1e-9 && f.Least > best.Least {
				best = f
			}
		}
	}
	return best
}

// spare, while over 0, has chooseFusion take the highest threshold whose recall
// is within that many on-topic queries of the best, rather than the best.
var spare int

// fusionSpare is the service's spare: a threshold chosen at the very edge of the
// training folds' false matches lets more through on queries it was not chosen on,
// and one on-topic query of recall given back for a higher threshold keeps the
// false matches of queries kept apart within 0.10 (make eval's table).
const fusionSpare = 1

// fusionBudget is the false-match rate the fusion's threshold is chosen under.
const fusionBudget = 0.05

// rewriteTable cross-validates search with the agent's phrasings on the dev set:
// in each fold, the band is fitted on the own set's fitted queries and the dev
// queries outside the fold, the fusion chosen on those dev queries, and both scored
// on the fold; the row without phrasings scores the same bands on the query alone.
func (fx fixture) rewriteTable(own, dev []search.Labelled, qs []phrased) string {
	note := fmt.Sprintf("%d folds × %d shuffles, the band and the fusion's threshold chosen on other folds than the one scored", cvFolds, cvRepeats)
	title := "dev set with the agent's phrasings"
	if os.Getenv("WAYSTATION_EVAL_LISTINGS") != "" {
		title += ", the Bazaar's listings of a week loaded beside the catalog"
	}
	t := newCVTable(title, dev, note)
	budgets := []float64{fusionBudget, 0.10}
	var alone, ceiling []search.CalibrationScore
	fused := make([][]search.CalibrationScore, len(budgets))
	orAlone := make([][]search.CalibrationScore, len(budgets))
	for r := range cvRepeats {
		for _, fold := range search.Folds(dev, cvFolds, uint64(r)*7919+1) {
			train, test := split(qs, fold)
			c := search.Calibrate(append(slices.Clone(own), labelledOf(train)...), bandOptions)
			alone = append(alone, c.Score(labelledOf(test)))
			trainReads, testReads := fx.readAll(train, c), fx.readAll(test, c)
			ceiling = append(ceiling, fx.fusionScore(test, testReads, search.Fusion{K: search.HybridFusion.K}, nil))
			trainBands, testBands := repeat(c, len(train)), repeat(c, len(test))
			for i, b := range budgets {
				fused[i] = append(fused[i], fx.fusionScore(test, testReads, fx.chooseFusion(train, trainReads, b, nil), nil))
				spare = fusionSpare
				orAlone[i] = append(orAlone[i], fx.fusionScore(test, testReads, fx.chooseFusion(train, trainReads, b, trainBands), testBands))
				spare = 0
			}
		}
	}
	var spared [2][]search.CalibrationScore
	for r := range cvRepeats {
		for _, fold := range search.Folds(dev, cvFolds, uint64(r)*7919+1) {
			train, test := split(qs, fold)
			c := search.Calibrate(append(slices.Clone(own), labelledOf(train)...), bandOptions)
			trainReads, testReads := fx.readAll(train, c), fx.readAll(test, c)
			trainBands, testBands := repeat(c, len(train)), repeat(c, len(test))
			for n := range spared {
				spare = []int{0, 2}[n]
				spared[n] = append(spared[n], fx.fusionScore(test, testReads, fx.chooseFusion(train, trainReads, fusionBudget, trainBands), testBands))
				spare = 0
			}
		}
	}
	extra := func() {
		for n := range spared {
			t.row(fmt.Sprintf("the same as the service, the highest threshold within %d on-topic queries of the best recall; under %.2f or the query alone's rate", []int{0, 2}[n], fusionBudget), spared[n])
		}
	}
	t.row("the query alone (the band as it is)", alone)
	t.row("the query and its phrasings, fused, never refused (the ranking's ceiling)", ceiling)
	for i, b := range budgets {
		t.row(fmt.Sprintf("the query and its phrasings, fused, nothing else; the threshold chosen under %.2f false matches", b), fused[i])
		t.row(fmt.Sprintf("fused, or the query alone where the fusion falls short and its band answers (the service); the highest threshold within %d on-topic query of the best recall under %.2f or the query alone's rate", fusionSpare, b), orAlone[i])
	}
	extra()
	return t.b.String()
}

// outOfFoldFusion is the fusion chosen as the service's is (the query alone answering
// where the fusion falls short and its band answers): on every dev query read
// by a band fitted without it (five folds), under fusionBudget.
func (fx fixture) outOfFoldFusion(own []search.Labelled, dev []search.Labelled, qs []phrased) search.Fusion {
	return fx.outOfFoldFusionUnder(own, dev, qs, bandOptions, fusionBudget)
}

// outOfFoldFusionUnder is outOfFoldFusion with the band fitted under o and the
// fusion's threshold chosen under budget.
func (fx fixture) outOfFoldFusionUnder(own []search.Labelled, dev []search.Labelled, qs []phrased, o search.CalibrationOptions, budget float64) search.Fusion {
	reads := make([][]search.Reading, len(qs))
	bands := make([]search.Calibration, len(qs))
	for _, fold := range search.Folds(dev, cvFolds, 1) {
		train, _ := split(qs, fold)
		c := search.Calibrate(append(slices.Clone(own), labelledOf(train)...), o)
		for _, i := range fold {
			reads[i] = fx.readings(qs[i], c)
			bands[i] = c
		}
	}
	spare = fusionSpare
	defer func() { spare = 0 }()
	return fx.chooseFusion(qs, reads, budget, bands)
}

func (fx fixture) readAll(qs []phrased, c search.Calibration) [][]search.Reading {
	out := make([][]search.Reading, len(qs))
	for i, q := range qs {
		out[i] = fx.readings(q, c)
	}
	return out
}

func repeat(c search.Calibration, n int) []search.Calibration {
	out := make([]search.Calibration, n)
	for i := range out {
		out[i] = c
	}
	return out
}

func split(qs []phrased, fold []int) (train, test []phrased) {
	in := map[int]bool{}
	for _, i := range fold {
		in[i] = true
	}
	for i, q := range qs {
		if in[i] {
			test = append(test, q)
		} else {
			train = append(train, q)
		}
	}
	return train, test
}

func labelledOf(qs []phrased) []search.Labelled {
	out := make([]search.Labelled, len(qs))
	for i, q := range qs {
		out[i] = q.Labelled
	}
	return out
}

func TestRewrites(t *testing.T) {
	if os.Getenv("WAYSTATION_EVAL") == "" {
		t.Skip("make eval")
	}
	fx := setup(t)
	if fx.hybrid == nil {
		t.Skip("no sentence model (WAYSTATION_SENTENCE_MODEL)")
	}
	rewrites := readRewrites(t)
	set := readDevSet(t)
	dev := fx.labelled(t, set, "dev")
	ownSet := readJSONLSet(t, NewSetPath, "own")
	mine := fx.labelled(t, ownSet, "own")
	var own []search.Labelled
	for i, q := range ownSet.queries {
		if upTo(q.id, lastFittedQuery) {
			own = append(own, mine[i])
		}
	}
	qs := fx.labelPhrased(t, set, dev, rewrites)
	fmt.Print(fx.rewriteTable(own, dev, qs))
	if os.Getenv("WAYSTATION_EVAL_LISTINGS") != "" {
		fmt.Print(fx.listingsBandTable(own, dev, qs))
		fx.checkLargeCalibration(t, own, dev, qs)
		return // the catalog's own fusion is chosen on the catalog alone
	}
	if c := search.HybridCalibration; c.Large != nil && fx.snap.Len() >= c.LargeFrom {
		t.Errorf("the catalog alone (%d methods) is answered by the large catalog's band (from %d)", fx.snap.Len(), c.LargeFrom)
	}
	if got := fx.outOfFoldFusion(own, dev, qs); got != search.HybridFusion {
		t.Errorf("search.HybridFusion is not the fusion chosen on the dev set's out-of-fold readings; paste: %#v", got)
	}
}

// listingsBudget is the false matches the issue allows search with the Bazaar's
// listings loaded.
const listingsBudget = 0.20

// listingsBandTable cross-validates bands fitted for a catalog of the listings' size
// (make eval-listings): as rewriteTable, the band fitted on the own set and the dev
// queries outside the fold, all read with the listings loaded, but under
// listingsBudget, the band's threshold and the fusion's each chosen to stay under
// it on the training folds, or under the service's budgets for comparison.
func (fx fixture) listingsBandTable(own, dev []search.Labelled, qs []phrased) string {
	note := fmt.Sprintf("%d folds × %d shuffles, the band and the fusion's threshold chosen on other folds than the one scored", cvFolds, cvRepeats)
	t := newCVTable("bands fitted with the Bazaar's listings loaded, under their own budgets", dev, note)
	type cfg struct{ band, fusion float64 }
	cfgs := []cfg{{0.15, 0.05}, {0.15, 0.10}, {0.15, listingsBudget}, {listingsBudget, 0.05}, {listingsBudget, 0.10}, {listingsBudget, listingsBudget}, {0.25, 0.10}}
	alone := map[float64][]search.CalibrationScore{}
	orAlone := make([][]search.CalibrationScore, len(cfgs))
	for r := range cvRepeats {
		for _, fold := range search.Folds(dev, cvFolds, uint64(r)*7919+1) {
			train, test := split(qs, fold)
			bands := map[float64]search.Calibration{}
			for _, b := range []float64{0.15, listingsBudget, 0.25} {
				o := bandOptions
				o.MaxFalseMatch = b
				bands[b] = search.Calibrate(append(slices.Clone(own), labelledOf(train)...), o)
				alone[b] = append(alone[b], bands[b].Score(labelledOf(test)))
			}
			for i, c := range cfgs {
				band := bands[c.band]
				trainReads, testReads := fx.readAll(train, band), fx.readAll(test, band)
				spare = fusionSpare
				f := fx.chooseFusion(train, trainReads, c.fusion, repeat(band, len(train)))
				spare = 0
				orAlone[i] = append(orAlone[i], fx.fusionScore(test, testReads, f, repeat(band, len(test))))
			}
		}
	}
	for _, b := range []float64{0.15, listingsBudget, 0.25} {
		t.row(fmt.Sprintf("the query alone, the band's threshold under %.2f", b), alone[b])
	}
	for i, c := range cfgs {
		t.row(fmt.Sprintf("fused, or the query alone where the fusion falls short; the band under %.2f, the fusion's threshold under %.2f or the query alone's rate", c.band, c.fusion), orAlone[i])
	}
	return t.b.String()
}

// largeBudgets are the false-match budgets search.HybridCalibration.Large is fitted
// under: its band's threshold and its fusion's.
var largeBudgets = struct{ band, fusion float64 }{listingsBudget, 0.10}

// checkLargeCalibration fits the band for a catalog of the listings' size as the
// catalog's own is fitted (make calibrate's fit, on the own set up to
// lastFittedQuery and the dev set, here read with the listings loaded), under
// largeBudgets, its fusion chosen on out-of-fold readings as outOfFoldFusion does,
// and checks that search.HybridCalibration.Large is that fit, and that the catalog
// alone is below HybridCalibration.LargeFrom and the listings above it.
func (fx fixture) checkLargeCalibration(t *testing.T, own, dev []search.Labelled, qs []phrased) {
	o := bandOptions
	o.MaxFalseMatch = largeBudgets.band
	got := search.Calibrate(append(slices.Clone(own), dev...), o)
	f := fx.outOfFoldFusionUnder(own, dev, qs, o, largeBudgets.fusion)
	want := search.HybridCalibration.Large
	// With the listings loaded the nearest methods come from the approximate index,
	// whose neighbours change a little from one build to the next: the fit is the
	// same within a step of the fusion's grid and 0.02 of probability.
	same := want != nil && want.Fusion != nil && want.Fusion.Top == f.Top && want.Fusion.K == f.K &&
		math.Abs(want.Fusion.Least-f.Least) <= 0.0125+1e-9 &&
		math.Abs(got.Least-want.Least) < 0.02 && got.Margin == want.Margin && got.Rerank == want.Rerank
	for _, s := range append(slices.Clone(own), dev...) {
		same = same && math.Abs(got.Probability(s.Evidence)-want.Probability(s.Evidence)) < 0.02
	}
	if !same {
		t.Errorf("search.HybridCalibration.Large is not the fit with the listings loaded; paste:\n%#v\nFusion: %#v", got, f)
	}
	if n := fx.snap.Len(); n < search.HybridCalibration.LargeFrom {
		t.Errorf("the catalog with the listings holds %d methods, under HybridCalibration.LargeFrom %d", n, search.HybridCalibration.LargeFrom)
	}
}
