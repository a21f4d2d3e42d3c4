// Package adapt adapts the sentence encoder's vectors to the catalog's domain with a
// linear map learned from the catalog's own texts alone. The encoder was trained on
// general English, and every listing shares much (an API, paid per call), which
// takes a share of every cosine. FitTop removes the catalog's mean vector and its
// strongest common directions ("all-but-the-top"), so that the cosine weighs what
// tells methods apart; FitContrast fits a full matrix on pairs of the catalog's own
// texts that say the same thing.
package adapt

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"math/rand/v2"
)

// Map is a learned map of the encoder's vectors. A nil *Map is the identity.
type Map struct {
	// id names the map: its recipe and the hash of its numbers.
	id   string
	mean []float32
	// drop holds orthonormal directions projected out after the mean is removed.
	drop [][]float32
	// w, when set, is a square matrix (row-major) applied after them.
	w []float32
}

// ID names the map: the recipe and a hash of its numbers, so that vectors made under
// two different maps never share a model id.
func (m *Map) ID() string {
	if m == nil {
		return ""
	}
	return m.id
}

// Apply maps v (L2-normalised, of the fitted size) and normalises the result; v is
// not changed. A vector the map sends to zero is returned as it was.
func (m *Map) Apply(v []float32) []float32 {
	if m == nil || len(v) != len(m.mean) {
		return v
	}
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = x - m.mean[i]
	}
	for _, u := range m.drop {
		d := dot(out, u)
		for i, x := range u {
			out[i] -= d * x
		}
	}
	if m.w != nil {
		d := len(out)
		in := out
		out = make([]float32, d)
		for r := range d {
			out[r] = dot(m.w[r*d:(r+1)*d], in)
		}
	}
	n := math.Sqrt(float64(dot(out, out)))
	if n == 0 {
		return v
	}
	for i := range out {
		out[i] = float32(float64(out[i]) / n)
	}
	return out
}

// FitTop fits the map over the catalog's vectors: their mean and their top principal
// directions, at most top of them, found by subspace iteration.
func FitTop(vs [][]float32, top int) (*Map, error) {
	if len(vs) < 2 {
		return nil, fmt.Errorf("adapt: %d vectors to fit on", len(vs))
	}
	dim := len(vs[0])
	top = min(top, dim, len(vs)-1)
	mean := make([]float64, dim)
	for _, v := range vs {
		if len(v) != dim {
			return nil, fmt.Errorf("adapt: vectors of sizes %d and %d", dim, len(v))
		}
		for i, x := range v {
			mean[i] += float64(x)
		}
	}
	for i := range mean {
		mean[i] /= float64(len(vs))
	}
	// The covariance, dim x dim.
	cov := make([]float64, dim*dim)
	c := make([]float64, dim)
	for _, v := range vs {
		for i, x := range v {
			c[i] = float64(x) - mean[i]
		}
		for i := range dim {
			if c[i] == 0 {
				continue
			}
			row := cov[i*dim : (i+1)*dim]
			for j := range dim {
				row[j] += c[i] * c[j]
			}
		}
	}
	m := &Map{mean: make([]float32, dim)}
	for i, x := range mean {
		m.mean[i] = float32(x)
	}
	if top > 0 {
		for _, u := range topEigenvectors(cov, dim, top) {
			f := make([]float32, dim)
			for i, x := range u {
				f[i] = float32(x)
			}
			m.drop = append(m.drop, f)
		}
	}
	m.id = fmt.Sprintf("top%d-%s", top, m.hash())
	return m, nil
}

// topEigenvectors returns the k leading eigenvectors of the symmetric matrix a (n x n)
// by subspace iteration with Gram-Schmidt, from a fixed seed.
func topEigenvectors(a []float64, n, k int) [][]float64 {
	rng := rand.New(rand.NewPCG(1, 2))
	q := make([][]float64, k)
	for i := range q {
		q[i] = make([]float64, n)
		for j := range q[i] {
			q[i][j] = rng.NormFloat64()
		}
	}
	orthonormalise(q)
	next := make([][]float64, k)
	for i := range next {
		next[i] = make([]float64, n)
	}
	for range 200 {
		for i := range q {
			for r := range n {
				row := a[r*n : (r+1)*n]
				s := 0.0
				for j, x := range q[i] {
					s += row[j] * x
				}
				next[i][r] = s
			}
		}
		orthonormalise(next)
		q, next = next, q
	}
	return q
}

func orthonormalise(q [][]float64) {
	for i := range q {
		for j := range i {
			d := 0.0
			for t := range q[i] {
				d += q[i][t] * q[j][t]
			}
			for t := range q[i] {
				q[i][t] -= d * q[j][t]
			}
		}
		n := 0.0
		for _, x := range q[i] {
			n += x * x
		}
		n = math.Sqrt(n)
		if n == 0 {
			continue
		}
		for t := range q[i] {
			q[i][t] /= n
		}
	}
}

// hash is the first 12 hex digits of the SHA-256 of the map's numbers.
func (m *Map) hash() string {
	h := sha256.New()
	var b [4]byte
	put := func(v []float32) {
		for _, x := range v {
			binary.LittleEndian.PutUint32(b[:], math.Float32bits(x))
			h.Write(b[:])
		}
	}
	put(m.mean)
	for _, u := range m.drop {
		put(u)
	}
	put(m.w)
	return hex.EncodeToString(h.Sum(nil))[:12]
}

func dot(a, b []float32) float32 {
	var s float32
	for i, x := range a {
		s += x * b[i]
	}
	return s
}
