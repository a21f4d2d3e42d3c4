package eval

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/waystation/waystation/internal/embedding"
	"github.com/waystation/waystation/internal/search"
)

// TestRankAblation prints the cross-validated ablation of rankings of a query's
// nearest forty methods (make eval-rank), against the service's (the similarity plus
// the rerank weight times the concept coverage, the weight chosen on the training
// fold) on the same folds: linear rankings learned from the training fold's labelled
// queries over features the engine has of each candidate (search.RankIndex), by a
// pairwise logistic loss, a listwise softmax or coordinate ascent on recall@3, with
// and without the sentence encoder's cosines to the method's name, description and
// path apart (multi-vector methods); the queries without their question or request
// frames (search.StripFrame); pseudo-relevance feedback (the query's vector moved
// towards its nearest methods', Rocchio); and at most one or two methods of a
// merchant among the first three. Each row has recall@3 with no band (the nearest
// three of its ranking, always) and with the band fitted again on its ranking in the
// training fold, their paired differences from the service's ranking, and the
// by-origin check: fitted on the older queries, scored on the newer.
func TestRankAblation(t *testing.T) {
	fx := newAblationFixture(t, "eval-rank")
	folds, repeats := cvFolds, cvRepeatsFrom(t, "WAYSTATION_RANK_REPEATS")
	older, newer, all := fx.byOrigin(t)
	r := newRankEval(t, fx.fixture, all)
	if os.Getenv("WAYSTATION_RANK_FAILURES") != "" {
		t.Log(r.failures(all))
	}

	base := []int{search.RankSimilarity, search.RankCover}
	fields := []int{search.RankSimilarity, search.RankSemantic, search.RankLexical, search.RankCover,
		search.RankCoverName, search.RankCoverPath, search.RankCoverText, search.RankCoverOther}
	allF := make([]int, search.NumRankFeatures)
	for i := range allF {
		allF[i] = i
	}
	mv := func(fs []int) []int { return append(slices.Clone(fs), mvFeatures...) }
	plain := func() *rankReading { return r.plain }
	rows := []rankRow{
		{"service", "the service's ranking: similarity + w × coverage, w chosen on the training fold", plain, rerankFit},
		{"pair-sim-cover", "learned, pairwise: similarity and coverage alone", plain, learnedFit(base, 1, 0)},
		{"pair-fields", "learned, pairwise: similarity, its parts, coverage overall and by name, path, description, the rest", plain, learnedFit(fields, 1, 0)},
		{"pair-all", "learned, pairwise: every feature of search.RankIndex", plain, learnedFit(allF, 1, 0)},
		{"pair-all-top10", "learned, pairwise: every feature, pairs against the first ten or above the relevant one", plain, learnedFit(allF, 1, 10)},
		{"pair-all-l10", "learned, pairwise: every feature, L2 penalty 10", plain, learnedFit(allF, 10, 0)},
		{"list-fields", "learned, listwise (softmax over the forty): the fields' features", plain, listFit(fields, 1)},
		{"list-all", "learned, listwise: every feature", plain, listFit(allF, 1)},
		{"grid-fields", "coordinate ascent on recall@3: the fields' features", plain, gridFit(fields, 2)},
		{"grid-all", "coordinate ascent on recall@3: every feature", plain, gridFit(allF, 2)},
		{"mv-max", "multi-vector: the encoder's part the best of its cosines to the method's whole text, name, description and path; + w × coverage", r.multi, mvMaxFit},
		{"pair-all-mv", "learned, pairwise: every feature and the encoder's cosines to name, description and path apart, and their best", r.multi, learnedFit(mv(allF), 1, 0)},
		{"pair-fields-mv", "learned, pairwise: the fields' features and the encoder's cosines by field", r.multi, learnedFit(mv(fields), 1, 0)},
		{"diverse1", "the service's ranking, at most one method of a merchant (hostname) among the first three", plain, r.diverse(rerankFit, 1)},
		{"diverse2", "the service's ranking, at most two methods of a merchant among the first three", plain, r.diverse(rerankFit, 2)},
		{"frame", "query frames stripped before the encoder and the lexical part; the service's rerank", r.framed, rerankFit},
		{"grid-all-mv", "coordinate ascent on recall@3: every feature and the encoder's cosines by field", r.multi, gridFit(mv(allF), 2)},
		{"list-all-mv", "learned, listwise: every feature and the encoder's cosines by field", r.multi, listFit(mv(allF), 1)},
		{"frame-pair-all", "query frames stripped; learned, pairwise, every feature", r.framed, learnedFit(allF, 1, 0)},
		{"prf3-0.3", "pseudo-relevance feedback: the query's vector + 0.3 × the mean of its nearest three's, searched again; the service's rerank", r.prf(3, 0.3), rerankFit},
		{"prf5-0.5", "pseudo-relevance feedback: + 0.5 × the mean of the nearest five's", r.prf(5, 0.5), rerankFit},
		{"fused80", "the fused nearest 80 in place of 40; the service's rerank", r.union(candidateSource{sourceFused: 80}), rerankFit},
		{"union-lex20", "the fused nearest 40 and the lexical part's nearest 20; the service's rerank", r.union(candidateSource{sourceFused: 40, sourceLexical: 20}), rerankFit},
		{"union-lex40", "the fused nearest 40 and the lexical part's nearest 40; the service's rerank", r.union(candidateSource{sourceFused: 40, sourceLexical: 40}), rerankFit},
		{"union-sem20", "the fused nearest 40 and the encoder's nearest 20; the service's rerank", r.union(candidateSource{sourceFused: 40, sourceSemantic: 20}), rerankFit},
		{"union-sem40", "the fused nearest 40 and the encoder's nearest 40; the service's rerank", r.union(candidateSource{sourceFused: 40, sourceSemantic: 40}), rerankFit},
		{"union-both20", "the fused nearest 40, the encoder's nearest 20 and the lexical part's 20; the service's rerank", r.union(candidateSource{sourceFused: 40, sourceSemantic: 20, sourceLexical: 20}), rerankFit},
		{"union-cover20", "the fused nearest 40 and the 20 methods that hold most of the query's concepts; the service's rerank", r.union(candidateSource{sourceFused: 40, sourceCover: 20}), rerankFit},
		{"union-cover40", "the fused nearest 40 and the 40 that hold most of its concepts; the service's rerank", r.union(candidateSource{sourceFused: 40, sourceCover: 40}), rerankFit},
		{"union-sem40-pair-fields", "the fused nearest 40 and the encoder's nearest 40; learned, pairwise, the fields' features", r.union(candidateSource{sourceFused: 40, sourceSemantic: 40}), learnedFit(fields, 1, 0)},
		{"union-all40-pair-fields", "the fused nearest 40, the encoder's 40 and the lexical part's 40; learned, pairwise, the fields' features", r.union(candidateSource{sourceFused: 40, sourceSemantic: 40, sourceLexical: 40}), learnedFit(fields, 1, 0)},
	}
	if os.Getenv("WAYSTATION_RANK_CANDIDATES") != "" {
		var sources []candidateSource
		for _, c := range [][len(sourceNames)]int{{40, 0, 0, 0}, {80, 0, 0, 0}, {120, 0, 0, 0}, {0, 40, 0, 0}, {0, 80, 0, 0}, {0, 0, 40, 0}, {0, 0, 80, 0},
			{0, 0, 0, 40}, {0, 0, 0, 80}, {40, 20, 0, 0}, {40, 40, 0, 0}, {40, 0, 20, 0}, {40, 0, 40, 0}, {40, 0, 0, 20}, {40, 0, 0, 40},
			{40, 20, 20, 0}, {40, 40, 40, 0}, {40, 20, 0, 20}} {
			sources = append(sources, candidateSource(c))
		}
		fmt.Print(r.candidateRecall(sources))
	}
	if s := os.Getenv("WAYSTATION_RANK"); s != "" {
		want := strings.Split(s, ",")
		keep := rows[:1]
		for _, c := range rows[1:] {
			if slices.Contains(want, c.id) {
				keep = append(keep, c)
			}
		}
		rows = keep
	}

	var b strings.Builder
	fmt.Fprintf(&b, "\nRankings of the nearest %d methods, dev and own sets together (%d on-topic, %d off-topic), %d folds × %d shuffles (Δ: paired difference from the service's ranking on the same folds); newer: fitted on the dev set and own up to %s, scored on the %d newer\n\n",
		search.Reranked, count(all, false), count(all, true), folds, repeats, lastOlderQuery, len(newer))
	b.WriteString("| ranking | no band: recall@3 | paraphrase | Δ recall@3 | Δ paraphrase | band: recall@3 | paraphrase | false matches | Δ recall@3 | Δ paraphrase | newer, no band: recall@3 / paraphrase | newer, band: recall@3 / paraphrase / false matches |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	var firstNone, firstBand []search.CalibrationScore
	for _, row := range rows {
		rd := row.reading()
		var none, band []search.CalibrationScore
		for rep := range repeats {
			for _, fold := range search.Folds(all, folds, uint64(rep)*7919+1) {
				train := complement(len(all), fold)
				n, bd := r.score(rd, row.fit, train, fold)
				none, band = append(none, n), append(band, bd)
			}
		}
		if firstNone == nil {
			firstNone, firstBand = none, band
		}
		old, nw := make([]int, len(older)), make([]int, len(newer))
		for i := range old {
			old[i] = i
		}
		for i := range nw {
			nw[i] = len(older) + i
		}
		nn, nb := r.score(rd, row.fit, old, nw)
		para := func(s search.CalibrationScore) float64 { return s.KindRecall("paraphrase") }
		fmt.Fprintf(&b, "| `%s`: %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %.3f / %.3f | %.3f / %.3f / %.3f |\n", row.id, row.name,
			meanSD(none, search.CalibrationScore.Recall), meanSD(none, para),
			pairedDiff(none, firstNone, search.CalibrationScore.Recall), pairedDiff(none, firstNone, para),
			meanSD(band, search.CalibrationScore.Recall), meanSD(band, para), meanSD(band, search.CalibrationScore.FalseMatchRate),
			pairedDiff(band, firstBand, search.CalibrationScore.Recall), pairedDiff(band, firstBand, para),
			nn.Recall(), para(nn), nb.Recall(), para(nb), nb.FalseMatchRate())
		t.Log(b.String()[strings.LastIndex(strings.TrimSuffix(b.String(), "\n"), "\n")+1:])
	}
	fmt.Print(b.String())
}

// rankRow is one ranking the ablation measures: how its queries read (their nearest
// methods and each one's features) and how it is fitted on a training fold.
type rankRow struct {
	id, name string
	reading  func() *rankReading
	fit      rankFitter
}

// rankFitter fits a ranking on the samples of rd at train and returns each sample's
// candidates' scores.
type rankFitter func(rd *rankReading, train []int) func(i int) []float64

// rankReading is every labelled query as one ranking reads it: the sample (its
// nearest methods, Near, as found), each candidate's features and relevance.
type rankReading struct {
	samples  []search.Labelled
	features [][][]float64
	relevant [][]bool
}

// The extra features of a multi-vector reading, after search.NumRankFeatures: the
// encoder's cosine of the query to the method's name, description and path, and the
// best of those and the whole text's.
var mvFeatures = []int{search.NumRankFeatures, search.NumRankFeatures + 1, search.NumRankFeatures + 2, search.NumRankFeatures + 3}

type rankEval struct {
	t      *testing.T
	fx     fixture
	model  *search.Model
	index  *search.RankIndex
	plain  *rankReading
	multi  func() *rankReading
	framed func() *rankReading
}

func newRankEval(t *testing.T, fx fixture, all []search.Labelled) *rankEval {
	r := &rankEval{t: t, fx: fx, model: fx.hybrid.Models()[0], index: fx.hybrid.RankIndex(fx.snap)}
	r.plain = r.read(all, nil)
	r.multi = once(func() *rankReading { return r.read(all, r.fieldCosines(all)) })
	r.framed = once(func() *rankReading { return r.read(r.searchAgain(all, true, 0, 0), nil) })
	return r
}

func once(f func() *rankReading) func() *rankReading {
	var rd *rankReading
	return func() *rankReading {
		if rd == nil {
			rd = f()
		}
		return rd
	}
}

// read makes the reading of samples, with extra features per sample and candidate
// when given.
func (r *rankEval) read(samples []search.Labelled, extra [][][]float64) *rankReading {
	rd := &rankReading{samples: samples, features: make([][][]float64, len(samples)), relevant: make([][]bool, len(samples))}
	for i, s := range samples {
		fs := r.index.Features(s.Query, s.Near)
		rd.features[i] = make([][]float64, len(fs))
		rd.relevant[i] = make([]bool, len(fs))
		for j, f := range fs {
			rd.features[i][j] = f[:]
			if extra != nil {
				rd.features[i][j] = append(slices.Clone(f[:]), extra[i][j]...)
			}
			rd.relevant[i][j] = slices.Contains(s.Labels, search.EndpointKey(r.fx.urlOf[s.Near[j].Slug]))
		}
	}
	return rd
}

// score fits fit on the samples at train and scores those at test: with no band (the
// first three of the ranking, always), and with the band fitted on the training
// samples as the ranking orders them.
func (r *rankEval) score(rd *rankReading, fit rankFitter, train, test []int) (none, band search.CalibrationScore) {
	order := func(idx []int, scores func(int) []float64) []search.Labelled {
		out := make([]search.Labelled, len(idx))
		for k, i := range idx {
			s := rd.samples[i]
			out[k] = r.fx.hybrid.Reordered(r.fx.snap, r.model, s, search.OrderBy(s.Near, scores(i)))
		}
		return out
	}
	te := order(test, fit(rd, train))
	// The training samples the band is fitted on are each ordered by a ranking
	// fitted on the other inner folds of the training fold, as the scored ones are
	// by one fitted on queries other than theirs.
	tr := make([]search.Labelled, len(train))
	inTrain := make([]search.Labelled, len(train))
	for k, i := range train {
		inTrain[k] = rd.samples[i]
	}
	for _, inner := range search.Folds(inTrain, innerFolds, 97) {
		in := make([]bool, len(train))
		idx := make([]int, len(inner))
		for k, j := range inner {
			in[j], idx[k] = true, train[j]
		}
		var rest []int
		for k, i := range train {
			if !in[k] {
				rest = append(rest, i)
			}
		}
		for k, s := range order(idx, fit(rd, rest)) {
			tr[inner[k]] = s
		}
	}
	none = search.Calibration{Margin: 1}.Score(te)
	band = search.FitScore(tr, te, search.CalibrationOptions{Features: search.BandFeatures, NoRerank: true})
	return none, band
}

func complement(n int, fold []int) []int {
	in := make([]bool, n)
	for _, i := range fold {
		in[i] = true
	}
	var out []int
	for i := range n {
		if !in[i] {
			out = append(out, i)
		}
	}
	return out
}

// rerankFit is the service's ranking: the similarity plus w times the coverage, w
// the one of search.RerankWeights that ranks a relevant method among the first
// three of most training samples (of equal counts, the least).
func rerankFit(rd *rankReading, train []int) func(i int) []float64 {
	return linearRerank(rd, train, func(f []float64) float64 { return f[search.RankSimilarity] })
}

// mvMaxFit is the service's ranking with the encoder's part of the similarity read
// as the best of its cosines to the method's whole text and each of its fields.
func mvMaxFit(rd *rankReading, train []int) func(i int) []float64 {
	return linearRerank(rd, train, func(f []float64) float64 {
		return embedding.SemanticShare*f[mvFeatures[3]] + (1-embedding.SemanticShare)*f[search.RankLexical]
	})
}

func linearRerank(rd *rankReading, train []int, sim func([]float64) float64) func(i int) []float64 {
	scores := func(i int, w float64) []float64 {
		out := make([]float64, len(rd.features[i]))
		for j, f := range rd.features[i] {
			out[j] = sim(f) + w*f[search.RankCover]
		}
		return out
	}
	best, bestHits := 0.0, -1
	for _, w := range search.RerankWeights {
		hits := 0
		for _, i := range train {
			if top3(rd.relevant[i], scores(i, w)) {
				hits++
			}
		}
		if hits > bestHits {
			best, bestHits = w, hits
		}
	}
	return func(i int) []float64 { return scores(i, best) }
}

// top3 tells whether a relevant candidate is among the first three by score (of
// equal scores, the nearer first).
func top3(relevant []bool, score []float64) bool {
	best := -1
	for j, rel := range relevant {
		if rel && (best < 0 || score[j] > score[best]) {
			best = j
		}
	}
	if best < 0 {
		return false
	}
	ahead := 0
	for k, s := range score {
		if s > score[best] || (s == score[best] && k < best) {
			ahead++
		}
	}
	return ahead < 3
}

// listFit fits a linear ranking over the features fs by a listwise loss: the negative
// log of the softmax probability the relevant candidates of a training list get among
// its forty, summed over the lists, with an L2 penalty lambda on the weights of the
// standardised features; by gradient descent on the mean over the lists.
func listFit(fs []int, lambda float64) rankFitter {
	return func(rd *rankReading, train []int) func(i int) []float64 {
		d := len(fs)
		mean, sd := make([]float64, d), make([]float64, d)
		n := 0.0
		for _, i := range train {
			for _, f := range rd.features[i] {
				for k, j := range fs {
					mean[k] += f[j]
				}
				n++
			}
		}
		for k := range mean {
			mean[k] /= n
		}
		for _, i := range train {
			for _, f := range rd.features[i] {
				for k, j := range fs {
					sd[k] += (f[j] - mean[k]) * (f[j] - mean[k])
				}
			}
		}
		for k := range sd {
			if sd[k] = math.Sqrt(sd[k] / n); sd[k] < 1e-9 {
				sd[k] = 1
			}
		}
		x := func(f []float64) []float64 {
			out := make([]float64, d)
			for k, j := range fs {
				out[k] = (f[j] - mean[k]) / sd[k]
			}
			return out
		}
		type list struct {
			x   [][]float64
			rel []bool
		}
		var lists []list
		for _, i := range train {
			if !slices.Contains(rd.relevant[i], true) {
				continue
			}
			l := list{rel: rd.relevant[i]}
			for _, f := range rd.features[i] {
				l.x = append(l.x, x(f))
			}
			lists = append(lists, l)
		}
		w := make([]float64, d)
		for range 400 {
			grad := make([]float64, d)
			for _, l := range lists {
				s := make([]float64, len(l.x))
				top := math.Inf(-1)
				for j, v := range l.x {
					s[j] = search.RankScore(w, v)
					top = max(top, s[j])
				}
				var all, rel float64
				for j := range s {
					s[j] = math.Exp(s[j] - top)
					all += s[j]
					if l.rel[j] {
						rel += s[j]
					}
				}
				for j, v := range l.x {
					p := s[j] / all
					q := 0.0
					if l.rel[j] {
						q = s[j] / rel
					}
					for k := range grad {
						grad[k] += (p - q) * v[k]
					}
				}
			}
			for k := range w {
				w[k] -= 0.5 * (grad[k]/float64(len(lists)) + lambda*w[k]/float64(len(lists)))
			}
		}
		return func(i int) []float64 {
			out := make([]float64, len(rd.features[i]))
			for j, f := range rd.features[i] {
				out[j] = search.RankScore(w, x(f))
			}
			return out
		}
	}
}

// gridSteps are the weights coordinate ascent tries for each feature.
var gridSteps = []float64{-1, -0.5, -0.3, -0.2, -0.1, -0.05, 0, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 1, 1.5}

// gridFit fits a linear ranking over the features fs (the similarity's weight held at
// 1) by coordinate ascent on recall@3 itself over the training samples: each feature's
// weight in turn set to the step of gridSteps that ranks a relevant method among the
// first three of most of them, from the service's weights, passes times.
func gridFit(fs []int, passes int) rankFitter {
	return func(rd *rankReading, train []int) func(i int) []float64 {
		w := make([]float64, len(rd.features[0][0]))
		w[search.RankSimilarity], w[search.RankCover] = 1, 0.5
		score := func(i int) []float64 {
			out := make([]float64, len(rd.features[i]))
			for j, f := range rd.features[i] {
				out[j] = search.RankScore(w, f)
			}
			return out
		}
		hits := func() int {
			n := 0
			for _, i := range train {
				if top3(rd.relevant[i], score(i)) {
					n++
				}
			}
			return n
		}
		best := hits()
		for range passes {
			for _, f := range fs {
				if f == search.RankSimilarity {
					continue
				}
				keep := w[f]
				for _, v := range gridSteps {
					w[f] = v
					if h := hits(); h > best {
						best, keep = h, v
					}
				}
				w[f] = keep
			}
		}
		return score
	}
}

// learnedFit fits a linear ranking over the features fs by search.FitRanker.
func learnedFit(fs []int, lambda float64, top int) rankFitter {
	return func(rd *rankReading, train []int) func(i int) []float64 {
		pick := func(f []float64) []float64 {
			out := make([]float64, len(fs))
			for k, j := range fs {
				out[k] = f[j]
			}
			return out
		}
		var lists []search.RankList
		for _, i := range train {
			l := search.RankList{Relevant: rd.relevant[i]}
			for _, f := range rd.features[i] {
				l.Features = append(l.Features, pick(f))
			}
			lists = append(lists, l)
		}
		w := search.FitRanker(lists, lambda, top)
		return func(i int) []float64 {
			out := make([]float64, len(rd.features[i]))
			for j, f := range rd.features[i] {
				out[j] = search.RankScore(w, pick(f))
			}
			return out
		}
	}
}

// diverse is fit's ranking with at most most methods of one merchant (hostname) among
// the first three: a merchant's near-twins (one provider's price, forecast and
// volatility of a coin) fill the three where the relevant method of another comes
// fourth.
func (r *rankEval) diverse(fit rankFitter, most int) rankFitter {
	host := map[string]string{}
	for _, m := range r.fx.snap.Methods() {
		host[m.Slug] = m.Hostname
	}
	return func(rd *rankReading, train []int) func(i int) []float64 {
		scores := fit(rd, train)
		return func(i int) []float64 {
			near := rd.samples[i].Near
			sc := scores(i)
			idx := make([]int, len(near))
			for j := range idx {
				idx[j] = j
			}
			slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(sc[b], sc[a]) })
			var first, rest []int
			seen := map[string]int{}
			for _, j := range idx {
				h := host[near[j].Slug]
				if len(first) < search.MaxResults && seen[h] < most {
					seen[h]++
					first = append(first, j)
				} else {
					rest = append(rest, j)
				}
			}
			out := make([]float64, len(near))
			for k, j := range append(first, rest...) {
				out[j] = float64(len(near) - k)
			}
			return out
		}
	}
}

