package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/waystation/waystation/internal/auth"
)

var _ auth.PasskeyStore = (*Store)(nil)

const passkeyColumns = `id, user_id, name, created_at, last_used_at, credential_id, credential`

func scanPasskey(row pgx.Row) (auth.Passkey, error) {
	var p auth.Passkey
	err := row.Scan(&p.ID, &p.UserID, &p.Name, &p.CreatedAt, &p.LastUsedAt, &p.CredentialID, &p.Credential)
	return p, err
}

// Passkeys lists userID's passkeys, oldest first.
func (s *Store) Passkeys(ctx context.Context, userID string) ([]auth.Passkey, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+passkeyColumns+` FROM passkeys WHERE user_id = $1 ORDER BY created_at, id`, userID)
	if err != nil {
		return nil, fail("passkeys", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (auth.Passkey, error) { return scanPasskey(r) })
	if err != nil {
		return nil, fail("passkeys", err)
	}
	return out, nil
}

// PasskeyByCredential finds the passkey an authenticator names, under rpID.
func (s *Store) PasskeyByCredential(ctx context.Context, rpID string, credentialID []byte) (auth.Passkey, error) {
	p, err := scanPasskey(s.pool.QueryRow(ctx, `SELECT `+passkeyColumns+` FROM passkeys WHERE rp_id = $1 AND credential_id = $2`, rpID, credentialID))
	if errors.Is(err, pgx.ErrNoRows) {
		return p, auth.ErrPasskeyNotFound
	}
	if err != nil {
		return p, fail("passkey", err)
	}
	return p, nil
}

// AddPasskey registers p for its user under rpID, unless they hold max already.
func (s *Store) AddPasskey(ctx context.Context, rpID string, p auth.Passkey, max int) (auth.Passkey, error) {
	var out auth.Passkey
	err := s.capped(ctx, p.UserID, `SELECT count(*) FROM passkeys WHERE user_id = $1`, max, auth.ErrTooManyPasskeys, func(tx pgx.Tx) error {
		var err error
		out, err = scanPasskey(tx.QueryRow(ctx, `
			INSERT INTO passkeys (user_id, rp_id, credential_id, name, credential)
			VALUES ($1, $2, $3, $4, $5)
			RETURNING `+passkeyColumns, p.UserID, rpID, p.CredentialID, p.Name, p.Credential))
		return err
	})
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" {
		return out, auth.ErrPasskeyExists
	}
	if err != nil {
		return out, fail("add passkey", err)
	}
	return out, nil
}

// UsedPasskey records a sign-in with id and the credential's new record (its
// signature counter).
func (s *Store) UsedPasskey(ctx context.Context, id string, credential []byte) error {
	if _, err := s.pool.Exec(ctx, `UPDATE passkeys SET credential = $2, last_used_at = now() WHERE id = $1`, id, credential); err != nil {
		return fail("use passkey", err)
	}
	return nil
}

// DeletePasskey removes id of userID; its sign-ins go with it (ON DELETE CASCADE).
func (s *Store) DeletePasskey(ctx context.Context, userID, id string) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM passkeys WHERE id = $1 AND user_id = $2`, id, userID)
	if err != nil {
		return fail("delete passkey", err)
	}
	if tag.RowsAffected() == 0 {
		return auth.ErrPasskeyNotFound
	}
	return nil
}

// SaveCeremony keeps a ceremony for ttl. Ceremonies past their time are swept here,
// as sign-ins are, so that the table holds only live ones.
func (s *Store) SaveCeremony(ctx context.Context, tokenHash []byte, c auth.Ceremony, ttl time.Duration) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM passkey_ceremonies WHERE expires_at <= now()`); err != nil {
		return fail("save ceremony", err)
	}
	_, err := s.pool.Exec(ctx, `
		INSERT INTO passkey_ceremonies (token_hash, user_id, name, session, expires_at)
		VALUES ($1, NULLIF($2, '')::uuid, $3, $4, now() + make_interval(secs => $5))`,
		tokenHash, c.UserID, c.Name, c.Session, ttl.Seconds())
	if err != nil {
		return fail("save ceremony", err)
	}
	return nil
}

// TakeCeremony deletes the ceremony and returns it: two answers to one challenge
// find it once.
func (s *Store) TakeCeremony(ctx context.Context, tokenHash []byte) (auth.Ceremony, error) {
	var c auth.Ceremony
	var user *string
	var live bool
	err := s.pool.QueryRow(ctx, `
		DELETE FROM passkey_ceremonies WHERE token_hash = $1
		RETURNING user_id::text, name, session, expires_at > now()`, tokenHash).Scan(&user, &c.Name, &c.Session, &live)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && !live) {
		return c, auth.ErrNoCeremony
	}
	if err != nil {
		return c, fail("take ceremony", err)
	}
	c.UserID = orEmpty(user)
	return c, nil
}
