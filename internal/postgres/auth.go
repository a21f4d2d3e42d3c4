package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/waystation/waystation/internal/auth"
	"github.com/waystation/waystation/internal/problem"
	"github.com/waystation/waystation/internal/request"
	"github.com/waystation/waystation/internal/session"
)

var (
	_ auth.KeyStore   = (*Store)(nil)
	_ auth.AgentStore = (*Store)(nil)
)

// EnsureUser returns the user called name, creating it if missing.
func (s *Store) EnsureUser(ctx context.Context, name string) (auth.User, error) {
	var u auth.User
	err := s.pool.QueryRow(ctx, `
		INSERT INTO users (name) VALUES ($1)
		ON CONFLICT (name) DO UPDATE SET name = excluded.name
		RETURNING id, name, created_at`, name).Scan(&u.ID, &u.Name, &u.CreatedAt)
	if err != nil {
		return u, fail("ensure user", err)
	}
	return u, nil
}

// EnsureAgent returns the agent of userID called name, creating it if missing.
func (s *Store) EnsureAgent(ctx context.Context, userID, name string) (auth.Agent, error) {
	a, err := scanAgent(s.pool.QueryRow(ctx, `
		INSERT INTO agents (user_id, name) VALUES ($1, $2)
		ON CONFLICT (user_id, name) DO UPDATE SET name = excluded.name
		RETURNING `+agentColumns, userID, name))
	if err != nil {
		return a, fail("ensure agent", err)
	}
	return a, nil
}

const agentColumns = `id, user_id, name, status, coalesce(paused_reason, ''), created_at`

func scanAgent(row pgx.Row) (auth.Agent, error) {
	var a auth.Agent
	err := row.Scan(&a.ID, &a.UserID, &a.Name, &a.Status, &a.PausedReason, &a.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		err = auth.ErrAgentNotFound
	}
	return a, err
}

// CreateAgent adds an agent to userID; auth.ErrAgentExists if the user has one of
// that name, auth.ErrTooManyAgents if it has max agents (max 0: no cap).
func (s *Store) CreateAgent(ctx context.Context, userID, name string, max int) (auth.Agent, error) {
	var a auth.Agent
	err := s.capped(ctx, userID, `SELECT count(*) FROM agents WHERE user_id = $1`, max, auth.ErrTooManyAgents, func(tx pgx.Tx) error {
		var err error
		a, err = scanAgent(tx.QueryRow(ctx, `
			INSERT INTO agents (user_id, name) VALUES ($1, $2)
			RETURNING `+agentColumns, userID, name))
		return err
	})
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" {
		return a, auth.ErrAgentExists
	}
	if err != nil {
		return a, fail("create agent", err)
	}
	return a, nil
}

// capped runs insert in a transaction unless userID already has max of what count
// counts (one $1, the user), which is then refused with full. The user's row is
// locked first, so that concurrent creations for one user count one after another
// and together never pass max; max 0 is no cap.
func (s *Store) capped(ctx context.Context, userID, count string, max int, full error, insert func(pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if max > 0 {
			// The lock does not block inserts that merely reference the user.
			if _, err := tx.Exec(ctx, `SELECT 1 FROM users WHERE id = $1 FOR NO KEY UPDATE`, userID); err != nil {
				return err
			}
			var n int
			if err := tx.QueryRow(ctx, count, userID).Scan(&n); err != nil {
				return err
			}
			if n >= max {
				return full
			}
		}
		return insert(tx)
	})
}

// Agent returns the agent id of userID.
func (s *Store) Agent(ctx context.Context, userID, id string) (auth.Agent, error) {
	a, err := scanAgent(s.pool.QueryRow(ctx, `SELECT `+agentColumns+` FROM agents WHERE id = $1 AND user_id = $2`, id, userID))
	return a, fail("agent", err)
}

// Agents lists the agents of userID, oldest first.
func (s *Store) Agents(ctx context.Context, userID string) ([]auth.Agent, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+agentColumns+` FROM agents WHERE user_id = $1 ORDER BY created_at, id`, userID)
	if err != nil {
		return nil, fail("agents", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (auth.Agent, error) { return scanAgent(r) })
	if err != nil {
		return nil, fail("agents", err)
	}
	return out, nil
}

