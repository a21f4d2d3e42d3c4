package postgres

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/waystation/waystation/internal/auth"
	"github.com/waystation/waystation/internal/session"
)

var (
	_ session.Store  = (*Store)(nil)
	_ session.Purger = (*Store)(nil)
)

// EventChannel is the NOTIFY channel on which every appended event is announced, with
// the payload "<session id>:<seq>".
const EventChannel = "session_events"

const sessionColumns = `id, agent_id, user_id, type, description, merchant_name, target_url, status,
	summary, stop_reason, last_event_seq, created_at, updated_at, closed_at, client_session_id, client_completion_id`

func scanSession(row pgx.Row) (session.Session, error) {
	var s session.Session
	err := row.Scan(&s.ID, &s.AgentID, &s.UserID, &s.Type, &s.Description, &s.MerchantName, &s.TargetURL,
		&s.Status, &s.Summary, &s.StopReason, &s.LastEventSeq, &s.CreatedAt, &s.UpdatedAt, &s.ClosedAt,
		&s.ClientSessionID, &s.ClientCompletionID)
	if errors.Is(err, pgx.ErrNoRows) {
		err = session.ErrNotFound
	}
	return s, err
}

// visible is the WHERE clause limiting sessions to those p may see: an agent its
// own, a user those of all its agents. arg is the placeholder's number.
func visible(p auth.Principal, arg int) (string, any) {
	if p.Scope == auth.ScopeAgent {
		return "agent_id = $" + strconv.Itoa(arg), p.AgentID
	}
	return "user_id = $" + strconv.Itoa(arg), p.UserID
}

// CreateSession opens a session for the agent p acts as, with its first event.
// ErrClientIDTaken if the agent already used n.ClientSessionID; ErrTooManyOpen if
// the agent has maxOpen sessions open (0: no cap) and this is not a retry.
func (s *Store) CreateSession(ctx context.Context, p auth.Principal, n session.New, maxOpen int) (session.Session, error) {
	var out session.Session
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if maxOpen > 0 {
			// The agent's row lock orders its creations, so the count holds until
			// commit; it does not block writes that merely reference the agent.
			if _, err := tx.Exec(ctx, `SELECT 1 FROM agents WHERE id = $1 FOR NO KEY UPDATE`, p.AgentID); err != nil {
				return err
			}
			var open int
			var retry bool
			if err := tx.QueryRow(ctx, `
				SELECT (SELECT count(*) FROM sessions WHERE agent_id = $1 AND status = 'open'),
				       EXISTS (SELECT 1 FROM sessions WHERE agent_id = $1 AND client_session_id = $2)`,
				p.AgentID, n.ClientSessionID).Scan(&open, &retry); err != nil {
				return err
			}
			if open >= maxOpen && !retry {
				return session.ErrTooManyOpen
			}
		}
		var id string
		err := tx.QueryRow(ctx, `
			INSERT INTO sessions (user_id, agent_id, type, description, merchant_name, target_url, client_session_id)
			VALUES ($1, $2, $3, $4, $5, $6, $7)
			ON CONFLICT (agent_id, client_session_id) DO NOTHING
			RETURNING id`, p.UserID, p.AgentID, n.Type, n.Description, n.MerchantName, n.TargetURL, n.ClientSessionID).Scan(&id)
		if errors.Is(err, pgx.ErrNoRows) {
			// The same session again is a retry whose answer was lost (the server
			// stopped before recording it); another one under this client id conflicts.
			out, err = scanSession(tx.QueryRow(ctx, `SELECT `+sessionColumns+` FROM sessions
				WHERE agent_id = $1 AND client_session_id = $2 AND type = $3 AND description = $4
				AND merchant_name IS NOT DISTINCT FROM $5 AND target_url IS NOT DISTINCT FROM $6`,
				p.AgentID, n.ClientSessionID, n.Type, n.Description, n.MerchantName, n.TargetURL))
			if errors.Is(err, session.ErrNotFound) {
				return session.ErrClientIDTaken
			}
			return err
		}
		if err != nil {
			return err
		}
		if _, err := appendEvent(ctx, tx, id, session.Append{Type: session.EventOpened, Actor: session.ActorAgent,
			Data: json.RawMessage(`{}`)}); err != nil {
			return err
		}
		out, err = scanSession(tx.QueryRow(ctx, `SELECT `+sessionColumns+` FROM sessions WHERE id = $1`, id))
		return err
	})
	if err != nil && !errors.Is(err, session.ErrClientIDTaken) && !errors.Is(err, session.ErrTooManyOpen) {
		return out, fail("create session", err)
	}
	return out, err
}

