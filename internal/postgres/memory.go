package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/waystation/waystation/internal/auth"
	"github.com/waystation/waystation/internal/memory"
	"github.com/waystation/waystation/internal/request"
	"github.com/waystation/waystation/internal/session"
)

var _ memory.ItemStore = (*Store)(nil)

const itemColumns = `id, user_id, label, hosts, ask_before_use, read_only, revision, created_by, created_at, updated_at`

func scanItem(row pgx.Row) (memory.Stored, error) {
	var s memory.Stored
	err := row.Scan(&s.ID, &s.UserID, &s.Label, &s.Hosts, &s.AskBeforeUse, &s.ReadOnly, &s.Revision, &s.CreatedBy, &s.CreatedAt, &s.UpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		err = memory.ErrNotFound
	}
	return s, err
}

// fields loads the fields of items, in their order.
func fields(ctx context.Context, q querier, items []memory.Stored) error {
	if len(items) == 0 {
		return nil
	}
	ids := make([]string, len(items))
	at := map[string]int{}
	for i, it := range items {
		ids[i] = it.ID
		at[it.ID] = i
	}
	rows, err := q.Query(ctx, `
		SELECT item_id, field_ref, label, coalesce(hint, ''), value_type, secret, key_id, nonce, ciphertext
		FROM memory_fields WHERE item_id = ANY($1) ORDER BY item_id, position`, ids)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var f memory.StoredField
		var keyID *string
		var nonce, ct []byte
		if err := rows.Scan(&id, &f.FieldRef, &f.Label, &f.Hint, &f.ValueType, &f.Secret, &keyID, &nonce, &ct); err != nil {
			return err
		}
		if keyID != nil {
			f.Value = &memory.Sealed{KeyID: *keyID, Nonce: nonce, Ciphertext: ct}
		}
		items[at[id]].Fields = append(items[at[id]].Fields, f)
	}
	return rows.Err()
}

type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

