package eval

import (
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/waystation/waystation/internal/search"
)

// ablation is a cross-validated ablation table, over the dev and own labelled queries
// together: each row's recall@3, paraphrase recall@3 and false matches (mean and
// spread over the folds), their paired difference from the first row's on the same
// folds, and the ranking's own recall@3 with no band; with dev set, also the dev
// set's in-sample figures of the band fitted on every query.
type ablation struct {
	t     *testing.T
	b     strings.Builder
	first []search.CalibrationScore
	dev   bool
}

// ablationFigures are the figures an ablation's row gives, and the differences it
// takes.
var ablationFigures = []func(search.CalibrationScore) float64{
	search.CalibrationScore.Recall,
	func(s search.CalibrationScore) float64 { return s.KindRecall("paraphrase") },
	search.CalibrationScore.FalseMatchRate,
}

// newAblation starts the table titled title, whose rows name what column says, each
// compared with the first, which is against.
func newAblation(t *testing.T, title, column, against string, dev bool) *ablation {
	a := &ablation{t: t, dev: dev}
	fmt.Fprintf(&a.b, "\n%s, dev and own sets together, %d folds × %d shuffles (Δ: paired difference from %s on the same folds)\n\n",
		title, cvFolds, cvRepeats, against)
	fmt.Fprintf(&a.b, "| %s | recall@3 | paraphrase | false matches | Δ recall@3 | Δ paraphrase | Δ false matches | no band, recall@3 |", column)
	if dev {
		a.b.WriteString(" dev in-sample recall@3 / paraphrase / false matches |")
	}
	a.b.WriteString("\n|---|---:|---:|---:|---:|---:|---:|---:|")
	if dev {
		a.b.WriteString("---:|")
	}
	a.b.WriteString("\n")
	return a
}

// row cross-validates the band under o over samples and writes its row; devS are the
// dev set's samples among them (read only when the table has their column).
func (a *ablation) row(name string, samples, devS []search.Labelled, o search.CalibrationOptions) {
	fmt.Fprintf(&a.b, "| %s |", name)
	a.cells(search.CrossValidate(samples, o, cvFolds, cvRepeats))
	c := search.Calibrate(samples, o)
	all := search.Calibration{Margin: 1, Rerank: c.Rerank}.Score(samples)
	if a.dev {
		in := c.Score(devS)
		fmt.Fprintf(&a.b, " %.3f (weight %.1f) | %.3f / %.3f / %.3f |\n", all.Recall(), c.Rerank, in.Recall(), in.KindRecall("paraphrase"), in.FalseMatchRate())
	} else {
		fmt.Fprintf(&a.b, " %.3f |\n", all.Recall())
	}
	a.t.Log(name)
}

// scored writes a row of scores cross-validated elsewhere (the kinds of evidence chosen
// inside each training fold, say), with its last columns empty.
func (a *ablation) scored(name string, scores []search.CalibrationScore) {
	fmt.Fprintf(&a.b, "| %s |", name)
	a.cells(scores)
	if a.dev {
		a.b.WriteString(" | |\n")
	} else {
		a.b.WriteString(" |\n")
	}
	a.t.Log(name)
}

// cells writes scores' figures and their paired differences from the first row's.
func (a *ablation) cells(scores []search.CalibrationScore) {
	if a.first == nil {
		a.first = scores
	}
	for _, f := range ablationFigures {
		fmt.Fprintf(&a.b, " %s |", meanSD(scores, f))
	}
	for _, f := range ablationFigures {
		fmt.Fprintf(&a.b, " %s |", pairedDiff(scores, a.first, f))
	}
}

// String is the table.
func (a *ablation) String() string { return a.b.String() }

// pairedDiff is the mean and spread over folds of f's difference between two
// cross-validations on the same folds.
func pairedDiff(a, b []search.CalibrationScore, f func(search.CalibrationScore) float64) string {
	var d []float64
	for i := range min(len(a), len(b)) {
		d = append(d, f(a[i])-f(b[i]))
	}
	mean, sd := 0.0, 0.0
	for _, v := range d {
		mean += v
	}
	mean /= float64(max(1, len(d)))
	for _, v := range d {
		sd += (v - mean) * (v - mean)
	}
	sd = math.Sqrt(sd / float64(max(1, len(d))))
	return fmt.Sprintf("%+.3f ± %.3f", mean, sd)
}

// ablationFixture is what the ablations of make eval-* read: the fixture, with the
// hybrid model, and the development and own labelled sets.
type ablationFixture struct {
	fixture
	dev, own querySet
}

// newAblationFixture skips the test unless WAYSTATION_EVAL and each variable of vars
// are set, as make target sets them, and the sentence model is there.
func newAblationFixture(t *testing.T, target string, vars ...string) ablationFixture {
	need := append([]string{"WAYSTATION_EVAL"}, vars...)
	for _, v := range need {
		if os.Getenv(v) == "" {
			t.Skipf("make %s runs it: %s", target, strings.Join(need, " and "))
		}
	}
	fx := setup(t)
	if fx.hybrid == nil {
		t.Skip("no sentence model (WAYSTATION_SENTENCE_MODEL)")
	}
	return ablationFixture{fixture: fx, dev: readDevSet(t), own: readJSONLSet(t, NewSetPath, "own")}
}

// byOrigin labels the sets under the hybrid model and parts them for the by-origin
// check: older, the dev set and the own set up to lastOlderQuery, to fit on; newer,
// the own set after it, to score on; all, both, older first.
func (a ablationFixture) byOrigin(t *testing.T) (older, newer, all []search.Labelled) {
	mine := a.labelled(t, a.own, "own")
	for i, q := range a.own.queries {
		if upTo(q.id, lastOlderQuery) {
			older = append(older, mine[i])
		} else {
			newer = append(newer, mine[i])
		}
	}
	older = append(older, a.labelled(t, a.dev, "dev")...)
	return older, newer, append(slices.Clone(older), newer...)
}

// labelUnder labels the sets under g's hybrid model: all, the own set's then the dev
// set's, and the dev set's alone.
func (a ablationFixture) labelUnder(t *testing.T, g fixture) (all, dev []search.Labelled) {
	dev = g.labelled(t, a.dev, "dev")
	return append(g.labelled(t, a.own, "own"), dev...), dev
}

// labelWith labels the sets under the hybrid model with an engine configured as c.
func (a ablationFixture) labelWith(t *testing.T, c search.Config) (all, dev []search.Labelled) {
	e, err := search.NewEngine(c, a.store, &search.Model{Embedder: a.hybridModel, Record: a.hybridRecord}, nil)
	if err != nil {
		t.Fatal(err)
	}
	g := a.fixture
	g.hybrid = e
	return a.labelUnder(t, g)
}

// cvRepeatsFrom is cvRepeats, or the number the variable name holds when it is set.
func cvRepeatsFrom(t *testing.T, name string) int {
	s := os.Getenv(name)
	if s == "" {
		return cvRepeats
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
