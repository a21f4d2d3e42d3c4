package eval

import (
	"fmt"
	"os"
	"slices"
	"testing"

	"github.com/waystation/waystation/internal/search"
)

// TestWordNetAblation prints the cross-validated ablation of the evidence WordNet
// gives the band (make eval-wordnet): over the dev and own labelled queries together,
// the band's features without a thesaurus, then with one under each recipe (whether
// a query's concept held through a hypernym counts, the rerank weight of a concept
// held through a relative) and each new feature added alone or all together. Each
// row has its figures' mean and spread over the folds, their difference from the
// first row's on the same folds (paired), the ranking's own recall@3 with no band
// under the rerank weight chosen, and the dev set's in-sample figures of the band
// fitted on every query.
func TestWordNetAblation(t *testing.T) {
	fx := newAblationFixture(t, "eval-wordnet", "WAYSTATION_WORDNET")
	th, err := search.LoadThesaurus(os.Getenv("WAYSTATION_WORDNET"))
	if err != nil {
		t.Fatal(err)
	}
	label := func(th *search.Thesaurus) (all, devOnly []search.Labelled) {
		return fx.labelWith(t, search.Config{Thesaurus: th})
	}
	base := without(search.FeatAgree, search.FeatDomain, search.FeatDomainMin, search.FeatSynCover, search.FeatSynCover3, search.FeatSynKnown,
		search.FeatVecCover, search.FeatVecCover3, search.FeatVecKnown, search.FeatVecSimilarity)
	plus := func(fs ...int) []int { return append(slices.Clone(base), fs...) }
	a := newAblation(t, "WordNet's evidence", "evidence", "the first row", true)
	row := a.row
	none, noneDev := label(nil)
	row("no thesaurus: the band's features before", none, noneDev, search.CalibrationOptions{Features: base})
	for _, hyp := range []bool{false, true} {
		for _, w := range []float64{0, 0.5, 1} {
			c := *th
			c.Hypernyms, c.Weight = hyp, w
			all, d := label(&c)
			name := fmt.Sprintf("hypernyms %v, a relative weighs %.1f in the rerank", hyp, w)
			row(name+": + syn_cover", all, d, search.CalibrationOptions{Features: plus(search.FeatSynCover)})
			row(name+": + syn_cover, syn_cover3, syn_known", all, d, search.CalibrationOptions{Features: plus(search.FeatSynCover, search.FeatSynCover3, search.FeatSynKnown)})
			if w == 0.5 {
				row(name+": + syn_cover3", all, d, search.CalibrationOptions{Features: plus(search.FeatSynCover3)})
				row(name+": + syn_known", all, d, search.CalibrationOptions{Features: plus(search.FeatSynKnown)})
				if !hyp {
					scores := search.CrossValidate(all, search.CalibrationOptions{Features: evidenceBase, Choices: append(slices.Clone(evidenceKinds), []int{search.FeatSynCover})}, cvFolds, cvRepeats)
					a.scored(name+": the kinds of evidence (WordNet's syn_cover one of them) chosen inside each training fold", scores)
				}
			}
		}
	}
	fmt.Print(a)
}
