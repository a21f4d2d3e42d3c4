package search

import (
	"context"
	"math"
	"slices"
	"sync"
	"time"
	"weak"

	"github.com/waystation/waystation/internal/directory"
)

// SlugVector is an enabled method's vector under a model.
type SlugVector struct {
	Slug   string
	Vector []float32
}

// VectorStore lists the vectors of the enabled methods, for an engine that answers
// its vector searches from memory (Config.MemoryVectors).
type VectorStore interface {
	// MethodVectors returns the vector of every enabled method under m.
	MethodVectors(ctx context.Context, m ModelRecord) ([]SlugVector, error)
	// VectorsVersion changes whenever a vector under m is stored: a vector held in
	// memory is stale once it has.
	VectorsVersion(ctx context.Context, m ModelRecord) (string, error)
}

// DefaultMemoryVectors is the largest catalog whose vectors the engine holds in
// memory and scans exactly, when the service runs. On 2 cores, with the real
// listings loaded (4,762 methods), a scan in memory answers a novel query faster
// than the store's index walk and the forty vectors it sends back (make bench:
// BenchmarkSearchListings, the -memory runs); a larger catalog is searched by the
// store's index, which the scan's linear cost and the memory it takes would lose to.
const DefaultMemoryVectors = 20_000

// memIndex is one model's vectors of a snapshot's methods, held to be scanned
// exactly. The vectors are kept as they are stored (float32, so that the
// similarities' parts read from them are those the store's vectors give) but only
// where they hold something: a prefix of dimensions almost every vector fills (the
// encoder's part of the hybrid, or a provider's whole vector) is kept dense, the rest
// (the hybrid's hashed words, a handful in a thousand) as its non-zero entries.
type memIndex struct {
	dims, dense int
	slugs       []string
	bySlug      map[string]int32
	denseVals   []float32 // len(slugs)*dense
	norms       []float64
	// The sparse rest of vector i is sparseIdx/sparseVal[sparseAt[i]:sparseAt[i+1]].
	sparseAt  []int32
	sparseIdx []uint16
	sparseVal []float32
	// The same entries by dimension (postings): the vectors holding dimension
	// dense+d are postVec[postAt[d]:postAt[d+1]] (in the order they are held), with
	// their values in postVal. A scan adds a query's few words from them, rather than
	// reading every vector's words for the few the query holds.
	postAt  []int32
	postVec []int32
	postVal []float32
}

// newMemIndex indexes vs, every one of dims dimensions (at most 65,536).
func newMemIndex(dims int, vs []SlugVector) *memIndex {
	// The dense prefix: the dimensions, from the first, that more than half of the
	// vectors fill.
	filled := make([]int, dims)
	for _, v := range vs {
		for j, x := range v.Vector[:min(len(v.Vector), dims)] {
			if x != 0 {
				filled[j]++
			}
		}
	}
	dense := 0
	for dense < dims && filled[dense]*2 > len(vs) {
		dense++
	}
	x := &memIndex{dims: dims, dense: dense, slugs: make([]string, 0, len(vs)), bySlug: make(map[string]int32, len(vs)),
		denseVals: make([]float32, 0, len(vs)*dense), norms: make([]float64, 0, len(vs)), sparseAt: make([]int32, 1, len(vs)+1)}
	for _, v := range vs {
		if len(v.Vector) != dims {
			continue
		}
		x.bySlug[v.Slug] = int32(len(x.slugs))
		x.slugs = append(x.slugs, v.Slug)
		x.denseVals = append(x.denseVals, v.Vector[:dense]...)
		var n float64
		for j, f := range v.Vector {
			n += float64(f) * float64(f)
			if j >= dense && f != 0 {
				x.sparseIdx = append(x.sparseIdx, uint16(j))
				x.sparseVal = append(x.sparseVal, f)
			}
		}
		x.norms = append(x.norms, math.Sqrt(n))
		x.sparseAt = append(x.sparseAt, int32(len(x.sparseIdx)))
	}
	x.postAt = make([]int32, dims-dense+1)
	for _, j := range x.sparseIdx {
		x.postAt[int(j)-dense+1]++
	}
	for d := 1; d < len(x.postAt); d++ {
		x.postAt[d] += x.postAt[d-1]
	}
	next := slices.Clone(x.postAt[:len(x.postAt)-1])
	x.postVec, x.postVal = make([]int32, len(x.sparseIdx)), make([]float32, len(x.sparseIdx))
	for i := range x.slugs {
		for s := x.sparseAt[i]; s < x.sparseAt[i+1]; s++ {
			d := int(x.sparseIdx[s]) - dense
			x.postVec[next[d]], x.postVal[next[d]] = int32(i), x.sparseVal[s]
			next[d]++
		}
	}
	return x
}

// Len is how many vectors x holds.
func (x *memIndex) Len() int { return len(x.slugs) }

