package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/waystation/waystation/internal/auth"
	"github.com/waystation/waystation/internal/payment"
	"github.com/waystation/waystation/internal/request"
	"github.com/waystation/waystation/internal/session"
	"github.com/waystation/waystation/internal/x402"
)

var _ payment.Store = (*Store)(nil)

// rowQuerier is the pool or a transaction, for a read that runs in either.
type rowQuerier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// paymentStatus is a payment's status as callers see it: its own once the service
// took it, else what its request says (awaiting_approval, approved, denied, ...).
const paymentStatus = `CASE WHEN p.status <> 'pending' THEN p.status
	WHEN r.status IS NULL THEN 'canceled'
	WHEN r.status = 'waiting_user' THEN 'awaiting_approval'
	ELSE r.status END`

const paymentColumns = `p.id, coalesce(p.request_id::text, ''), coalesce(p.session_id::text, ''), p.agent_id, p.user_id,
	` + paymentStatus + `, p.failure, p.hostname, p.http_request, p.offer, p.raw_offer, p.maximum_debit, p.merchant, p.override,
	p.payer, p.transaction, p.created_at, p.signed_at, p.settled_at, p.nonce, coalesce(p.valid_after, 0),
	coalesce(p.valid_before, 0), coalesce(p.blockhash, ''), coalesce(p.slot, 0), p.attempts, p.delivered, p.answer,
	p.settled_amount, p.settled_value, p.settlement`

const paymentFrom = ` FROM payments p LEFT JOIN requests r ON r.id = p.request_id`

func scanPayment(row pgx.Row) (payment.Payment, error) {
	var p payment.Payment
	var env, offer, raw, merchant, answer, settlement []byte
	var maxDebit, slot int64
	var settledValue *int64
	err := row.Scan(&p.ID, &p.RequestID, &p.SessionID, &p.AgentID, &p.UserID, &p.Status, &p.Failure, &p.Host, &env, &offer, &raw,
		&maxDebit, &merchant, &p.Override, &p.Payer, &p.Transaction, &p.CreatedAt, &p.SignedAt, &p.SettledAt, &p.Nonce,
		&p.ValidAfter, &p.ValidBefore, &p.Blockhash, &slot, &p.Attempts, &p.Delivered, &answer,
		&p.SettledAmount, &settledValue, &settlement)
	if errors.Is(err, pgx.ErrNoRows) {
		return p, payment.ErrNotFound
	}
	if err != nil {
		return p, err
	}
	p.MaximumDebit, p.Slot = payment.Micros(maxDebit), uint64(slot)
	if settledValue != nil {
		v := payment.Micros(*settledValue)
		p.SettledValue = &v
	}
	if p.Status != payment.StatusSettled {
		p.Delivered = nil // said of a settled payment only
	}
	if answer != nil {
		if err := json.Unmarshal(answer, &p.Answer); err != nil {
			return p, err
		}
	}
	if settlement != nil {
		if err := json.Unmarshal(settlement, &p.Settlement); err != nil {
			return p, err
		}
	}
	if err := errors.Join(json.Unmarshal(env, &p.HTTPRequest), json.Unmarshal(offer, &p.Offer),
		json.Unmarshal(raw, &p.Raw), json.Unmarshal(merchant, &p.Verdict)); err != nil {
		return p, err
	}
	return p, nil
}

// spent is what a payment counts in spend: the maximum approved until an upto
// payment's settled value is known, then that.
const spent = `coalesce(settled_value, value)`

// spendCounts holds for the payments an agent's spend counts: every payment the
// service took, unknown ones too, unless the seller refused it, it was never signed,
// or the chain showed it unused.
const spendCounts = `(status IN ('executing', 'unknown', 'settled')
	OR (status = 'failed' AND signed_at IS NOT NULL AND failure NOT IN ('seller_refused', 'not_settled')))`

