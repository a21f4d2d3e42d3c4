package sentence

import "golang.org/x/sys/cpu"

var fma = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// axpyFMA adds a times x to y for the first len(y) rounded down to 32 elements;
// x must be at least as long. Only with AVX2 and FMA.
//
//go:noescape
func axpyFMA(y, x []float32, a float32)

// gemm6x16 adds the 6x16 tile a[0:6, 0:k] times b[0:k, 0:16] to c[0:6, 0:16], the
// leading dimensions in elements. Only with AVX2 and FMA; the caller checks bounds.
//
//go:noescape
func gemm6x16(c *float32, ldc int, a *float32, lda int, b *float32, ldb int, k int)

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

// matmulAdd adds a (n x k) times b (k x m) to c (n x m), all row-major: six rows at a
// time through the register-tiled kernel, the rest row by row.
func matmulAdd(c, a, b []float32, n, k, m int) {
	done := 0
	if fma && m%16 == 0 && n >= 6 {
		_, _, _ = c[n*m-1], a[n*k-1], b[k*m-1]
		for ; done+6 <= n; done += 6 {
			for j := 0; j < m; j += 16 {
				gemm6x16(&c[done*m+j], m, &a[done*k], k, &b[j], m, k)
			}
		}
	}
	if done < n {
		matmulAddRows(c[done*m:], a[done*k:], b, n-done, k, m)
	}
}
