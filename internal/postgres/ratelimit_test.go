package postgres_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waystation/waystation/internal/postgres/pgtest"
	"github.com/waystation/waystation/internal/ratelimit"
)

// A rate of more than a query a microsecond, a limit set so high that it never
// refuses, refuses nothing: takes whose clocks run behind the last one's included.
func TestSharedSearchRateAboveAQueryAMicrosecond(t *testing.T) {
	store := pgtest.New(t)
	now := time.Unix(1_800_000_000, 0)
	l := ratelimit.NewLimiter(1e9, 1e9, 10, func() time.Time { return now })
	l.Shared = patient{store}
	for i := range 20 {
		now = now.Add(time.Duration(i%3-1) * time.Millisecond)
		if d := l.Allow(context.Background(), "ada"); !d.OK {
			t.Fatalf("take %d: refused: %+v", i, d)
		}
	}
}

// Two replicas' limiters on one store share each caller's bucket: together they
// allow the burst, then refuse with a time to retry, and refill at the rate, as one
// limiter does; concurrent queries from both never take more than the bucket held.
func TestReplicasShareTheSearchRate(t *testing.T) {
	store := pgtest.New(t)
	now := time.Unix(1_800_000_000, 0)
	clock := func() time.Time { return now }
	a, b := ratelimit.NewLimiter(60, 2, 10, clock), ratelimit.NewLimiter(60, 2, 10, clock)
	// Each take is given all the time it needs: past the limiter's bound on a take
	// (a loaded machine, a fresh database), a replica's own bucket would decide, and
	// this test is about the shared one.
	a.Shared, b.Shared = patient{store}, patient{store}
	ctx := context.Background()
	if d := a.Allow(ctx, "ada"); !d.OK || d.Remaining != 1 || d.Limit != 2 || d.Reset != time.Second {
		t.Fatalf("first on A: %+v", d)
	}
	if d := b.Allow(ctx, "ada"); !d.OK || d.Remaining != 0 {
		t.Fatalf("second on B: %+v", d)
	}
	d := a.Allow(ctx, "ada")
	if d.OK || d.RetryAfter <= 0 || d.RetryAfter > time.Second {
		t.Fatalf("third, on A: %+v", d)
	}
	if !b.Allow(ctx, "bob").OK {
		t.Fatal("callers share a bucket")
	}
	now = now.Add(time.Second)
	if !b.Allow(ctx, "ada").OK || b.Allow(ctx, "ada").OK {
		t.Fatal("the bucket did not refill by one query a second")
	}

	// A burst from both at once takes what the bucket holds, no more.
	now = now.Add(time.Hour)
	// 80 takes at once wait on each other: patient again.
	wide := []*ratelimit.Limiter{ratelimit.NewLimiter(60, 20, 10, clock), ratelimit.NewLimiter(60, 20, 10, clock)}
	for _, l := range wide {
		l.Shared = patient{store}
	}
	var allowed atomic.Int32
	var wg sync.WaitGroup
	for i := range 80 {
		l := wide[i%2]
		wg.Go(func() {
			if l.Allow(ctx, "carol").OK {
				allowed.Add(1)
			}
		})
	}
	wg.Wait()
	if n := allowed.Load(); n != 20 {
		t.Errorf("%d of 80 concurrent queries allowed on two replicas, want the burst of 20", n)
	}
}

// BenchmarkSharedSearchToken is what a search pays for a rate shared by every
// replica: one statement on the store (an unlogged table).
func BenchmarkSharedSearchToken(b *testing.B) {
	store := pgtest.New(b)
	l := ratelimit.NewLimiter(1e9, 1<<30, 10, nil)
	l.Shared = store
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if !l.Allow(ctx, "caller").OK {
			b.Fatal("refused")
		}
	}
}

// patient takes from the store without the caller's deadline.
type patient struct{ ratelimit.Store }

func (p patient) TakeToken(ctx context.Context, caller string, now time.Time, interval time.Duration, burst int) (time.Time, bool, error) {
	return p.Store.TakeToken(context.WithoutCancel(ctx), caller, now, interval, burst)
}
