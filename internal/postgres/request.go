package postgres

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/waystation/waystation/internal/auth"
	"github.com/waystation/waystation/internal/memory"
	"github.com/waystation/waystation/internal/problem"
	"github.com/waystation/waystation/internal/request"
	"github.com/waystation/waystation/internal/session"
)

var _ request.Store = (*Store)(nil)

const requestColumns = `r.id, r.session_id, r.agent_id, r.user_id, r.client_request_id, r.kind, r.status,
	r.resolution_path, r.context, r.fields, r.options, r.params, r.expires_at, r.decided_by, r.decided_at,
	r.created_at, r.updated_at, a.type, a.claimed_at`

const requestFrom = ` FROM requests r LEFT JOIN request_artifacts a ON a.request_id = r.id`

func scanRequest(row pgx.Row) (request.Request, error) {
	var r request.Request
	var ctxJSON, fields, options, params []byte
	err := row.Scan(&r.ID, &r.SessionID, &r.AgentID, &r.UserID, &r.ClientRequestID, &r.Kind, &r.Status,
		&r.ResolutionPath, &ctxJSON, &fields, &options, &params, &r.ExpiresAt, &r.DecidedBy, &r.DecidedAt,
		&r.CreatedAt, &r.UpdatedAt, &r.ArtifactType, &r.ClaimedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return r, request.ErrNotFound
	}
	if err != nil {
		return r, err
	}
	for _, f := range []struct {
		b []byte
		v any
	}{{ctxJSON, &r.Context}, {fields, &r.Fields}, {options, &r.Options}, {params, &r.Params}} {
		if err := json.Unmarshal(f.b, f.v); err != nil {
			return r, err
		}
	}
	return r, nil
}

// visibleRequest is the WHERE clause limiting requests to those p may see, as
// visible does for sessions.
func visibleRequest(p auth.Principal, arg int) (string, any) {
	if p.Scope == auth.ScopeAgent {
		return "r.agent_id = $" + strconv.Itoa(arg), p.AgentID
	}
	return "r.user_id = $" + strconv.Itoa(arg), p.UserID
}

// refusal reports whether err is the domain refusing a change (one of its own
// problems), not the database failing.
func refusal(err error) bool {
	p, ok := problem.As(err)
	return ok && p.Err == nil
}

// handlesOf checks the handles an ask_before_use or choose_candidate request names
// (in its fields, or as its options): each must be a
// memory handle of the session, of a live item, and not card data (which only a
// payment approval releases). auto is true when it names some and every one's item
// was saved to be used without a question.
func handlesOf(ctx context.Context, tx pgx.Tx, sessionID string, n request.New) (auto bool, err error) {
	auto = n.Kind == request.KindAskBeforeUse
	handles := make([]string, 0, len(n.Fields)+len(n.Options))
	for _, f := range n.Fields {
		if f.Handle == "" {
			auto = false
			continue
		}
		handles = append(handles, f.Handle)
	}
	if n.Kind == request.KindChooseCandidate {
		auto = false // a choice is always the user's
		for _, o := range n.Options {
			handles = append(handles, o.ID)
		}
	}
	for _, h := range handles {
		var ask bool
		var valueType string
		err := tx.QueryRow(ctx, `
			SELECT i.ask_before_use, f.value_type FROM memory_handles h
			JOIN memory_items i ON i.id = h.item_id AND i.archived_at IS NULL
			JOIN memory_fields f ON f.item_id = h.item_id AND f.field_ref = h.field_ref
			WHERE h.handle = $1 AND h.session_id = $2`, h, sessionID).Scan(&ask, &valueType)
		if errors.Is(err, pgx.ErrNoRows) {
			return false, problem.Invalid("A handle is not one this session's memory catalog gave.")
		}
		if err != nil {
			return false, err
		}
		if memory.CardLike(valueType) {
			return false, problem.Invalid("Card data is released only by a payment approval, not by ask_before_use.")
		}
		auto = auto && !ask
	}
	return auto, nil
}

// CreateRequest raises a request in session sessionID for the agent p acts as,
// waiting for its user, with the event of that first transition.
// session.ErrClientIDTaken if the session already has n.ClientRequestID;
// session.ErrTooManyEvents if it holds maxEvents events (0: no cap) and this is not
// a retry.
func (s *Store) CreateRequest(ctx context.Context, p auth.Principal, sessionID string, n request.New, maxEvents int) (request.Request, error) {
	var out request.Request
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) (err error) {
		out, _, err = createRequest(ctx, tx, p, sessionID, n, maxEvents)
		return err
	})
	return out, fail("create request", err)
}