// Session returns session id if p may see it.
func (s *Store) Session(ctx context.Context, p auth.Principal, id string) (session.Session, error) {
	where, arg := visible(p, 2)
	out, err := scanSession(s.pool.QueryRow(ctx, `SELECT `+sessionColumns+` FROM sessions WHERE id = $1 AND `+where, id, arg))
	if err != nil && !errors.Is(err, session.ErrNotFound) {
		return out, fail("session", err)
	}
	return out, err
}

// Sessions lists the sessions p may see, newest first, limit at a time; next is
// nil on the last page.
func (s *Store) Sessions(ctx context.Context, p auth.Principal, after *session.Cursor, limit int) ([]session.Session, *session.Cursor, error) {
	where, arg := visible(p, 1)
	q := `SELECT ` + sessionColumns + ` FROM sessions WHERE ` + where
	args := []any{arg}
	if after != nil {
		q += ` AND (created_at, id) < ($2, $3)`
		args = append(args, after.CreatedAt, after.ID)
	}
	q += ` ORDER BY created_at DESC, id DESC LIMIT ` + strconv.Itoa(limit+1)
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, nil, fail("sessions", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (session.Session, error) { return scanSession(r) })
	if err != nil {
		return nil, nil, fail("sessions", err)
	}
	out, next := page(out, limit, func(s session.Session) (time.Time, string) { return s.CreatedAt, s.ID })
	return out, next, nil
}

// page cuts rows read with LIMIT limit+1, newest first, to limit, and returns where
// the next page resumes, or nil when these were the last.
func page[T any](rows []T, limit int, at func(T) (time.Time, string)) ([]T, *session.Cursor) {
	if len(rows) <= limit {
		return rows, nil
	}
	rows = rows[:limit]
	t, id := at(rows[limit-1])
	return rows, &session.Cursor{CreatedAt: t, ID: id}
}

// lockSession locks session id for the rest of tx, if p may see it.
func lockSession(ctx context.Context, tx pgx.Tx, p auth.Principal, id string) (session.Session, error) {
	where, arg := visible(p, 2)
	return scanSession(tx.QueryRow(ctx, `SELECT `+sessionColumns+` FROM sessions WHERE id = $1 AND `+where+` FOR UPDATE`, id, arg))
}

// CompleteSession closes session id on its agent's word. A repeat of the completion
// that closed it returns the session with duplicate set; the same clientCompletionId
// with another status or summary is ErrClientIDTaken, and any other completion of a
// closed session ErrClosed.
func (s *Store) CompleteSession(ctx context.Context, p auth.Principal, id string, c session.Completion) (out session.Session, duplicate bool, err error) {
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		cur, err := lockSession(ctx, tx, p, id)
		if err != nil {
			return err
		}
		if cur.Status != session.StatusOpen {
			if cur.ClientCompletionID == nil {
				return session.ErrClosed
			}
			if *cur.ClientCompletionID != c.ClientCompletionID {
				return session.ErrClosed
			}
			if cur.Status != c.Status || cur.Summary == nil || *cur.Summary != c.Summary {
				return session.ErrClientIDTaken
			}
			out, duplicate = cur, true
			return nil
		}
		if err := cancelOpenRequests(ctx, tx, id, session.ActorAgent); err != nil {
			return err
		}
		data, _ := json.Marshal(map[string]string{"status": c.Status})
		if _, err := appendEvent(ctx, tx, id, session.Append{Type: session.EventCompleted, Actor: session.ActorAgent, Data: data}); err != nil {
			return err
		}
		out, err = scanSession(tx.QueryRow(ctx, `
			UPDATE sessions SET status = $2, summary = $3, client_completion_id = $4, updated_at = now(), closed_at = now()
			WHERE id = $1 RETURNING `+sessionColumns, id, c.Status, c.Summary, c.ClientCompletionID))
		return err
	})
	err = fail("complete session", err)
	return out, duplicate, err
}

