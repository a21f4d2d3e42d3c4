package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/waystation/waystation/internal/auth"
	"github.com/waystation/waystation/internal/request"
)

var _ auth.WebSessionStore = (*Store)(nil)

// CreateWebSession records a sign-in to the approval pages: the token's hash, the
// key or passkey it was made with and its CSRF token, for ttl. Sessions past their
// time are swept here, so that the table holds only live ones without a chore of its
// own.
func (s *Store) CreateWebSession(ctx context.Context, tokenHash []byte, by auth.SignIn, csrfToken string, ttl time.Duration) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM web_sessions WHERE expires_at <= now()`); err != nil {
		return fail("create web session", err)
	}
	_, err := s.pool.Exec(ctx, `
		INSERT INTO web_sessions (token_hash, kid, passkey_id, csrf_token, expires_at)
		VALUES ($1, NULLIF($2, ''), NULLIF($3, '')::uuid, $4, now() + make_interval(secs => $5))`, tokenHash, by.KID, by.PasskeyID, csrfToken, ttl.Seconds())
	if err != nil {
		return fail("create web session", err)
	}
	return nil
}

// WebSession returns the live sign-in whose token hashes to tokenHash, with the
// state of its key read now (no cache: a revocation counts on the next page load).
// A passkey's sign-in is a user's; deleting the passkey deleted its sign-ins.
// auth.ErrNoWebSession when there is none or its time ran out.
func (s *Store) WebSession(ctx context.Context, tokenHash []byte) (auth.WebSession, error) {
	var w auth.WebSession
	var scope string
	var kid, agent, passkeyID, passkeyName *string
	err := s.pool.QueryRow(ctx, `
		SELECT k.kid, coalesce(k.scope, 'user'), u.id, u.name, k.agent_id, p.id::text, p.name,
		       w.csrf_token, w.expires_at, k.revoked_at IS NOT NULL
		FROM web_sessions w
		LEFT JOIN api_keys k ON k.kid = w.kid
		LEFT JOIN passkeys p ON p.id = w.passkey_id
		JOIN users u ON u.id = coalesce(k.user_id, p.user_id)
		WHERE w.token_hash = $1 AND w.expires_at > now()`, tokenHash).
		Scan(&kid, &scope, &w.UserID, &w.UserName, &agent, &passkeyID, &passkeyName, &w.CSRFToken, &w.ExpiresAt, &w.Revoked)
	if errors.Is(err, pgx.ErrNoRows) {
		return w, auth.ErrNoWebSession
	}
	if err != nil {
		return w, fail("web session", err)
	}
	w.Scope = auth.Scope(scope)
	w.KID, w.AgentID, w.PasskeyID, w.PasskeyName = orEmpty(kid), orEmpty(agent), orEmpty(passkeyID), orEmpty(passkeyName)
	return w, nil
}

// DeleteWebSession ends a sign-in; ending one that is gone is not an error.
func (s *Store) DeleteWebSession(ctx context.Context, tokenHash []byte) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM web_sessions WHERE token_hash = $1`, tokenHash); err != nil {
		return fail("delete web session", err)
	}
	return nil
}

// WaitingRequests lists the requests of userID still waiting for them, newest first,
// at most limit: the approval pages' index. Requests whose time ran out are left out,
// as they can no longer be decided.
func (s *Store) WaitingRequests(ctx context.Context, userID string, limit int) ([]request.Request, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+requestColumns+requestFrom+`
		WHERE r.user_id = $1 AND r.status = 'waiting_user' AND r.expires_at > now()
		ORDER BY r.created_at DESC, r.id DESC LIMIT $2`, userID, limit)
	if err != nil {
		return nil, fail("waiting requests", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (request.Request, error) { return scanRequest(r) })
	if err != nil {
		return nil, fail("waiting requests", err)
	}
	return out, nil
}

var _ auth.SignInAttempts = (*Store)(nil)

// TakeSignInAttempt takes one attempt from address's bucket, which every replica
// shares: refilled since its last attempt at perMinute a minute up to burst, less the
// one taken when there is one. Addresses idle for an hour are swept first.
func (s *Store) TakeSignInAttempt(ctx context.Context, address string, burst, perMinute float64) (bool, time.Duration, error) {
	if len(address) > 100 {
		address = address[:100]
	}
	if _, err := s.pool.Exec(ctx, `DELETE FROM sign_in_attempts WHERE at < now() - interval '1 hour'`); err != nil {
		return false, 0, fail("sign-in attempt", err)
	}
	var allowed bool
	var tokens float64
	err := s.pool.QueryRow(ctx, `
		INSERT INTO sign_in_attempts AS a (address, tokens, allowed, at) VALUES ($1, $2::float8 - 1, true, now())
		ON CONFLICT (address) DO UPDATE SET
			allowed = least($2::float8, a.tokens + extract(epoch FROM now() - a.at)::float8 * $3::float8 / 60) >= 1,
			tokens = least($2::float8, a.tokens + extract(epoch FROM now() - a.at)::float8 * $3::float8 / 60)
			       - CASE WHEN least($2::float8, a.tokens + extract(epoch FROM now() - a.at)::float8 * $3::float8 / 60) >= 1 THEN 1 ELSE 0 END,
			at = now()
		RETURNING allowed, tokens`, address, burst, perMinute).Scan(&allowed, &tokens)
	if err != nil {
		return false, 0, fail("sign-in attempt", err)
	}
	if allowed {
		return true, 0, nil
	}
	return false, time.Duration((1 - tokens) / perMinute * float64(time.Minute)), nil
}