// limits reads an agent's limits (the defaults when its person set none) and its
// spend from the UTC day and month of now, in q (a transaction that may hold the
// agent's lock, or the pool).
func limits(ctx context.Context, q rowQuerier, agentID string, now time.Time) (payment.LimitsAndSpend, error) {
	row := func(sql string, args ...any) pgx.Row { return q.QueryRow(ctx, sql, args...) }
	out := payment.LimitsAndSpend{Limits: payment.DefaultLimits, Currency: "USD"}
	var per, daily, monthly int64
	err := row(`SELECT per_payment, daily, monthly, hosts_mode, hosts, paused FROM spending_limits WHERE agent_id = $1`, agentID).
		Scan(&per, &daily, &monthly, &out.HostsMode, &out.Hosts, &out.Paused)
	switch {
	case err == nil:
		out.PerPayment, out.Daily, out.Monthly = payment.Micros(per), payment.Micros(daily), payment.Micros(monthly)
	case !errors.Is(err, pgx.ErrNoRows):
		return out, err
	}
	if out.Hosts == nil {
		out.Hosts = []string{}
	}
	day, month := payment.Periods(now)
	var today, thisMonth int64
	err = row(`SELECT coalesce(sum(`+spent+`) FILTER (WHERE taken_at >= $2), 0), coalesce(sum(`+spent+`), 0)
		FROM payments WHERE agent_id = $1 AND taken_at >= $3 AND `+spendCounts,
		agentID, day, month).Scan(&today, &thisMonth)
	out.Spent = payment.Spend{Today: payment.Micros(today), ThisMonth: payment.Micros(thisMonth)}
	return out, err
}

// Limits implements payment.Store.
func (s *Store) Limits(ctx context.Context, agentID string, now time.Time) (payment.LimitsAndSpend, error) {
	out, err := limits(ctx, s.pool, agentID, now)
	return out, fail("spending limits", err)
}

