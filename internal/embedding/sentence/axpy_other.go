//go:build !amd64

package sentence

// axpy adds a times x to y (x at least as long as y).
func axpy(y, x []float32, a float32) { axpyGo(y, x[:len(y)], a) }