func insertFields(ctx context.Context, tx pgx.Tx, s memory.Stored) error {
	for i, f := range s.Fields {
		var keyID *string
		var nonce, ct []byte
		if f.Value != nil {
			keyID, nonce, ct = &f.Value.KeyID, f.Value.Nonce, f.Value.Ciphertext
		}
		var hint *string
		if f.Hint != "" {
			hint = &f.Hint
		}
		if _, err := tx.Exec(ctx, `
			INSERT INTO memory_fields (item_id, field_ref, position, label, hint, value_type, secret, key_id, nonce, ciphertext)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
			s.ID, f.FieldRef, i, f.Label, hint, f.ValueType, f.Secret, keyID, nonce, ct); err != nil {
			return err
		}
	}
	return nil
}

func hosts(h []string) []string {
	if h == nil {
		return []string{}
	}
	return h
}

// CreateItem stores a new item of s.UserID, unless the user keeps max items already
// (0: no cap).
func (s *Store) CreateItem(ctx context.Context, it memory.Stored, max int) (memory.Stored, error) {
	var out memory.Stored
	err := s.capped(ctx, it.UserID, `SELECT count(*) FROM memory_items WHERE user_id = $1 AND archived_at IS NULL`, max, memory.ErrTooManyItems, func(tx pgx.Tx) error {
		var err error
		out, err = insertItem(ctx, tx, it)
		return err
	})
	return out, fail("create memory item", err)
}

func insertItem(ctx context.Context, tx pgx.Tx, it memory.Stored) (memory.Stored, error) {
	out, err := scanItem(tx.QueryRow(ctx, `
		INSERT INTO memory_items (id, user_id, label, hosts, ask_before_use, read_only, created_by)
		VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING `+itemColumns,
		it.ID, it.UserID, it.Label, hosts(it.Hosts), it.AskBeforeUse, it.ReadOnly, it.CreatedBy))
	if err != nil {
		return out, err
	}
	if err := insertFields(ctx, tx, it); err != nil {
		return out, err
	}
	out.Fields = it.Fields
	return out, nil
}

// Items lists userID's items in scope, newest first, limit at a time.
func (s *Store) Items(ctx context.Context, userID string, scope memory.Scope, after *session.Cursor, limit int) ([]memory.Stored, *session.Cursor, error) {
	q := `SELECT ` + itemColumns + ` FROM memory_items WHERE user_id = $1 AND archived_at IS NULL`
	args := []any{userID}
	switch {
	case scope.Host != "":
		args = append(args, scope.Host)
		q += ` AND (hosts = '{}' OR $2 = ANY(hosts))`
	case scope.AllSites:
		q += ` AND hosts = '{}'`
	}
	if after != nil {
		n := len(args)
		q += ` AND (created_at, id) < ($` + strconv.Itoa(n+1) + `, $` + strconv.Itoa(n+2) + `)`
		args = append(args, after.CreatedAt, after.ID)
	}
	q += ` ORDER BY created_at DESC, id DESC LIMIT ` + strconv.Itoa(limit+1)
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, nil, fail("memory items", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (memory.Stored, error) { return scanItem(r) })
	if err != nil {
		return nil, nil, fail("memory items", err)
	}
	out, next := page(out, limit, func(s memory.Stored) (time.Time, string) { return s.CreatedAt, s.ID })
	if err := fields(ctx, s.pool, out); err != nil {
		return nil, nil, fail("memory items", err)
	}
	return out, next, nil
}

// StoredItem returns item id of userID with its sealed values.
func (s *Store) StoredItem(ctx context.Context, userID, id string) (memory.Stored, error) {
	it, err := scanItem(s.pool.QueryRow(ctx, `SELECT `+itemColumns+` FROM memory_items WHERE id = $1 AND user_id = $2 AND archived_at IS NULL`, id, userID))
	if err != nil {
		return it, fail("memory item", err)
	}
	items := []memory.Stored{it}
	if err := fields(ctx, s.pool, items); err != nil {
		return it, fail("memory item", err)
	}
	return items[0], nil
}

// UpdateItem replaces item it.ID with it if its revision is still revision.
func (s *Store) UpdateItem(ctx context.Context, it memory.Stored, revision int) (memory.Stored, error) {
	var out memory.Stored
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		out, err = scanItem(tx.QueryRow(ctx, `
			UPDATE memory_items SET label = $3, hosts = $4, ask_before_use = $5, read_only = $6,
				revision = revision + 1, updated_at = now()
			WHERE id = $1 AND user_id = $2 AND archived_at IS NULL AND revision = $7
			RETURNING `+itemColumns, it.ID, it.UserID, it.Label, hosts(it.Hosts), it.AskBeforeUse, it.ReadOnly, revision))
		if errors.Is(err, memory.ErrNotFound) {
			return staleOrMissing(ctx, tx, it.UserID, it.ID)
		}
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM memory_fields WHERE item_id = $1`, it.ID); err != nil {
			return err
		}
		out.Fields = it.Fields
		return insertFields(ctx, tx, it)
	})
	return out, fail("update memory item", err)
}

func staleOrMissing(ctx context.Context, tx pgx.Tx, userID, id string) error {
	var live bool
	err := tx.QueryRow(ctx, `SELECT true FROM memory_items WHERE id = $1 AND user_id = $2 AND archived_at IS NULL`, id, userID).Scan(&live)
	if errors.Is(err, pgx.ErrNoRows) {
		return memory.ErrNotFound
	}
	if err != nil {
		return err
	}
	return memory.ErrStale
}

// ArchiveItem archives item id of userID and forgets its values.
func (s *Store) ArchiveItem(ctx context.Context, userID, id string, revision int) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `
			UPDATE memory_items SET archived_at = now(), updated_at = now(), revision = revision + 1
			WHERE id = $1 AND user_id = $2 AND archived_at IS NULL AND ($3 = 0 OR revision = $3)`, id, userID, revision)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return staleOrMissing(ctx, tx, userID, id)
		}
		_, err = tx.Exec(ctx, `UPDATE memory_fields SET key_id = NULL, nonce = NULL, ciphertext = NULL WHERE item_id = $1`, id)
		return err
	})
	return fail("archive memory item", err)
}

