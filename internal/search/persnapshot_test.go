package search

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waystation/waystation/internal/directory"
)

// TestPerSnapshotBuildsOnceUnderABurst holds the index of a snapshot to one build,
// however many first searches ask for it at once, and to one more for the next
// snapshot.
func TestPerSnapshotBuildsOnceUnderABurst(t *testing.T) {
	var p perSnapshot[*int]
	var builds atomic.Int32
	build := func() *int {
		builds.Add(1)
		time.Sleep(20 * time.Millisecond) // as a large catalog's index takes
		n := int(builds.Load())
		return &n
	}
	var snaps []*directory.Snapshot
	for range 2 {
		snap, err := directory.NewSnapshot(time.Unix(1, 0), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		snaps = append(snaps, snap)
	}
	for round, snap := range snaps {
		var wg sync.WaitGroup
		got := make([]*int, 32)
		for i := range got {
			wg.Go(func() { got[i] = p.get(snap, build) })
		}
		wg.Wait()
		if n := builds.Load(); n != int32(round+1) {
			t.Fatalf("snapshot %d: %d builds, want %d", round, n, round+1)
		}
		for i, x := range got {
			if x != got[0] {
				t.Fatalf("snapshot %d: caller %d got another index", round, i)
			}
		}
	}
}
