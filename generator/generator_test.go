package generator

import (
	"context"
	"math"
	"runtime/debug"
	"slices"
	"testing"
	"time"

	"github.com/waystation/waystation/internal/trust"
)

// limitSeen is a record store that notes the soft memory limit each read runs under.
type limitSeen struct {
	records
	limits []int64
}

func (l *limitSeen) DirectoryRecords(ctx context.Context, now time.Time) (trust.Records, error) {
	l.limits = append(l.limits, debug.SetMemoryLimit(-1))
	return l.records.DirectoryRecords(ctx, now)
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
