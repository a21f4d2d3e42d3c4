package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/waystation/waystation/internal/postgres/pgtest"
)

// TestExpiredIdempotencyRecordsAreDeleted: the sweep deletes expired and abandoned
// records, and keeps the live ones and those kept for good.
func TestExpiredIdempotencyRecordsAreDeleted(t *testing.T) {
	ctx := context.Background()
	store := pgtest.New(t)
	claim := func(key string, ttl time.Duration) {
		if _, err := store.ClaimIdempotency(ctx, "kid", "POST /x", key, []byte{1}, ttl); err != nil {
			t.Fatal(err)
		}
		if err := store.FinishIdempotency(ctx, "kid", "POST /x", key, 200, "application/json", []byte("{}")); err != nil {
			t.Fatal(err)
		}
	}
	claim("live", time.Hour)
	claim("forever", 0)
	claim("expired", time.Hour)
	if _, err := store.ClaimIdempotency(ctx, "kid", "POST /x", "abandoned", []byte{1}, time.Hour); err != nil {
		t.Fatal(err)
	}
	store.Pool().Exec(ctx, `UPDATE idempotency_keys SET expires_at = now() - interval '1 second' WHERE key = 'expired'`)
	store.Pool().Exec(ctx, `UPDATE idempotency_keys SET created_at = now() - interval '1 hour' WHERE key = 'abandoned'`)
	n, err := store.DeleteExpiredIdempotency(ctx)
	if err != nil || n != 2 {
		t.Fatalf("deleted %d: %v", n, err)
	}
	var left int
	store.Pool().QueryRow(ctx, `SELECT count(*) FROM idempotency_keys`).Scan(&left)
	if left != 2 {
		t.Fatalf("%d records left, want 2", left)
	}
}