// StopSession closes session id on its user's word. Stopping a stopped session
// returns it unchanged; stopping one closed otherwise is ErrClosed.
func (s *Store) StopSession(ctx context.Context, p auth.Principal, id, reason string) (session.Session, error) {
	var out session.Session
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		cur, err := lockSession(ctx, tx, p, id)
		if err != nil {
			return err
		}
		switch cur.Status {
		case session.StatusStopped:
			out = cur
			return nil
		case session.StatusOpen:
		default:
			return session.ErrClosed
		}
		if err := cancelOpenRequests(ctx, tx, id, session.ActorUser); err != nil {
			return err
		}
		data, _ := json.Marshal(map[string]string{"reasonCode": reason})
		if _, err := appendEvent(ctx, tx, id, session.Append{Type: session.EventStopped, Actor: session.ActorUser, Data: data}); err != nil {
			return err
		}
		out, err = scanSession(tx.QueryRow(ctx, `
			UPDATE sessions SET status = 'stopped', stop_reason = $2, updated_at = now(), closed_at = now()
			WHERE id = $1 RETURNING `+sessionColumns, id, reason))
		return err
	})
	err = fail("stop session", err)
	return out, err
}

// AppendEvent adds an event to session id, which p must see and which must be open;
// ErrTooManyEvents if it holds maxEvents already (0: no cap) and this is not a retry.
func (s *Store) AppendEvent(ctx context.Context, p auth.Principal, id string, a session.Append, maxEvents int) (session.Event, error) {
	var ev session.Event
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		cur, err := lockSession(ctx, tx, p, id)
		if err != nil {
			return err
		}
		if cur.Status != session.StatusOpen {
			return session.ErrClosed
		}
		if full, err := eventsFull(ctx, tx, cur, maxEvents, `SELECT EXISTS (SELECT 1 FROM session_events
			WHERE session_id = $1 AND client_event_id = $2)`, a.ClientEventID); err != nil || full {
			return cmp.Or[error](err, session.ErrTooManyEvents)
		}
		ev, err = appendEvent(ctx, tx, id, a)
		return err
	})
	if errors.Is(err, session.ErrClientIDTaken) {
		// The same event again is a retry whose answer was lost (the server stopped
		// before recording it); another one under this client id conflicts.
		ev = session.Event{Type: a.Type, Actor: a.Actor, ClientEventID: a.ClientEventID}
		data := a.Data
		if len(data) == 0 {
			data = json.RawMessage(`{}`)
		}
		var stored []byte
		switch found := s.pool.QueryRow(ctx, `
			SELECT seq, data, created_at FROM session_events
			WHERE session_id = $1 AND client_event_id = $2 AND type = $3 AND actor = $4 AND data = $5::jsonb`,
			id, a.ClientEventID, a.Type, a.Actor, string(data)).Scan(&ev.Seq, &stored, &ev.CreatedAt); {
		case found == nil:
			ev.Data = stored
			return ev, nil
		case !errors.Is(found, pgx.ErrNoRows):
			err = found
		}
	}
	err = fail("append event", err)
	return ev, err
}

// eventsFull tells whether the agent's write to sess is refused by its cap of
// maxEvents events (0: no cap): the session holds that many and the write is not a
// retry of one under the client id retry finds (it is called with sess's id and
// clientID).
func eventsFull(ctx context.Context, tx pgx.Tx, sess session.Session, maxEvents int, retry string, clientID *string) (bool, error) {
	if maxEvents <= 0 || sess.LastEventSeq < int64(maxEvents) {
		return false, nil
	}
	if clientID == nil {
		return true, nil
	}
	var seen bool
	if err := tx.QueryRow(ctx, retry, sess.ID, *clientID).Scan(&seen); err != nil {
		return false, err
	}
	return !seen, nil
}