// fieldCosines are, for each sample's candidates, the encoder's cosines of the query
// to the method's name, description and path, and the best of those and its whole
// text's (the candidate's semantic part).
func (r *rankEval) fieldCosines(all []search.Labelled) [][][]float64 {
	h, ok := embedding.Find[*embedding.Hybrid](r.fx.hybridModel)
	if !ok {
		r.t.Fatal("eval: the hybrid model has no sentence encoder")
	}
	ms := r.fx.snap.Methods()
	var texts []string
	for _, m := range ms {
		f, _ := embedding.MethodFields(embedding.MethodText(m.Name, m.Provider, m.Description, m.Category, m.Endpoint.URL))
		texts = append(texts, m.Name, m.Description, strings.NewReplacer("/", " ", "-", " ", "_", " ", ".", " ").Replace(f[4]))
	}
	start := time.Now()
	vs := h.SentenceVectors(texts)
	r.t.Logf("multi-vector: %d texts of %d methods embedded in %v", len(texts), len(ms), time.Since(start).Round(time.Millisecond))
	slug := map[string]int{}
	for p, m := range ms {
		slug[m.Slug] = p
	}
	out := make([][][]float64, len(all))
	for i, s := range all {
		q := h.SentenceVectors([]string{s.Query})[0]
		out[i] = make([][]float64, len(s.Near))
		for j, n := range s.Near {
			p := slug[n.Slug]
			e := make([]float64, 4)
			e[3] = n.Semantic
			for k := range 3 {
				e[k] = cosine(q, vs[3*p+k])
				e[3] = max(e[3], e[k])
			}
			out[i][j] = e
		}
	}
	return out
}