// SetAgentStatus pauses or resumes an agent of userID: the person's word, which
// clears a pause the service made, and from which the agent's detections count anew.
// Pausing it cancels its payments not yet taken (see setAgentStatus).
func (s *Store) SetAgentStatus(ctx context.Context, userID, id, status string) (auth.Agent, error) {
	if status != auth.AgentActive && status != auth.AgentDisabled {
		return auth.Agent{}, problem.Invalid(`status must be "active" or "disabled".`)
	}
	var a auth.Agent
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if status == auth.AgentDisabled {
			if err := lockPayingSessions(ctx, tx, userID, id); err != nil {
				return err
			}
		}
		var err error
		a, err = setAgentStatus(ctx, tx, userID, id, status, nil)
		return err
	})
	if errors.Is(err, auth.ErrAgentNotFound) {
		return a, err
	}
	return a, fail("set agent status", err)
}

// lockPayingSessions locks, in tx, the sessions of agent id's payments not yet taken
// (waiting for the person, or approved and not yet carried out), in order: a caller
// that pauses the agent locks them before the agent's row, as the executor's Take
// does, so that the two never deadlock.
func lockPayingSessions(ctx context.Context, tx pgx.Tx, userID, id string) error {
	rows, err := tx.Query(ctx, `
		SELECT DISTINCT p.session_id FROM payments p JOIN requests r ON r.id = p.request_id
		WHERE p.agent_id = $1 AND p.user_id = $2 AND p.status = 'pending' AND r.status IN ('waiting_user', 'approved')
		ORDER BY p.session_id`, id, userID)
	if err != nil {
		return err
	}
	sessions, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	for _, sid := range sessions {
		if _, err := tx.Exec(ctx, `SELECT 1 FROM sessions WHERE id = $1 FOR UPDATE`, sid); err != nil {
			return err
		}
	}
	return nil
}

// setAgentStatus sets, in tx, agent id's status, and why the service paused it
// (reason; nil for the person's word). Disabling it cancels, in the same
// transaction, its payments not yet taken, as a session's close does; a payment
// already taken is checked again before it is signed. The caller has locked the
// paying sessions first (lockPayingSessions).
func setAgentStatus(ctx context.Context, tx pgx.Tx, userID, id, status string, reason *string) (auth.Agent, error) {
	a, err := scanAgent(tx.QueryRow(ctx, `
		UPDATE agents SET status = $3, paused_reason = $4,
			status_changed_at = CASE WHEN status = $3 AND paused_reason IS NOT DISTINCT FROM $4 THEN status_changed_at ELSE now() END
		WHERE id = $1 AND user_id = $2 RETURNING `+agentColumns, id, userID, status, reason))
	if errors.Is(err, pgx.ErrNoRows) {
		return a, auth.ErrAgentNotFound
	}
	if err != nil || status != auth.AgentDisabled {
		return a, err
	}
	rows, err := tx.Query(ctx, `SELECT `+requestColumns+requestFrom+`
		WHERE r.id IN (SELECT p.request_id FROM payments p WHERE p.agent_id = $1 AND p.status = 'pending')
		AND r.status IN ('waiting_user', 'approved') ORDER BY r.created_at, r.id FOR UPDATE OF r`, id)
	if err != nil {
		return a, err
	}
	open, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (request.Request, error) { return scanRequest(r) })
	if err != nil {
		return a, err
	}
	for i := range open {
		if err := move(ctx, tx, &open[i], request.StatusCanceled, session.ActorUser); err != nil {
			return a, err
		}
	}
	return a, nil
}

// AgentStats counts what agentID has done.
func (s *Store) AgentStats(ctx context.Context, agentID string) (session.Stats, error) {
	st := session.Stats{SessionsByStatus: map[string]int64{}}
	rows, err := s.pool.Query(ctx, `
		SELECT status, count(*), coalesce(sum(last_event_seq), 0)::bigint
		FROM sessions WHERE agent_id = $1 GROUP BY status`, agentID)
	if err != nil {
		return st, fail("agent stats", err)
	}
	defer rows.Close()
	for rows.Next() {
		var status string
		var n, events int64
		if err := rows.Scan(&status, &n, &events); err != nil {
			return st, fail("agent stats", err)
		}
		st.SessionsByStatus[status] = n
		st.Sessions += n
		st.Events += events
	}
	if err := rows.Err(); err != nil {
		return st, fail("agent stats", err)
	}
	return st, nil
}