var _ memory.Store = (*Store)(nil)

// openSession locks session id for tx if p may see it and it is open.
func openSession(ctx context.Context, tx pgx.Tx, p auth.Principal, id string) (session.Session, error) {
	sess, err := lockSession(ctx, tx, p, id)
	if err == nil && sess.Status != session.StatusOpen {
		err = session.ErrClosed
	}
	return sess, err
}

// Catalog issues session sessionID's handles, once per field, for the fields with
// values of its user's items in scope; card data is held back.
func (s *Store) Catalog(ctx context.Context, p auth.Principal, sessionID string, scope memory.Scope) ([]memory.Entry, []memory.Unavailable, error) {
	entries, unavailable := []memory.Entry{}, []memory.Unavailable{}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		sess, err := openSession(ctx, tx, p, sessionID)
		if err != nil {
			return err
		}
		q := `SELECT i.id, i.label, i.ask_before_use, f.field_ref, f.label, f.value_type
			FROM memory_items i JOIN memory_fields f ON f.item_id = i.id
			WHERE i.user_id = $1 AND i.archived_at IS NULL AND f.ciphertext IS NOT NULL`
		args := []any{sess.UserID}
		switch {
		case scope.Host != "":
			q += ` AND (i.hosts = '{}' OR $2 = ANY(i.hosts))`
			args = append(args, scope.Host)
		case scope.AllSites:
			q += ` AND i.hosts = '{}'`
		}
		rows, err := tx.Query(ctx, q+` ORDER BY i.created_at, i.id, f.position`, args...)
		if err != nil {
			return err
		}
		found, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (memory.Entry, error) {
			var e memory.Entry
			err := r.Scan(&e.ItemID, &e.ItemLabel, &e.AskBeforeUse, &e.FieldRef, &e.Label, &e.ValueType)
			return e, err
		})
		if err != nil {
			return err
		}
		for _, e := range found {
			if memory.CardLike(e.ValueType) {
				unavailable = append(unavailable, memory.Unavailable{ItemID: e.ItemID, FieldRef: e.FieldRef, Reason: memory.ReasonPaymentApproval})
				continue
			}
			h, err := request.NewHandle()
			if err != nil {
				return err
			}
			if err := tx.QueryRow(ctx, `
				INSERT INTO memory_handles (handle, session_id, item_id, field_ref) VALUES ($1, $2, $3, $4)
				ON CONFLICT (session_id, item_id, field_ref) DO UPDATE SET handle = memory_handles.handle
				RETURNING handle`, h, sessionID, e.ItemID, e.FieldRef).Scan(&e.Handle); err != nil {
				return err
			}
			entries = append(entries, e)
		}
		return nil
	})
	return entries, unavailable, fail("memory catalog", err)
}

// releasable finds one handle of a session: a provided value, or a memory field.
const releasable = `
	SELECT v.key_id, v.nonce, v.ciphertext, v.user_id::text || '|' || v.request_id::text || '|' || v.field_key, false
	FROM session_values v WHERE v.handle = $1 AND v.session_id = $2
	UNION ALL
	SELECT f.key_id, f.nonce, f.ciphertext, i.user_id::text || '|' || i.id::text || '|' || f.field_ref, f.value_type LIKE 'card\_%'
	FROM memory_handles h
	JOIN memory_items i ON i.id = h.item_id AND i.archived_at IS NULL
	JOIN memory_fields f ON f.item_id = h.item_id AND f.field_ref = h.field_ref AND f.ciphertext IS NOT NULL
	WHERE h.handle = $1 AND h.session_id = $2`