// Bytes is about how much memory x's vectors take.
func (x *memIndex) Bytes() int {
	return 4*len(x.denseVals) + 8*len(x.norms) + 4*len(x.sparseAt) + 2*len(x.sparseIdx) + 4*len(x.sparseVal) +
		4*len(x.postAt) + 4*len(x.postVec) + 4*len(x.postVal)
}

// vector is the whole vector i, as it was stored.
func (x *memIndex) vector(i int) []float32 {
	v := make([]float32, x.dims)
	copy(v, x.denseVals[i*x.dense:(i+1)*x.dense])
	for s := x.sparseAt[i]; s < x.sparseAt[i+1]; s++ {
		v[x.sparseIdx[s]] = x.sparseVal[s]
	}
	return v
}

// similarity is the cosine of q (of norm qn) and vector i.
func (x *memIndex) similarity(q []float32, qn float64, i int) float64 {
	d := x.denseVals[i*x.dense : (i+1)*x.dense]
	dot := float64(dot32(q[:len(d)], d))
	for s := x.sparseAt[i]; s < x.sparseAt[i+1]; s++ {
		dot += float64(q[x.sparseIdx[s]]) * float64(x.sparseVal[s])
	}
	if qn == 0 || x.norms[i] == 0 {
		return 0
	}
	return dot / (qn * x.norms[i])
}

// dot32 is the dot product of a and b (of a's length), in single precision, eight
// sums at once: the scan's inner loop.
func dot32(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3, s4, s5, s6, s7 float32
	for len(a) >= 8 {
		s0 += a[0] * b[0]
		s1 += a[1] * b[1]
		s2 += a[2] * b[2]
		s3 += a[3] * b[3]
		s4 += a[4] * b[4]
		s5 += a[5] * b[5]
		s6 += a[6] * b[6]
		s7 += a[7] * b[7]
		a, b = a[8:], b[8:]
	}
	for i := range a {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3) + (s4 + s5) + (s6 + s7)
}

// Nearest returns the k vectors most similar to q, most similar first, each with its
// vector; with only set, among those slugs alone. Equal similarities keep the
// order the vectors were listed in.
func (x *memIndex) Nearest(q []float32, k int, only []string) []Neighbour {
	return x.NearestEach([][]float32{q}, k, only)[0]
}

// NearestEach is Nearest for each of qs (of a search's phrasings), in one pass over
// the vectors: each vector's dense part is read once for all of them, and each
// query's sparse part adds what the vectors holding its few dimensions hold. Every
// similarity is the one similarity gives, to the bit: the same products, summed in
// the same order (a dimension q does not hold adds nothing).
func (x *memIndex) NearestEach(qs [][]float32, k int, only []string) [][]Neighbour {
	out := make([][]Neighbour, len(qs))
	var live []int // the queries of x's dimensions
	qn := make([]float64, len(qs))
	for j, q := range qs {
		if len(q) != x.dims || k <= 0 {
			continue
		}
		live = append(live, j)
		for _, f := range q {
			qn[j] += float64(f) * float64(f)
		}
		qn[j] = math.Sqrt(qn[j])
	}
	if len(live) == 0 {
		return out
	}
	if only != nil {
		// A filter's few methods: each read whole, for each query.
		for _, j := range live {
			t := newTopK(k)
			for _, s := range only {
				if i, ok := x.bySlug[s]; ok {
					t.consider(x.similarity(qs[j], qn[j], int(i)), int(i))
				}
			}
			out[j] = x.neighbours(t)
		}
		return out
	}
	n := len(x.slugs)
	dots := make([]float64, len(live)*n) // query l's dot with vector i at l*n+i
	for i := range n {
		d := x.denseVals[i*x.dense : (i+1)*x.dense]
		for l, j := range live {
			dots[l*n+i] = float64(dot32(qs[j][:len(d)], d))
		}
	}
	for l, j := range live {
		dot := dots[l*n : (l+1)*n]
		q := qs[j]
		for dim := x.dense; dim < x.dims; dim++ {
			w := float64(q[dim])
			if w == 0 {
				continue
			}
			from, to := x.postAt[dim-x.dense], x.postAt[dim-x.dense+1]
			vecs, vals := x.postVec[from:to], x.postVal[from:to]
			for p, i := range vecs {
				dot[i] += w * float64(vals[p])
			}
		}
		t := newTopK(k)
		for i, d := range dot {
			sim := 0.0
			if qn[j] != 0 && x.norms[i] != 0 {
				sim = d / (qn[j] * x.norms[i])
			}
			t.consider(sim, i)
		}
		out[j] = x.neighbours(t)
	}
	return out
}

// topK keeps the k highest similarities considered, highest first; of equal ones,
// the vector held first.
type topK struct {
	k   int
	top []scored
}

type scored struct {
	sim float64
	i   int
}

func newTopK(k int) *topK { return &topK{k: k, top: make([]scored, 0, k+1)} }

