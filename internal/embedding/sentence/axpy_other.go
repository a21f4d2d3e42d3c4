//go:build !amd64

package sentence

// axpy adds a times x to y (x at least as long as y).
func axpy(y, x []float32, a float32) { axpyGo(y, x[:len(y)], a) }

// newWeight keeps the k x m matrix w row-major.
func newWeight(w []float32, k, m int) weight { return weight{k: k, m: m, data: w} }

// matmulAdd adds a (n x b.k) times b to c (n x b.m), row-major.
func matmulAdd(c, a []float32, b *weight, n int) { matmulAddRows(c, a, b.data, n, b.k, b.m) }

// matmulAddOn is matmulAdd: on this architecture, on one goroutine.
func matmulAddOn(c, a []float32, b *weight, n, _ int) { matmulAdd(c, a, b, n) }
