// Package parallel runs the steps of a loop on every processor.
package parallel

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// For runs fn for each of 0..n-1, on every processor, and returns the first error fn
// returned. Once one has, no step not yet begun is begun.
func For(n int, fn func(i int) error) error {
	var (
		wg     sync.WaitGroup
		next   atomic.Int64
		failed atomic.Bool
		once   sync.Once
		err    error
	)
	for range min(runtime.GOMAXPROCS(0), max(n, 1)) {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < n && !failed.Load(); i = int(next.Add(1)) - 1 {
				if e := fn(i); e != nil {
					once.Do(func() { err = e })
					failed.Store(true)
				}
			}
		})
	}
	wg.Wait()
	return err
}

// Each runs fn for each of 0..n-1, on every processor.
func Each(n int, fn func(i int)) {
	For(n, func(i int) error {
		fn(i)
		return nil
	})
}
