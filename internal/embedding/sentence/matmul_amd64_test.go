package sentence

import (
	"math"
	"testing"
)

// TestMatmulIsBitForBitTheOldOne holds the product over panels to the bits of the one
// the stored vectors were made with (matmulAddTiles, over rows), for every row count up
// to past two blocks, and for widths laid out in panels and not; a has zeros, as the
// input of a product after a ReLU does.
func TestMatmulIsBitForBitTheOldOne(t *testing.T) {
	for _, km := range [][2]int{{37, 64}, {64, 48}, {5, 32}} {
		k, m := km[0], km[1]
		for n := 1; n <= 2*rowBlock+7; n++ {
			a, w := make([]float32, n*k), make([]float32, k*m)
			for i := range a {
				if i%3 != 0 {
					a[i] = float32(math.Sin(float64(i)))
				}
			}
			for i := range w {
				w[i] = float32(math.Cos(float64(i) * 0.7))
			}
			c1, c2 := make([]float32, n*m), make([]float32, n*m)
			for i := range c1 {
				c1[i] = float32(i%17) / 3
				c2[i] = c1[i]
			}
			b := newWeight(w, k, m)
			if b.panels != (m%32 == 0) {
				t.Fatalf("k=%d m=%d: panels %v", k, m, b.panels)
			}
			matmulAdd(c1, a, &b, n)
			matmulAddTiles(c2, a, w, n, k, m)
			for i := range c1 {
				if math.Float32bits(c1[i]) != math.Float32bits(c2[i]) {
					t.Fatalf("n=%d k=%d m=%d: element %d is %g, was %g", n, k, m, i, c1[i], c2[i])
				}
			}
		}
	}
}

// TestSharedProductIsBitForBitTheProduct holds the product shared out among
// goroutines, each a share of the panels, to the bits of the one made on one, for
// shares even and not and row counts through every kernel.
func TestSharedProductIsBitForBitTheProduct(t *testing.T) {
	for _, km := range [][2]int{{512, 96}, {700, 160}, {256, 32}} {
		k, m := km[0], km[1]
		w := make([]float32, k*m)
		for i := range w {
			w[i] = float32(math.Cos(float64(i) * 0.3))
		}
		b := newWeight(w, k, m)
		for _, n := range []int{1, 5, 6, 13, 25, 2*rowBlock + 7} {
			a := make([]float32, n*k)
			for i := range a {
				if i%4 != 0 {
					a[i] = float32(math.Sin(float64(i)))
				}
			}
			want := make([]float32, n*m)
			matmulAdd(want, a, &b, n)
			for _, procs := range []int{2, 3, 4, 64} {
				got := make([]float32, n*m)
				matmulAddOn(got, a, &b, n, procs)
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("n=%d k=%d m=%d on %d: element %d is %g, not %g", n, k, m, procs, i, got[i], want[i])
					}
				}
			}
		}
	}
}
