package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/waystation/waystation/internal/memory"
	"github.com/waystation/waystation/internal/protect"
	"github.com/waystation/waystation/internal/webhook"
)

var _ protect.Store = (*Store)(nil)

// RecordDetection implements protect.Store. The agent's row is locked (after the
// sessions of its payments, which a pause cancels), so that the detections of one
// agent are counted one at a time and none is answered as anything but a paused
// agent's once the one that reached the budget paused it, its payments not yet taken
// cancelled with it.
func (s *Store) RecordDetection(ctx context.Context, d protect.Detection, window time.Duration, budget int) (int, bool, error) {
	var n int
	var paused bool
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := lockPayingSessions(ctx, tx, d.UserID, d.AgentID); err != nil {
			return err
		}
		var status string
		var since time.Time
		err := tx.QueryRow(ctx, `SELECT status, status_changed_at FROM agents WHERE id = $1 AND user_id = $2 FOR UPDATE`,
			d.AgentID, d.UserID).Scan(&status, &since)
		if err != nil {
			return err
		}
		if status != "active" {
			return protect.ErrPaused
		}
		if _, err := tx.Exec(ctx, `INSERT INTO detections (user_id, agent_id, kid, route, kind) VALUES ($1, $2, $3, $4, $5)`,
			d.UserID, d.AgentID, d.KID, d.Route, d.Kind); err != nil {
			return err
		}
		err = tx.QueryRow(ctx, `
			SELECT count(*) FROM detections
			WHERE agent_id = $1 AND created_at >= greatest($2::timestamptz, now() - make_interval(secs => $3))`,
			d.AgentID, since, window.Seconds()).Scan(&n)
		if err != nil || n < budget {
			return err
		}
		paused = true
		reason := protect.ReasonProtectedValues
		a, err := setAgentStatus(ctx, tx, d.UserID, d.AgentID, "disabled", &reason)
		if err != nil {
			return err
		}
		payload, _ := json.Marshal(map[string]any{"agentId": d.AgentID, "agentName": a.Name, "reason": reason,
			"detections": n, "route": d.Route, "kind": d.Kind})
		_, err = tx.Exec(ctx, `
			INSERT INTO webhook_deliveries (webhook_id, event, payload)
			SELECT id, $2, $3 FROM webhooks WHERE user_id = $1 AND deleted_at IS NULL AND $2 = ANY(events)`,
			d.UserID, webhook.AgentPaused, payload)
		return err
	})
	if errors.Is(err, protect.ErrPaused) {
		return 0, false, err
	}
	return n, paused, fail("record detection", err)
}

// Detections implements protect.Store.
func (s *Store) Detections(ctx context.Context, userID string, limit int) ([]protect.Detection, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT user_id, agent_id, kid, route, kind, created_at FROM detections
		WHERE user_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2`, userID, limit)
	if err != nil {
		return nil, fail("detections", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (protect.Detection, error) {
		var d protect.Detection
		err := r.Scan(&d.UserID, &d.AgentID, &d.KID, &d.Route, &d.Kind, &d.At)
		return d, err
	})
	return out, fail("detections", err)
}

// GivenSealed lists the sealed values materialised to agentID of userID: the fields
// of memory items and the values provided through requests whose handles a
// materialisation of the agent released.
func (s *Store) GivenSealed(ctx context.Context, userID, agentID string) ([]memory.Releasable, error) {
	rows, err := s.pool.Query(ctx, `
		WITH released AS (
			SELECT DISTINCT unnest(handles) AS handle FROM materializations WHERE user_id = $1 AND agent_id = $2)
		SELECT f.key_id, f.nonce, f.ciphertext, i.user_id::text || '|' || i.id::text || '|' || f.field_ref
		FROM released r JOIN memory_handles h ON h.handle = r.handle
		JOIN memory_items i ON i.id = h.item_id JOIN memory_fields f ON f.item_id = h.item_id AND f.field_ref = h.field_ref
		WHERE i.user_id = $1 AND f.ciphertext IS NOT NULL
		UNION ALL
		SELECT v.key_id, v.nonce, v.ciphertext, v.user_id::text || '|' || v.request_id::text || '|' || v.field_key
		FROM released r JOIN session_values v ON v.handle = r.handle
		WHERE v.user_id = $1`, userID, agentID)
	if err != nil {
		return nil, fail("given values", err)
	}
	out, err := pgx.CollectRows(rows, scanSealed)
	return out, fail("given values", err)
}
