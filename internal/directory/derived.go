package directory

import "sync"

// derived holds the indexes other packages build over one snapshot, by key.
type derived struct {
	mu sync.Mutex // held while one is built
	m  sync.Map   // read without a lock by every search
}

// Derived is what build makes of s for key, built on first use and kept as long as
// s is: an index another package builds over a snapshot (search's exact names, its
// text evidence) lives in the snapshot and goes with it, so that nothing outside
// keeps a snapshot the directory no longer serves alive for the sake of its index.
// Callers that find none wait for the one building it rather than each building its
// own, which at a hundred thousand methods, under a burst of first searches after a
// generation, held hundreds of megabytes at once. key must be comparable; a pointer
// the caller owns keeps callers apart. A snapshot not made by this package (a zero
// Snapshot) keeps nothing: each call builds.
func (s *Snapshot) Derived(key any, build func() any) any {
	if s.derived == nil {
		return build()
	}
	if x, ok := s.derived.m.Load(key); ok {
		return x
	}
	s.derived.mu.Lock()
	defer s.derived.mu.Unlock()
	if x, ok := s.derived.m.Load(key); ok {
		return x
	}
	x := build()
	s.derived.m.Store(key, x)
	return x
}
