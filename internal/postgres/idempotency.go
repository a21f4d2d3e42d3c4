package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/waystation/waystation/internal/idempotency"
)

var (
	_ idempotency.Store   = (*Store)(nil)
	_ idempotency.Expired = (*Store)(nil)
)

// staleIdempotency is true of a record that expired, or whose request was abandoned
// in progress (the server stopped before answering): both are forgotten when claimed.
const staleIdempotency = `(coalesce(expires_at < now(), false) OR (status IS NULL AND created_at < now() - interval '2 minutes'))`

// ClaimIdempotency records that the request (kid, route, key) with this body
// fingerprint is being answered, and returns nil; if one is already recorded (and not
// expired) it returns that one instead. ttl 0 keeps the record for good.
func (s *Store) ClaimIdempotency(ctx context.Context, kid, route, key string, fingerprint []byte, ttl time.Duration) (*idempotency.Record, error) {
	var expires *time.Time
	if ttl > 0 {
		t := time.Now().Add(ttl)
		expires = &t
	}
	for range 3 {
		tag, err := s.pool.Exec(ctx, `
			INSERT INTO idempotency_keys (kid, route, key, body_mac, expires_at) VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (kid, route, key) DO NOTHING`, kid, route, key, fingerprint, expires)
		if err != nil {
			return nil, fail("claim idempotency key", err)
		}
		if tag.RowsAffected() == 1 {
			return nil, nil
		}
		var got idempotency.Record
		var status *int
		var ct *string
		var stale bool
		err = s.pool.QueryRow(ctx, `
			SELECT body_mac, status, content_type, response, `+staleIdempotency+`
			FROM idempotency_keys WHERE kid = $1 AND route = $2 AND key = $3`, kid, route, key).
			Scan(&got.Fingerprint, &status, &ct, &got.Response, &stale)
		if errors.Is(err, pgx.ErrNoRows) {
			continue // released meanwhile
		}
		if err != nil {
			return nil, fail("claim idempotency key", err)
		}
		if stale {
			s.pool.Exec(ctx, `DELETE FROM idempotency_keys WHERE kid = $1 AND route = $2 AND key = $3 AND `+staleIdempotency, kid, route, key)
			continue
		}
		if status != nil {
			got.Status = *status
		}
		if ct != nil {
			got.ContentType = *ct
		}
		return &got, nil
	}
	return nil, errors.New("postgres: claim idempotency key: contended")
}

// FinishIdempotency stores the response to a claimed request.
func (s *Store) FinishIdempotency(ctx context.Context, kid, route, key string, status int, contentType string, response []byte) error {
	_, err := s.pool.Exec(ctx, `
		UPDATE idempotency_keys SET status = $4, content_type = $5, response = $6
		WHERE kid = $1 AND route = $2 AND key = $3`, kid, route, key, status, contentType, response)
	if err != nil {
		return fail("finish idempotency key", err)
	}
	return nil
}

// ReleaseIdempotency forgets a claimed request that failed, so that a retry runs it.
func (s *Store) ReleaseIdempotency(ctx context.Context, kid, route, key string) error {
	_, err := s.pool.Exec(ctx, `DELETE FROM idempotency_keys WHERE kid = $1 AND route = $2 AND key = $3 AND status IS NULL`, kid, route, key)
	if err != nil {
		return fail("release idempotency key", err)
	}
	return nil
}

// DeleteExpiredIdempotency deletes the records that expired or were abandoned in
// progress, and returns how many.
func (s *Store) DeleteExpiredIdempotency(ctx context.Context) (int, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM idempotency_keys WHERE `+staleIdempotency)
	if err != nil {
		return 0, fail("delete expired idempotency keys", err)
	}
	return int(tag.RowsAffected()), nil
}