func cosine(a, b []float32) float64 {
	var d, na, nb float64
	for i := range a {
		d += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return d / math.Sqrt(na*nb)
}

// searchAgain reads every sample again from a new vector search: with strip, of the
// query without its frames (the sample's query, which the evidence and coverage
// read, unchanged); with k over 0, of its vector plus beta times the mean of its
// nearest k methods' (Rocchio's pseudo-relevance feedback).
func (r *rankEval) searchAgain(all []search.Labelled, strip bool, k int, beta float64) []search.Labelled {
	ctx := context.Background()
	out := make([]search.Labelled, len(all))
	changed := 0
	for i, s := range all {
		vec := s.Vector
		if strip {
			q := search.StripFrame(s.Query)
			if q == s.Query {
				out[i] = s
				continue
			}
			changed++
			vs, err := r.fx.hybridModel.Embed(ctx, []string{q})
			if err != nil {
				r.t.Fatal(err)
			}
			vec = vs[0]
		}
		if k > 0 {
			near, err := r.fx.store.Nearest(ctx, r.fx.hybridRecord, vec, k, nil)
			if err != nil {
				r.t.Fatal(err)
			}
			moved := slices.Clone(vec)
			for _, n := range near {
				for j, x := range n.Vector {
					moved[j] += float32(beta/float64(len(near))) * x
				}
			}
			norm := float32(0)
			for _, x := range moved {
				norm += x * x
			}
			norm = float32(math.Sqrt(float64(norm)))
			for j := range moved {
				moved[j] /= norm
			}
			vec = moved
			changed++
		}
		near, err := r.fx.store.Nearest(ctx, r.fx.hybridRecord, vec, search.Reranked, nil)
		if err != nil {
			r.t.Fatal(err)
		}
		search.SplitParts(r.fx.hybridModel, vec, near)
		s.Near = near
		out[i] = r.fx.hybrid.Relabel(r.fx.snap, r.model, s, near)
	}
	r.t.Logf("searched again: %d of %d queries changed", changed, len(all))
	return out
}

func (r *rankEval) prf(k int, beta float64) func() *rankReading {
	return once(func() *rankReading { return r.read(r.searchAgain(r.plain.samples, false, k, beta), nil) })
}

// failures lists the on-topic queries whose relevant methods the service's ranking
// (search.HybridCalibration's rerank weight) leaves out of its first three: the
// first relevant one's place among the forty (or none), and the first three.
func (r *rankEval) failures(all []search.Labelled) string {
	var b strings.Builder
	w := search.HybridCalibration.Rerank
	fmt.Fprintf(&b, "on-topic queries with no relevant method among the first three (rerank %.1f): kind, set, query, the first relevant one's place (0: not among the %d), the relevant slugs, the first three\n", w, search.Reranked)
	misses := 0
	for i, s := range all {
		if s.Off {
			continue
		}
		score := make([]float64, len(s.Near))
		for j, f := range r.plain.features[i] {
			score[j] = f[search.RankSimilarity] + w*f[search.RankCover]
		}
		order := search.OrderBy(s.Near, score)
		place := 0
		var relevant []string
		for j, n := range order {
			if slices.Contains(s.Labels, search.EndpointKey(r.fx.urlOf[n.Slug])) {
				relevant = append(relevant, n.Slug)
				if place == 0 {
					place = j + 1
				}
			}
		}
		if place >= 1 && place <= 3 {
			continue
		}
		misses++
		var top []string
		for _, n := range order[:min(3, len(order))] {
			top = append(top, n.Slug)
		}
		fmt.Fprintf(&b, "%-10s %-4s %-70.70q %2d %v %v\n", s.Kind, s.Set, s.Query, place, relevant, top)
	}
	fmt.Fprintf(&b, "%d misses\n", misses)
	return b.String()
}

// TestTop3CountsTiesAsTheNearerFirst: a relevant candidate is among the first three
// when fewer than three score above it, of equal scores the nearer first.
func TestTop3CountsTiesAsTheNearerFirst(t *testing.T) {
	for _, c := range []struct {
		relevant []bool
		score    []float64
		want     bool
	}{
		{[]bool{false, false, false, true}, []float64{4, 3, 2, 1}, false},
		{[]bool{false, false, false, true}, []float64{4, 3, 1, 2}, true},
		{[]bool{false, false, false, true}, []float64{4, 3, 2, 2}, false},
		{[]bool{true, false, false, true}, []float64{1, 3, 2, 4}, true},
		{[]bool{false, false}, []float64{1, 2}, false},
	} {
		if got := top3(c.relevant, c.score); got != c.want {
			t.Errorf("top3(%v, %v) = %v, want %v", c.relevant, c.score, got, c.want)
		}
	}
}

// A candidate source of a query's methods before the rerank: the store's nearest
// under the fused cosine, under the sentence encoder's part alone or under the
// lexical part alone (the query's vector with the other part zeroed: every method's
// vector has each part at its own length, so the store orders by that part's
// cosine); or the methods that hold most of the query's concepts
// (search.RankIndex.Covering).
const (
	sourceFused = iota
	sourceSemantic
	sourceLexical
	sourceCover
)

var sourceNames = [...]string{"fused", "encoder", "lexical", "coverage"}

// candidateSource is how many of a query's nearest methods under each source a
// candidate set takes, their union ordered by the fused cosine.
type candidateSource [len(sourceNames)]int

func (c candidateSource) String() string {
	var parts []string
	for s, k := range c {
		if k > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", sourceNames[s], k))
		}
	}
	return strings.Join(parts, " ∪ ")
}

