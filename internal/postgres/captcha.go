package postgres

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/waystation/waystation/internal/auth"
	"github.com/waystation/waystation/internal/captcha"
	"github.com/waystation/waystation/internal/request"
	"github.com/waystation/waystation/internal/session"
)

var _ captcha.Store = (*Store)(nil)

// taskStatus is a task's status as callers see it: a pending one past its time is
// expired, and one a person answers follows its request (denied or canceled: failed).
const taskStatus = `CASE WHEN c.status <> 'pending' THEN c.status
	WHEN c.expires_at <= now() THEN 'expired'
	WHEN r.status IN ('denied', 'canceled', 'failed') THEN 'failed'
	WHEN r.status = 'expired' THEN 'expired'
	ELSE 'pending' END`

const taskColumns = `c.id, c.session_id, c.client_task_id, c.type, c.page_url, c.site_key, c.via, ` + taskStatus + `,
	c.solution, c.error, c.request_id, c.created_at, c.expires_at, c.solved_at, c.image, c.agent_id, c.user_id,
	coalesce(c.solver_task_id, '')`

const taskFrom = ` FROM captcha_tasks c LEFT JOIN requests r ON r.id = c.request_id`

func scanTask(row pgx.Row) (captcha.Task, error) {
	var t captcha.Task
	err := row.Scan(&t.ID, &t.SessionID, &t.ClientTaskID, &t.Type, &t.PageURL, &t.SiteKey, &t.Via, &t.Status,
		&t.Solution, &t.Error, &t.RequestID, &t.CreatedAt, &t.ExpiresAt, &t.SolvedAt, &t.Image, &t.AgentID, &t.UserID, &t.SolverTaskID)
	if errors.Is(err, pgx.ErrNoRows) {
		return t, captcha.ErrNotFound
	}
	return t, err
}

func visibleTask(p auth.Principal, arg int) (string, any) {
	if p.Scope == auth.ScopeAgent {
		return "c.agent_id = $" + strconv.Itoa(arg), p.AgentID
	}
	return "c.user_id = $" + strconv.Itoa(arg), p.UserID
}

// CreateTask implements captcha.Store.
func (s *Store) CreateTask(ctx context.Context, p auth.Principal, sessionID string, n captcha.New, img []byte, via string,
	timeout time.Duration, maxEvents int) (captcha.Task, bool, error) {
	var out captcha.Task
	var created bool
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		sess, err := lockSession(ctx, tx, p, sessionID)
		if err != nil {
			return err
		}
		var siteKey *string
		if n.SiteKey != "" {
			siteKey = &n.SiteKey
		}
		// The same ask again is a retry; another under this client id conflicts.
		prev, err := scanTask(tx.QueryRow(ctx, `SELECT `+taskColumns+taskFrom+` WHERE c.session_id = $1 AND c.client_task_id = $2`,
			sessionID, n.ClientTaskID))
		switch {
		case err == nil:
			if prev.Type != n.Type || prev.PageURL != n.PageURL || string(prev.Image) != string(img) || orEmpty(prev.SiteKey) != n.SiteKey {
				return session.ErrClientIDTaken
			}
			out = prev
			return nil
		case !errors.Is(err, captcha.ErrNotFound):
			return err
		}
		if sess.Status != session.StatusOpen {
			return session.ErrClosed
		}
		var requestID *string
		if via == captcha.ViaPerson {
			ttl := int64(timeout / time.Second)
			r, _, err := createRequest(ctx, tx, p, sessionID, request.New{
				ClientRequestID: "captcha:" + n.ClientTaskID, Kind: request.KindCaptcha, TTLSeconds: &ttl,
				Context: request.Context{URL: n.PageURL, Reason: n.Reason},
				Fields:  []request.Field{{Key: "solution", Label: "The characters in the image", Type: "text"}},
				Params:  request.Params{Summary: "Read the CAPTCHA the agent met and type its characters."},
			}, maxEvents)
			if err != nil {
				return err
			}
			requestID = &r.ID
		} else if full, err := eventsFull(ctx, tx, sess, maxEvents, "", nil); err != nil || full {
			if err == nil {
				err = session.ErrTooManyEvents
			}
			return err
		}
		var id string
		if err := tx.QueryRow(ctx, `
			INSERT INTO captcha_tasks (session_id, request_id, user_id, agent_id, client_task_id, type, page_url, site_key,
				image, reason, via, expires_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, now() + make_interval(secs => $12)) RETURNING id`,
			sessionID, requestID, sess.UserID, sess.AgentID, n.ClientTaskID, n.Type, n.PageURL, siteKey, img, n.Reason, via,
			timeout.Seconds()).Scan(&id); err != nil {
			return err
		}
		created = true
		out, err = scanTask(tx.QueryRow(ctx, `SELECT `+taskColumns+taskFrom+` WHERE c.id = $1`, id))
		return err
	})
	return out, created, fail("create captcha task", err)
}