// SetLimits implements payment.Store: only the agent's own user sets them.
func (s *Store) SetLimits(ctx context.Context, p auth.Principal, agentID string, l payment.Limits) (payment.LimitsAndSpend, error) {
	var out payment.LimitsAndSpend
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var ok bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM agents WHERE id = $1 AND user_id = $2 FOR UPDATE)`,
			agentID, p.UserID).Scan(&ok); err != nil {
			return err
		}
		if !ok {
			return auth.ErrAgentNotFound
		}
		if _, err := tx.Exec(ctx, `
			INSERT INTO spending_limits (agent_id, per_payment, daily, monthly, hosts_mode, hosts, paused)
			VALUES ($1, $2, $3, $4, $5, $6, $7)
			ON CONFLICT (agent_id) DO UPDATE SET per_payment = $2, daily = $3, monthly = $4, hosts_mode = $5,
				hosts = $6, paused = $7, updated_at = now()`,
			agentID, int64(l.PerPayment), int64(l.Daily), int64(l.Monthly), l.HostsMode, l.Hosts, l.Paused); err != nil {
			return err
		}
		var err error
		out, err = limits(ctx, tx, agentID, time.Now())
		return err
	})
	return out, fail("set spending limits", err)
}

// CreatePayment implements payment.Store. The session is locked first and the agent
// second, as Take does, so the two never deadlock; the agent's lock makes the limit
// check and the new request one step against concurrent payments.
func (s *Store) CreatePayment(ctx context.Context, p auth.Principal, sessionID string, pay payment.Payment, n request.New, maxEvents int) (payment.Payment, request.Request, error) {
	var out payment.Payment
	var req request.Request
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := lockSession(ctx, tx, p, sessionID); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `SELECT 1 FROM agents WHERE id = $1 FOR UPDATE`, p.AgentID); err != nil {
			return err
		}
		var created bool
		var err error
		req, created, err = createRequest(ctx, tx, p, sessionID, n, maxEvents)
		if err != nil {
			return err
		}
		if !created {
			out, err = scanPayment(tx.QueryRow(ctx, `SELECT `+paymentColumns+paymentFrom+` WHERE p.request_id = $1`, req.ID))
			return err
		}
		lim, err := limits(ctx, tx, p.AgentID, time.Now())
		if err != nil {
			return err
		}
		if err := lim.Allows(pay.Host, pay.Offer.Value, lim.Spent); err != nil {
			return err
		}
		env, _ := json.Marshal(pay.HTTPRequest)
		offer, _ := json.Marshal(pay.Offer)
		raw, _ := json.Marshal(pay.Raw)
		merchant, _ := json.Marshal(pay.Verdict)
		var id string
		if err := tx.QueryRow(ctx, `
			INSERT INTO payments (request_id, session_id, user_id, agent_id, hostname, http_request, offer, raw_offer,
				value, maximum_debit, merchant, payer, nonce)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) RETURNING id`,
			req.ID, sessionID, req.UserID, req.AgentID, pay.Host, env, offer, raw, int64(pay.Offer.Value),
			int64(pay.MaximumDebit), merchant, pay.Payer, pay.Nonce).Scan(&id); err != nil {
			return err
		}
		// The request names its payment, for the page and the agent alike.
		if _, err := tx.Exec(ctx, `UPDATE requests SET params = params || jsonb_build_object('paymentId', $2::text) WHERE id = $1`,
			req.ID, id); err != nil {
			return err
		}
		req.Params.PaymentID = id
		out, err = scanPayment(tx.QueryRow(ctx, `SELECT `+paymentColumns+paymentFrom+` WHERE p.id = $1`, id))
		return err
	})
	return out, req, fail("create payment", err)
}

// Payment implements payment.Store.
func (s *Store) Payment(ctx context.Context, p auth.Principal, sessionID, id string) (payment.Payment, error) {
	where, arg := visiblePayment(p, 3)
	out, err := scanPayment(s.pool.QueryRow(ctx, `SELECT `+paymentColumns+paymentFrom+`
		WHERE p.id = $1 AND p.session_id = $2 AND `+where, id, sessionID, arg))
	return out, fail("payment", err)
}

// PaymentOfRequest implements payment.Store.
func (s *Store) PaymentOfRequest(ctx context.Context, p auth.Principal, requestID string) (payment.Payment, error) {
	where, arg := visiblePayment(p, 2)
	out, err := scanPayment(s.pool.QueryRow(ctx, `SELECT `+paymentColumns+paymentFrom+`
		WHERE p.request_id = $1 AND `+where, requestID, arg))
	return out, fail("payment of request", err)
}

func visiblePayment(p auth.Principal, arg int) (string, any) {
	if p.Scope == auth.ScopeAgent {
		return "p.agent_id = $" + strconv.Itoa(arg), p.AgentID
	}
	return "p.user_id = $" + strconv.Itoa(arg), p.UserID
}

// Take implements payment.Store.
func (s *Store) Take(ctx context.Context, lease time.Duration) (*payment.Payment, error) {
	var out *payment.Payment
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var id, status string
		var sessionID *string
		err := tx.QueryRow(ctx, `
			SELECT p.id, p.status, p.session_id FROM payments p JOIN requests r ON r.id = p.request_id
			WHERE (p.status = 'pending' AND r.status = 'approved')
			   OR (p.status = 'executing' AND p.taken_at < now() - make_interval(secs => $1))
			ORDER BY p.created_at LIMIT 1
			FOR UPDATE OF p SKIP LOCKED`, lease.Seconds()).Scan(&id, &status, &sessionID)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		pay, err := scanPayment(tx.QueryRow(ctx, `SELECT `+paymentColumns+paymentFrom+` WHERE p.id = $1`, id))
		if err != nil {
			return err
		}
		if sessionID != nil {
			if _, err := tx.Exec(ctx, `SELECT 1 FROM sessions WHERE id = $1 FOR UPDATE`, *sessionID); err != nil {
				return err
			}
		}
		if status == payment.StatusExecuting {
			// Its executor stopped: taken again, to send the same payment again.
			if _, err := tx.Exec(ctx, `UPDATE payments SET taken_at = now(), attempts = attempts + 1 WHERE id = $1`, id); err != nil {
				return err
			}
			pay.Attempts++
			out = &pay
			return nil
		}
		if _, err := tx.Exec(ctx, `SELECT 1 FROM agents WHERE id = $1 FOR UPDATE`, pay.AgentID); err != nil {
			return err
		}
		lim, err := limits(ctx, tx, pay.AgentID, time.Now())
		if err != nil {
			return err
		}
		r, err := scanRequest(tx.QueryRow(ctx, `SELECT `+requestColumns+requestFrom+` WHERE r.id = $1 FOR UPDATE OF r`, pay.RequestID))
		if err != nil {
			return err
		}
		var active bool
		if err := tx.QueryRow(ctx, `SELECT status = 'active' FROM agents WHERE id = $1`, pay.AgentID).Scan(&active); err != nil {
			return err
		}
		if !active {
			// Approved before its agent was disabled: never carried out.
			return finishPayment(ctx, tx, pay, &r, payment.Outcome{Status: payment.StatusFailed, Failure: payment.FailAgentDisabled})
		}
		if lim.Allows(pay.Host, pay.Offer.Value, lim.Spent) != nil {
			// Checked again before signing: limits changed, or other payments spent
			// the budget since the person approved.
			return finishPayment(ctx, tx, pay, &r, payment.Outcome{Status: payment.StatusFailed, Failure: payment.FailLimit})
		}
		if _, err := tx.Exec(ctx, `UPDATE payments SET status = 'executing', taken_at = now(), attempts = attempts + 1 WHERE id = $1`, id); err != nil {
			return err
		}
		if err := move(ctx, tx, &r, request.StatusExecuting, session.ActorSystem); err != nil {
			return err
		}
		pay.Status, pay.Attempts = payment.StatusExecuting, pay.Attempts+1
		out = &pay
		return nil
	})
	return out, fail("take payment", err)
}

// Renew implements payment.Store.
func (s *Store) Renew(ctx context.Context, p payment.Payment) (bool, error) {
	tag, err := s.pool.Exec(ctx, `UPDATE payments SET taken_at = now() WHERE id = $1 AND status = 'executing' AND attempts = $2`,
		p.ID, p.Attempts)
	if err != nil {
		return false, fail("renew payment", err)
	}
	return tag.RowsAffected() == 1, nil
}

// TakeUnknown implements payment.Store.
func (s *Store) TakeUnknown(ctx context.Context, every time.Duration) (*payment.Payment, error) {
	var out *payment.Payment
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var id string
		err := tx.QueryRow(ctx, `
			SELECT id FROM payments WHERE status = 'unknown'
			AND (checked_at IS NULL OR checked_at < now() - make_interval(secs => $1))
			ORDER BY checked_at NULLS FIRST, created_at LIMIT 1 FOR UPDATE SKIP LOCKED`, every.Seconds()).Scan(&id)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE payments SET checked_at = now() WHERE id = $1`, id); err != nil {
			return err
		}
		pay, err := scanPayment(tx.QueryRow(ctx, `SELECT `+paymentColumns+paymentFrom+` WHERE p.id = $1`, id))
		out = &pay
		return err
	})
	return out, fail("take unknown payment", err)
}

