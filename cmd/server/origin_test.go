package main

import (
	"context"
	"testing"
	"time"

	"github.com/waystation/waystation/internal/postgres/pgtest"
	"github.com/waystation/waystation/internal/ratelimit"
)

// TestOriginSubmissionsShareOneBucketPerUserAcrossReplicas: two replicas' limiters
// over the same store hold a user to one bucket of a quarter of the hourly rate
// between them, refusing the next with the time until the bucket holds one again,
// while another user keeps a bucket of its own.
func TestOriginSubmissionsShareOneBucketPerUserAcrossReplicas(t *testing.T) {
	t.Parallel()
	// The store is given all the time it needs: past the limiter's bound on a take
	// (a loaded machine), a replica's own bucket would decide, and this test is
	// about the shared one.
	store := patientStore{pgtest.New(t)}
	ctx := context.Background()
	a, b := submitLimiter(20, store), submitLimiter(20, store) // bursts of 5
	taken := 0
	for i := range 10 {
		l := a
		if i%2 == 1 {
			l = b
		}
		if _, ok := l.Take(ctx, "origin:user:ada"); ok {
			taken++
		}
	}
	if taken != 5 {
		t.Fatalf("two replicas let %d submissions through; the bucket holds 5", taken)
	}
	wait, ok := b.Take(ctx, "origin:user:ada")
	if ok || wait <= 0 || wait > 3*time.Minute {
		t.Errorf("a sixth submission: allowed %v, wait %s (one refills every 3 minutes)", ok, wait)
	}
	if _, ok := a.Take(ctx, "origin:user:bob"); !ok {
		t.Error("another user was refused")
	}
}

// patientStore takes from the store without the caller's deadline.
type patientStore struct{ ratelimit.Store }

func (p patientStore) TakeToken(ctx context.Context, caller string, now time.Time, interval time.Duration, burst int) (time.Time, bool, error) {
	return p.Store.TakeToken(context.WithoutCancel(ctx), caller, now, interval, burst)
}
