package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/waystation/waystation/internal/auth"
	"github.com/waystation/waystation/internal/oauth"
)

var _ oauth.Store = (*Store)(nil)

// CreateClient keeps a registered host; oauth.ErrTooManyClients when max were
// registered in the last day (max 0: no cap). A lock on the table's count keeps
// concurrent registrations within it.
func (s *Store) CreateClient(ctx context.Context, c oauth.Client, max int) (oauth.Client, error) {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if max > 0 {
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('oauth_clients'))`); err != nil {
				return err
			}
			var n int
			if err := tx.QueryRow(ctx, `SELECT count(*) FROM oauth_clients WHERE created_at > now() - interval '1 day'`).Scan(&n); err != nil {
				return err
			}
			if n >= max {
				return oauth.ErrTooManyClients
			}
		}
		return tx.QueryRow(ctx, `INSERT INTO oauth_clients (id, name, redirect_uris) VALUES ($1, $2, $3) RETURNING created_at`,
			c.ID, c.Name, c.RedirectURIs).Scan(&c.CreatedAt)
	})
	if errors.Is(err, oauth.ErrTooManyClients) {
		return c, err
	}
	return c, fail("create client", err)
}

// Client is the registered host id.
func (s *Store) Client(ctx context.Context, id string) (oauth.Client, error) {
	c := oauth.Client{ID: id}
	err := s.pool.QueryRow(ctx, `SELECT name, redirect_uris, created_at FROM oauth_clients WHERE id = $1`, id).
		Scan(&c.Name, &c.RedirectURIs, &c.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return c, oauth.ErrClientNotFound
	}
	return c, fail("client", err)
}

// CreateAuthorization keeps an authorization request until the person answers it,
// and forgets the requests and codes whose time ran out (a code its exchange made a
// grant of is kept while the grant is, so that a replay still revokes it).
func (s *Store) CreateAuthorization(ctx context.Context, r oauth.Request) (string, error) {
	if _, err := s.pool.Exec(ctx, `DELETE FROM oauth_requests WHERE expires_at < now()`); err != nil {
		return "", fail("forget authorization requests", err)
	}
	if _, err := s.pool.Exec(ctx, `
		DELETE FROM oauth_codes c WHERE c.expires_at < now()
		AND NOT EXISTS (SELECT 1 FROM api_keys k WHERE k.kid = c.grant_kid AND k.revoked_at IS NULL)`); err != nil {
		return "", fail("forget codes", err)
	}
	var id string
	err := s.pool.QueryRow(ctx, `
		INSERT INTO oauth_requests (client_id, redirect_uri, code_challenge, scopes, resource, state, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id`,
		r.Client.ID, r.RedirectURI, r.CodeChallenge, r.Scopes, r.Resource, r.State, r.ExpiresAt).Scan(&id)
	return id, fail("create authorization request", err)
}

const authorizationColumns = `r.id, r.redirect_uri, r.code_challenge, r.scopes, r.resource, r.state, r.expires_at,
	c.id, c.name, c.redirect_uris, c.created_at`

func scanAuthorization(row pgx.Row) (oauth.Request, error) {
	var r oauth.Request
	err := row.Scan(&r.ID, &r.RedirectURI, &r.CodeChallenge, &r.Scopes, &r.Resource, &r.State, &r.ExpiresAt,
		&r.Client.ID, &r.Client.Name, &r.Client.RedirectURIs, &r.Client.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return r, oauth.ErrRequestNotFound
	}
	return r, err
}

// AuthorizationRequest is the request id, with its client, while it waits.
func (s *Store) AuthorizationRequest(ctx context.Context, id string) (oauth.Request, error) {
	if !uuidLike(id) {
		return oauth.Request{}, oauth.ErrRequestNotFound
	}
	r, err := scanAuthorization(s.pool.QueryRow(ctx, `SELECT `+authorizationColumns+`
		FROM oauth_requests r JOIN oauth_clients c ON c.id = r.client_id
		WHERE r.id = $1 AND r.expires_at > now()`, id))
	if errors.Is(err, oauth.ErrRequestNotFound) {
		return r, err
	}
	return r, fail("authorization request", err)
}

// TakeAuthorization deletes the request id and gives it back, once.
func (s *Store) TakeAuthorization(ctx context.Context, id string) (oauth.Request, error) {
	if !uuidLike(id) {
		return oauth.Request{}, oauth.ErrRequestNotFound
	}
	r, err := scanAuthorization(s.pool.QueryRow(ctx, `
		WITH r AS (DELETE FROM oauth_requests WHERE id = $1 AND expires_at > now() RETURNING *)
		SELECT `+authorizationColumns+` FROM r JOIN oauth_clients c ON c.id = r.client_id`, id))
	if errors.Is(err, oauth.ErrRequestNotFound) {
		return r, err
	}
	return r, fail("take authorization request", err)
}

// CreateCode keeps an authorization code by its hash.
func (s *Store) CreateCode(ctx context.Context, c oauth.Code) error {
	_, err := s.pool.Exec(ctx, `
		INSERT INTO oauth_codes (hash, client_id, redirect_uri, code_challenge, scopes, resource, user_id, agent_id, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
		c.Hash, c.ClientID, c.RedirectURI, c.CodeChallenge, c.Scopes, c.Resource, c.UserID, c.AgentID, c.ExpiresAt)
	return fail("create code", err)
}

// TakeCode marks the code of hash used, once. A second presentation marks it
// replayed and revokes the grant its first use made, so that whoever exchanged it
// first (the host, or whoever stole the code) loses what they got.
func (s *Store) TakeCode(ctx context.Context, hash []byte) (oauth.Code, error) {
	c := oauth.Code{Hash: hash}
	err := s.pool.QueryRow(ctx, `
		UPDATE oauth_codes SET used_at = now()
		WHERE hash = $1 AND used_at IS NULL AND expires_at > now()
		RETURNING client_id, redirect_uri, code_challenge, scopes, resource, user_id, agent_id, expires_at`, hash).
		Scan(&c.ClientID, &c.RedirectURI, &c.CodeChallenge, &c.Scopes, &c.Resource, &c.UserID, &c.AgentID, &c.ExpiresAt)
	if err == nil {
		return c, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return c, fail("take code", err)
	}
	var replayed bool
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var grant *string
		err := tx.QueryRow(ctx, `UPDATE oauth_codes SET replayed_at = now() WHERE hash = $1 AND used_at IS NOT NULL RETURNING grant_kid`, hash).Scan(&grant)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		replayed = true
		if grant != nil {
			_, err = tx.Exec(ctx, `UPDATE api_keys SET revoked_at = coalesce(revoked_at, now()) WHERE kid = $1`, *grant)
		}
		return err
	})
	if err != nil {
		return c, fail("take code", err)
	}
	if replayed {
		return c, oauth.ErrCodeReplayed
	}
	return c, oauth.ErrCodeNotFound
}

