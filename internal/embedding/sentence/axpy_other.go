//go:build !amd64

package sentence

// axpy adds a times x to y (x at least as long as y).
func axpy(y, x []float32, a float32) { axpyGo(y, x[:len(y)], a) }

// matmulAdd adds a (n x k) times b (k x m) to c (n x m), all row-major.
func matmulAdd(c, a, b []float32, n, k, m int) { matmulAddRows(c, a, b, n, k, m) }