// createRequest raises request n in tx; created is false when n is a retry of a
// request raised before, which out then is.
func createRequest(ctx context.Context, tx pgx.Tx, p auth.Principal, sessionID string, n request.New, maxEvents int) (out request.Request, created bool, err error) {
	err = func() error {
		sess, err := lockSession(ctx, tx, p, sessionID)
		if err != nil {
			return err
		}
		if sess.Status != session.StatusOpen {
			return session.ErrClosed
		}
		if full, err := eventsFull(ctx, tx, sess, maxEvents, `SELECT EXISTS (SELECT 1 FROM requests
			WHERE session_id = $1 AND client_request_id = $2)`, &n.ClientRequestID); err != nil || full {
			return cmp.Or[error](err, session.ErrTooManyEvents)
		}
		auto, err := handlesOf(ctx, tx, sessionID, n)
		if err != nil {
			return err
		}
		ctxJSON, _ := json.Marshal(n.Context)
		fields, _ := json.Marshal(nonNil(n.Fields))
		options, _ := json.Marshal(nonNil(n.Options))
		params, _ := json.Marshal(n.Params)
		var id string
		err = tx.QueryRow(ctx, `
			INSERT INTO requests (session_id, user_id, agent_id, client_request_id, kind, status, resolution_path,
				context, fields, options, params, expires_at)
			VALUES ($1, $2, $3, $4, $5, 'waiting_user', 'user', $6, $7, $8, $9, now() + make_interval(secs => $10))
			ON CONFLICT (session_id, client_request_id) DO NOTHING
			RETURNING id`, sessionID, sess.UserID, sess.AgentID, n.ClientRequestID, n.Kind,
			ctxJSON, fields, options, params, *n.TTLSeconds).Scan(&id)
		if errors.Is(err, pgx.ErrNoRows) {
			// The same request again is a retry whose answer was lost (the server
			// stopped before recording it); another one under this client id conflicts.
			out, err = scanRequest(tx.QueryRow(ctx, `SELECT `+requestColumns+requestFrom+`
				WHERE r.session_id = $1 AND r.client_request_id = $2 AND r.kind = $3
				AND r.context = $4 AND r.fields = $5 AND r.options = $6 AND r.params = $7`,
				sessionID, n.ClientRequestID, n.Kind, ctxJSON, fields, options, params))
			if errors.Is(err, request.ErrNotFound) {
				return session.ErrClientIDTaken
			}
			return err
		}
		if err != nil {
			return err
		}
		created = true
		if err := requestEvent(ctx, tx, sessionID, id, n.Kind, "", request.StatusWaitingUser, session.ActorAgent); err != nil {
			return err
		}
		out, err = scanRequest(tx.QueryRow(ctx, `SELECT `+requestColumns+requestFrom+` WHERE r.id = $1`, id))
		if err != nil || !auto {
			return err
		}
		// Every value it names was saved to be used without a question: the system
		// approves at once, and the handles are covered for materialize.
		if _, err := tx.Exec(ctx, `UPDATE requests SET resolution_path = 'auto' WHERE id = $1`, id); err != nil {
			return err
		}
		out.ResolutionPath = request.PathAuto
		if err := move(ctx, tx, &out, request.StatusApproved, session.ActorSystem); err != nil {
			return err
		}
		data, _ := json.Marshal(request.Artifact{Type: request.ArtifactReference, Reference: out.HandlesRef()})
		if _, err := tx.Exec(ctx, `INSERT INTO request_artifacts (request_id, session_id, type, data) VALUES ($1, $2, $3, $4)`,
			id, sessionID, request.ArtifactReference, data); err != nil {
			return err
		}
		if err := move(ctx, tx, &out, request.StatusFulfilled, session.ActorSystem); err != nil {
			return err
		}
		out, err = scanRequest(tx.QueryRow(ctx, `SELECT `+requestColumns+requestFrom+` WHERE r.id = $1`, id))
		return err
	}()
	return out, created, err
}

// requestEvent appends the event of one transition of request id.
func requestEvent(ctx context.Context, tx pgx.Tx, sessionID, id, kind, from, to, actor string) error {
	data := map[string]any{"requestId": id, "kind": kind, "from": from, "to": to}
	if from == "" {
		data["from"] = nil
	}
	b, _ := json.Marshal(data)
	_, err := appendEvent(ctx, tx, sessionID, session.Append{Type: request.EventStatusChanged, Actor: actor, Data: b})
	return err
}

