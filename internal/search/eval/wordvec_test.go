package eval

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/waystation/waystation/internal/search"
)

// TestWordVectorAblation prints the cross-validated ablation of the evidence word
// vectors give the band (make eval-wordvec): over the dev and own labelled queries
// together, the band's features without word vectors, then with them under each
// recipe (the cosine a concept's best counts nothing at, the rerank weight of a
// concept held only softly) and each new feature added alone or all together. Each
// row has its figures' mean and spread over the folds, their difference from the
// first row's on the same folds (paired), the ranking's own recall@3 with no band
// under the rerank weight chosen, and the dev set's in-sample figures of the band
// fitted on every query.
func TestWordVectorAblation(t *testing.T) {
	fx := newAblationFixture(t, "eval-wordvec", "WAYSTATION_WORDVEC")
	start := time.Now()
	vecs, err := search.LoadWordVectors(os.Getenv("WAYSTATION_WORDVEC"), search.WordVectorRanks)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("word vectors: %d words loaded in %v", vecs.Words(), time.Since(start).Round(time.Millisecond))
	label := func(v *search.WordVectors) (all, devOnly []search.Labelled) {
		return fx.labelWith(t, search.Config{WordVectors: v})
	}
	base := slices.Clone(search.BandFeatures)
	plus := func(fs ...int) []int { return append(slices.Clone(base), fs...) }
	a := newAblation(t, fmt.Sprintf("Word vectors' evidence (%d words)", vecs.Words()), "evidence", "the first row", true)
	row := a.row
	none, noneDev := label(nil)
	row("no word vectors: the band's features", none, noneDev, search.CalibrationOptions{Features: base})
	thresholds := []float64{0, 0.3, 0.5}
	if s := os.Getenv("WAYSTATION_WORDVEC_THRESHOLDS"); s != "" {
		thresholds = nil
		for _, f := range strings.Split(s, ",") {
			v, err := strconv.ParseFloat(f, 64)
			if err != nil {
				t.Fatal(err)
			}
			thresholds = append(thresholds, v)
		}
	}
	for _, th := range thresholds {
		for _, w := range []float64{0, 0.5} {
			c := *vecs
			c.Threshold, c.Weight = th, w
			all, d := label(&c)
			name := fmt.Sprintf("threshold %.1f, a soft hold weighs %.1f in the rerank", th, w)
			row(name+": + vec_cover", all, d, search.CalibrationOptions{Features: plus(search.FeatVecCover)})
			row(name+": + vec_cover, vec_cover3", all, d, search.CalibrationOptions{Features: plus(search.FeatVecCover, search.FeatVecCover3)})
			row(name+": + vec_known", all, d, search.CalibrationOptions{Features: plus(search.FeatVecKnown)})
			row(name+": + vec_similarity", all, d, search.CalibrationOptions{Features: plus(search.FeatVecSimilarity)})
			row(name+": + all four", all, d, search.CalibrationOptions{Features: plus(search.FeatVecCover, search.FeatVecCover3, search.FeatVecKnown, search.FeatVecSimilarity)})
			if w == 0 && os.Getenv("WAYSTATION_WORDVEC_CHOICES") != "" {
				choices := append(slices.Clone(evidenceKinds), []int{search.FeatVecCover, search.FeatVecCover3}, []int{search.FeatVecKnown}, []int{search.FeatVecSimilarity})
				scores := search.CrossValidate(all, search.CalibrationOptions{Features: evidenceBase, Choices: choices}, cvFolds, cvRepeats)
				a.scored(name+": the kinds of evidence (the vectors' three among them) chosen inside each training fold", scores)
			}
		}
	}
	fmt.Print(a)
}
