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
	d := len(pairs[0].A)
	w := make([]float64, d*d)
	for i := range d {
		w[i*d+i] = 1
	}
	rng := rand.New(rand.NewPCG(3, 4))
	nb := min(o.Batch, len(pairs))
	za, zb := make([][]float64, nb), make([][]float64, nb)
	ga, gb := make([][]float64, nb), make([][]float64, nb)
	for i := range nb {
		za[i], zb[i], ga[i], gb[i] = make([]float64, d), make([]float64, d), make([]float64, d), make([]float64, d)
	}
	grad := make([]float64, d*d)
	na, nbn := make([]float64, nb), make([]float64, nb)
	s := make([]float64, nb*nb)
	for range o.Steps {
		batch := rng.Perm(len(pairs))[:nb]
		apply := func(z []float64, v []float32) float64 {
			for r := range d {
				row := w[r*d : (r+1)*d]
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
		for i, p := range batch {
			na[i] = apply(za[i], pairs[p].A)
			nbn[i] = apply(zb[i], pairs[p].B)
			clear(ga[i])
			clear(gb[i])
		}
		for i := range nb {
			for j := range nb {
				t := 0.0
				for k := range d {
					t += za[i][k] * zb[j][k]
				}
				s[i*nb+j] = t / o.Temperature
			}
		}
		// dL/ds for the rows (a against every b) and the columns (b against every a).
		g := make([]float64, nb*nb)
		softmax := func(at func(k int) int) {
			m := math.Inf(-1)
			for k := range nb {
				m = max(m, s[at(k)])
			}
			sum := 0.0
			for k := range nb {
				sum += math.Exp(s[at(k)] - m)
			}
			for k := range nb {
				g[at(k)] += math.Exp(s[at(k)]-m) / sum / float64(2*nb)
			}
		}
		for i := range nb {
			softmax(func(k int) int { return i*nb + k })
			softmax(func(k int) int { return k*nb + i })
			g[i*nb+i] -= 2 / float64(2*nb)
		}
		for i := range nb {
			for j := range nb {
				c := g[i*nb+j] / o.Temperature
				if c == 0 {
					continue
				}
				for k := range d {
					ga[i][k] += c * zb[j][k]
					gb[j][k] += c * za[i][k]
				}
			}
		}
		// Through the normalisation, then into W.
		clear(grad)
		back := func(gz, z []float64, n float64, v []float32) {
			dot := 0.0
			for k := range d {
				dot += gz[k] * z[k]
			}
			for r := range d {
				c := (gz[r] - dot*z[r]) / n
				if c == 0 {
					continue
				}
				row := grad[r*d : (r+1)*d]
				for k, x := range v {
					row[k] += c * float64(x)
				}
			}
		}
		for i, p := range batch {
			back(ga[i], za[i], na[i], pairs[p].A)
			back(gb[i], zb[i], nbn[i], pairs[p].B)
		}
		for r := range d {
			for c := range d {
				id := 0.0
				if r == c {
					id = 1
				}
				w[r*d+c] -= o.Rate * (grad[r*d+c] + o.Keep*(w[r*d+c]-id)/float64(d))
			}
		}
	}
	m := &Map{w: make([]float32, d*d), mean: make([]float32, d)}
	for i, x := range w {
		m.w[i] = float32(x)
	}
	m.id = fmt.Sprintf("contrast%d-%s", o.Steps, m.hash())
	return m, nil
}
