package periodic_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waystation/waystation/internal/periodic"
)

func TestRunCallsAfterFirstThenEveryUntilTheContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var calls atomic.Int32
	done := make(chan struct{})
	start := time.Now()
	var firstAt time.Duration
	go func() {
		periodic.Run(ctx, 30*time.Millisecond, time.Millisecond, func(context.Context) {
			if calls.Add(1) == 1 {
				firstAt = time.Since(start)
			}
			if calls.Load() == 5 {
				cancel()
			}
		})
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
	if calls.Load() != 5 || firstAt < 30*time.Millisecond {
		t.Errorf("%d calls, the first after %s", calls.Load(), firstAt)
	}
}

func TestRunDoesNotCallOnAnEndedContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	periodic.Run(ctx, 0, time.Millisecond, func(context.Context) { t.Error("called") })
}

// TestSweepLogsFailuresAndCountsUntilTheContextEnds sweeps every few milliseconds: the
// first sweep comes after one interval; a failure is a warning, a count a debug line,
// a sweep of nothing is not logged; a failure as the context ends is no failure; and
// Sweep returns once its context ends.
func TestSweepLogsFailuresAndCountsUntilTheContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var logged lines
	results := []struct {
		n   int
		err error
	}{{3, nil}, {0, errors.New("database away")}, {0, nil}, {2, nil}}
	var calls int
	var firstAt time.Duration
	start := time.Now()
	done := make(chan struct{})
	go func() {
		periodic.Sweep(ctx, 20*time.Millisecond, slog.New(&logged), "delete stale rows", func(context.Context) (int, error) {
			if calls == 0 {
				firstAt = time.Since(start)
			}
			if calls == len(results) {
				cancel()
				return 0, context.Canceled
			}
			r := results[calls]
			calls++
			return r.n, r.err
		})
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Sweep did not return after its context ended")
	}
	want := []string{"DEBUG delete stale rows count=3", "WARN delete stale rows failed err=database away", "DEBUG delete stale rows count=2"}
	if got := logged.all(); !slices.Equal(got, want) {
		t.Errorf("logged %q, want %q", got, want)
	}
	if firstAt < 20*time.Millisecond {
		t.Errorf("the first sweep came after %s, before its interval", firstAt)
	}
}

// lines is a slog handler that keeps each record as a line: its level, message and
// attributes.
type lines struct {
	mu  sync.Mutex
	got []string
}

func (*lines) Enabled(context.Context, slog.Level) bool { return true }
func (l *lines) Handle(_ context.Context, r slog.Record) error {
	line := r.Level.String() + " " + r.Message
	r.Attrs(func(a slog.Attr) bool { line += " " + a.String(); return true })
	l.mu.Lock()
	defer l.mu.Unlock()
	l.got = append(l.got, line)
	return nil
}
func (l *lines) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *lines) WithGroup(string) slog.Handler      { return l }

func (l *lines) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.got)
}