// CreateGrant makes the grant of a taken code, an agent key without a secret within
// the user's cap on keys, and its first tokens.
func (s *Store) CreateGrant(ctx context.Context, code []byte, g oauth.Grant, access, refresh oauth.Token, max int) error {
	err := s.capped(ctx, g.UserID, `SELECT count(*) FROM api_keys WHERE user_id = $1 AND revoked_at IS NULL`, max, auth.ErrTooManyKeys, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `
			INSERT INTO api_keys (kid, scope, user_id, agent_id, prefix, oauth_client_id)
			VALUES ($1, 'agent', $2, $3, $4, $5)`, g.KID, g.UserID, g.AgentID, "oauth_"+g.KID, g.ClientID); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `UPDATE oauth_codes SET grant_kid = $2 WHERE hash = $1 AND replayed_at IS NULL AND grant_kid IS NULL`, code, g.KID)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return oauth.ErrCodeReplayed
		}
		return insertTokens(ctx, tx, g.KID, access, refresh)
	})
	if errors.Is(err, oauth.ErrCodeReplayed) || errors.Is(err, auth.ErrTooManyKeys) {
		return err
	}
	return fail("create grant", err)
}

func insertTokens(ctx context.Context, tx pgx.Tx, kid string, tokens ...oauth.Token) error {
	for _, t := range tokens {
		kind := "access"
		if t.Refresh {
			kind = "refresh"
		}
		if _, err := tx.Exec(ctx, `
			INSERT INTO oauth_tokens (hash, kind, grant_kid, resource, scopes, expires_at) VALUES ($1, $2, $3, $4, $5, $6)`,
			t.Hash, kind, kid, t.Resource, t.Scopes, t.ExpiresAt); err != nil {
			return err
		}
	}
	return nil
}

