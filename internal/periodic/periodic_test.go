package periodic_test

import (
	"context"
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