// move makes one transition of r in tx: a conditional update from r.Status, and its
// event. request.ErrInvalidTransition when the state machine or the row refuses.
func move(ctx context.Context, tx pgx.Tx, r *request.Request, to, actor string) error {
	if !request.CanMove(r.Status, to) {
		return request.ErrInvalidTransition
	}
	decided := to == request.StatusApproved || to == request.StatusDenied || to == request.StatusExpired ||
		(to == request.StatusCanceled && r.DecidedAt == nil)
	var tag, err = tx.Exec(ctx, `
		UPDATE requests SET status = $3, updated_at = now(),
			decided_by = CASE WHEN $4 THEN $5 ELSE decided_by END,
			decided_at = CASE WHEN $4 THEN now() ELSE decided_at END
		WHERE id = $1 AND status = $2`, r.ID, r.Status, to, decided, actor)
	if err != nil {
		return err
	}
	if tag.RowsAffected() != 1 {
		return request.ErrInvalidTransition
	}
	if err := requestEvent(ctx, tx, r.SessionID, r.ID, r.Kind, r.Status, to, actor); err != nil {
		return err
	}
	r.Status = to
	return nil
}

// lockRequest locks the session of request id and then the request (always in that
// order, as session changes do, so that the two never deadlock), if p may see it
// and, when sessionID is not "", it belongs to that session.
func lockRequest(ctx context.Context, tx pgx.Tx, p auth.Principal, sessionID, id string) (request.Request, error) {
	where, arg := visibleRequest(p, 2)
	q := `SELECT r.session_id FROM requests r WHERE r.id = $1 AND ` + where
	args := []any{id, arg}
	if sessionID != "" {
		q += ` AND r.session_id = $3`
		args = append(args, sessionID)
	}
	var sid string
	if err := tx.QueryRow(ctx, q, args...).Scan(&sid); errors.Is(err, pgx.ErrNoRows) {
		return request.Request{}, request.ErrNotFound
	} else if err != nil {
		return request.Request{}, err
	}
	if _, err := tx.Exec(ctx, `SELECT 1 FROM sessions WHERE id = $1 FOR UPDATE`, sid); err != nil {
		return request.Request{}, err
	}
	return scanRequest(tx.QueryRow(ctx, `SELECT `+requestColumns+requestFrom+` WHERE r.id = $1 FOR UPDATE OF r`, id))
}

// expireIfDue moves a request whose time ran out to expired, in tx; it reports
// whether it did.
func expireIfDue(ctx context.Context, tx pgx.Tx, r *request.Request) (bool, error) {
	var due bool
	if err := tx.QueryRow(ctx, `SELECT $1::timestamptz <= now()`, r.ExpiresAt).Scan(&due); err != nil {
		return false, err
	}
	if r.Status != request.StatusWaitingUser || !due {
		return false, nil
	}
	return true, move(ctx, tx, r, request.StatusExpired, session.ActorSystem)
}

// change runs fn on request id locked in a transaction, after expiring it if its
// time ran out; an expiry is committed even when fn then refuses the change.
func (s *Store) change(ctx context.Context, p auth.Principal, sessionID, id string, fn func(tx pgx.Tx, r *request.Request) error) (request.Request, error) {
	var out request.Request
	var refused error
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		r, err := lockRequest(ctx, tx, p, sessionID, id)
		if err != nil {
			return err
		}
		expired, err := expireIfDue(ctx, tx, &r)
		if err != nil {
			return err
		}
		if err := fn(tx, &r); err != nil {
			if !expired || !refusal(err) {
				return err
			}
			refused = err // keep the expiry, refuse the change
		}
		out, err = scanRequest(tx.QueryRow(ctx, `SELECT `+requestColumns+requestFrom+` WHERE r.id = $1`, id))
		return err
	})
	if err == nil {
		err = refused
	}
	return out, err
}

// Request returns request id (of session sessionID unless that is "") if p may see
// it; a request whose time ran out is expired first, as the system would.
func (s *Store) Request(ctx context.Context, p auth.Principal, sessionID, id string) (request.Request, error) {
	where, arg := visibleRequest(p, 2)
	q := `SELECT ` + requestColumns + requestFrom + ` WHERE r.id = $1 AND ` + where
	args := []any{id, arg}
	if sessionID != "" {
		q += ` AND r.session_id = $3`
		args = append(args, sessionID)
	}
	r, err := scanRequest(s.pool.QueryRow(ctx, q, args...))
	if err == nil && r.Due(time.Now()) {
		r, err = s.change(ctx, p, sessionID, id, func(pgx.Tx, *request.Request) error { return nil })
	}
	return r, fail("request", err)
}

