package search

import (
	"github.com/waystation/waystation/internal/directory"
)

// perSnapshot names an index an engine builds once for each snapshot. The snapshot
// keeps it (directory.Snapshot.Derived), not the engine: an engine that held the
// index of the snapshot searched last held that snapshot too, through the index,
// after the directory had swapped in the next, until the next search (about 175 MB
// at a hundred thousand methods, past the collection that follows a swap).
type perSnapshot[T any] struct {
	_ byte // not of size zero, so that each field's address is a key of its own
}

// get is the index of snap, built by build when there is none yet.
func (p *perSnapshot[T]) get(snap *directory.Snapshot, build func() T) T {
	return snap.Derived(p, func() any { return build() }).(T)
}
