package search

import (
	"sync"
	"sync/atomic"

	"github.com/waystation/waystation/internal/directory"
)

// perSnapshot holds an index of the snapshot searched last, built once for it:
// callers that find none for their snapshot wait for the one building it rather than
// each building its own, which at a hundred thousand methods, under a burst of first
// searches after a generation, held hundreds of megabytes at once.
type perSnapshot[T any] struct {
	mu  sync.Mutex // held while one is built
	cur atomic.Pointer[builtFor[T]]
}

type builtFor[T any] struct {
	snap *directory.Snapshot
	x    T
}

// get is the index of snap, built by build when there is none yet.
func (p *perSnapshot[T]) get(snap *directory.Snapshot, build func() T) T {
	if b := p.cur.Load(); b != nil && b.snap == snap {
		return b.x
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if b := p.cur.Load(); b != nil && b.snap == snap {
		return b.x
	}
	b := &builtFor[T]{snap: snap, x: build()}
	p.cur.Store(b)
	return b.x
}
