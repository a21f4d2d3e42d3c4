package adapt

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Pair is two texts of the catalog that say the same thing: a method's short title
// and its whole listing, say. The contrastive map is fitted to bring each pair's
// vectors together and keep the others' apart.
type Pair struct{ A, B []float32 }

// ContrastOptions tune FitContrast; the zero value is the defaults.
type ContrastOptions struct {
	// Steps of gradient descent; 200 when zero.
	Steps int
	// Batch is how many pairs a step sees (each other's negatives); 128 when zero.
	Batch int
	// Rate is the learning rate; 0.05 when zero.
	Rate float64
	// Temperature of the softmax over cosines; 0.05 when zero.
	Temperature float64
	// Keep is the L2 penalty that holds the map near the identity; 1 when zero.
	Keep float64
}

// FitContrast fits a full linear map W, started at the identity, by the symmetric
// InfoNCE loss over in-batch negatives on the cosines of W a and W b, with an L2
// penalty on W minus the identity. The map then applies W (and no mean or
// directions). It is deterministic: batches come from a fixed seed.
func FitContrast(pairs []Pair, o ContrastOptions) (*Map, error) {
	if len(pairs) < 2 {
		return nil, fmt.Errorf("adapt: %d pairs to fit on", len(pairs))
	}
	o = o.withDefaults()
	f := newContrastFit(len(pairs[0].A), min(o.Batch, len(pairs)), o)
	rng := rand.New(rand.NewPCG(3, 4))
	for range o.Steps {
		f.step(pairs, rng.Perm(len(pairs))[:f.nb])
	}
	m := &Map{w: make([]float32, len(f.w)), mean: make([]float32, f.d)}
	for i, x := range f.w {
		m.w[i] = float32(x)
	}
	m.id = fmt.Sprintf("contrast%d-%s", o.Steps, m.hash())
	return m, nil
}

// withDefaults is o with each zero field at its default.
func (o ContrastOptions) withDefaults() ContrastOptions {
	if o.Steps == 0 {
		o.Steps = 200
	}
	if o.Batch == 0 {
		o.Batch = 128
	}
	if o.Rate == 0 {
		o.Rate = 0.05
	}
	if o.Temperature == 0 {
		o.Temperature = 0.05
	}
	if o.Keep == 0 {
		o.Keep = 1
	}
	return o
}

// contrastFit is the state of one fit: W (d by d, row-major) and the buffers a step
// reuses for a batch of nb pairs.
type contrastFit struct {
	o     ContrastOptions
	d, nb int
	w     []float64
	// za and zb are the batch's mapped vectors, normalised, and na and nbn their
	// norms before; ga and gb the loss's gradient with respect to them.
	za, zb, ga, gb [][]float64
	na, nbn        []float64
	// s holds the scaled cosines (a_i against b_j at i*nb+j), g the loss's gradient
	// with respect to them, grad the gradient with respect to W.
	s, g, grad []float64
}

func newContrastFit(d, nb int, o ContrastOptions) *contrastFit {
	f := &contrastFit{o: o, d: d, nb: nb, w: make([]float64, d*d),
		za: make([][]float64, nb), zb: make([][]float64, nb), ga: make([][]float64, nb), gb: make([][]float64, nb),
		na: make([]float64, nb), nbn: make([]float64, nb),
		s: make([]float64, nb*nb), g: make([]float64, nb*nb), grad: make([]float64, d*d)}
	for i := range d {
		f.w[i*d+i] = 1
	}
	for i := range nb {
		f.za[i], f.zb[i], f.ga[i], f.gb[i] = make([]float64, d), make([]float64, d), make([]float64, d), make([]float64, d)
	}
	return f
}

// step is one step of gradient descent on the pairs of batch: forward to the
// cosines, back through the softmax and the normalisation into W, then W moves.
func (f *contrastFit) step(pairs []Pair, batch []int) {
	for i, p := range batch {
		f.na[i] = f.apply(f.za[i], pairs[p].A)
		f.nbn[i] = f.apply(f.zb[i], pairs[p].B)
		clear(f.ga[i])
		clear(f.gb[i])
	}
	f.cosines()
	f.lossGradient()
	f.backToVectors()
	clear(f.grad)
	for i, p := range batch {
		f.backToMap(f.ga[i], f.za[i], f.na[i], pairs[p].A)
		f.backToMap(f.gb[i], f.zb[i], f.nbn[i], pairs[p].B)
	}
	f.descend()
}

// apply sets z to W v normalised and answers its norm before.
func (f *contrastFit) apply(z []float64, v []float32) float64 {
	d := f.d
	for r := range d {
		row := f.w[r*d : (r+1)*d]
		t := 0.0
		for c, x := range v {
			t += row[c] * float64(x)
		}
		z[r] = t
	}
	n := 0.0
	for _, x := range z {
		n += x * x
	}
	n = math.Sqrt(n)
	for r := range z {
		z[r] /= n
	}
	return n
}

// cosines fills s with each a against each b, over the temperature.
func (f *contrastFit) cosines() {
	for i := range f.nb {
		for j := range f.nb {
			t := 0.0
			for k := range f.d {
				t += f.za[i][k] * f.zb[j][k]
			}
			f.s[i*f.nb+j] = t / f.o.Temperature
		}
	}
}

// lossGradient fills g with dL/ds for the rows (a against every b) and the columns
// (b against every a), the pairs themselves on the diagonal.
func (f *contrastFit) lossGradient() {
	nb := f.nb
	clear(f.g)
	for i := range nb {
		f.softmax(func(k int) int { return i*nb + k })
		f.softmax(func(k int) int { return k*nb + i })
		f.g[i*nb+i] -= 2 / float64(2*nb)
	}
}

// softmax adds to g the softmax over the nb cosines at(0) to at(nb-1), its share of
// the symmetric loss.
func (f *contrastFit) softmax(at func(k int) int) {
	m := math.Inf(-1)
	for k := range f.nb {
		m = max(m, f.s[at(k)])
	}
	sum := 0.0
	for k := range f.nb {
		sum += math.Exp(f.s[at(k)] - m)
	}
	for k := range f.nb {
		f.g[at(k)] += math.Exp(f.s[at(k)]-m) / sum / float64(2*f.nb)
	}
}

// backToVectors carries g through the cosines into ga and gb.
func (f *contrastFit) backToVectors() {
	for i := range f.nb {
		for j := range f.nb {
			c := f.g[i*f.nb+j] / f.o.Temperature
			if c == 0 {
				continue
			}
			for k := range f.d {
				f.ga[i][k] += c * f.zb[j][k]
				f.gb[j][k] += c * f.za[i][k]
			}
		}
	}
}

// backToMap carries gz, the gradient at z (v mapped, of norm n before), through the
// normalisation into grad.
func (f *contrastFit) backToMap(gz, z []float64, n float64, v []float32) {
	d := f.d
	dot := 0.0
	for k := range d {
		dot += gz[k] * z[k]
	}
	for r := range d {
		c := (gz[r] - dot*z[r]) / n
		if c == 0 {
			continue
		}
		row := f.grad[r*d : (r+1)*d]
		for k, x := range v {
			row[k] += c * float64(x)
		}
	}
}

// descend moves W against grad and the penalty that holds it near the identity.
func (f *contrastFit) descend() {
	d := f.d
	for r := range d {
		for c := range d {
			id := 0.0
			if r == c {
				id = 1
			}
			f.w[r*d+c] -= f.o.Rate * (f.grad[r*d+c] + f.o.Keep*(f.w[r*d+c]-id)/float64(d))
		}
	}
}