func (t *topK) consider(sim float64, i int) {
	if len(t.top) == t.k && sim <= t.top[t.k-1].sim {
		return
	}
	j := len(t.top)
	t.top = append(t.top, scored{})
	for j > 0 && (t.top[j-1].sim < sim || t.top[j-1].sim == sim && t.top[j-1].i > i) {
		t.top[j] = t.top[j-1]
		j--
	}
	t.top[j] = scored{sim, i}
	if len(t.top) > t.k {
		t.top = t.top[:t.k]
	}
}

// neighbours are t's vectors, each with its vector as it was stored.
func (x *memIndex) neighbours(t *topK) []Neighbour {
	out := make([]Neighbour, len(t.top))
	for n, s := range t.top {
		out[n] = Neighbour{Slug: x.slugs[s.i], Similarity: s.sim, Vector: x.vector(s.i)}
	}
	return out
}

// memVectors holds, for each model, the index of the snapshot searched last, loaded
// in the background: until it is, and while a new snapshot's loads, the store
// answers.
type memVectors struct {
	mu      sync.Mutex
	byModel map[string]*memHeld
}

type memHeld struct {
	// snap names the snapshot x was loaded for without keeping it alive: x is the
	// store's vectors, not the snapshot's.
	snap    weak.Pointer[directory.Snapshot]
	x       *memIndex
	version string
	// checked is when the store was last asked whether x is stale.
	checked time.Time
	loading bool
}

// memIndex is the index of snap's vectors under m, or nil when there is none yet
// (one is loaded in the background then) or the engine keeps none.
func (e *Engine) memIndex(snap *directory.Snapshot, m ModelRecord) *memIndex {
	vs, ok := e.store.(VectorStore)
	if !ok || e.cfg.MemoryVectors <= 0 || snap.Len() > e.cfg.MemoryVectors {
		return nil
	}
	e.mem.mu.Lock()
	defer e.mem.mu.Unlock()
	if e.mem.byModel == nil {
		e.mem.byModel = make(map[string]*memHeld)
	}
	h := e.mem.byModel[m.ID]
	if h == nil {
		h = &memHeld{}
		e.mem.byModel[m.ID] = h
	}
	// A snapshot's vectors may still be catching up just after it is published, and a
	// method's text changed is embedded again after: the store is asked whether they
	// changed as often as the neighbour cache forgets, and they are loaded again
	// when they did.
	now, key := e.cfg.Now(), weak.Make(snap)
	if !h.loading && (h.snap != key || now.Sub(h.checked) >= neighbourCacheTTL) {
		h.loading, h.checked = true, now
		go e.loadVectors(vs, h, snap, m)
	}
	if h.snap != key {
		return nil
	}
	return h.x
}

// loadVectors loads snap's vectors under m into h, unless h holds them already and
// they have not changed since.
func (e *Engine) loadVectors(vs VectorStore, h *memHeld, snap *directory.Snapshot, m ModelRecord) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	key := weak.Make(snap)
	x, version, err := loadMemIndex(ctx, vs, m, func(version string) bool {
		e.mem.mu.Lock()
		defer e.mem.mu.Unlock()
		return h.snap == key && h.version == version
	})
	e.mem.mu.Lock()
	defer e.mem.mu.Unlock()
	h.loading = false
	if err != nil || x == nil {
		return
	}
	h.snap, h.x, h.version = key, x, version
}

// loadMemIndex reads the vectors under m into an index, with their version, unless
// held tells that the version is held already (it returns no index then).
func loadMemIndex(ctx context.Context, vs VectorStore, m ModelRecord, held func(version string) bool) (*memIndex, string, error) {
	// The version is read first: a vector stored while they are read changes it
	// again, and the next check loads it.
	version, err := vs.VectorsVersion(ctx, m)
	if err != nil || held(version) {
		return nil, version, err
	}
	all, err := vs.MethodVectors(ctx, m)
	if err != nil {
		return nil, "", err
	}
	return newMemIndex(m.Dimensions, all), version, nil
}

// LoadVectors loads the vectors of snap's methods under every model into memory
// now, when the engine keeps them there, rather than at the snapshot's first
// searches, and reports how many it holds and about how many bytes they take.
func (e *Engine) LoadVectors(ctx context.Context, snap *directory.Snapshot) (n, bytes int, err error) {
	vs, ok := e.store.(VectorStore)
	if !ok || e.cfg.MemoryVectors <= 0 || snap.Len() > e.cfg.MemoryVectors {
		return 0, 0, nil
	}
	for _, m := range e.Models() {
		x, version, err := loadMemIndex(ctx, vs, m.Record, func(string) bool { return false })
		if err != nil {
			return n, bytes, err
		}
		e.mem.mu.Lock()
		if e.mem.byModel == nil {
			e.mem.byModel = make(map[string]*memHeld)
		}
		e.mem.byModel[m.Record.ID] = &memHeld{snap: weak.Make(snap), x: x, version: version, checked: e.cfg.Now()}
		e.mem.mu.Unlock()
		n, bytes = n+x.Len(), bytes+x.Bytes()
	}
	return n, bytes, nil
}
