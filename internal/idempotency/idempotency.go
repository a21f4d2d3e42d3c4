// Package idempotency is the domain of idempotent writes: a write sent again with the
// same key and body gets the first answer instead of running twice.
package idempotency

import (
	"context"
	"time"
)

// Record is the stored answer to an idempotent request.
type Record struct {
	BodySHA256  []byte
	Status      int // 0 while the first request is in progress
	ContentType string
	Response    []byte
}

// Store remembers idempotent requests by (key id, route, idempotency key).
type Store interface {
	// ClaimIdempotency records that the request with body hash sha is being answered
	// and returns nil, or returns the record of an earlier request with the same key.
	// ttl 0 remembers the key for good.
	ClaimIdempotency(ctx context.Context, kid, route, key string, sha []byte, ttl time.Duration) (*Record, error)
	// FinishIdempotency stores the answer of a claimed request.
	FinishIdempotency(ctx context.Context, kid, route, key string, status int, contentType string, response []byte) error
	// ReleaseIdempotency forgets a claimed request that failed, so that a retry runs it.
	ReleaseIdempotency(ctx context.Context, kid, route, key string) error
}
