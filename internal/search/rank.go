package search

import (
	"cmp"
	"math"
	"slices"

	"github.com/waystation/waystation/internal/directory"
	"github.com/waystation/waystation/internal/embedding"
)

// The features of a learned ranking of one query's nearest methods, each read of one
// candidate: what the engine already knows of it, so that a linear model fitted on
// labelled queries can weigh them where the rerank weighs the similarity and the
// concept coverage alone.
const (
	RankSimilarity = iota // the fused cosine
	RankSemantic          // its sentence encoder part
	RankLexical           // its lexical part
	RankCover             // the IDF-weighted share of the query's concepts the method holds (the rerank's term)
	RankCoverName         // the same, in its name alone
	RankCoverPath         // in its endpoint's host and path
	RankCoverText         // in its description
	RankCoverOther        // in its provider and category
	RankFirstHeld         // 1 when it holds the query's first concept
	RankNameIn            // the share of its name's concepts the query holds
	RankLength            // log(1 + its concepts)
	RankPosition          // log(1 + its place in the order by similarity)
	RankBehind            // how far its similarity falls under the nearest method's
	NumRankFeatures
)

// RankFeatureNames name the features of a learned ranking.
var RankFeatureNames = [NumRankFeatures]string{"similarity", "semantic", "lexical", "cover", "cover_name", "cover_path",
	"cover_text", "cover_other", "first_held", "name_in", "length", "position", "behind"}

// rankFields are the parts of a method's text a learned ranking reads apart.
const (
	rankFieldName = iota
	rankFieldPath
	rankFieldText
	rankFieldOther
	rankFields
)

// RankIndex reads the features of a learned ranking over one snapshot: the engine's
// word index and each method's concepts by part of its text.
type RankIndex struct {
	x      *textIndex
	fields [][rankFields][]uint32 // by list position, sorted concept ids
}

// RankIndex is snap's index of the features of a learned ranking.
func (e *Engine) RankIndex(snap *directory.Snapshot) *RankIndex {
	x := e.textIndex(snap)
	r := &RankIndex{x: x, fields: make([][rankFields][]uint32, len(snap.Methods()))}
	for p, m := range snap.Methods() {
		f, ok := embedding.MethodFields(embedding.MethodText(m.Name, m.Provider, m.Description, m.Category, m.Endpoint.URL))
		if !ok {
			continue
		}
		// MethodFields: name, provider, description, category, path.
		parts := [rankFields]string{f[0], f[4], f[2], f[1] + "\n" + f[3]}
		for k, text := range parts {
			var ids []uint32
			for _, c := range embedding.Concepts(text) {
				if id, ok := x.ids[c]; ok {
					ids = append(ids, id)
				}
			}
			slices.Sort(ids)
			r.fields[p][k] = slices.Compact(ids)
		}
	}
	return r
}

// Features are the learned ranking's features of each of near, a query's nearest
// methods most similar first.
func (r *RankIndex) Features(query string, near []Neighbour) [][NumRankFeatures]float64 {
	out := make([][NumRankFeatures]float64, len(near))
	if len(near) == 0 {
		return out
	}
	x := r.x
	q := x.queryConcepts(query)
	words := map[uint32]bool{}
	for i, id := range q.ids {
		if q.known[i] {
			words[id] = true
		}
	}
	for i, n := range near {
		f := &out[i]
		f[RankSimilarity], f[RankSemantic], f[RankLexical] = n.Similarity, n.Similarity, 0
		if n.Parts {
			f[RankSemantic], f[RankLexical] = n.Semantic, n.Lexical
		}
		f[RankPosition] = math.Log1p(float64(i))
		f[RankBehind] = near[0].Similarity - n.Similarity
		p := x.position(n.Slug)
		if p < 0 {
			continue
		}
		f[RankLength] = math.Log1p(float64(len(x.concepts[p])))
		if q.total > 0 {
			f[RankCover] = x.cover(q, p)
			for k := range rankFields {
				held := 0.0
				for j, id := range q.ids {
					if _, ok := slices.BinarySearch(r.fields[p][k], id); ok && q.known[j] {
						held += q.weights[j]
					}
				}
				f[RankCoverName+k] = held / q.total
			}
			if x.holds(p, q.ids[0], q.known[0]) {
				f[RankFirstHeld] = 1
			}
		}
		if name := r.fields[p][rankFieldName]; len(name) > 0 {
			in := 0
			for _, id := range name {
				if words[id] {
					in++
				}
			}
			f[RankNameIn] = float64(in) / float64(len(name))
		}
	}
	return out
}

