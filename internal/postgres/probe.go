package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/waystation/waystation/internal/trust"
)

var _ trust.ProbeStore = (*Store)(nil)

// ProbeTargets returns every enabled, listed method whose newest probe is older
// than before (or that was never probed), with when it was last probed, in hostname
// order so that one host's methods come together. Replicas that probe on the same
// schedule thus split the work instead of repeating it.
func (s *Store) ProbeTargets(ctx context.Context, before time.Time) ([]trust.Target, error) {
	rows, _ := s.pool.Query(ctx, `
		SELECT m.id, m.hostname, m.kind, m.endpoint_method, m.endpoint_url, last.probed_at
		FROM provider_methods m
			LEFT JOIN LATERAL (SELECT p.probed_at FROM probes p WHERE p.method_id = m.id
				ORDER BY p.probed_at DESC LIMIT 1) last ON true
		WHERE m.enabled AND (last.probed_at IS NULL OR last.probed_at < $1)
			-- a listing's copy its origin's own listing hides is not listed: not probed
			AND NOT (m.source = 'x402-bazaar' AND EXISTS (SELECT 1 FROM origins o
				WHERE o.origin = m.endpoint_origin AND o.status <> 'delisted'))
		ORDER BY m.hostname, m.id`, before)
	targets, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (trust.Target, error) {
		var t trust.Target
		var last *time.Time
		err := row.Scan(&t.MethodID, &t.Hostname, &t.Kind, &t.Method, &t.URL, &last)
		if last != nil {
			t.LastProbed = last.UTC()
		}
		return t, err
	})
	if err != nil {
		return nil, fail("probe targets", err)
	}
	return targets, nil
}

// RecordProbe stores one probe: its outcome, status, latency and what the seller
// advertised. Probes are history and are never updated.
func (s *Store) RecordProbe(ctx context.Context, r trust.Result) error {
	_, err := s.pool.Exec(ctx, `
		INSERT INTO probes (method_id, hostname, probed_at, outcome, http_status, latency_ms,
			network, asset, pay_to, amount, detail, x402_version, scheme, reason)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`, probeValues(r)...)
	if err != nil {
		return fmt.Errorf("postgres: record probe of method %d: %w", r.Target.MethodID, err)
	}
	return nil
}

// RecordProbes stores many probes at once, as RecordProbe would one by one.
func (s *Store) RecordProbes(ctx context.Context, rs []trust.Result) error {
	_, err := s.pool.CopyFrom(ctx, pgx.Identifier{"probes"},
		[]string{"method_id", "hostname", "probed_at", "outcome", "http_status", "latency_ms",
			"network", "asset", "pay_to", "amount", "detail", "x402_version", "scheme", "reason"},
		pgx.CopyFromSlice(len(rs), func(i int) ([]any, error) { return probeValues(rs[i]), nil }))
	if err != nil {
		return fail("record probes", err)
	}
	return nil
}

func probeValues(r trust.Result) []any {
	var status, latency *int
	if r.HTTPStatus != 0 {
		status = &r.HTTPStatus
	}
	if r.Outcome != trust.OutcomeBlockedAddress && r.Outcome != trust.OutcomeDNSError {
		ms := int(r.Latency.Milliseconds())
		latency = &ms
	}
	var network, asset, payTo, scheme string
	var amount *string
	var version *int16
	if o := r.Offer; o != nil {
		network, asset, payTo, scheme = o.Network, o.Asset, o.PayTo, o.Scheme
		v := int16(o.Version)
		version = &v
		if o.Amount != "" { // an upto offer names a ceiling, not a price
			a := o.Amount
			amount = &a
		}
	}
	return []any{r.Target.MethodID, r.Target.Hostname, r.ProbedAt, r.Outcome, status, latency,
		network, asset, payTo, amount, r.Detail, version, scheme, r.Reason}
}

// probeLockKey is the advisory lock a probe round holds, so that replicas do not
// probe together.
const probeLockKey = 715518

// TryProbeLock takes the probe-round lock if no other process holds it. ok reports
// whether it was taken; release gives it back.
func (s *Store) TryProbeLock(ctx context.Context) (release func(), ok bool, err error) {
	return s.tryLock(ctx, probeLockKey, "probe lock")
}

// tryLock takes the session advisory lock key on a connection of its own, if no
// other process holds it; release unlocks it and gives the connection back.
func (s *Store) tryLock(ctx context.Context, key int64, op string) (release func(), ok bool, err error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, false, fail(op, err)
	}
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, key).Scan(&ok); err != nil || !ok {
		conn.Release()
		if err != nil {
			return nil, false, fail(op, err)
		}
		return nil, false, nil
	}
	return func() {
		conn.Exec(context.Background(), `SELECT pg_advisory_unlock($1)`, key)
		conn.Release()
	}, true, nil
}
