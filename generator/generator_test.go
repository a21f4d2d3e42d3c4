package generator

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"runtime/debug"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/waystation/waystation/internal/directory"
	"github.com/waystation/waystation/internal/resource"
	"github.com/waystation/waystation/internal/trust"
)

// limitSeen is a record store that notes the soft memory limit and the GC percent
// each read runs under.
type limitSeen struct {
	records
	limits []int64
	gcs    []int
}

func (l *limitSeen) DirectoryRecords(ctx context.Context, now time.Time) (trust.Records, error) {
	l.limits = append(l.limits, debug.SetMemoryLimit(-1))
	l.gcs = append(l.gcs, gcPercent())
	return l.records.DirectoryRecords(ctx, now)
}

// gcPercent is the process's GC percent now.
func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

// TestServeGCPercentPacesBetweenGenerations checks that with ServeGCPercent each
// full generation runs under the process's own GC percent, a change under the pacing
// in force before it, and the serving one is in force after each, chosen from the
// heap held for AutoGCPercent; and that 0 leaves the process's own throughout.
func TestServeGCPercentPacesBetweenGenerations(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(150))
	for _, serve := range []int{40, AutoGCPercent, 0} {
		debug.SetGCPercent(150)
		src := &limitSeen{records: records{rec: testRecords(6, time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC))}}
		g := &Generator{Source: src, ServeGCPercent: serve}
		var during []int
		for _, sameClock := range []bool{false, true, false} {
			if sameClock {
				during = append(during, gcPercent()) // the pacing in force
			} else {
				during = append(during, 150)
			}
			if _, err := g.once(context.Background(), sameClock); err != nil {
				t.Fatal(err)
			}
			want := serve
			switch serve {
			case AutoGCPercent:
				want = autoGCPercent(liveHeap(), 150)
			case 0:
				want = 150
			}
			if got := gcPercent(); got != want {
				t.Fatalf("ServeGCPercent %d: the GC percent after a generation is %d, want %d", serve, got, want)
			}
		}
		if !slices.Equal(src.gcs, during) || serve == 40 && during[1] != 40 {
			t.Errorf("ServeGCPercent %d: generations ran under the GC percents %v, want %v", serve, src.gcs, during)
		}
	}
}

// TestAutoGCPercentLeavesRoomForWhatRequestsAllocate holds the pacing to a quarter of
// the heap held and at least 32 MiB, never more than the process's own percent.
func TestAutoGCPercentLeavesRoomForWhatRequestsAllocate(t *testing.T) {
	for _, tc := range []struct {
		held      uint64
		own, want int
	}{
		{0, 100, 100},
		{16 << 20, 100, 100},
		{32 << 20, 100, 100},
		{64 << 20, 100, 50},
		{128 << 20, 100, 25},
		{200 << 20, 100, 25},
		{4 << 30, 100, 25},
		{16 << 20, 300, 200},
		{64 << 20, 30, 30},
		{64 << 20, -1, -1},
	} {
		if got := autoGCPercent(tc.held, tc.own); got != tc.want {
			t.Errorf("autoGCPercent(%d MiB, %d) = %d, want %d", tc.held>>20, tc.own, got, tc.want)
		}
	}
}

// TestFullGenerationsRunUnderTheMemoryLimit checks that the first generation and one
// that moves the clock on run under FullMemoryLimit, a generation after a change (at
// the clock in force) without it, and that the limit before is restored after each.
func TestFullGenerationsRunUnderTheMemoryLimit(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	const limit = 3 << 30
	src := &limitSeen{records: records{rec: testRecords(6, time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC))}}
	g := &Generator{Source: src, FullMemoryLimit: limit}
	for _, sameClock := range []bool{false, true, false} {
		if _, err := g.once(context.Background(), sameClock); err != nil {
			t.Fatal(err)
		}
		if got := debug.SetMemoryLimit(-1); got != before {
			t.Fatalf("the limit after a generation is %d, not the %d before", got, before)
		}
	}
	if want := []int64{limit, before, limit}; len(src.limits) != 3 || src.limits[0] != want[0] || src.limits[1] != want[1] || src.limits[2] != want[2] {
		t.Errorf("generations ran under the limits %v, want %v", src.limits, want)
	}
}

