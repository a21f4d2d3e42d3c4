// Package idempotency is the domain of idempotent writes: a write sent again with the
// same key and body gets the first answer instead of running twice.
package idempotency

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"log/slog"
	"time"

	"github.com/waystation/waystation/internal/periodic"
)

// Record is the stored answer to an idempotent request.
type Record struct {
	// Fingerprint tells a retry's body from another (Fingerprint).
	Fingerprint []byte
	Status      int // 0 while the first request is in progress
	ContentType string
	Response    []byte
}

// Fingerprint is what is kept of a request's body to tell a retry from another body:
// an HMAC-SHA256 under the server's secret, so that a value in the body (a card's
// three digits) cannot be recovered from a copy of the database by hashing candidates.
func Fingerprint(secret []byte, route string, body []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("waystation idempotency v1\x00"))
	m.Write([]byte(route))
	m.Write([]byte{0})
	m.Write(body)
	return m.Sum(nil)
}

// Store remembers idempotent requests by (key id, route, idempotency key).
type Store interface {
	// ClaimIdempotency records that the request with this body fingerprint is being
	// answered and returns nil, or returns the record of an earlier request with the
	// same key. ttl 0 remembers the key for good.
	ClaimIdempotency(ctx context.Context, kid, route, key string, fingerprint []byte, ttl time.Duration) (*Record, error)
	// FinishIdempotency stores the answer of a claimed request.
	FinishIdempotency(ctx context.Context, kid, route, key string, status int, contentType string, response []byte) error
	// ReleaseIdempotency forgets a claimed request that failed, so that a retry runs it.
	ReleaseIdempotency(ctx context.Context, kid, route, key string) error
}

// Expired deletes the records that expired or were abandoned in progress.
type Expired interface {
	DeleteExpiredIdempotency(ctx context.Context) (int, error)
}

// Sweeper deletes expired records every Every, until its context ends.
type Sweeper struct {
	Store Expired
	Every time.Duration
	Log   *slog.Logger
}

// Run sweeps every s.Every until ctx ends.
func (s Sweeper) Run(ctx context.Context) {
	periodic.Sweep(ctx, s.Every, s.Log, "delete expired idempotency records", s.Store.DeleteExpiredIdempotency)
}