// covered tells whether a fulfilled request of the session names the handle in its
// reference artifact: a provided value's own request, or an ask_before_use approval.
const covered = `
	SELECT EXISTS (SELECT 1 FROM request_artifacts a JOIN requests r ON r.id = a.request_id
		WHERE a.session_id = $2 AND r.status = 'fulfilled' AND a.type = 'reference'
		AND a.data->'reference'->'handles' @> jsonb_build_array(jsonb_build_object('handle', $1::text)))`

// Releasable says, for each handle, whether it is session sessionID's, whether an
// approval covers it, and its sealed value; the session must be open and p's own.
func (s *Store) Releasable(ctx context.Context, p auth.Principal, sessionID string, handles []string) ([]memory.Releasable, error) {
	var out []memory.Releasable
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := openSession(ctx, tx, p, sessionID); err != nil {
			return err
		}
		out = make([]memory.Releasable, 0, len(handles))
		for _, h := range handles {
			r := memory.Releasable{Handle: h}
			var aad string
			err := tx.QueryRow(ctx, releasable, h, sessionID).Scan(&r.Value.KeyID, &r.Value.Nonce, &r.Value.Ciphertext, &aad, &r.CardLike)
			switch {
			case errors.Is(err, pgx.ErrNoRows):
				out = append(out, r)
				continue
			case err != nil:
				return err
			}
			r.Found, r.AAD = true, []byte(aad)
			if err := tx.QueryRow(ctx, covered, h, sessionID).Scan(&r.Covered); err != nil {
				return err
			}
			out = append(out, r)
		}
		return nil
	})
	return out, fail("releasable handles", err)
}

// EventMaterialized is the session event of a materialisation: handles only.
const EventMaterialized = "memory.materialized"

// RecordMaterialization writes a materialisation's audit row and event, while the
// session is still open.
func (s *Store) RecordMaterialization(ctx context.Context, p auth.Principal, sessionID string, handles []string, purpose string) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		sess, err := openSession(ctx, tx, p, sessionID)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `
			INSERT INTO materializations (session_id, user_id, agent_id, kid, handles, purpose)
			VALUES ($1, $2, $3, $4, $5, $6)`, sessionID, sess.UserID, sess.AgentID, p.KID, handles, purpose); err != nil {
			return err
		}
		data, _ := json.Marshal(map[string]any{"handles": handles})
		_, err = appendEvent(ctx, tx, sessionID, session.Append{Type: EventMaterialized, Actor: session.ActorSystem, Data: data})
		return err
	})
	return fail("record materialization", err)
}

// ProtectedSealed lists the sealed values of userID that must never reach a model:
// of its items, secret fields, fields of items that ask before use and card data;
// and every value provided through its requests.
func (s *Store) ProtectedSealed(ctx context.Context, userID string) ([]memory.Releasable, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT f.key_id, f.nonce, f.ciphertext, i.user_id::text || '|' || i.id::text || '|' || f.field_ref
		FROM memory_items i JOIN memory_fields f ON f.item_id = i.id
		WHERE i.user_id = $1 AND i.archived_at IS NULL AND f.ciphertext IS NOT NULL
		AND (f.secret OR i.ask_before_use OR f.value_type LIKE 'card\_%')
		UNION ALL
		SELECT key_id, nonce, ciphertext, user_id::text || '|' || request_id::text || '|' || field_key
		FROM session_values WHERE user_id = $1`, userID)
	if err != nil {
		return nil, fail("protected values", err)
	}
	out, err := pgx.CollectRows(rows, scanSealed)
	return out, fail("protected values", err)
}

// scanSealed reads a row of a sealed value: key id, nonce, ciphertext and its
// additional data.
func scanSealed(r pgx.CollectableRow) (memory.Releasable, error) {
	var m memory.Releasable
	var aad string
	err := r.Scan(&m.Value.KeyID, &m.Value.Nonce, &m.Value.Ciphertext, &aad)
	m.Found, m.AAD = true, []byte(aad)
	return m, err
}