// MarkSigned implements payment.Store. The agent's row is read under a share lock,
// so that a payment is signed only while its agent is active and its payments not
// paused, and a disabling waits for a signing under way to be recorded.
func (s *Store) MarkSigned(ctx context.Context, id string, w payment.Window) error {
	if w.Slot > math.MaxInt64 {
		return fail("mark payment signed", fmt.Errorf("slot %d is out of range", w.Slot))
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var stopped bool
		err := tx.QueryRow(ctx, `
			SELECT a.status <> 'active' OR coalesce(l.paused, false)
			FROM payments p JOIN agents a ON a.id = p.agent_id LEFT JOIN spending_limits l ON l.agent_id = p.agent_id
			WHERE p.id = $1 FOR SHARE OF a`, id).Scan(&stopped)
		if err != nil {
			return err
		}
		if stopped {
			return payment.ErrAgentStopped
		}
		tag, err := tx.Exec(ctx, `UPDATE payments SET signed_at = now(), valid_after = $2, valid_before = $3,
			blockhash = nullif($4, ''), slot = nullif($5, 0) WHERE id = $1 AND status = 'executing' AND signed_at IS NULL`,
			id, w.ValidAfter, w.ValidBefore, w.Blockhash, int64(w.Slot))
		if err == nil && tag.RowsAffected() != 1 {
			err = errors.New("payment is not executing unsigned")
		}
		return err
	})
	if errors.Is(err, payment.ErrAgentStopped) {
		return err
	}
	return fail("mark payment signed", err)
}

