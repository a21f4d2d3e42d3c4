package sentence

import "golang.org/x/sys/cpu"

var fma = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// axpyFMA adds a times x to y for the first len(y) rounded down to 32 elements;
// x must be at least as long. Only with AVX2 and FMA.
//
//go:noescape
func axpyFMA(y, x []float32, a float32)

// axpy adds a times x to y (x at least as long as y).
func axpy(y, x []float32, a float32) {
	x = x[:len(y)]
	done := 0
	if fma {
		axpyFMA(y, x, a)
		done = len(y) &^ 31
	}
	axpyGo(y[done:], x[done:], a)
}
