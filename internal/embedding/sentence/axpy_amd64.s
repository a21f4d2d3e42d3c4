#include "textflag.h"

// func axpyFMA(y, x []float32, a float32)
// y[i] += a * x[i] for the first len(y) &^ 31 elements, 32 at a time with AVX2 FMA.
TEXT ·axpyFMA(SB), NOSPLIT, $0-52
	MOVQ         y_base+0(FP), DI
	MOVQ         y_len+8(FP), CX
	MOVQ         x_base+24(FP), SI
	VBROADCASTSS a+48(FP), Y0
	SHRQ         $5, CX
	JZ           done

loop:
	VMOVUPS     (DI), Y1
	VMOVUPS     32(DI), Y2
	VMOVUPS     64(DI), Y3
	VMOVUPS     96(DI), Y4
	VFMADD231PS (SI), Y0, Y1
	VFMADD231PS 32(SI), Y0, Y2
	VFMADD231PS 64(SI), Y0, Y3
	VFMADD231PS 96(SI), Y0, Y4
	VMOVUPS     Y1, (DI)
	VMOVUPS     Y2, 32(DI)
	VMOVUPS     Y3, 64(DI)
	VMOVUPS     Y4, 96(DI)
	ADDQ        $128, DI
	ADDQ        $128, SI
	DECQ        CX
	JNZ         loop

done:
	VZEROUPPER
	RET

// func gemm6x16(c *float32, ldc int, a *float32, lda int, b *float32, ldb int, k int)
// Adds the 6x16 tile a[0:6, 0:k] times b[0:k, 0:16] to c[0:6, 0:16]; the leading
// dimensions are in elements. The tile stays in twelve registers for the whole k loop.
TEXT ·gemm6x16(SB), NOSPLIT, $0-56
	MOVQ c+0(FP), DI
	MOVQ ldc+8(FP), R10
	MOVQ a+16(FP), SI
	MOVQ lda+24(FP), R8
	MOVQ b+32(FP), DX
	MOVQ ldb+40(FP), R9
	MOVQ k+48(FP), CX
	SHLQ $2, R8
	SHLQ $2, R9
	SHLQ $2, R10
	LEAQ (R8)(R8*2), R11 // 3 rows of a
	LEAQ (R8)(R8*4), R13 // 5 rows of a
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11
	TESTQ CX, CX
	JZ    store

loop:
	VMOVUPS      (DX), Y12
	VMOVUPS      32(DX), Y13
	VBROADCASTSS (SI), Y14
	VFMADD231PS  Y12, Y14, Y0
	VFMADD231PS  Y13, Y14, Y1
	VBROADCASTSS (SI)(R8*1), Y14
	VFMADD231PS  Y12, Y14, Y2
	VFMADD231PS  Y13, Y14, Y3
	VBROADCASTSS (SI)(R8*2), Y14
	VFMADD231PS  Y12, Y14, Y4
	VFMADD231PS  Y13, Y14, Y5
	VBROADCASTSS (SI)(R11*1), Y14
	VFMADD231PS  Y12, Y14, Y6
	VFMADD231PS  Y13, Y14, Y7
	VBROADCASTSS (SI)(R8*4), Y14
	VFMADD231PS  Y12, Y14, Y8
	VFMADD231PS  Y13, Y14, Y9
	VBROADCASTSS (SI)(R13*1), Y14
	VFMADD231PS  Y12, Y14, Y10
	VFMADD231PS  Y13, Y14, Y11
	ADDQ         $4, SI
	ADDQ         R9, DX
	DECQ         CX
	JNZ          loop

store:
	LEAQ    (R10)(R10*2), R11 // 3 rows of c
	LEAQ    (R10)(R10*4), R13 // 5 rows of c
	VADDPS  (DI), Y0, Y0
	VMOVUPS Y0, (DI)
	VADDPS  32(DI), Y1, Y1
	VMOVUPS Y1, 32(DI)
	VADDPS  (DI)(R10*1), Y2, Y2
	VMOVUPS Y2, (DI)(R10*1)
	VADDPS  32(DI)(R10*1), Y3, Y3
	VMOVUPS Y3, 32(DI)(R10*1)
	VADDPS  (DI)(R10*2), Y4, Y4
	VMOVUPS Y4, (DI)(R10*2)
	VADDPS  32(DI)(R10*2), Y5, Y5
	VMOVUPS Y5, 32(DI)(R10*2)
	VADDPS  (DI)(R11*1), Y6, Y6
	VMOVUPS Y6, (DI)(R11*1)
	VADDPS  32(DI)(R11*1), Y7, Y7
	VMOVUPS Y7, 32(DI)(R11*1)
	VADDPS  (DI)(R10*4), Y8, Y8
	VMOVUPS Y8, (DI)(R10*4)
	VADDPS  32(DI)(R10*4), Y9, Y9
	VMOVUPS Y9, 32(DI)(R10*4)
	VADDPS  (DI)(R13*1), Y10, Y10
	VMOVUPS Y10, (DI)(R13*1)
	VADDPS  32(DI)(R13*1), Y11, Y11
	VMOVUPS Y11, 32(DI)(R13*1)
	VZEROUPPER
	RET