// TestServeMemoryLimitHoldsBetweenGenerations checks that with ServeMemoryLimit a
// full generation runs under FullMemoryLimit, or none without one, a generation after
// a change under none, and that the serving limit is in force after each, whatever
// the limit before the first.
func TestServeMemoryLimitHoldsBetweenGenerations(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	const full, serve = 3 << 30, 2 << 30
	for _, tc := range []struct {
		full int64
		want []int64
	}{
		{full, []int64{full, math.MaxInt64, full}},
		{0, []int64{math.MaxInt64, math.MaxInt64, math.MaxInt64}},
	} {
		debug.SetMemoryLimit(5 << 30)
		src := &limitSeen{records: records{rec: testRecords(6, time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC))}}
		g := &Generator{Source: src, FullMemoryLimit: tc.full, ServeMemoryLimit: serve}
		for _, sameClock := range []bool{false, true, false} {
			if _, err := g.once(context.Background(), sameClock); err != nil {
				t.Fatal(err)
			}
			if got := debug.SetMemoryLimit(-1); got != serve {
				t.Fatalf("the limit after a generation is %d, not the serving %d", got, serve)
			}
		}
		if !slices.Equal(src.limits, tc.want) {
			t.Errorf("with FullMemoryLimit %d generations ran under the limits %v, want %v", tc.full, src.limits, tc.want)
		}
	}
}

// TestMemoryLimitsReadAsGOMEMLIMIT holds ParseMemoryLimit to GOMEMLIMIT's syntax.
func TestMemoryLimitsReadAsGOMEMLIMIT(t *testing.T) {
	for in, want := range map[string]int64{"": 0, "0": 0, "1024": 1024, "512B": 512, "4KiB": 4 << 10, "400MiB": 400 << 20,
		"2GiB": 2 << 30, "1TiB": 1 << 40} {
		if got, err := ParseMemoryLimit(in); err != nil || got != want {
			t.Errorf("%q reads as %d (%v), want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"400MB", "-1", "1.5GiB", "MiB", "lots", "9223372036854775807KiB", " 1MiB"} {
		if got, err := ParseMemoryLimit(in); err == nil {
			t.Errorf("%q reads as %d, want an error", in, got)
		}
	}
}

// heldSeen notes, at each read, how many holds of the compressors are in force.
type heldSeen struct {
	records
	held  *int
	reads []int
}

func (h *heldSeen) DirectoryRecords(ctx context.Context, now time.Time) (trust.Records, error) {
	h.reads = append(h.reads, *h.held)
	return h.records.DirectoryRecords(ctx, now)
}

// TestChangesHoldTheCompressorsAndFullGenerationsDoNot checks that a generation after
// a change holds the pooled compressors from before it reads until its files are
// written, and releases them before it returns, while a full one, under its memory
// limit, leaves them to the collector; and that a failed generation releases them too.
func TestChangesHoldTheCompressorsAndFullGenerationsDoNot(t *testing.T) {
	held, holds := 0, 0
	defer func(h func() func()) { holdCompressors = h }(holdCompressors)
	holdCompressors = func() func() {
		held++
		holds++
		release := resource.HoldCompressors()
		return sync.OnceFunc(func() {
			held--
			release()
		})
	}
	src := &heldSeen{records: records{rec: testRecords(6, time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC))}, held: &held}
	g := &Generator{Source: src, Site: testSite(t.TempDir())}
	for i, sameClock := range []bool{false, true, true, false} {
		if i == 2 {
			src.rec.Methods[0].Method.Slug = src.rec.Methods[1].Method.Slug // a duplicate: the build fails
		}
		_, err := g.once(context.Background(), sameClock)
		if (err != nil) != (i == 2) {
			t.Fatalf("generation %d: %v", i, err)
		}
		if i == 2 {
			src.rec = testRecords(6, time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC))
		}
		if held != 0 {
			t.Fatalf("generation %d returned with the compressors held %d times", i, held)
		}
	}
	if want := []int{0, 1, 1, 0}; !slices.Equal(src.reads, want) || holds != 2 {
		t.Errorf("the generations read with the compressors held %v times, want %v (%d holds, want 2)", src.reads, want, holds)
	}
}

