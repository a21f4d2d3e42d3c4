package parallel

import (
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// TestEachRunsEveryStepOnce checks that every step runs, once, for sizes around the
// number of processors and none.
func TestEachRunsEveryStepOnce(t *testing.T) {
	for _, n := range []int{0, 1, runtime.GOMAXPROCS(0) + 1, 1000} {
		runs := make([]atomic.Int32, n)
		Each(n, func(i int) { runs[i].Add(1) })
		for i := range runs {
			if got := runs[i].Load(); got != 1 {
				t.Errorf("n=%d: step %d ran %d times", n, i, got)
			}
		}
	}
}

// TestForStopsAtTheFirstError checks that For returns the error a step returned and
// begins no step after it: those begun already end, and each processor begins at most
// one more before it sees the error.
func TestForStopsAtTheFirstError(t *testing.T) {
	const n = 1000
	fail := errors.New("step 0 failed")
	var ran atomic.Int32
	var mu sync.Mutex
	failed := false
	err := For(n, func(i int) error {
		ran.Add(1)
		if i == 0 {
			mu.Lock()
			failed = true
			mu.Unlock()
			return fail
		}
		// The other steps wait until step 0 has failed, so that none ends first.
		for {
			mu.Lock()
			f := failed
			mu.Unlock()
			if f {
				return nil
			}
			runtime.Gosched()
		}
	})
	if err != fail {
		t.Fatalf("For returned %v, want %v", err, fail)
	}
	if most := 1 + 2*(runtime.GOMAXPROCS(0)-1); int(ran.Load()) > most {
		t.Errorf("%d steps ran after the first failed, want at most %d", ran.Load(), most)
	}
}
