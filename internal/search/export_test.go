package search

import (
	"errors"

	"github.com/waystation/waystation/internal/directory"
)

// NearestInMemory is the k vectors nearest to v under m from the engine's memory,
// for benchmarks to time the scan alone.
func (e *Engine) NearestInMemory(snap *directory.Snapshot, m ModelRecord, v []float32, k int) ([]Neighbour, error) {
	x := e.memIndex(snap, m)
	if x == nil {
		return nil, errors.New("search: no vectors in memory")
	}
	return x.Nearest(v, k, nil), nil
}
