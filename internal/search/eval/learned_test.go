package eval

import (
	"cmp"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/waystation/waystation/internal/embedding"
	"github.com/waystation/waystation/internal/search"
)

// TestLearnedAblation prints the cross-validated ablation of evidence learned from the
// labelled queries themselves (make eval-learned), against the band's features on the
// same folds: the nearest labelled queries of the training fold (knn_*), the methods'
// words and vectors expanded by the training fold's on-topic queries that want them,
// and boosted decision stumps in place of the logistic model. Everything learned
// from labelled queries comes from the training fold alone (search.CalibrationOptions'
// Prepare); the training fold's own evidence is read from its other inner folds, so
// that no query is its own neighbour or its own expansion. Each row has its figures'
// mean and spread over the folds, their paired difference from the band's, the
// ranking's own recall@3 with no band on the same folds, and the by-origin check:
// fitted on the older queries (the dev set and the own set up to lastOlderQuery),
// scored on the newer.
func TestLearnedAblation(t *testing.T) {
	fx := newAblationFixture(t, "eval-learned")
	folds, repeats := cvFolds, cvRepeatsFrom(t, "WAYSTATION_LEARNED_REPEATS")
	older, newer, all := fx.byOrigin(t)
	l := newLearned(fx.fixture, all)

	if os.Getenv("WAYSTATION_LEARNED_FAILURES") != "" {
		t.Log(l.failures(all))
	}

	base := slices.Clone(search.BandFeatures)
	plus := func(fs ...int) []int { return append(slices.Clone(base), fs...) }
	// The query form's rows add ask to the band's features as they were before the
	// band weighed it, so that each feature stands once and the rows keep their
	// meaning: ask alone is the band's features of now.
	noAsk := slices.DeleteFunc(slices.Clone(base), func(f int) bool { return f == search.FeatAsk })
	form := func(fs ...int) []int { return append(slices.Clone(noAsk), fs...) }
	knn := func(k int) func(train, test []search.Labelled) ([]search.Labelled, []search.Labelled) {
		return l.prepare(func(s, ref []search.Labelled) []search.Labelled { return l.neighbours(k).Apply(s, ref) })
	}
	type candidate struct {
		id, name string
		o        search.CalibrationOptions
	}
	cands := []candidate{
		{"band", "the band's features", search.CalibrationOptions{Features: base}},
	}
	for _, k := range []int{5, 10, 20} {
		name, id := fmt.Sprintf("kNN over the training fold's queries, k %d: ", k), fmt.Sprintf("knn%d", k)
		cands = append(cands,
			candidate{id + "-off", name + "+ knn_off", search.CalibrationOptions{Features: plus(search.FeatKNNOff), Prepare: knn(k)}},
			candidate{id + "-three", name + "+ knn_off, knn_off_best, knn_on_best", search.CalibrationOptions{Features: plus(search.FeatKNNOff, search.FeatKNNOffBest, search.FeatKNNOnBest), Prepare: knn(k)}},
			candidate{id + "-four", name + "+ all four", search.CalibrationOptions{Features: plus(search.FeatKNNOff, search.FeatKNNOffBest, search.FeatKNNOnBest, search.FeatKNNOn3), Prepare: knn(k)}})
	}
	cands = append(cands,
		candidate{"knn10-on3", "kNN: + knn_on3", search.CalibrationOptions{Features: plus(search.FeatKNNOn3), Prepare: knn(10)}},
		candidate{"knn10-best", "kNN: + knn_off_best, knn_on_best", search.CalibrationOptions{Features: plus(search.FeatKNNOffBest, search.FeatKNNOnBest), Prepare: knn(10)}},
		candidate{"exp-words", "expansion: the training fold's on-topic queries' words added to the methods they want", search.CalibrationOptions{Features: base, Prepare: l.prepare(l.expand(true, 0))}},
		candidate{"exp-words-vec0.9", "expansion: their words and their vectors (a method as near as its nearest such query, × 0.9)", search.CalibrationOptions{Features: base, Prepare: l.prepare(l.expand(true, 0.9))}},
		candidate{"exp-vec0.9", "expansion: their vectors alone (× 0.9)", search.CalibrationOptions{Features: base, Prepare: l.prepare(l.expand(false, 0.9))}},
		candidate{"exp-vec0.8", "expansion: their vectors alone (× 0.8)", search.CalibrationOptions{Features: base, Prepare: l.prepare(l.expand(false, 0.8))}},
		candidate{"ask", "query form: + ask", search.CalibrationOptions{Features: form(search.FeatAsk)}},
		candidate{"ask-first", "query form: + ask, first_held", search.CalibrationOptions{Features: form(search.FeatAsk, search.FeatFirstHeld)}},
		candidate{"ask-first-knn10", "query form and kNN k 10: + ask, first_held, knn_off, knn_off_best, knn_on_best", search.CalibrationOptions{Features: form(search.FeatAsk, search.FeatFirstHeld, search.FeatKNNOff, search.FeatKNNOffBest, search.FeatKNNOnBest), Prepare: knn(10)}},
		candidate{"stumps100", "boosted stumps (100 rounds, shrinkage 0.1) over the band's features", search.CalibrationOptions{Features: base, Learner: stumps(100, 0.1)}},
		candidate{"stumps300", "boosted stumps (300 rounds, shrinkage 0.05) over the band's features", search.CalibrationOptions{Features: base, Learner: stumps(300, 0.05)}},
		candidate{"stumps100-knn10", "boosted stumps (100 rounds, shrinkage 0.1) over the band's features and the kNN's four, k 10", search.CalibrationOptions{Features: plus(search.FeatKNNOff, search.FeatKNNOffBest, search.FeatKNNOnBest, search.FeatKNNOn3), Learner: stumps(100, 0.1), Prepare: knn(10)}},
		candidate{"stumps100-ask", "boosted stumps (100 rounds, shrinkage 0.1) over the band's features and ask, first_held", search.CalibrationOptions{Features: form(search.FeatAsk, search.FeatFirstHeld), Learner: stumps(100, 0.1)}},
		candidate{"ask-knn10", "query form and kNN k 10: + ask, knn_off, knn_off_best, knn_on_best", search.CalibrationOptions{Features: form(search.FeatAsk, search.FeatKNNOff, search.FeatKNNOffBest, search.FeatKNNOnBest), Prepare: knn(10)}},
		candidate{"band-fm20", "the band's features under a budget of 0.20 false matches", search.CalibrationOptions{Features: base, MaxFalseMatch: 0.20}},
		candidate{"ask-knn10-fm20", "query form and kNN k 10 (as ask-knn10) under a budget of 0.20 false matches", search.CalibrationOptions{Features: form(search.FeatAsk, search.FeatKNNOff, search.FeatKNNOffBest, search.FeatKNNOnBest), Prepare: knn(10), MaxFalseMatch: 0.20}},
		candidate{"act", "the act asked for: + act", search.CalibrationOptions{Features: plus(search.FeatAct)}},
		candidate{"act-unheld", "the act asked for: + act_unheld", search.CalibrationOptions{Features: plus(search.FeatActUnheld)}},
		candidate{"act-both", "the act asked for: + act, act_unheld", search.CalibrationOptions{Features: plus(search.FeatAct, search.FeatActUnheld)}},
		candidate{"act-unheld3", "the act asked for: + act_unheld3", search.CalibrationOptions{Features: plus(search.FeatActUnheld3)}},
		candidate{"act-three", "the act asked for: + act, act_unheld, act_unheld3", search.CalibrationOptions{Features: plus(search.FeatAct, search.FeatActUnheld, search.FeatActUnheld3)}},
		candidate{"act-get", "the act asked for: + act_get", search.CalibrationOptions{Features: plus(search.FeatActGet)}},
		candidate{"verb-held", "the act asked for: + verb_held", search.CalibrationOptions{Features: plus(search.FeatVerbHeld)}},
		candidate{"act-verb", "the act asked for: + act_unheld, verb_held", search.CalibrationOptions{Features: plus(search.FeatActUnheld, search.FeatVerbHeld)}},
		candidate{"act-all", "the act asked for: + act, act_unheld, act_unheld3, act_get, verb_held", search.CalibrationOptions{Features: plus(search.FeatAct, search.FeatActUnheld, search.FeatActUnheld3, search.FeatActGet, search.FeatVerbHeld)}},
		candidate{"band-fm18", "the band's features under a budget of 0.18 false matches", search.CalibrationOptions{Features: base, MaxFalseMatch: 0.18}},
		candidate{"act-fm18", "the act asked for: + act, under a budget of 0.18 false matches", search.CalibrationOptions{Features: plus(search.FeatAct), MaxFalseMatch: 0.18}},
		candidate{"act-fm20", "the act asked for: + act, under a budget of 0.20 false matches", search.CalibrationOptions{Features: plus(search.FeatAct), MaxFalseMatch: 0.20}},
		candidate{"act-unheld3-fm20", "the act asked for: + act_unheld3, under a budget of 0.20 false matches", search.CalibrationOptions{Features: plus(search.FeatActUnheld3), MaxFalseMatch: 0.20}},
		candidate{"act-unheld-fm20", "the act asked for: + act_unheld, under a budget of 0.20 false matches", search.CalibrationOptions{Features: plus(search.FeatActUnheld), MaxFalseMatch: 0.20}},
		candidate{"ask-exp-words", "query form and the words' expansion: + ask", search.CalibrationOptions{Features: form(search.FeatAsk), Prepare: l.prepare(l.expand(true, 0))}},
	)
	if s := os.Getenv("WAYSTATION_LEARNED"); s != "" {
		want := strings.Split(s, ",")
		keep := cands[:1]
		for _, c := range cands[1:] {
			if slices.Contains(want, c.id) {
				keep = append(keep, c)
			}
		}
		cands = keep
	}

	var b strings.Builder
	fmt.Fprintf(&b, "\nEvidence learned from the labelled queries, dev and own sets together (%d on-topic, %d off-topic), %d folds × %d shuffles (Δ: paired difference from the band's features on the same folds); newer: fitted on the dev set and own up to %s, scored on the %d newer\n\n",
		count(all, false), count(all, true), folds, repeats, lastOlderQuery, len(newer))
	b.WriteString("| candidate | recall@3 | paraphrase | false matches | Δ recall@3 | Δ paraphrase | Δ false matches | newer recall@3 / paraphrase / false matches | no band: recall@3 / paraphrase |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	var first []search.CalibrationScore
	for _, c := range cands {
		var scores, none []search.CalibrationScore
		for r := range repeats {
			for _, fold := range search.Folds(all, folds, c.o.Seed+uint64(r)*7919+1) {
				train, test := search.Split(all, fold)
				o := c.o
				if o.Prepare != nil {
					train, test = o.Prepare(train, test)
					o.Prepare = nil
				}
				scores = append(scores, search.FitScore(train, test, o))
				w := search.Calibrate(train, search.CalibrationOptions{Features: base}).Rerank
				none = append(none, search.Calibration{Margin: 1, Rerank: w}.Score(test))
			}
		}
		if first == nil {
			first = scores
		}
		fmt.Fprintf(&b, "| `%s`: %s |", c.id, c.name)
		for _, f := range ablationFigures {
			fmt.Fprintf(&b, " %s |", meanSD(scores, f))
		}
		for _, f := range ablationFigures {
			fmt.Fprintf(&b, " %s |", pairedDiff(scores, first, f))
		}
		n := search.FitScore(older, newer, c.o)
		fmt.Fprintf(&b, " %.3f / %.3f / %.3f | %s / %s |\n", n.Recall(), n.KindRecall("paraphrase"), n.FalseMatchRate(),
			meanSD(none, search.CalibrationScore.Recall), meanSD(none, func(s search.CalibrationScore) float64 { return s.KindRecall("paraphrase") }))
		t.Log(b.String()[strings.LastIndex(strings.TrimSuffix(b.String(), "\n"), "\n")+1:])
	}
	fmt.Print(b.String())
}

func count(samples []search.Labelled, off bool) int {
	n := 0
	for _, s := range samples {
		if s.Off == off {
			n++
		}
	}
	return n
}

// learned holds what the measures of evidence learned from labelled queries read:
// every pair of labelled queries' similarities (the encoder's cosine and the fused
// one), and the catalog's methods by endpoint key.
type learned struct {
	fx       fixture
	model    *search.Model
	index    map[[2]string]int
	semantic [][]float64
	fused    [][]float64
	slugs    map[string][]string // endpoint key: slugs
}

func newLearned(fx fixture, all []search.Labelled) *learned {
	l := &learned{fx: fx, model: fx.hybrid.Models()[0], index: map[[2]string]int{}, slugs: map[string][]string{}}
	parts, _ := embedding.Find[interface {
		Parts(q, d []float32) (semantic, lexical float64)
	}](fx.hybridModel)
	l.semantic, l.fused = make([][]float64, len(all)), make([][]float64, len(all))
	for i, a := range all {
		l.index[[2]string{a.Set, a.ID}] = i
		l.semantic[i], l.fused[i] = make([]float64, len(all)), make([]float64, len(all))
		for j, b := range all[:i+1] {
			sem, _ := parts.Parts(a.Vector, b.Vector)
			fused := 0.0
			for k := range a.Vector {
				fused += float64(a.Vector[k]) * float64(b.Vector[k])
			}
			l.semantic[i][j], l.semantic[j][i] = sem, sem
			l.fused[i][j], l.fused[j][i] = fused, fused
		}
	}
	for _, m := range fx.snap.Methods() {
		k := search.EndpointKey(m.Endpoint.URL)
		l.slugs[k] = append(l.slugs[k], m.Slug)
	}
	return l
}

func (l *learned) at(a search.Labelled) int { return l.index[[2]string{a.Set, a.ID}] }

// neighbours are the knn_* features over the encoder's cosine.
func (l *learned) neighbours(k int) search.QueryNeighbours {
	return search.QueryNeighbours{K: k, Similarity: func(a, b search.Labelled) float64 { return l.semantic[l.at(a)][l.at(b)] }}
}

// innerFolds is how many parts a training fold is read in: each part's evidence
// learned from the others.
const innerFolds = 5

// prepare makes a Prepare of read, which reads samples' evidence again as learned
// from ref: the fold scored reads it from the whole training fold, each inner fold
// of the training fold from the rest of it.
func (l *learned) prepare(read func(samples, ref []search.Labelled) []search.Labelled) func(train, test []search.Labelled) ([]search.Labelled, []search.Labelled) {
	return func(train, test []search.Labelled) ([]search.Labelled, []search.Labelled) {
		out := make([]search.Labelled, len(train))
		for _, fold := range search.Folds(train, innerFolds, 97) {
			rest, in := search.Split(train, fold)
			for i, s := range read(in, rest) {
				out[fold[i]] = s
			}
		}
		return out, read(test, train)
	}
}

// expand reads samples again with the methods expanded by ref's on-topic queries:
// with words, their words added to the methods they want; with vector over 0, a
// method is at least vector times as similar to a query as the most similar of those
// that want it (and comes into the nearest when it was not).
func (l *learned) expand(words bool, vector float64) func(samples, ref []search.Labelled) []search.Labelled {
	return func(samples, ref []search.Labelled) []search.Labelled {
		wants := map[string][]int{} // slug: indexes of ref
		texts := map[string][]string{}
		for j, r := range ref {
			if r.Off {
				continue
			}
			for _, k := range r.Labels {
				for _, slug := range l.slugs[k] {
					wants[slug] = append(wants[slug], j)
					texts[slug] = append(texts[slug], r.Query)
				}
			}
		}
		cfg := search.Config{}
		if words {
			cfg.Expansion = texts
		}
		e, err := search.NewEngine(cfg, l.fx.store, l.model, nil)
		if err != nil {
			panic(err)
		}
		out := make([]search.Labelled, len(samples))
		for i, s := range samples {
			near := s.Near
			if vector > 0 {
				near = l.expandNear(s, ref, wants, vector)
			}
			out[i] = e.Relabel(l.fx.snap, l.model, s, near)
		}
		return out
	}
}

// expandNear is s's nearest methods with each one wanted by queries of ref at least
// vector times as similar as the most similar of them (s itself left out).
func (l *learned) expandNear(s search.Labelled, ref []search.Labelled, wants map[string][]int, vector float64) []search.Neighbour {
	i := l.at(s)
	best := func(slug string) (float64, float64) {
		sim, sem := 0.0, 0.0
		for _, j := range wants[slug] {
			r := l.at(ref[j])
			if r != i && l.fused[i][r] > sim {
				sim, sem = l.fused[i][r], l.semantic[i][r]
			}
		}
		return vector * sim, sem
	}
	out := slices.Clone(s.Near)
	seen := map[string]bool{}
	for k, n := range out {
		seen[n.Slug] = true
		if sim, _ := best(n.Slug); sim > n.Similarity {
			out[k].Similarity = sim
		}
	}
	for slug := range wants {
		if seen[slug] {
			continue
		}
		if sim, sem := best(slug); sim > 0 {
			lex := (sim/vector - embedding.SemanticShare*sem) / (1 - embedding.SemanticShare)
			out = append(out, search.Neighbour{Slug: slug, Similarity: sim, Parts: true, Semantic: sem, Lexical: lex})
		}
	}
	slices.SortStableFunc(out, func(a, b search.Neighbour) int { return cmp.Compare(b.Similarity, a.Similarity) })
	return out[:min(len(out), search.Reranked)]
}

// stumps is gradient boosting of decision stumps on the logistic loss: rounds stumps,
// each a split of one feature at one of its quantiles with a Newton step on either
// side, shrunk by shrink.
func stumps(rounds int, shrink float64) search.Learner {
	const bins = 16
	return func(samples []search.Labelled, features []int) func(search.Evidence) float64 {
		type stump struct {
			f           int
			cut         float64
			left, right float64
		}
		cuts := make([][]float64, len(features))
		for j, f := range features {
			v := make([]float64, len(samples))
			for i, s := range samples {
				v[i] = s.Evidence[f]
			}
			slices.Sort(v)
			for b := 1; b < bins; b++ {
				cuts[j] = append(cuts[j], v[b*len(v)/bins])
			}
			cuts[j] = slices.Compact(cuts[j])
		}
		y := make([]float64, len(samples))
		pos := 0.0
		for i, s := range samples {
			if s.Answerable() {
				y[i] = 1
				pos++
			}
		}
		p0 := min(max(pos/float64(max(1, len(samples))), 1e-3), 1-1e-3)
		bias := math.Log(p0 / (1 - p0))
		z := make([]float64, len(samples))
		for i := range z {
			z[i] = bias
		}
		const lambda = 1
		var model []stump
		for range rounds {
			g, h := make([]float64, len(samples)), make([]float64, len(samples))
			for i := range samples {
				p := 1 / (1 + math.Exp(-z[i]))
				g[i], h[i] = y[i]-p, p*(1-p)
			}
			best, bestGain := stump{}, -1.0
			for j, f := range features {
				for _, c := range cuts[j] {
					var gl, hl, gr, hr float64
					for i, s := range samples {
						if s.Evidence[f] < c {
							gl, hl = gl+g[i], hl+h[i]
						} else {
							gr, hr = gr+g[i], hr+h[i]
						}
					}
					if gain := gl*gl/(hl+lambda) + gr*gr/(hr+lambda); gain > bestGain {
						bestGain, best = gain, stump{f, c, gl / (hl + lambda), gr / (hr + lambda)}
					}
				}
			}
			if bestGain < 0 {
				break
			}
			best.left, best.right = shrink*best.left, shrink*best.right
			model = append(model, best)
			for i, s := range samples {
				if s.Evidence[best.f] < best.cut {
					z[i] += best.left
				} else {
					z[i] += best.right
				}
			}
		}
		return func(e search.Evidence) float64 {
			z := bias
			for _, s := range model {
				if e[s.f] < s.cut {
					z += s.left
				} else {
					z += s.right
				}
			}
			return 1 / (1 + math.Exp(-z))
		}
	}
}

// failures lists, under the band fitted on every query, the paraphrases it refuses
// though the ranking holds a relevant method among its three, and the off-topic
// queries it answers, each with its evidence: where to look for what the band lacks.
func (l *learned) failures(all []search.Labelled) string {
	c := search.Calibrate(all, search.CalibrationOptions{Features: search.BandFeatures})
	var b strings.Builder
	fmt.Fprintf(&b, "the band fitted on every query (least %.3f, rerank %.1f): refused paraphrases with a relevant method among three, and answered off-topic queries\n", c.Least, c.Rerank)
	fmt.Fprintf(&b, "%-13s %-5s %-60s %5s", "what", "set", "query", "p")
	shown := slices.Clone(search.BandFeatures)
	for _, f := range []int{search.FeatAct, search.FeatActUnheld, search.FeatActUnheld3, search.FeatActGet, search.FeatVerbHeld} {
		if !slices.Contains(shown, f) {
			shown = append(shown, f)
		}
	}
	for _, f := range shown {
		fmt.Fprintf(&b, " %8.8s", search.FeatureNames[f])
	}
	b.WriteString(" nearest\n")
	w := slices.Index(search.RerankWeights, c.Rerank)
	for _, s := range all {
		r := s.Rankings[w]
		p := c.Probability(r.Evidence)
		what := ""
		switch {
		case s.Off && p >= c.Least:
			what = "false match"
		case !s.Off && s.Kind == "paraphrase" && p < c.Least && slices.Contains(r.Relevant, true):
			what = "refused"
		default:
			continue
		}
		top := ""
		if len(r.Keys) > 0 {
			top = strings.TrimPrefix(r.Keys[0], "https://")
		}
		fmt.Fprintf(&b, "%-13s %-5s %-60.60q %5.3f", what, s.Set, s.Query, p)
		for _, f := range shown {
			fmt.Fprintf(&b, " %8.3f", r.Evidence[f])
		}
		fmt.Fprintf(&b, " %s\n", top)
	}
	return b.String()
}

// TestStumpsLearnAThreshold: boosted stumps find the cut of the one feature that
// tells answerable queries from the rest, and ignore one that tells nothing.
func TestStumpsLearnAThreshold(t *testing.T) {
	var samples []search.Labelled
	for i := range 200 {
		var e search.Evidence
		e[search.FeatCover] = float64(i) / 200
		e[search.FeatLead] = float64((i * 37) % 200)
		on := i >= 100 // at a quantile the stumps cut at
		samples = append(samples, search.Labelled{Ranking: search.Ranking{Evidence: e, Relevant: []bool{on}}, Off: !on})
	}
	p := stumps(50, 0.3)(samples, []int{search.FeatCover, search.FeatLead})
	for _, s := range samples {
		if got := p(s.Evidence) >= 0.5; got != s.Answerable() {
			t.Fatalf("cover %.3f: probability %.3f, answerable %v", s.Evidence[search.FeatCover], p(s.Evidence), s.Answerable())
		}
	}
}