// Task implements captcha.Store.
func (s *Store) Task(ctx context.Context, p auth.Principal, sessionID, id string) (captcha.Task, error) {
	where, arg := visibleTask(p, 3)
	t, err := scanTask(s.pool.QueryRow(ctx, `SELECT `+taskColumns+taskFrom+` WHERE c.id = $1 AND c.session_id = $2 AND `+where,
		id, sessionID, arg))
	return t, fail("captcha task", err)
}

// TaskOfRequest is the task a captcha request asks the person to answer.
func (s *Store) TaskOfRequest(ctx context.Context, p auth.Principal, requestID string) (captcha.Task, error) {
	where, arg := visibleTask(p, 2)
	t, err := scanTask(s.pool.QueryRow(ctx, `SELECT `+taskColumns+taskFrom+` WHERE c.request_id = $1 AND `+where, requestID, arg))
	return t, fail("captcha task of request", err)
}

// Tasks implements captcha.Store: the session's newest tasks first.
func (s *Store) Tasks(ctx context.Context, p auth.Principal, sessionID string, limit int) ([]captcha.Task, error) {
	where, arg := visibleTask(p, 2)
	rows, err := s.pool.Query(ctx, `SELECT `+taskColumns+taskFrom+` WHERE c.session_id = $1 AND `+where+`
		ORDER BY c.created_at DESC, c.id DESC LIMIT $3`, sessionID, arg, limit)
	if err != nil {
		return nil, fail("captcha tasks", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (captcha.Task, error) { return scanTask(r) })
	if err == nil && len(out) == 0 {
		// An empty list of a session the caller may not see is a 404, as for its other lists.
		var ok bool
		w, a := visible(p, 2)
		if err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM sessions WHERE id = $1 AND `+w+`)`, sessionID, a).Scan(&ok); err != nil {
			return nil, fail("captcha tasks", err)
		}
		if !ok {
			return nil, session.ErrNotFound
		}
	}
	return out, fail("captcha tasks", err)
}

// SolverStarted implements captcha.Store.
func (s *Store) SolverStarted(ctx context.Context, id, solverTaskID string) error {
	_, err := s.pool.Exec(ctx, `UPDATE captcha_tasks SET solver_task_id = $2 WHERE id = $1`, id, solverTaskID)
	return fail("captcha solver started", err)
}

// FinishTask implements captcha.Store, with the session event that wakes the agent.
func (s *Store) FinishTask(ctx context.Context, id, status, solution, errText string) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var sessionID string
		err := tx.QueryRow(ctx, `
			UPDATE captcha_tasks SET status = $2, solution = nullif($3, ''), error = nullif($4, ''),
				solved_at = CASE WHEN $2 = 'solved' THEN now() END
			WHERE id = $1 AND status = 'pending' RETURNING session_id`, id, status, solution, errText).Scan(&sessionID)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		data := []byte(`{"taskId":"` + id + `","status":"` + status + `"}`)
		_, err = appendEvent(ctx, tx, sessionID, session.Append{Type: "captcha." + status, Actor: session.ActorSystem, Data: data})
		return err
	})
	return fail("finish captcha task", err)
}

func orEmpty(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
