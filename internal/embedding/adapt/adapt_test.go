package adapt

import (
	"math"
	"math/rand/v2"
	"testing"
)

func unit(v []float32) []float32 {
	n := math.Sqrt(float64(dot(v, v)))
	for i := range v {
		v[i] = float32(float64(v[i]) / n)
	}
	return v
}

// TestFitTopRemovesTheSharedDirection: vectors that all lean one way (as every
// listing leans towards "a paid API") and vary most along one other lose both, and
// differ in the rest once mapped.
func TestFitTopRemovesTheSharedDirection(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	const dim = 16
	var vs [][]float32
	for range 200 {
		v := make([]float32, dim)
		v[0] = 3                              // the shared lean
		v[1] = 2 * float32(rng.NormFloat64()) // the strongest variation
		for i := 2; i < dim; i++ {
			v[i] = 0.3 * float32(rng.NormFloat64())
		}
		vs = append(vs, unit(v))
	}
	m, err := FitTop(vs, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.drop) != 1 || math.Abs(float64(m.drop[0][1])) < 0.9 {
		t.Fatalf("top direction %v, want about the second axis", m.drop)
	}
	var mean0 float64
	for _, v := range vs {
		got := m.Apply(v)
		mean0 += float64(got[0]) / float64(len(vs))
		if math.Abs(float64(got[1])) > 0.2 {
			t.Fatalf("mapped %v keeps the strongest variation", got)
		}
		if n := dot(got, got); math.Abs(float64(n)-1) > 1e-4 {
			t.Fatalf("mapped vector has norm² %v", n)
		}
	}
	if math.Abs(mean0) > 0.1 {
		t.Errorf("mapped vectors still lean %.3f along the shared direction", mean0)
	}
	if m2, _ := FitTop(vs, 1); m2.ID() != m.ID() {
		t.Errorf("the same fit has ids %s and %s", m.ID(), m2.ID())
	}
	var none *Map
	if got := none.Apply(vs[0]); &got[0] != &vs[0][0] {
		t.Error("a nil map changed the vector")
	}
}

// TestFitContrastBringsPairsTogether: pairs that share a hidden cause under noise
// that every vector shares end nearer each other than to the other pairs' halves.
func TestFitContrastBringsPairsTogether(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 2))
	const dim = 12
	var pairs []Pair
	for range 64 {
		cause := make([]float32, dim)
		for i := range 4 {
			cause[i] = float32(rng.NormFloat64())
		}
		half := func() []float32 {
			v := make([]float32, dim)
			for i := range v {
				v[i] = cause[i] + 1.5*float32(rng.NormFloat64())*float32(min(1, i/4))
			}
			return unit(v)
		}
		pairs = append(pairs, Pair{A: half(), B: half()})
	}
	margin := func(m *Map) float64 {
		s := 0.0
		for i, p := range pairs {
			a, b, o := m.Apply(p.A), m.Apply(p.B), m.Apply(pairs[(i+1)%len(pairs)].B)
			s += float64(dot(a, b) - dot(a, o))
		}
		return s / float64(len(pairs))
	}
	m, err := FitContrast(pairs, ContrastOptions{Steps: 100, Batch: 32, Rate: 0.5, Keep: 0.01})
	if err != nil {
		t.Fatal(err)
	}
	before, after := margin(nil), margin(m)
	if after <= before+0.05 {
		t.Errorf("pair margin %.3f before, %.3f after the fit", before, after)
	}
}

// BenchmarkApply is what a map adds to a query's embedding: 512 dimensions, the mean
// and 20 directions removed (top:20), or a full matrix (contrast).
func BenchmarkApply(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 3))
	const dim = 512
	vs := make([][]float32, 600)
	for i := range vs {
		v := make([]float32, dim)
		for j := range v {
			v[j] = float32(rng.NormFloat64())
		}
		vs[i] = unit(v)
	}
	top, err := FitTop(vs, 20)
	if err != nil {
		b.Fatal(err)
	}
	full := &Map{mean: make([]float32, dim), w: make([]float32, dim*dim)}
	for i := range dim {
		full.w[i*dim+i] = 1
	}
	for _, c := range []struct {
		name string
		m    *Map
	}{{"top20", top}, {"full", full}} {
		b.Run(c.name, func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				c.m.Apply(vs[i%len(vs)])
			}
		})
	}
}