// InsertKey stores a new key of userID (and agentID for an agent key);
// auth.ErrTooManyKeys if the user holds max unrevoked keys, its agents' included
// (max 0: no cap).
func (s *Store) InsertKey(ctx context.Context, k auth.NewKey, userID, agentID string, max int) (auth.Key, error) {
	var agent *string
	if agentID != "" {
		agent = &agentID
	}
	var key auth.Key
	err := s.capped(ctx, userID, `SELECT count(*) FROM api_keys WHERE user_id = $1 AND revoked_at IS NULL`, max, auth.ErrTooManyKeys, func(tx pgx.Tx) error {
		var err error
		key, err = scanKey(tx.QueryRow(ctx, `
			INSERT INTO api_keys (kid, scope, user_id, agent_id, prefix, secret_hash)
			VALUES ($1, $2, $3, $4, $5, $6)
			RETURNING `+keyColumns, k.KID, string(k.Scope), userID, agent, k.Prefix, k.Hash))
		return err
	})
	if err != nil {
		return key, fail("insert key", err)
	}
	return key, nil
}

const keyColumns = `kid, scope, user_id, agent_id, prefix, created_at, last_used_at, revoked_at,
	coalesce((SELECT c.name FROM oauth_clients c WHERE c.id = oauth_client_id), '')`

func scanKey(row pgx.Row) (auth.Key, error) {
	var k auth.Key
	err := row.Scan(&k.KID, &k.Scope, &k.UserID, &k.AgentID, &k.Prefix, &k.CreatedAt, &k.LastUsedAt, &k.RevokedAt, &k.Host)
	if errors.Is(err, pgx.ErrNoRows) {
		err = auth.ErrKeyNotFound
	}
	return k, err
}

// Keys lists every key of userID and its agents, oldest first, without secrets.
func (s *Store) Keys(ctx context.Context, userID string) ([]auth.Key, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+keyColumns+` FROM api_keys WHERE user_id = $1 ORDER BY created_at, kid`, userID)
	if err != nil {
		return nil, fail("keys", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (auth.Key, error) { return scanKey(r) })
	if err != nil {
		return nil, fail("keys", err)
	}
	return out, nil
}

// StoredKey returns what verifying the key kid needs.
func (s *Store) StoredKey(ctx context.Context, kid string) (auth.StoredKey, error) {
	var k auth.StoredKey
	var agent *string
	var scope string
	err := s.pool.QueryRow(ctx, `
		SELECT k.kid, k.scope, k.user_id, k.agent_id, k.secret_hash,
		       k.revoked_at IS NOT NULL OR coalesce(a.status <> 'active', false)
		FROM api_keys k LEFT JOIN agents a ON a.id = k.agent_id
		WHERE k.kid = $1`, kid).Scan(&k.KID, &scope, &k.UserID, &agent, &k.SecretHash, &k.Revoked)
	if errors.Is(err, pgx.ErrNoRows) {
		return k, auth.ErrKeyNotFound
	}
	if err != nil {
		return k, fail("stored key", err)
	}
	k.Scope = auth.Scope(scope)
	if agent != nil {
		k.AgentID = *agent
	}
	return k, nil
}

// TouchKey records that kid was used, at most once a minute.
func (s *Store) TouchKey(ctx context.Context, kid string) error {
	_, err := s.pool.Exec(ctx, `
		UPDATE api_keys SET last_used_at = now()
		WHERE kid = $1 AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')`, kid)
	if err != nil {
		return fail("touch key", err)
	}
	return nil
}

// RevokeKey revokes kid if it belongs to userID (and to agentID when given). Revoking
// a revoked key keeps its first revocation time.
func (s *Store) RevokeKey(ctx context.Context, userID, agentID, kid string) error {
	q := `UPDATE api_keys SET revoked_at = coalesce(revoked_at, now()) WHERE kid = $1 AND user_id = $2`
	args := []any{kid, userID}
	if agentID != "" {
		q += ` AND agent_id = $3`
		args = append(args, agentID)
	}
	tag, err := s.pool.Exec(ctx, q, args...)
	if err != nil {
		return fail("revoke key", err)
	}
	if tag.RowsAffected() == 0 {
		return auth.ErrKeyNotFound
	}
	return nil
}
