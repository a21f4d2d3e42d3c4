package search

import (
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
)

// hybridLike makes n unit vectors shaped as the hybrid model's: a dense part of 512
// dimensions and a sparse one of 1,024 with a few words set, some vectors with no
// word (as a method the lexical part knows nothing of).
func hybridLike(r *rand.Rand, n int) []SlugVector {
	out := make([]SlugVector, n)
	for i := range out {
		v := make([]float32, 1536)
		for j := range 512 {
			v[j] = float32(r.NormFloat64())
		}
		if i%7 != 0 {
			for range 1 + r.IntN(30) {
				v[512+r.IntN(1024)] = float32(r.Float64())
			}
		}
		var s float64
		for _, x := range v {
			s += float64(x) * float64(x)
		}
		for j := range v {
			v[j] /= float32(math.Sqrt(s))
		}
		out[i] = SlugVector{Slug: "m" + string(rune('a'+i%26)) + string(rune('0'+i/26%10)) + string(rune('0'+i/260)), Vector: v}
	}
	return out
}

func exactCosine(q, d []float32) float64 {
	var dot, qn, dn float64
	for j := range q {
		dot += float64(q[j]) * float64(d[j])
		qn += float64(q[j]) * float64(q[j])
		dn += float64(d[j]) * float64(d[j])
	}
	return dot / math.Sqrt(qn*dn)
}

// TestMemIndexRanksByExactCosine: the scan in memory returns the k vectors of the
// highest cosine, in order, with their similarities to within float32's rounding,
// and each vector exactly as it was stored (the similarity's parts are read from
// it), among only's slugs when it is set.
func TestMemIndexRanksByExactCosine(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	vs := hybridLike(r, 2000)
	x := newMemIndex(1536, vs)
	if x.dense != 512 {
		t.Fatalf("dense prefix %d, want the 512 every vector fills", x.dense)
	}
	if x.Len() != len(vs) {
		t.Fatalf("holds %d vectors of %d", x.Len(), len(vs))
	}
	if whole := 4 * 1536 * len(vs); x.Bytes() > whole/2 {
		t.Errorf("takes %d bytes, not under half of the %d a dense float32 copy takes", x.Bytes(), whole)
	}
	for qi := range 20 {
		q := hybridLike(r, 1)[0].Vector
		var only []string
		if qi%4 == 3 {
			for i := 0; i < len(vs); i += 5 {
				only = append(only, vs[i].Slug)
			}
			only = append(only, "not-held")
		}
		type ref struct {
			sim float64
			i   int
		}
		var all []ref
		for i, v := range vs {
			if only == nil || slices.Contains(only, v.Slug) {
				all = append(all, ref{exactCosine(q, v.Vector), i})
			}
		}
		slices.SortFunc(all, func(a, b ref) int {
			if a.sim > b.sim {
				return -1
			}
			if a.sim < b.sim {
				return 1
			}
			return a.i - b.i
		})
		got := x.Nearest(q, 40, only)
		if len(got) != 40 {
			t.Fatalf("query %d: %d neighbours, want 40", qi, len(got))
		}
		for n, g := range got {
			want := all[n]
			if math.Abs(g.Similarity-want.sim) > 1e-6 {
				t.Errorf("query %d, neighbour %d: similarity %v, exact %v", qi, n, g.Similarity, want.sim)
			}
			if g.Slug != vs[want.i].Slug && math.Abs(want.sim-exactCosine(q, x.vector(int(x.bySlug[g.Slug])))) > 1e-6 {
				t.Errorf("query %d, neighbour %d: %s, want %s", qi, n, g.Slug, vs[want.i].Slug)
			}
			if !slices.Equal(g.Vector, vs[x.bySlug[g.Slug]].Vector) {
				t.Errorf("query %d: the vector of %s is not as stored", qi, g.Slug)
			}
		}
	}
}

// TestMemIndexKeepsProviderVectorsDense: a vector every dimension of which is
// filled (a provider's) is kept whole, and a lexical one (the builtin's) sparse.
func TestMemIndexKeepsProviderVectorsDense(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	dense := make([]SlugVector, 50)
	sparse := make([]SlugVector, 50)
	for i := range dense {
		d, s := make([]float32, 64), make([]float32, 64)
		for j := range d {
			d[j] = float32(r.NormFloat64())
		}
		s[r.IntN(64)], s[r.IntN(64)] = 1, 0.5
		dense[i], sparse[i] = SlugVector{Slug: string(rune('a' + i)), Vector: d}, SlugVector{Slug: string(rune('a' + i)), Vector: s}
	}
	if x := newMemIndex(64, dense); x.dense != 64 || len(x.sparseIdx) != 0 {
		t.Errorf("dense vectors: prefix %d and %d sparse entries, want 64 and 0", x.dense, len(x.sparseIdx))
	}
	if x := newMemIndex(64, sparse); x.dense != 0 {
		t.Errorf("sparse vectors: dense prefix %d, want 0", x.dense)
	}
}

