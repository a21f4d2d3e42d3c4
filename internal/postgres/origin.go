package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/waystation/waystation/internal/origin"
	"github.com/waystation/waystation/internal/trust"
)

var _ origin.Store = (*Store)(nil)

// ListOrigin records the origin and loads what its manifest lists, in one
// transaction. A method with the same URL as a discovery listing's copy takes that
// row's place (and keeps its slug); the origin's methods its manifest no longer
// holds are disabled; each listed method gets its probe.
func (s *Store) ListOrigin(ctx context.Context, l origin.Listing) (map[string]string, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, fail("list origin", err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `INSERT INTO merchants (hostname) VALUES ($1) ON CONFLICT DO NOTHING`, l.Origin.Hostname); err != nil {
		return nil, fail("list origin: merchant", err)
	}
	var submitter *string
	if l.Origin.SubmittedBy != "" {
		submitter = &l.Origin.SubmittedBy
	}
	var id int64
	err = tx.QueryRow(ctx, `
		INSERT INTO origins (origin, hostname, submitted_by, status, reason, owner, etag, listed_at,
			checked_at, last_fetched_at)
		VALUES ($1, $2, $3, 'listed', '', $4, $5, $6, $6, $6)
		ON CONFLICT (origin) DO UPDATE SET status = 'listed', reason = '', owner = EXCLUDED.owner,
			etag = EXCLUDED.etag, submitted_by = coalesce(origins.submitted_by, EXCLUDED.submitted_by),
			listed_at = CASE WHEN origins.status = 'delisted' THEN EXCLUDED.listed_at ELSE origins.listed_at END,
			checked_at = EXCLUDED.checked_at, last_fetched_at = EXCLUDED.last_fetched_at, updated_at = now()
		RETURNING id`,
		l.Origin.Origin, l.Origin.Hostname, submitter, l.Origin.Owner, l.Origin.ETag, l.At).Scan(&id)
	if err != nil {
		return nil, fail("list origin", err)
	}
	if _, err := loadCatalog(ctx, tx, l.Catalog, l.At); err != nil {
		return nil, err
	}
	var keys, tools []string
	var verified []bool
	for _, p := range l.Catalog.Providers {
		for _, m := range p.Methods {
			keys, tools = append(keys, m.SourceKey), append(tools, m.Tool)
			verified = append(verified, l.Verified[m.SourceKey])
		}
	}
	rows, _ := tx.Query(ctx, `
		UPDATE provider_methods AS pm SET origin_id = $1, owner_verified = l.verified, updated_at = now()
		FROM unnest($2::text[], $3::text[], $4::bool[]) AS l (key, tool, verified)
		WHERE pm.source_key = l.key AND pm.tool_name = l.tool
		RETURNING pm.id, pm.slug, pm.source_key, pm.hostname`, id, keys, tools, verified)
	slugs := map[string]string{}
	var probes []trust.Result
	var mid int64
	var slug, key, host string
	_, err = pgx.ForEachRow(rows, []any{&mid, &slug, &key, &host}, func() error {
		slugs[key] = slug
		if r, ok := l.Probes[key]; ok {
			r.Target.MethodID, r.Target.Hostname = mid, host
			probes = append(probes, r)
		}
		return nil
	})
	if err != nil {
		return nil, fail("list origin: mark methods", err)
	}
	if _, err := tx.Exec(ctx, `
		UPDATE provider_methods AS pm SET enabled = false, owner_verified = false, updated_at = now()
		WHERE pm.origin_id = $1 AND pm.enabled
			AND NOT EXISTS (SELECT 1 FROM unnest($2::text[], $3::text[]) AS l (key, tool)
				WHERE l.key = pm.source_key AND l.tool = pm.tool_name)`, id, keys, tools); err != nil {
		return nil, fail("list origin: disable", err)
	}
	for _, r := range probes {
		if _, err := tx.Exec(ctx, `
			INSERT INTO probes (method_id, hostname, probed_at, outcome, http_status, latency_ms,
				network, asset, pay_to, amount, detail, x402_version, scheme, reason)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`, probeValues(r)...); err != nil {
			return nil, fail("list origin: probe", err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fail("list origin: commit", err)
	}
	return slugs, nil
}

const originColumns = `id, origin, hostname, coalesce(submitted_by::text, ''), status, reason, owner, etag,
	listed_at, checked_at, last_fetched_at`

func scanOrigin(row pgx.CollectableRow) (origin.Origin, error) {
	var o origin.Origin
	err := row.Scan(&o.ID, &o.Origin, &o.Hostname, &o.SubmittedBy, &o.Status, &o.Reason, &o.Owner, &o.ETag,
		&o.ListedAt, &o.CheckedAt, &o.LastFetched)
	o.ListedAt, o.CheckedAt, o.LastFetched = o.ListedAt.UTC(), o.CheckedAt.UTC(), o.LastFetched.UTC()
	return o, err
}

// Origin finds a listed origin by its canonical form.
func (s *Store) Origin(ctx context.Context, canonical string) (origin.Origin, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+originColumns+` FROM origins WHERE origin = $1`, canonical)
	o, err := pgx.CollectExactlyOneRow(rows, scanOrigin)
	if errors.Is(err, pgx.ErrNoRows) {
		return o, origin.ErrNotFound
	}
	if err != nil {
		return o, fail("origin", err)
	}
	return o, nil
}

// Origins lists the origins listed or stale, oldest checked first.
func (s *Store) Origins(ctx context.Context) ([]origin.Origin, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+originColumns+` FROM origins WHERE status <> 'delisted' ORDER BY checked_at, id`)
	os, err := pgx.CollectRows(rows, scanOrigin)
	if err != nil {
		return nil, fail("origins", err)
	}
	return os, nil
}

// OriginUnchanged records a fetch that found the manifest as listed (a 304).
func (s *Store) OriginUnchanged(ctx context.Context, id int64, at time.Time) error {
	_, err := s.pool.Exec(ctx, `
		UPDATE origins SET status = 'listed', reason = '', checked_at = $2, last_fetched_at = $2,
			updated_at = CASE WHEN status = 'listed' AND reason = '' THEN updated_at ELSE now() END
		WHERE id = $1`, id, at)
	return fail("origin unchanged", err)
}

// OriginFailing records a failed fetch; delisted disables the origin's methods, so
// that a listing's copies of the hostname are listed again.
func (s *Store) OriginFailing(ctx context.Context, id int64, status, reason string, at time.Time) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fail("origin failing", err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `
		UPDATE origins SET status = $2, reason = $3, checked_at = $4,
			updated_at = CASE WHEN (status, reason) = ($2, $3) THEN updated_at ELSE now() END
		WHERE id = $1`, id, status, reason, at); err != nil {
		return fail("origin failing", err)
	}
	if status == origin.StatusDelisted {
		if _, err := tx.Exec(ctx, `
			UPDATE provider_methods SET enabled = false, owner_verified = false, updated_at = now()
			WHERE origin_id = $1 AND enabled`, id); err != nil {
			return fail("origin failing: disable", err)
		}
	}
	return fail("origin failing: commit", tx.Commit(ctx))
}

// refreshLockKey is the advisory lock an origin refresh holds, so that replicas do
// not fetch every manifest together.
const refreshLockKey = 715519

// TryRefreshLock takes the refresh lock if no other process holds it.
func (s *Store) TryRefreshLock(ctx context.Context) (release func(), ok bool, err error) {
	return s.tryLock(ctx, refreshLockKey, "origin refresh lock")
}