// Finish implements payment.Store.
func (s *Store) Finish(ctx context.Context, p payment.Payment, o payment.Outcome) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		pay, err := scanPayment(tx.QueryRow(ctx, `SELECT `+paymentColumns+paymentFrom+` WHERE p.id = $1 FOR UPDATE OF p`, p.ID))
		if err != nil {
			return err
		}
		switch {
		case pay.Status != p.Status, pay.Status == payment.StatusExecuting && pay.Attempts != p.Attempts:
			return payment.ErrTakenOver
		case pay.Status != payment.StatusExecuting && pay.Status != payment.StatusUnknown:
			return errors.New("payment is neither executing nor unknown")
		}
		var r *request.Request
		if pay.RequestID != "" {
			if _, err := tx.Exec(ctx, `SELECT 1 FROM sessions WHERE id = $1 FOR UPDATE`, pay.SessionID); err != nil {
				return err
			}
			got, err := scanRequest(tx.QueryRow(ctx, `SELECT `+requestColumns+requestFrom+` WHERE r.id = $1 FOR UPDATE OF r`, pay.RequestID))
			if err != nil {
				return err
			}
			r = &got
		}
		return finishPayment(ctx, tx, pay, r, o)
	})
	return fail("finish payment", err)
}

// finishPayment records how pay ended, in tx: the payment, its request fulfilled
// with the receipt (or failed), the session's event and the seller's stats. A
// request the session's close canceled meanwhile stays canceled; the payment is
// recorded all the same.
func finishPayment(ctx context.Context, tx pgx.Tx, pay payment.Payment, r *request.Request, o payment.Outcome) error {
	var failure, txHash *string
	if o.Failure != "" {
		failure = &o.Failure
	}
	if o.Transaction != "" {
		txHash = &o.Transaction
	}
	var settlement []byte
	if o.Settlement != nil {
		settlement, _ = json.Marshal(o.Settlement)
	}
	var answer []byte
	if o.Status == payment.StatusUnknown && o.Receipt.Response != nil {
		answer, _ = json.Marshal(o.Receipt.Response)
	}
	var delivered *bool
	if o.Status == payment.StatusSettled {
		delivered = &o.Delivered
	}
	var movedAmount *string
	var movedValue *int64
	if o.Status == payment.StatusSettled && o.Moved != "" {
		v, ok := payment.Value(pay.Offer.Network, pay.Offer.Asset, o.Moved)
		if !ok || v > pay.Offer.Value {
			v = pay.Offer.Value
		}
		n := int64(v)
		movedAmount, movedValue = &o.Moved, &n
	}
	if _, err := tx.Exec(ctx, `
		UPDATE payments SET status = $2, failure = $3, settlement = $4, transaction = $5, delivered = $6,
			settled_at = CASE WHEN $2 = 'settled' THEN now() END, answer = coalesce($7, answer),
			settled_amount = $8, settled_value = $9
		WHERE id = $1`, pay.ID, o.Status, failure, settlement, txHash, delivered, answer, movedAmount, movedValue); err != nil {
		return err
	}
	if o.Status == payment.StatusSettled {
		// The seller's stats count the payments the service settled with it.
		endpoint, _, _ := strings.Cut(pay.HTTPRequest.URL, "?")
		if _, err := tx.Exec(ctx, `
			INSERT INTO settled_payments (hostname, method_id, delivered)
			SELECT $1, (SELECT id FROM provider_methods WHERE hostname = $1 AND endpoint_url = $2 ORDER BY id LIMIT 1), $3
			WHERE EXISTS (SELECT 1 FROM merchants WHERE hostname = $1)`, pay.Host, endpoint, o.Delivered); err != nil {
			return err
		}
	}
	if r == nil {
		return nil
	}
	data, _ := json.Marshal(map[string]any{"paymentId": pay.ID, "requestId": pay.RequestID, "status": o.Status,
		"failure": failure, "amount": pay.Offer.Amount, "settledAmount": movedAmount, "network": x402.NormalizeNetwork(pay.Offer.Network), "transaction": txHash})
	ev := map[string]string{payment.StatusSettled: payment.EventSettled, payment.StatusUnknown: payment.EventUnknown}[o.Status]
	if ev == "" {
		ev = payment.EventFailed
	}
	if _, err := appendEvent(ctx, tx, pay.SessionID, session.Append{Type: ev, Actor: session.ActorSystem, Data: data}); err != nil {
		return err
	}
	if request.Terminal(r.Status) || o.Status == payment.StatusUnknown {
		// An unknown outcome leaves the request executing: the agent's wait and
		// claim go on until the chain tells.
		return nil
	}
	if o.Status != payment.StatusSettled {
		return move(ctx, tx, r, request.StatusFailed, session.ActorSystem)
	}
	art, _ := json.Marshal(request.Artifact{Type: request.ArtifactPayment, Payment: &o.Receipt})
	if _, err := tx.Exec(ctx, `INSERT INTO request_artifacts (request_id, session_id, type, data) VALUES ($1, $2, $3, $4)`,
		r.ID, r.SessionID, request.ArtifactPayment, art); err != nil {
		return err
	}
	if r.Status == request.StatusApproved {
		if err := move(ctx, tx, r, request.StatusExecuting, session.ActorSystem); err != nil {
			return err
		}
	}
	return move(ctx, tx, r, request.StatusFulfilled, session.ActorSystem)
}