// AccessToken is the live access token of hash with its grant, and whether the grant
// was revoked or its agent paused.
func (s *Store) AccessToken(ctx context.Context, hash []byte) (oauth.Token, oauth.Grant, bool, error) {
	t, g := oauth.Token{Hash: hash}, oauth.Grant{}
	var revoked bool
	err := s.pool.QueryRow(ctx, `
		SELECT t.resource, t.scopes, t.expires_at, k.kid, k.oauth_client_id, k.user_id, k.agent_id,
		       k.revoked_at IS NOT NULL OR a.status <> 'active'
		FROM oauth_tokens t JOIN api_keys k ON k.kid = t.grant_kid JOIN agents a ON a.id = k.agent_id
		WHERE t.hash = $1 AND t.kind = 'access' AND t.expires_at > now()`, hash).
		Scan(&t.Resource, &t.Scopes, &t.ExpiresAt, &g.KID, &g.ClientID, &g.UserID, &g.AgentID, &revoked)
	if errors.Is(err, pgx.ErrNoRows) {
		return t, g, false, oauth.ErrTokenNotFound
	}
	return t, g, revoked, fail("access token", err)
}

// RotateRefresh spends a refresh token of a live grant of clientID and keeps the
// next two tokens; a spent one presented again revokes its grant.
func (s *Store) RotateRefresh(ctx context.Context, hash []byte, clientID, resource string, access, refresh oauth.Token) (oauth.Token, oauth.Grant, error) {
	old, g := oauth.Token{Hash: hash, Refresh: true}, oauth.Grant{ClientID: clientID}
	var outcome error
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var used, live bool
		err := tx.QueryRow(ctx, `
			SELECT t.resource, t.scopes, t.expires_at, t.used_at IS NOT NULL, k.kid, k.user_id, k.agent_id,
			       k.revoked_at IS NULL AND a.status = 'active' AND t.expires_at > now()
			FROM oauth_tokens t JOIN api_keys k ON k.kid = t.grant_kid JOIN agents a ON a.id = k.agent_id
			WHERE t.hash = $1 AND t.kind = 'refresh' AND k.oauth_client_id = $2
			FOR UPDATE OF t`, hash, clientID).
			Scan(&old.Resource, &old.Scopes, &old.ExpiresAt, &used, &g.KID, &g.UserID, &g.AgentID, &live)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			outcome = oauth.ErrTokenNotFound
			return nil
		case err != nil:
			return err
		case used:
			// A rotated token presented again: one of its holders stole it. The whole
			// grant ends, the thief's tokens and the host's alike.
			outcome = oauth.ErrTokenReplayed
			_, err := tx.Exec(ctx, `UPDATE api_keys SET revoked_at = coalesce(revoked_at, now()) WHERE kid = $1`, g.KID)
			return err
		case !live:
			outcome = oauth.ErrTokenNotFound
			return nil
		case resource != "" && resource != old.Resource:
			outcome = oauth.ErrOtherResource
			return nil
		}
		if _, err := tx.Exec(ctx, `UPDATE oauth_tokens SET used_at = now() WHERE hash = $1`, hash); err != nil {
			return err
		}
		// The grant's tokens out of time go: a spent refresh token is kept until its
		// own end, so that a replay until then still revokes the grant.
		if _, err := tx.Exec(ctx, `DELETE FROM oauth_tokens WHERE grant_kid = $1 AND expires_at < now()`, g.KID); err != nil {
			return err
		}
		access.Resource, access.Scopes = old.Resource, old.Scopes
		refresh.Resource, refresh.Scopes = old.Resource, old.Scopes
		return insertTokens(ctx, tx, g.KID, access, refresh)
	})
	if err != nil {
		return old, g, fail("rotate refresh token", err)
	}
	return old, g, outcome
}

// RevokeToken revokes the grant of the token of hash, when it is clientID's.
func (s *Store) RevokeToken(ctx context.Context, hash []byte, clientID string) error {
	_, err := s.pool.Exec(ctx, `
		UPDATE api_keys k SET revoked_at = coalesce(k.revoked_at, now())
		FROM oauth_tokens t
		WHERE t.hash = $1 AND k.kid = t.grant_kid AND k.oauth_client_id = $2`, hash, clientID)
	return fail("revoke token", err)
}