// partVector is q with every coordinate outside the source's part zeroed; nil when
// that part is empty (a query with no word the lexical part knows).
func partVector(q []float32, source int) []float32 {
	split := embedding.HybridDimensions - embedding.BuiltinDimensions
	if source == sourceFused || source == sourceCover || len(q) != embedding.HybridDimensions {
		return q
	}
	v := make([]float32, len(q))
	lo, hi := 0, split
	if source == sourceLexical {
		lo, hi = split, len(q)
	}
	copy(v[lo:hi], q[lo:hi])
	for _, x := range v[lo:hi] {
		if x != 0 {
			return v
		}
	}
	return nil
}

// candidates are s's candidates under c: the union of each source's nearest, each
// with its fused cosine to the query and its parts, most similar first.
func (r *rankEval) candidates(s search.Labelled, c candidateSource) []search.Neighbour {
	ctx := context.Background()
	seen := map[string]bool{}
	var out []search.Neighbour
	for source, k := range c {
		v, only := partVector(s.Vector, source), []string(nil)
		if source == sourceCover {
			v, only = s.Vector, r.index.Covering(s.Query, k)
			if len(only) == 0 {
				continue
			}
		}
		if k == 0 || v == nil {
			continue
		}
		near, err := r.fx.store.Nearest(ctx, r.fx.hybridRecord, v, k, only)
		if err != nil {
			r.t.Fatal(err)
		}
		for _, n := range near {
			if seen[n.Slug] {
				continue
			}
			seen[n.Slug] = true
			n.Similarity = cosine(s.Vector, n.Vector)
			out = append(out, n)
		}
	}
	search.SplitParts(r.fx.hybridModel, s.Vector, out)
	slices.SortStableFunc(out, func(a, b search.Neighbour) int { return cmp.Compare(b.Similarity, a.Similarity) })
	return out
}