// DailySpend implements payment.Store.
func (s *Store) DailySpend(ctx context.Context, p auth.Principal, since time.Time) ([]payment.DaySpend, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT agent_id::text, date_trunc('day', taken_at AT TIME ZONE 'UTC') AS day, sum(`+spent+`)::bigint
		FROM payments WHERE user_id = $1 AND taken_at >= $2 AND `+spendCounts+`
		GROUP BY 1, 2 ORDER BY 1, 2`, p.UserID, since)
	if err != nil {
		return nil, fail("daily spend", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (payment.DaySpend, error) {
		var d payment.DaySpend
		var spent int64
		err := r.Scan(&d.AgentID, &d.Day, &spent)
		d.Day, d.Spent = time.Date(d.Day.Year(), d.Day.Month(), d.Day.Day(), 0, 0, 0, 0, time.UTC), payment.Micros(spent)
		return d, err
	})
	return out, fail("daily spend", err)
}

// Ledger lists the payments of user p's agents, newest first.
func (s *Store) Ledger(ctx context.Context, p auth.Principal, limit int) ([]payment.LedgerEntry, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT p.id, coalesce(p.session_id::text, ''), coalesce(p.request_id::text, ''), ag.name, p.hostname,
			p.offer->>'payTo', p.value, coalesce(p.offer->>'symbol', ''), coalesce(p.offer->>'network', ''), `+paymentStatus+`,
			p.failure, p.transaction, a.data #>> '{payment,response,sha256}', p.created_at, p.settled_at, p.settled_value,
			p.offer->>'scheme' = 'upto', d.outcome, d.reason, d.reported_by
		FROM payments p JOIN agents ag ON ag.id = p.agent_id
		LEFT JOIN requests r ON r.id = p.request_id LEFT JOIN request_artifacts a ON a.request_id = p.request_id
		LEFT JOIN delivery_reports d ON d.payment_id = p.id
		WHERE p.user_id = $1 ORDER BY p.created_at DESC, p.id LIMIT $2`, p.UserID, limit)
	if err != nil {
		return nil, fail("ledger", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (payment.LedgerEntry, error) {
		var e payment.LedgerEntry
		var value int64
		var settled *int64
		var outcome, reason, by *string
		err := r.Scan(&e.PaymentID, &e.SessionID, &e.RequestID, &e.Agent, &e.Host, &e.PayTo, &value, &e.Symbol, &e.Network, &e.Status,
			&e.Failure, &e.Transaction, &e.ResponseSHA256, &e.CreatedAt, &e.SettledAt, &settled, &e.UpTo, &outcome, &reason, &by)
		e.Value = payment.Micros(value)
		if outcome != nil && reason != nil && by != nil {
			e.Report = &payment.LedgerReport{Outcome: *outcome, Reason: *reason, ReportedBy: *by}
		}
		if settled != nil {
			m := payment.Micros(*settled)
			e.Settled = &m
		}
		return e, err
	})
	return out, fail("ledger", err)
}
