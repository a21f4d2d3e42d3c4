package search

import (
	"context"
	"math"
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
	return x
}

// Len is how many vectors x holds.
func (x *memIndex) Len() int { return len(x.slugs) }

// Bytes is about how much memory x's vectors take.
func (x *memIndex) Bytes() int {
	return 4*len(x.denseVals) + 8*len(x.norms) + 4*len(x.sparseAt) + 2*len(x.sparseIdx) + 4*len(x.sparseVal)
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
	if len(q) != x.dims || k <= 0 {
		return nil
	}
	var qn float64
	for _, f := range q {
		qn += float64(f) * float64(f)
	}
	qn = math.Sqrt(qn)
	type scored struct {
		sim float64
		i   int
	}
	top := make([]scored, 0, k+1)
	consider := func(i int) {
		sim := x.similarity(q, qn, i)
		if len(top) == k && sim <= top[k-1].sim {
			return
		}
		j := len(top)
		top = append(top, scored{})
		for j > 0 && (top[j-1].sim < sim || top[j-1].sim == sim && top[j-1].i > i) {
			top[j] = top[j-1]
			j--
		}
		top[j] = scored{sim, i}
		if len(top) > k {
			top = top[:k]
		}
	}
	if only == nil {
		for i := range x.slugs {
			consider(i)
		}
	} else {
		for _, s := range only {
			if i, ok := x.bySlug[s]; ok {
				consider(int(i))
			}
		}
	}
	out := make([]Neighbour, len(top))
	for n, t := range top {
		out[n] = Neighbour{Slug: x.slugs[t.i], Similarity: t.sim, Vector: x.vector(t.i)}
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

// vectorSearch returns the k methods nearest to v under model m, from memory when
// the engine holds snap's vectors under m, else from the store (and then the
// vectors of snap are loaded for the searches after it, if it is small enough).
func (e *Engine) vectorSearch(ctx context.Context, snap *directory.Snapshot, m ModelRecord, v []float32, k int, only []string) ([]Neighbour, error) {
	if x := e.memIndex(snap, m); x != nil {
		return x.Nearest(v, k, only), nil
	}
	return e.store.Nearest(ctx, m, v, k, only)
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