// Requests lists the requests of session sessionID, which p must see, newest first.
func (s *Store) Requests(ctx context.Context, p auth.Principal, sessionID string, after *session.Cursor, limit int) ([]request.Request, *session.Cursor, error) {
	if _, err := s.Session(ctx, p, sessionID); err != nil {
		return nil, nil, err
	}
	if err := s.expireSession(ctx, sessionID); err != nil {
		return nil, nil, err
	}
	q := `SELECT ` + requestColumns + requestFrom + ` WHERE r.session_id = $1`
	args := []any{sessionID}
	if after != nil {
		q += ` AND (r.created_at, r.id) < ($2, $3)`
		args = append(args, after.CreatedAt, after.ID)
	}
	q += ` ORDER BY r.created_at DESC, r.id DESC LIMIT ` + strconv.Itoa(limit+1)
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, nil, fail("requests", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (request.Request, error) { return scanRequest(r) })
	if err != nil {
		return nil, nil, fail("requests", err)
	}
	out, next := page(out, limit, func(r request.Request) (time.Time, string) { return r.CreatedAt, r.ID })
	return out, next, nil
}

// Decide applies a user's checked decision to request id: waiting_user to denied, or
// to approved and then fulfilled with its artifact and sealed values, all in one
// transaction. request.ErrExpired if its time ran out, ErrInvalidTransition if it no
// longer waits for its user.
func (s *Store) Decide(ctx context.Context, p auth.Principal, id string, o request.Outcome) (request.Request, error) {
	r, err := s.change(ctx, p, "", id, func(tx pgx.Tx, r *request.Request) error {
		if r.Status == request.StatusExpired {
			return request.ErrExpired
		}
		if !o.Approved {
			return move(ctx, tx, r, request.StatusDenied, session.ActorUser)
		}
		if err := move(ctx, tx, r, request.StatusApproved, session.ActorUser); err != nil {
			return err
		}
		if o.Solution != nil {
			if _, err := tx.Exec(ctx, `UPDATE captcha_tasks SET status = 'solved', solution = $2, solved_at = now()
				WHERE request_id = $1 AND status = 'pending'`, r.ID, *o.Solution); err != nil {
				return err
			}
		}
		if o.Pending {
			// The system carries it out (a payment) and fulfils it then.
			if o.Override {
				_, err := tx.Exec(ctx, `UPDATE payments SET override = true WHERE request_id = $1`, r.ID)
				return err
			}
			return nil
		}
		for _, v := range o.Values {
			if _, err := tx.Exec(ctx, `
				INSERT INTO session_values (handle, session_id, request_id, user_id, field_key, key_id, nonce, ciphertext)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
				v.Handle, r.SessionID, r.ID, r.UserID, v.FieldKey, v.KeyID, v.Nonce, v.Ciphertext); err != nil {
				return err
			}
		}
		if o.Save != nil {
			if _, err := insertItem(ctx, tx, *o.Save); err != nil {
				return err
			}
		}
		if o.Artifact != nil {
			data, _ := json.Marshal(o.Artifact)
			if _, err := tx.Exec(ctx, `INSERT INTO request_artifacts (request_id, session_id, type, data) VALUES ($1, $2, $3, $4)`,
				r.ID, r.SessionID, o.Artifact.Type, data); err != nil {
				return err
			}
		}
		return move(ctx, tx, r, request.StatusFulfilled, session.ActorSystem)
	})
	return r, fail("decide request", err)
}

// CancelRequest withdraws request id on its agent's word. Cancelling a canceled
// request returns it unchanged; any other final status is ErrInvalidTransition, or
// ErrExpired.
func (s *Store) CancelRequest(ctx context.Context, p auth.Principal, sessionID, id string) (request.Request, error) {
	r, err := s.change(ctx, p, sessionID, id, func(tx pgx.Tx, r *request.Request) error {
		switch r.Status {
		case request.StatusCanceled:
			return nil
		case request.StatusExpired:
			return request.ErrExpired
		}
		return move(ctx, tx, r, request.StatusCanceled, session.ActorAgent)
	})
	return r, fail("cancel request", err)
}

// ClaimArtifact hands the artifact of fulfilled request id to its agent, once: of
// concurrent claims exactly one succeeds, the others get ErrAlreadyClaimed.
func (s *Store) ClaimArtifact(ctx context.Context, p auth.Principal, sessionID, id string) (request.Artifact, time.Time, error) {
	var art request.Artifact
	var claimedAt time.Time
	_, err := s.change(ctx, p, sessionID, id, func(tx pgx.Tx, r *request.Request) error {
		switch r.Status {
		case request.StatusFulfilled:
		case request.StatusExpired:
			return request.ErrExpired
		default:
			return request.ErrNotFulfilled
		}
		var status string
		if err := tx.QueryRow(ctx, `SELECT status FROM sessions WHERE id = $1`, r.SessionID).Scan(&status); err != nil {
			return err
		}
		if status != session.StatusOpen {
			return session.ErrClosed
		}
		var data []byte
		err := tx.QueryRow(ctx, `
			UPDATE request_artifacts SET claimed_at = now()
			WHERE request_id = $1 AND claimed_at IS NULL RETURNING data, claimed_at`, r.ID).Scan(&data, &claimedAt)
		if errors.Is(err, pgx.ErrNoRows) {
			return request.ErrAlreadyClaimed
		}
		if err != nil {
			return err
		}
		if err := json.Unmarshal(data, &art); err != nil {
			return err
		}
		b, _ := json.Marshal(map[string]string{"requestId": r.ID, "type": art.Type})
		_, err = appendEvent(ctx, tx, r.SessionID, session.Append{Type: request.EventArtifactClaimed, Actor: session.ActorAgent, Data: b})
		return err
	})
	return art, claimedAt, fail("claim artifact", err)
}

// cancelOpenRequests cancels, in tx, every request of a session that is closing.
// The session's row is already locked by the caller.
func cancelOpenRequests(ctx context.Context, tx pgx.Tx, sessionID, actor string) error {
	rows, err := tx.Query(ctx, `SELECT `+requestColumns+requestFrom+`
		WHERE r.session_id = $1 AND r.status IN ('waiting_user', 'approved', 'executing')
		ORDER BY r.created_at, r.id FOR UPDATE OF r`, sessionID)
	if err != nil {
		return err
	}
	open, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (request.Request, error) { return scanRequest(r) })
	if err != nil {
		return err
	}
	for i := range open {
		if err := move(ctx, tx, &open[i], request.StatusCanceled, actor); err != nil {
			return err
		}
	}
	return nil
}

// expireSession expires the requests of session id whose time ran out.
func (s *Store) expireSession(ctx context.Context, sessionID string) error {
	var due bool
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM requests
		WHERE session_id = $1 AND status = 'waiting_user' AND expires_at <= now())`, sessionID).Scan(&due)
	if err != nil || !due {
		return err
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT 1 FROM sessions WHERE id = $1 FOR UPDATE`, sessionID); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT `+requestColumns+requestFrom+`
			WHERE r.session_id = $1 AND r.status = 'waiting_user' AND r.expires_at <= now()
			ORDER BY r.expires_at, r.id FOR UPDATE OF r`, sessionID)
		if err != nil {
			return err
		}
		due, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (request.Request, error) { return scanRequest(r) })
		if err != nil {
			return err
		}
		for i := range due {
			if err := move(ctx, tx, &due[i], request.StatusExpired, session.ActorSystem); err != nil {
				return err
			}
		}
		return nil
	})
}

