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
