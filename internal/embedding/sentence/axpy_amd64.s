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
