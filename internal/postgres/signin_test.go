package postgres_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/waystation/waystation/internal/postgres/pgtest"
)

// Sign-in attempts per address share one bucket whichever replica counts them:
// burst at once, then one per refill; a refused attempt takes nothing; concurrent
// attempts never pass the burst; another address has its own; an hour idle forgets.
func TestSignInAttemptsShareOneBucketPerAddress(t *testing.T) {
	ctx := context.Background()
	store := pgtest.New(t)
	take := func(addr string) (bool, time.Duration) {
		t.Helper()
		ok, wait, err := store.TakeSignInAttempt(ctx, addr, 10, 10)
		if err != nil {
			t.Fatal(err)
		}
		return ok, wait
	}
	// Concurrent attempts, as from several replicas at once.
	var wg sync.WaitGroup
	var mu sync.Mutex
	allowed := 0
	for range 16 {
		wg.Go(func() {
			ok, _, err := store.TakeSignInAttempt(ctx, "203.0.113.7", 10, 10)
			if err != nil {
				t.Error(err)
			}
			if ok {
				mu.Lock()
				allowed++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if allowed != 10 {
		t.Fatalf("%d of 16 concurrent attempts were allowed, want the burst of 10", allowed)
	}
	ok, wait := take("203.0.113.7")
	if ok || wait <= 0 || wait > 6*time.Second {
		t.Fatalf("past the burst: %v, wait %v (one refills in 6 s)", ok, wait)
	}
	if ok, _ := take("198.51.100.1"); !ok {
		t.Error("another address shares the bucket")
	}
	// Six seconds later one attempt is back, and only one.
	if _, err := store.Pool().Exec(ctx, `UPDATE sign_in_attempts SET at = at - interval '6.1 seconds' WHERE address = '203.0.113.7'`); err != nil {
		t.Fatal(err)
	}
	if ok, _ := take("203.0.113.7"); !ok {
		t.Error("a refilled attempt was refused")
	}
	if ok, _ := take("203.0.113.7"); ok {
		t.Error("two attempts came back in six seconds")
	}
	// An hour idle: swept, and a full burst again.
	if _, err := store.Pool().Exec(ctx, `UPDATE sign_in_attempts SET at = at - interval '2 hours'`); err != nil {
		t.Fatal(err)
	}
	take("192.0.2.1")
	var n int
	if err := store.Pool().QueryRow(ctx, `SELECT count(*) FROM sign_in_attempts`).Scan(&n); err != nil || n != 1 {
		t.Errorf("after the sweep %d rows are left (%v), want the new one", n, err)
	}
}
