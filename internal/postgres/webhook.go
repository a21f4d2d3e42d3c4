package postgres

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/waystation/waystation/internal/auth"
	"github.com/waystation/waystation/internal/session"
	"github.com/waystation/waystation/internal/webhook"
)

var _ webhook.Store = (*Store)(nil)

// CreateWebhook registers a webhook of user p with its sealed secret;
// webhook.ErrTooMany if p keeps max webhooks already (max 0: no cap).
func (s *Store) CreateWebhook(ctx context.Context, p auth.Principal, id string, n webhook.New, secret webhook.Sealed, max int) (webhook.Webhook, error) {
	var out webhook.Webhook
	err := s.capped(ctx, p.UserID, `SELECT count(*) FROM webhooks WHERE user_id = $1 AND deleted_at IS NULL`, max, webhook.ErrTooMany, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, `
			INSERT INTO webhooks (id, user_id, url, events, description, key_id, nonce, ciphertext)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id, url, events, description, created_at`,
			id, p.UserID, n.URL, n.Events, n.Description, secret.KeyID, secret.Nonce, secret.Ciphertext).
			Scan(&out.ID, &out.URL, &out.Events, &out.Description, &out.CreatedAt)
	})
	return out, fail("create webhook", err)
}

// Webhooks lists user p's webhooks, newest first.
func (s *Store) Webhooks(ctx context.Context, p auth.Principal) ([]webhook.Webhook, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, url, events, description, created_at FROM webhooks
		WHERE user_id = $1 AND deleted_at IS NULL ORDER BY created_at DESC, id`, p.UserID)
	if err != nil {
		return nil, fail("webhooks", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (webhook.Webhook, error) {
		var w webhook.Webhook
		err := r.Scan(&w.ID, &w.URL, &w.Events, &w.Description, &w.CreatedAt)
		return w, err
	})
	return out, fail("webhooks", err)
}

// DeleteWebhook stops a webhook; its pending deliveries fail.
func (s *Store) DeleteWebhook(ctx context.Context, p auth.Principal, id string) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE webhooks SET deleted_at = now() WHERE id = $1 AND user_id = $2 AND deleted_at IS NULL`, id, p.UserID)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return webhook.ErrNotFound
		}
		_, err = tx.Exec(ctx, `UPDATE webhook_deliveries SET status = 'failed', last_error = 'the webhook was deleted'
			WHERE webhook_id = $1 AND status = 'pending'`, id)
		return err
	})
	return fail("delete webhook", err)
}

// Deliveries lists a webhook's newest deliveries.
func (s *Store) Deliveries(ctx context.Context, p auth.Principal, id string, limit int) ([]webhook.Delivery, error) {
	var ok bool
	if err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM webhooks WHERE id = $1 AND user_id = $2)`, id, p.UserID).Scan(&ok); err != nil {
		return nil, fail("webhook deliveries", err)
	}
	if !ok {
		return nil, webhook.ErrNotFound
	}
	rows, err := s.pool.Query(ctx, `SELECT id, webhook_id, event, status, attempts, last_status, last_error, created_at,
		CASE WHEN status = 'pending' THEN next_at END, delivered_at
		FROM webhook_deliveries WHERE webhook_id = $1 ORDER BY id DESC LIMIT $2`, id, limit)
	if err != nil {
		return nil, fail("webhook deliveries", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (webhook.Delivery, error) {
		var d webhook.Delivery
		err := r.Scan(&d.ID, &d.WebhookID, &d.Event, &d.Status, &d.Attempts, &d.LastStatus, &d.LastError, &d.CreatedAt, &d.NextAt, &d.DeliveredAt)
		return d, err
	})
	return out, fail("webhook deliveries", err)
}

// DueDeliveries implements webhook.Store.
func (s *Store) DueDeliveries(ctx context.Context, limit int, lease time.Duration) ([]webhook.Delivery, error) {
	var out []webhook.Delivery
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `
			SELECT d.id, d.webhook_id, d.event, d.status, d.attempts, d.created_at, d.payload, w.url, w.user_id, w.key_id, w.nonce, w.ciphertext
			FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
			WHERE d.status = 'pending' AND d.next_at <= now()
			ORDER BY d.next_at LIMIT $1 FOR UPDATE OF d SKIP LOCKED`, limit)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (webhook.Delivery, error) {
			var d webhook.Delivery
			err := r.Scan(&d.ID, &d.WebhookID, &d.Event, &d.Status, &d.Attempts, &d.CreatedAt, &d.Payload, &d.URL, &d.UserID,
				&d.Secret.KeyID, &d.Secret.Nonce, &d.Secret.Ciphertext)
			return d, err
		})
		if err != nil || len(out) == 0 {
			return err
		}
		ids := make([]int64, len(out))
		for i, d := range out {
			ids[i] = d.ID
		}
		// Leased: another deliverer leaves them alone until the attempt is recorded.
		_, err = tx.Exec(ctx, `UPDATE webhook_deliveries SET next_at = now() + make_interval(secs => $2) WHERE id = ANY($1)`, ids, lease.Seconds())
		return err
	})
	return out, fail("due webhook deliveries", err)
}

// Attempted implements webhook.Store.
func (s *Store) Attempted(ctx context.Context, id int64, status string, httpStatus int, errText string, next *time.Time) error {
	var code *int
	if httpStatus != 0 {
		code = &httpStatus
	}
	_, err := s.pool.Exec(ctx, `
		UPDATE webhook_deliveries SET status = $2, attempts = attempts + 1, last_status = $3, last_error = nullif($4, ''),
			next_at = coalesce($5, next_at), delivered_at = CASE WHEN $2 = 'delivered' THEN now() END
		WHERE id = $1`, id, status, code, errText, next)
	return fail("record webhook delivery", err)
}

// queueWebhooks queues, in tx, a delivery of the event a session event is to every
// webhook of the session's user that wants it.
func queueWebhooks(ctx context.Context, tx pgx.Tx, sessionID string, ev session.Event) error {
	name, ok := webhook.FromSessionEvent(ev.Type, ev.Data)
	if !ok {
		return nil
	}
	var data map[string]any
	if err := json.Unmarshal(ev.Data, &data); err != nil || data == nil {
		data = map[string]any{}
	}
	data["sessionId"], data["seq"], data["sessionEvent"] = sessionID, ev.Seq, ev.Type
	payload, _ := json.Marshal(data)
	_, err := tx.Exec(ctx, `
		INSERT INTO webhook_deliveries (webhook_id, event, payload)
		SELECT w.id, $2, $3 FROM webhooks w JOIN sessions s ON s.user_id = w.user_id
		WHERE s.id = $1 AND w.deleted_at IS NULL AND $2 = ANY(w.events)`, sessionID, name, payload)
	return err
}
