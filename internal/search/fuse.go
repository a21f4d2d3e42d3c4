package search

import (
	"cmp"
	"slices"
)

// MaxRewrites is the most phrasings of a query a caller may send beside it, and
// MaxRewriteBytes the longest each may be, in UTF-8 bytes after trimming.
const (
	MaxRewrites     = 4
	MaxRewriteBytes = 256
)

// Reading is one phrasing of a query as the band reads it: its nearest methods, in
// the ranking's order, and the band's probability that the catalog answers it.
type Reading struct {
	Near []Neighbour
	P    float64
}

// Fusion answers a query said several ways (the caller's own query and the
// phrasings it sends beside it). Each phrasing is read alone, as a query without
// phrasings is; their rankings are fused by reciprocal rank, each weighted by its
// probability; and agreement is the evidence. The fused ranking's first method is
// vouched for by each phrasing that holds it among its own first three, with that
// phrasing's probability: the query is answered only when at least Top phrasings
// (all of them, when fewer were read) vouch for it and their probabilities, summed
// over all the phrasings read, come to Least. A language model that was not shown
// the catalog rarely words a request the catalog cannot answer so that its
// phrasings all come near one method; and a phrasing sure of another method adds
// nothing to the first's share.
type Fusion struct {
	Least float64 `json:"least"`
	Top   int     `json:"top"`
	// K is the reciprocal rank's constant: a method's fused score is the sum, over the
	// phrasings, of the phrasing's probability over K plus its rank there.
	K float64 `json:"k"`
}

// HybridFusion is the builtin hybrid model's fusion, chosen by cross-validation on
// the development set's queries and the phrasings an agent wrote for each (make
// eval: the threshold chosen on the band's predictions for queries it was not fitted
// on, the query alone answering where the fusion falls short, as search does, under
// 0.05 false matches or the query alone's rate, whichever is more: the highest
// threshold whose recall is within one on-topic query of the best there).
var HybridFusion = Fusion{Least: 0.325, Top: 2, K: 1}

// Fused is a fusion's answer: the methods kept, best first, each with its fused
// score; the share of the phrasings' probability that vouches for the first method;
// and how many phrasings hold it among their first three.
type Fused struct {
	Kept   []Neighbour
	Scores []float64
	Share  float64
	Agreed int
}

// Fuse answers the readings of one query's phrasings: the methods their rankings
// hold (each read as far as Neighbours), by fused score, at most max; none when the
// evidence falls short. A method's similarity is the best any phrasing gives it.
// The methods group names alike (near-duplicates: see Collapse) are one answer: the
// phrasings may each have ranked another of them, so they are fused as one, under
// the one read first, and a phrasing holding any of them agrees. A nil group names
// each method by its slug.
func (f Fusion) Fuse(rs []Reading, max int, group func(slug string) string) Fused {
	var out Fused
	if len(rs) == 0 {
		return out
	}
	if group == nil {
		group = func(slug string) string { return slug }
	}
	type fused struct {
		n     Neighbour
		score float64
	}
	var all []fused
	at := map[string]int{}
	for _, r := range rs {
		seen := map[string]bool{}
		for rank, n := range r.Near[:min(len(r.Near), Neighbours)] {
			key := group(n.Slug)
			if seen[key] {
				continue // a ranking holds one of a group (Collapse); it counts once
			}
			seen[key] = true
			i, ok := at[key]
			if !ok {
				i = len(all)
				at[key] = i
				all = append(all, fused{n: n})
			}
			all[i].score += r.P / (f.K + float64(rank+1))
			if n.Slug == all[i].n.Slug && n.Similarity > all[i].n.Similarity {
				all[i].n = n
			}
		}
	}
	if len(all) == 0 {
		return out
	}
	slices.SortStableFunc(all, func(a, b fused) int { return cmp.Compare(b.score, a.score) })
	first := group(all[0].n.Slug)
	for _, r := range rs {
		if slices.ContainsFunc(r.Near[:min(len(r.Near), MaxResults)], func(n Neighbour) bool { return group(n.Slug) == first }) {
			out.Agreed++
			out.Share += r.P / float64(len(rs))
		}
	}
	if out.Share < f.Least || out.Agreed < min(f.Top, len(rs)) {
		return out
	}
	for _, x := range all[:min(len(all), max)] {
		out.Kept = append(out.Kept, x.n)
		out.Scores = append(out.Scores, x.score)
	}
	return out
}