// union is the reading of every sample over the candidates of c, relabelled over them
// (the service's rerank and evidence read the union as they read the forty).
func (r *rankEval) union(c candidateSource) func() *rankReading {
	return once(func() *rankReading {
		out := make([]search.Labelled, len(r.plain.samples))
		grown := 0
		for i, s := range r.plain.samples {
			near := r.candidates(s, c)
			grown += len(near) - len(s.Near)
			s.Near = near
			out[i] = r.fx.hybrid.Relabel(r.fx.snap, r.model, s, near)
		}
		r.t.Logf("candidates %s: %.1f a query more than the fused %d", c, float64(grown)/float64(len(out)), search.Reranked)
		return r.read(out, nil)
	})
}

// candidateRecall is the table of how many on-topic queries have a relevant method
// among the candidates of each source, and how many of those with none among the
// service's forty (the fused nearest) come back.
func (r *rankEval) candidateRecall(sources []candidateSource) string {
	var b strings.Builder
	onTopic, lost := 0, map[int]bool{}
	has := func(s search.Labelled, near []search.Neighbour) bool {
		for _, n := range near {
			if slices.Contains(s.Labels, search.EndpointKey(r.fx.urlOf[n.Slug])) {
				return true
			}
		}
		return false
	}
	for i, s := range r.plain.samples {
		if s.Off {
			continue
		}
		onTopic++
		if !has(s, s.Near) {
			lost[i] = true
		}
	}
	fmt.Fprintf(&b, "\nCandidates of the rerank by source: on-topic queries (of %d) with a relevant method among them, and of the %d with none among the fused nearest %d, how many have one\n\n", onTopic, len(lost), search.Reranked)
	w := search.HybridCalibration.Rerank
	fmt.Fprintf(&b, "| candidates | mean count | on-topic with a relevant one | of the lost, with one | of those, one among the first %d / 3 of the rerank (%.1f) |\n|---|---:|---:|---:|---:|\n", search.Neighbours, w)
	for _, c := range sources {
		found, back, ten, three, size := 0, 0, 0, 0, 0
		for i, s := range r.plain.samples {
			if s.Off {
				continue
			}
			near := r.candidates(s, c)
			size += len(near)
			if !has(s, near) {
				continue
			}
			found++
			if !lost[i] {
				continue
			}
			back++
			ranked := r.fx.hybrid.Rerank(r.fx.snap, s.Query, near, w)
			if has(s, ranked) {
				ten++
			}
			if has(s, ranked[:min(3, len(ranked))]) {
				three++
			}
		}
		fmt.Fprintf(&b, "| %s | %.1f | %d (%.3f) | %d | %d / %d |\n", c, float64(size)/float64(onTopic), found, float64(found)/float64(onTopic), back, ten, three)
	}
	return b.String()
}