// ExpireRequests moves every request whose time ran out to expired, session by
// session, and returns how many sessions it touched; the server runs it on a timer so
// that waiting agents learn of the expiry when it happens.
func (s *Store) ExpireRequests(ctx context.Context) (int, error) {
	rows, err := s.pool.Query(ctx, `SELECT DISTINCT session_id FROM requests
		WHERE status = 'waiting_user' AND expires_at <= now() LIMIT 1000`)
	if err != nil {
		return 0, fail("expire requests", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return 0, fail("expire requests", err)
	}
	for _, id := range ids {
		if err := s.expireSession(ctx, id); err != nil {
			return 0, fail("expire requests", err)
		}
	}
	return len(ids), nil
}

// SealedValue is one stored provided value, still sealed.
type SealedValue struct {
	Handle, SessionID, RequestID, UserID, FieldKey, KeyID string
	Nonce, Ciphertext                                     []byte
}

// SessionValues returns the sealed values of session id, for the materialisation
// route and for tests that prove values are stored sealed.
func (s *Store) SessionValues(ctx context.Context, sessionID string) ([]SealedValue, error) {
	rows, err := s.pool.Query(ctx, `SELECT handle, session_id, request_id, user_id, field_key, key_id, nonce, ciphertext
		FROM session_values WHERE session_id = $1 ORDER BY created_at, field_key`, sessionID)
	if err != nil {
		return nil, fail("session values", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (SealedValue, error) {
		var v SealedValue
		err := r.Scan(&v.Handle, &v.SessionID, &v.RequestID, &v.UserID, &v.FieldKey, &v.KeyID, &v.Nonce, &v.Ciphertext)
		return v, err
	})
	if err != nil {
		return nil, fail("session values", err)
	}
	return out, nil
}
