package search

import "slices"

// QueryNeighbours reads the evidence of a query's nearest labelled queries (the knn_*
// features): where in the space of queries the catalog's near misses lie, learned
// from queries already labelled rather than from the catalog's texts. A query near
// off-topic ones is likelier one, and a query near an on-topic one that wanted a
// method the ranking offers is likelier answered by it.
type QueryNeighbours struct {
	// K is how many of the nearest labelled queries the off-topic share reads.
	K int
	// Similarity is two labelled queries' similarity (the encoder's cosine, say).
	Similarity func(a, b Labelled) float64
}

// Apply returns samples with their knn_* features (in every ranking) read from ref,
// the labelled queries learned from; a sample of ref itself (the same set and id) is
// not its own neighbour. samples are left as they are.
func (n QueryNeighbours) Apply(samples, ref []Labelled) []Labelled {
	out := make([]Labelled, len(samples))
	type near struct {
		sim float64
		j   int
	}
	for i, s := range samples {
		var all []near
		offBest, onBest := 0.0, 0.0
		sims := make([]float64, len(ref))
		self := make([]bool, len(ref))
		for j, r := range ref {
			if r.Set == s.Set && r.ID == s.ID {
				self[j] = true
				continue
			}
			sim := n.Similarity(s, r)
			sims[j] = sim
			all = append(all, near{sim, j})
			if r.Off {
				offBest = max(offBest, sim)
			} else {
				onBest = max(onBest, sim)
			}
		}
		slices.SortFunc(all, func(a, b near) int {
			switch {
			case a.sim > b.sim:
				return -1
			case a.sim < b.sim:
				return 1
			}
			return a.j - b.j
		})
		all = all[:min(len(all), n.K)]
		off, sum := 0.0, 0.0
		for _, a := range all {
			w := max(a.sim, 0)
			sum += w
			if ref[a.j].Off {
				off += w
			}
		}
		share := 0.0
		if sum > 0 {
			share = off / sum
		}
		on3 := func(keys []string) float64 {
			best := 0.0
			for j, r := range ref {
				if r.Off || self[j] || sims[j] <= best {
					continue
				}
				if slices.ContainsFunc(r.Labels, func(k string) bool { return slices.Contains(keys, k) }) {
					best = sims[j]
				}
			}
			return best
		}
		set := func(e *Evidence, keys []string) {
			e[FeatKNNOff], e[FeatKNNOffBest], e[FeatKNNOnBest] = share, offBest, onBest
			e[FeatKNNOn3] = on3(keys)
		}
		s.Rankings = slices.Clone(s.Rankings)
		for k := range s.Rankings {
			set(&s.Rankings[k].Evidence, s.Rankings[k].Keys)
		}
		set(&s.Evidence, s.Keys)
		out[i] = s
	}
	return out
}
