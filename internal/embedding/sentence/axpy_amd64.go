package sentence

import (
	"sync"

	"golang.org/x/sys/cpu"
)

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

// gemmAcc16 adds a[0:rows, 0:k] times b[0:k, 0:16] to c[0:rows, 0:16], rows from 1
// to 5, one fused product at a time into c, in the order of k: what axpyFMA computes
// for those elements. Only with AVX2 and FMA; the caller checks bounds.
//
//go:noescape
func gemmAcc16(c *float32, ldc int, a *float32, lda int, b *float32, ldb int, k, rows int)

// rowBlock is how many rows of a the product takes through every column of b before
// the next rows: a multiple of the tile's six, so that a block ends where a tile
// does. A query's few rows are one block, and b, far larger than the cache, is read
// from memory once; a batch's 48 rows of a (at most 288 KiB) stay in the cache while
// b streams past them.
const rowBlock = 48

// newWeight lays the k x m matrix w out for the kernels: in panels of 16 columns with
// AVX2 and FMA (and m a multiple of 32, which gemmAcc16 needs to add as axpy does), so
// that a kernel reads its strip of b contiguously, as the hardware prefetches it,
// rather than 64 bytes of every row, each row a page apart; else row-major.
func newWeight(w []float32, k, m int) weight {
	if !fma || m%32 != 0 {
		return weight{k: k, m: m, data: w}
	}
	p := make([]float32, len(w))
	for j := 0; j < m; j += 16 {
		panel := p[j*k : (j+16)*k]
		for l := range k {
			copy(panel[l*16:(l+1)*16], w[l*m+j:l*m+j+16])
		}
	}
	return weight{k: k, m: m, data: p, panels: true}
}

// matmulAdd adds a (n x b.k) times b to c (n x b.m), row-major. The first n rounded
// down to six rows go through the register-tiled kernel, six rows at a time; the rest
// through gemmAcc16 (or row by row), which adds in the order axpy does. Panels of 16
// columns of b run in the outer loop, row tiles inside, so that each panel is read
// from memory once per block of rows and from the cache after that. Which rows take
// which kernel, and so every element's rounding, depends on n alone.
func matmulAdd(c, a []float32, b *weight, n int) {
	k, m := b.k, b.m
	if n == 0 {
		return
	}
	if !b.panels {
		matmulAddTiles(c, a, b.data, n, k, m)
		return
	}
	matmulPanels(c, a, b, n, 0, m)
}

// matmulAddOn is matmulAdd on up to procs goroutines, each adding the columns of a
// share of b's panels: every element is computed as matmulAdd computes it, by the same
// kernel in the same order. A product too small to be worth a goroutine runs on one.
func matmulAddOn(c, a []float32, b *weight, n, procs int) {
	panels := b.m / 16
	parts := min(procs, panels)
	if !b.panels || parts < 2 || n*b.k*b.m < splitWork {
		matmulAdd(c, a, b, n)
		return
	}
	_, _, _ = c[n*b.m-1], a[n*b.k-1], b.data[b.k*b.m-1]
	var wg sync.WaitGroup
	for p := 1; p < parts; p++ {
		wg.Go(func() { matmulPanels(c, a, b, n, p*panels/parts*16, (p+1)*panels/parts*16) })
	}
	matmulPanels(c, a, b, n, 0, panels/parts*16)
	wg.Wait()
}

// splitWork is the least product (rows x k x m) matmulAddOn shares out: about 50 µs
// of one processor, far more than starting a goroutine costs.
const splitWork = 1 << 20

// matmulPanels is matmulAdd over columns j0 to j1 of b alone, multiples of 16; b is
// in panels.
func matmulPanels(c, a []float32, b *weight, n, j0, j1 int) {
	k, m := b.k, b.m
	_, _, _ = c[n*m-1], a[n*k-1], b.data[k*m-1]
	tiled := n - n%6
	for r0 := 0; r0 < n; r0 += rowBlock {
		r1 := min(r0+rowBlock, n)
		for j := j0; j < j1; j += 16 {
			panel := &b.data[j*k]
			i := r0
			for ; i+6 <= min(r1, tiled); i += 6 {
				gemm6x16(&c[i*m+j], m, &a[i*k], k, panel, 16, k)
			}
			if i < r1 {
				gemmAcc16(&c[i*m+j], m, &a[i*k], k, panel, 16, k, r1-i)
			}
		}
	}
}

// matmulAddTiles adds a (n x k) times b (k x m) to c (n x m), all row-major: six rows
// at a time through the register-tiled kernel, the rest row by row.
func matmulAddTiles(c, a, b []float32, n, k, m int) {
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