// BenchmarkMemIndexScan times the scan in memory alone at the catalog sizes that
// matter (the real listings, the Bazaar's 15,000, 100,000), over vectors shaped as the
// hybrid model's, and reports what the index takes: the size at which the store's
// index walk wins (make bench: BenchmarkSearch100k's vector-search) is where
// DefaultMemoryVectors stops.
func BenchmarkMemIndexScan(b *testing.B) {
	for _, n := range []int{4_762, 15_000, 100_000} {
		r := rand.New(rand.NewPCG(5, 6))
		vs := hybridLike(r, n)
		x := newMemIndex(1536, vs)
		vs = nil
		qs := hybridLike(r, 16)
		b.Run("methods="+strconv.Itoa(n), func(b *testing.B) {
			i := 0
			for b.Loop() {
				x.Nearest(qs[i%len(qs)].Vector, Reranked, nil)
				i++
			}
			b.ReportMetric(float64(x.Bytes())/1e6, "MB")
		})
		// A query and its four phrasings: five scans, one after the other, or one
		// pass for all five.
		b.Run("methods="+strconv.Itoa(n)+"/five-each", func(b *testing.B) {
			i := 0
			for b.Loop() {
				for j := range 5 {
					x.Nearest(qs[(i+j)%len(qs)].Vector, Reranked, nil)
				}
				i++
			}
		})
		b.Run("methods="+strconv.Itoa(n)+"/five-one-pass", func(b *testing.B) {
			i := 0
			five := make([][]float32, 5)
			for b.Loop() {
				for j := range five {
					five[j] = qs[(i+j)%len(qs)].Vector
				}
				x.NearestEach(five, Reranked, nil)
				i++
			}
		})
	}
}

// TestMemIndexOnePassIsTheScanOfEach: the phrasings of a search scanned together, in
// one pass over the vectors (their dense parts read once, their words added from the
// vectors holding them), get each the neighbours, similarities and order of a scan
// of each alone, to the bit: the answers of a search said several ways do not
// depend on how its scans are made.
func TestMemIndexOnePassIsTheScanOfEach(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	vs := hybridLike(r, 3000)
	for i := range vs {
		if i%11 == 0 { // a word of negative weight, as a provider's vector has
			vs[i].Vector[512+r.IntN(1024)] = -float32(r.Float64()) / 10
		}
	}
	x := newMemIndex(1536, vs)
	qs := make([][]float32, 0, 6)
	for _, v := range hybridLike(r, 5) {
		qs = append(qs, v.Vector)
	}
	qs = append(qs, make([]float32, 1536)) // nothing: every similarity 0
	for qi, q := range qs {
		// The scan of each alone, vector by vector.
		var qn float64
		for _, f := range q {
			qn += float64(f) * float64(f)
		}
		qn = math.Sqrt(qn)
		want := newTopK(40)
		for i := range x.Len() {
			want.consider(x.similarity(q, qn, i), i)
		}
		got := x.NearestEach(qs, 40, nil)[qi]
		if len(got) != len(want.top) {
			t.Fatalf("query %d: %d neighbours, want %d", qi, len(got), len(want.top))
		}
		for n, w := range want.top {
			if got[n].Slug != x.slugs[w.i] || got[n].Similarity != w.sim {
				t.Errorf("query %d, neighbour %d: %s at %v, the scan alone %s at %v", qi, n, got[n].Slug, got[n].Similarity, x.slugs[w.i], w.sim)
			}
			if !slices.Equal(got[n].Vector, vs[w.i].Vector) {
				t.Errorf("query %d: the vector of %s is not as stored", qi, got[n].Slug)
			}
		}
	}
	if got := x.NearestEach([][]float32{qs[0], make([]float32, 3)}, 40, nil); len(got[0]) != 40 || got[1] != nil {
		t.Errorf("a query of the wrong size beside another: %d and %d neighbours, want 40 and none", len(got[0]), len(got[1]))
	}
}
