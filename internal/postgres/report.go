package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/waystation/waystation/internal/auth"
	"github.com/waystation/waystation/internal/directory"
	"github.com/waystation/waystation/internal/payment"
	"github.com/waystation/waystation/internal/trust"
)

var _ payment.ReportStore = (*Store)(nil)

// ReportDelivery implements payment.ReportStore. The payment's row is locked so that
// a report and the payment's settlement never cross, and the report is keyed by the
// payment, so that two reports at once leave one.
func (s *Store) ReportDelivery(ctx context.Context, p auth.Principal, sessionID, id string, in payment.ReportInput) (payment.Report, error) {
	out := payment.Report{PaymentID: id, Outcome: in.Outcome, Reason: in.Reason, ReportedBy: "user"}
	if p.Scope == auth.ScopeAgent {
		out.ReportedBy = "agent"
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		where, arg := visiblePayment(p, 3)
		var status string
		var value int64
		var settledAt *time.Time
		var late bool
		err := tx.QueryRow(ctx, `SELECT p.status, p.hostname, p.value, p.settled_at, coalesce(p.settled_at < now() - make_interval(secs => $4), false)
			FROM payments p WHERE p.id = $1 AND p.session_id = $2 AND `+where+` FOR UPDATE OF p`, id, sessionID, arg, payment.ReportWindow.Seconds()).
			Scan(&status, &out.Hostname, &value, &settledAt, &late)
		if errors.Is(err, pgx.ErrNoRows) {
			return payment.ErrNotFound
		}
		if err != nil {
			return err
		}
		if status != payment.StatusSettled || settledAt == nil {
			return payment.ErrNotSettled
		}
		if late {
			return payment.ErrReportWindowClosed
		}
		out.Value = payment.Micros(value)
		err = tx.QueryRow(ctx, `
			INSERT INTO delivery_reports (payment_id, hostname, user_id, agent_id, reported_by, outcome, reason, value, settled_on)
			SELECT id, hostname, user_id, agent_id, $2, $3, $4, value, (settled_at AT TIME ZONE 'UTC')::date
			FROM payments WHERE id = $1
			ON CONFLICT (payment_id) DO NOTHING
			RETURNING created_at`, id, out.ReportedBy, in.Outcome, in.Reason).Scan(&out.CreatedAt)
		if errors.Is(err, pgx.ErrNoRows) {
			return payment.ErrAlreadyReported
		}
		out.CreatedAt = out.CreatedAt.UTC()
		return err
	})
	if err != nil {
		return payment.Report{}, fail("report delivery", err)
	}
	return out, nil
}

// DemandWindow is how far back the service's own demand of a seller counts.
const DemandWindow = 30 * 24 * time.Hour

// directoryReports reads into rec each hostname's delivery evidence (every payment
// settled in the last trust.ReportAge that was reported, or recorded as not
// delivered) and the service's own demand of the last DemandWindow, in tx, the
// directory records' transaction.
func directoryReports(ctx context.Context, tx pgx.Tx, rec *trust.Records, now time.Time) error {
	rec.Reports = map[string][]trust.ReportRecord{}
	rec.Demand = map[string]*directory.ServiceDemand{}
	rows, _ := tx.Query(ctx, `
		SELECT p.hostname, p.user_id::text, p.settled_at, p.value, r.outcome IS NOT NULL, NOT p.delivered,
			CASE WHEN NOT p.delivered THEN 'not_delivered' ELSE r.outcome END
		FROM payments p LEFT JOIN delivery_reports r ON r.payment_id = p.id
		WHERE p.status = 'settled' AND p.settled_at > $1 AND (r.id IS NOT NULL OR NOT p.delivered)
		ORDER BY p.hostname, p.settled_at, p.id`, now.Add(-trust.ReportAge))
	var host string
	var r trust.ReportRecord
	_, err := pgx.ForEachRow(rows, []any{&host, &r.Payer, &r.SettledAt, &r.Value, &r.Reported, &r.Observed, &r.Outcome}, func() error {
		rec.Reports[host] = append(rec.Reports[host], r)
		return nil
	})
	if err != nil {
		return fail("directory reports", err)
	}
	rows, _ = tx.Query(ctx, `
		SELECT hostname, sum(n)::int, count(*)::int, count(*) FILTER (WHERE days > 1)::int
		FROM (SELECT hostname, user_id, count(*) AS n, count(DISTINCT (settled_at AT TIME ZONE 'UTC')::date) AS days
			FROM payments WHERE status = 'settled' AND settled_at > $1 GROUP BY hostname, user_id) per
		GROUP BY hostname`, now.Add(-DemandWindow))
	var settled, payers, repeat int
	_, err = pgx.ForEachRow(rows, []any{&host, &settled, &payers, &repeat}, func() error {
		rec.Demand[host] = directory.NewServiceDemand(settled, payers, repeat)
		return nil
	})
	return fail("directory demand", err)
}