// afterSeen is a catalog that reads after an earlier read, noting which read each
// generation made: "all", or "after" with the methods it was given.
type afterSeen struct {
	records
	reads []string
}

func (a *afterSeen) DirectoryRecords(ctx context.Context, now time.Time) (trust.Records, error) {
	a.reads = append(a.reads, "all")
	return a.records.DirectoryRecords(ctx, now)
}

func (a *afterSeen) DirectoryRecordsAfter(ctx context.Context, now time.Time, prev []trust.MethodRecord) (trust.Records, error) {
	a.reads = append(a.reads, fmt.Sprintf("after %d", len(prev)))
	return a.records.DirectoryRecords(ctx, now)
}

// TestAFailedGenerationReadsEveryRecordNext checks that a generation lets go of what
// it kept of the records before once it has read, so that after one that fails the
// next reads every record, and publishes what a full build would; and the one after
// that reads after it again.
func TestAFailedGenerationReadsEveryRecordNext(t *testing.T) {
	at := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	src := &afterSeen{records: records{rec: testRecords(6, at)}}
	for i := range src.rec.Methods {
		src.rec.Methods[i].Version = "1"
	}
	site := testSite(t.TempDir())
	g := &Generator{Source: src, Site: site}
	for i := range 4 {
		if i == 1 {
			src.rec.Methods[0].Method.Slug = src.rec.Methods[1].Method.Slug // a duplicate: the build fails
		}
		_, err := g.once(context.Background(), true)
		if (err != nil) != (i == 1) {
			t.Fatalf("generation %d: %v", i, err)
		}
		if i == 1 {
			src.rec = testRecords(6, at)
			for i := range src.rec.Methods {
				src.rec.Methods[i].Version = "2"
			}
			src.rec.Methods[2].Method.Description = "Does something else now."
		}
	}
	if want := []string{"all", "after 6", "all", "after 6"}; !slices.Equal(src.reads, want) {
		t.Errorf("the generations read %q, want %q", src.reads, want)
	}
	want, err := Assemble(src.rec, g.last.Info().GeneratedAt, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := g.last.Info().ID; got != want.Info().ID {
		t.Errorf("after the failure, snapshot %s, want a full build's %s", got, want.Info().ID)
	}
}

// freshRecords is a catalog read anew at every generation, whose methods' array tells
// when the collector takes it.
type freshRecords struct {
	at    time.Time
	taken chan struct{}
}

func (f *freshRecords) DirectoryRecords(context.Context, time.Time) (trust.Records, error) {
	rec := testRecords(64, f.at)
	f.taken = make(chan struct{})
	runtime.AddCleanup(&rec.Methods[0], func(ch chan struct{}) { close(ch) }, f.taken)
	return rec, nil
}

// TestAGenerationLetsGoOfTheRecordsBeforeItsSnapshotIsMade checks that a generation
// does not hold the records it read, scored, while it makes the snapshot (with its
// list, the largest of what it holds): the collector takes their methods' array
// before the snapshot is made.
func TestAGenerationLetsGoOfTheRecordsBeforeItsSnapshotIsMade(t *testing.T) {
	src := &freshRecords{at: time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)}
	defer func(n newSnapshot) { newUnencoded = n }(newUnencoded)
	var collected []bool
	newUnencoded = func(prev *directory.Snapshot, at time.Time, methods []directory.Method, merchants []directory.Merchant) (*directory.Snapshot, error) {
		taken := false
		for i := 0; i < 100 && !taken; i++ {
			runtime.GC()
			select {
			case <-src.taken:
				taken = true
			case <-time.After(10 * time.Millisecond):
			}
		}
		collected = append(collected, taken)
		return directory.NewSnapshotUnencoded(prev, at, methods, merchants)
	}
	g := &Generator{Source: src, Site: testSite(t.TempDir())}
	for _, sameClock := range []bool{false, true} {
		if _, err := g.once(context.Background(), sameClock); err != nil {
			t.Fatal(err)
		}
	}
	if want := []bool{true, true}; !slices.Equal(collected, want) {
		t.Errorf("whether the collector took the records' methods before each snapshot was made: %v, want %v", collected, want)
	}
}