// RankList is one labelled query's candidates as a learned ranking is fitted on them:
// each one's features and whether the labels call it relevant.
type RankList struct {
	Features [][]float64
	Relevant []bool
}

// FitRanker fits the weights of a linear ranking on lists by a pairwise logistic loss
// (RankNet's): for each relevant candidate and each other candidate of the same list
// not relevant, the probability that the first scores higher, each list weighing one
// however many pairs it has; the features standardised, with an L2 penalty lambda on
// their weights. A list with no relevant candidate, or none other, teaches nothing.
// With top over 0, only the pairs whose other candidate is among the first top of
// the list's order (or above the relevant one) count: the mistakes recall@3 sees.
func FitRanker(lists []RankList, lambda float64, top int) []float64 {
	d := 0
	for _, l := range lists {
		if len(l.Features) > 0 {
			d = len(l.Features[0])
			break
		}
	}
	mean, sd := make([]float64, d), make([]float64, d)
	n := 0.0
	for _, l := range lists {
		for _, f := range l.Features {
			for j, v := range f {
				mean[j] += v
			}
			n++
		}
	}
	for j := range mean {
		mean[j] /= max(1, n)
	}
	for _, l := range lists {
		for _, f := range l.Features {
			for j, v := range f {
				sd[j] += (v - mean[j]) * (v - mean[j])
			}
		}
	}
	for j := range sd {
		sd[j] = math.Sqrt(sd[j] / max(1, n))
		if sd[j] < 1e-9 {
			sd[j] = 1
		}
	}
	// Each pair is a relevant candidate's features less another's, labelled 1 (the
	// relevant one scores higher), each list's pairs weighing one in all.
	var x [][]float64
	var weight []float64
	for _, l := range lists {
		n := len(x)
		for i, fi := range l.Features {
			if !l.Relevant[i] {
				continue
			}
			for j, fj := range l.Features {
				if l.Relevant[j] || (top > 0 && j >= top && j > i) {
					continue
				}
				diff := make([]float64, d)
				for k := range diff {
					diff[k] = (fi[k] - fj[k]) / sd[k]
				}
				x = append(x, diff)
			}
		}
		for range len(x) - n {
			weight = append(weight, 1/float64(len(x)-n))
		}
	}
	y := make([]float64, len(x))
	for i := range y {
		y[i] = 1
	}
	w := newton(d, x, y, weight, lambda, false)
	for j := range w {
		w[j] /= sd[j]
	}
	return w
}

// RankScore is a linear ranking's score of a candidate with features f.
func RankScore(w, f []float64) float64 {
	s := 0.0
	for j, v := range f {
		s += w[j] * v
	}
	return s
}

// OrderBy returns near ordered by score (best first, of equal scores the nearer),
// score[i] being near[i]'s; near is left as it is.
func OrderBy(near []Neighbour, score []float64) []Neighbour {
	idx := make([]int, len(near))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(score[b], score[a]) })
	out := make([]Neighbour, len(near))
	for i, j := range idx {
		out[i] = near[j]
	}
	return out
}

// Reordered reads l again over ranked, its nearest methods in an order of another
// ranking than the rerank's, as its one ranking: the band fitted on such samples
// (with NoRerank) is the band of that ranking.
func (e *Engine) Reordered(snap *directory.Snapshot, m *Model, l Labelled, ranked []Neighbour) Labelled {
	l.Rankings = []Ranking{e.textIndex(snap).ranking(snap, m, l, ranked[:min(len(ranked), Neighbours)])}
	return l.ranked(0)
}

// Covering lists the slugs of at most k methods holding the largest IDF-weighted share
// of query's concepts (the rerank's coverage), of equal shares the one of fewer
// concepts first, none that holds nothing: candidates found by the words a query
// shares with a method's text rather than by either part of a vector.
func (r *RankIndex) Covering(query string, k int) []string {
	x := r.x
	q := x.queryConcepts(query)
	if q.total == 0 || k <= 0 {
		return nil
	}
	type held struct {
		p     int
		cover float64
	}
	var hs []held
	for p := range x.concepts {
		if c := x.cover(q, p); c > 0 {
			hs = append(hs, held{p, c})
		}
	}
	slices.SortStableFunc(hs, func(a, b held) int {
		if c := cmp.Compare(b.cover, a.cover); c != 0 {
			return c
		}
		return cmp.Compare(len(x.concepts[a.p]), len(x.concepts[b.p]))
	})
	out := make([]string, 0, min(k, len(hs)))
	for _, h := range hs[:min(k, len(hs))] {
		out = append(out, x.snap.Methods()[h.p].Slug)
	}
	return out
}