// TestPartVectorKeepsOnePart: the encoder's or the lexical part of a hybrid vector is
// kept and the other zeroed; a part that is all zero gives no vector, and the fused
// source, the coverage's or a vector of another model is left whole.
func TestPartVectorKeepsOnePart(t *testing.T) {
	split := embedding.HybridDimensions - embedding.BuiltinDimensions
	q := make([]float32, embedding.HybridDimensions)
	q[0], q[split] = 0.6, 0.8
	if v := partVector(q, sourceSemantic); v[0] != 0.6 || v[split] != 0 {
		t.Errorf("encoder's part: %v, %v; want 0.6, 0", v[0], v[split])
	}
	if v := partVector(q, sourceLexical); v[0] != 0 || v[split] != 0.8 {
		t.Errorf("lexical part: %v, %v; want 0, 0.8", v[0], v[split])
	}
	for _, s := range []int{sourceFused, sourceCover} {
		if v := partVector(q, s); &v[0] != &q[0] {
			t.Errorf("source %s: a copy, want the query's vector", sourceNames[s])
		}
	}
	q[split] = 0
	if v := partVector(q, sourceLexical); v != nil {
		t.Error("an empty lexical part gives a vector")
	}
	if v := partVector([]float32{1, 0}, sourceLexical); len(v) != 2 || v[0] != 1 {
		t.Errorf("a vector of another model: %v, want it whole", v)
	}
}