// DeleteClosedSessions deletes up to limit sessions closed longer ago than keep,
// oldest first, with their sealed values, memory handles, materialisation records,
// artifacts, requests and events, and says
// how many it deleted. The event log's trigger lets the events go only because the
// transaction declares the same retention, and only for sessions closed that long.
func (s *Store) DeleteClosedSessions(ctx context.Context, keep time.Duration, limit int) (int, error) {
	if keep < session.MinRetention {
		return 0, fmt.Errorf("retention %s is under the least of %s", keep, session.MinRetention)
	}
	secs := int64(keep / time.Second)
	var n int
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT set_config('waystation.session_retention', $1, true)`, strconv.FormatInt(secs, 10)+" seconds"); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `
			SELECT id FROM sessions WHERE closed_at < now() - make_interval(secs => $1)
			ORDER BY closed_at LIMIT $2 FOR UPDATE SKIP LOCKED`, secs, limit)
		if err != nil {
			return err
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil || len(ids) == 0 {
			return err
		}
		for _, q := range []string{
			`DELETE FROM session_values WHERE session_id = ANY($1)`,
			`DELETE FROM memory_handles WHERE session_id = ANY($1)`,
			`DELETE FROM materializations WHERE session_id = ANY($1)`,
			`DELETE FROM session_spans WHERE session_id = ANY($1)`,
			`DELETE FROM request_artifacts WHERE session_id = ANY($1)`,
			`DELETE FROM captcha_tasks WHERE session_id = ANY($1)`,
			`DELETE FROM requests WHERE session_id = ANY($1)`,
			`DELETE FROM session_events WHERE session_id = ANY($1)`,
			`DELETE FROM sessions WHERE id = ANY($1)`,
		} {
			if _, err := tx.Exec(ctx, q, ids); err != nil {
				return err
			}
		}
		n = len(ids)
		return nil
	})
	return n, fail("delete closed sessions", err)
}

// appendEvent takes the session's next seq and writes the event in tx, and announces
// it on EventChannel when tx commits.
func appendEvent(ctx context.Context, tx pgx.Tx, sessionID string, a session.Append) (session.Event, error) {
	ev := session.Event{Type: a.Type, Actor: a.Actor, ClientEventID: a.ClientEventID, Data: a.Data}
	if len(ev.Data) == 0 {
		ev.Data = json.RawMessage(`{}`)
	}
	err := tx.QueryRow(ctx, `
		UPDATE sessions SET last_event_seq = last_event_seq + 1, updated_at = now()
		WHERE id = $1 RETURNING last_event_seq`, sessionID).Scan(&ev.Seq)
	if err != nil {
		return ev, err
	}
	var data []byte
	err = tx.QueryRow(ctx, `
		INSERT INTO session_events (session_id, seq, type, actor, client_event_id, data)
		VALUES ($1, $2, $3, $4, $5, $6::jsonb) RETURNING data, created_at`,
		sessionID, ev.Seq, a.Type, a.Actor, a.ClientEventID, string(ev.Data)).Scan(&data, &ev.CreatedAt)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" {
		return ev, session.ErrClientIDTaken
	}
	if err != nil {
		return ev, err
	}
	ev.Data = data
	if err := queueWebhooks(ctx, tx, sessionID, ev); err != nil {
		return ev, err
	}
	_, err = tx.Exec(ctx, `SELECT pg_notify($1, $2)`, EventChannel, sessionID+":"+strconv.FormatInt(ev.Seq, 10))
	return ev, err
}

// Events returns up to limit events of session id after seq after, oldest first,
// with the session as it stands; p must see the session.
func (s *Store) Events(ctx context.Context, p auth.Principal, id string, after int64, limit int) ([]session.Event, session.Session, error) {
	sess, err := s.Session(ctx, p, id)
	if err != nil {
		return nil, sess, err
	}
	rows, err := s.pool.Query(ctx, `
		SELECT seq, type, actor, client_event_id, data, created_at FROM session_events
		WHERE session_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`, id, after, limit)
	if err != nil {
		return nil, sess, fail("events", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (session.Event, error) {
		var ev session.Event
		var data []byte
		err := r.Scan(&ev.Seq, &ev.Type, &ev.Actor, &ev.ClientEventID, &data, &ev.CreatedAt)
		ev.Data = data
		return ev, err
	})
	if err != nil {
		return nil, sess, fail("events", err)
	}
	return out, sess, nil
}

// eventKey parses a NOTIFY payload of EventChannel.
func eventKey(payload string) (sessionID string, seq int64, ok bool) {
	id, n, ok := strings.Cut(payload, ":")
	if !ok {
		return "", 0, false
	}
	seq, err := strconv.ParseInt(n, 10, 64)
	return id, seq, err == nil
}
