package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/waystation/waystation/internal/catalog"
	"github.com/waystation/waystation/internal/directory"
	"github.com/waystation/waystation/internal/trust"
)

var _ trust.RecordStore = (*Store)(nil)

// LoadResult counts what a catalog load changed. Disabled counts the methods a sync
// found its listing no longer holds.
type LoadResult struct {
	Providers int
	Inserted  int
	Updated   int
	Unchanged int
	Disabled  int
}

// Empty reports whether the catalog has no method at all.
func (s *Store) Empty(ctx context.Context) (bool, error) {
	var exists bool
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM provider_methods)`).Scan(&exists)
	if err != nil {
		return false, fail("catalog empty", err)
	}
	return !exists, nil
}

type methodRow struct {
	providerID int64
	slug       string
	hostname   string
	m          *catalog.Method
	offers     []byte
	guidance   []byte
}

// LoadCatalog upserts a catalog in one transaction. A method with a source key is
// matched by it (and its MCP tool) and keeps the slug it was first given; one without
// is matched by slug. A method whose fields did not change is left untouched. A
// sparse method (a URL and a description, no offer) loaded over a kept one keeps
// what that one knew beyond them (catalog.Method.Over) and its provider. The
// catalog's delistings disable the enabled methods of their source at their URLs;
// nothing is deleted. Merchant facts (probes, payments, an override) are history
// and are appended.
func (s *Store) LoadCatalog(ctx context.Context, cat catalog.Catalog, now time.Time) (LoadResult, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return LoadResult{}, fail("load catalog", err)
	}
	defer tx.Rollback(ctx)
	res, err := loadCatalog(ctx, tx, cat, now)
	if err != nil {
		return res, err
	}
	if err := tx.Commit(ctx); err != nil {
		return res, fail("load catalog: commit", err)
	}
	return res, nil
}

// SyncCatalog loads the complete listing of a source, as LoadCatalog does, and in the
// same transaction disables the enabled methods of that source the listing no longer
// holds. Methods of other sources, and those of none (the demo catalog's), are never
// disabled. A listing without a single method of the source is refused: an empty
// answer is likelier a broken listing than an empty market.
func (s *Store) SyncCatalog(ctx context.Context, cat catalog.Catalog, source string, now time.Time) (LoadResult, error) {
	var keys, tools []string
	for _, p := range cat.Providers {
		for _, m := range p.Methods {
			if m.Source == source && m.SourceKey != "" {
				keys = append(keys, m.SourceKey)
				tools = append(tools, m.Tool)
			}
		}
	}
	if source == "" || len(keys) == 0 {
		return LoadResult{}, fail("sync catalog", fmt.Errorf("the listing holds no method of source %q: nothing loaded or disabled", source))
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return LoadResult{}, fail("sync catalog", err)
	}
	defer tx.Rollback(ctx)
	res, err := loadCatalog(ctx, tx, cat, now)
	if err != nil {
		return res, err
	}
	tag, err := tx.Exec(ctx, `
		UPDATE provider_methods AS pm SET enabled = false, updated_at = now()
		WHERE pm.source = $1 AND pm.enabled
			AND NOT EXISTS (SELECT 1 FROM unnest($2::text[], $3::text[]) AS l (key, tool)
				WHERE l.key = pm.source_key AND l.tool = pm.tool_name)`,
		source, keys, tools)
	if err != nil {
		return res, fail("sync catalog: disable", err)
	}
	res.Disabled += int(tag.RowsAffected())
	if err := tx.Commit(ctx); err != nil {
		return res, fail("sync catalog: commit", err)
	}
	return res, nil
}

// methodKey is how a method is known within its source: the source key, and the MCP
// tool when there is one.
func methodKey(sourceKey, tool string) string {
	if tool == "" {
		return sourceKey
	}
	return sourceKey + "\n" + tool
}

// loadCatalog upserts the catalog's providers, merchants and methods in tx, then
// its merchants' facts and its delistings.
func loadCatalog(ctx context.Context, tx pgx.Tx, cat catalog.Catalog, now time.Time) (LoadResult, error) {
	var res LoadResult
	taken, err := takenSlugs(ctx, tx)
	if err != nil {
		return res, err
	}
	prevs, err := sparsePrevs(ctx, tx, cat)
	if err != nil {
		return res, err
	}
	var methods []methodRow
	for _, p := range cat.Providers {
		rows, made, err := providerRows(ctx, tx, p, prevs, taken)
		if made {
			res.Providers++
		}
		if err != nil {
			return res, err
		}
		methods = append(methods, rows...)
	}
	if err := upsertMethods(ctx, tx, methods, &res); err != nil {
		return res, err
	}
	for _, mc := range cat.Merchants {
		if err := loadMerchantFacts(ctx, tx, mc, now); err != nil {
			return res, err
		}
	}
	if res.Disabled, err = delist(ctx, tx, cat.Delisted); err != nil {
		return res, err
	}
	return res, nil
}

// takenSlugs are the slugs already taken, each with its method's key, so that a new
// method whose derived slug collides with another's gets a distinct one.
func takenSlugs(ctx context.Context, tx pgx.Tx) (map[string]string, error) {
	taken := map[string]string{}
	rows, _ := tx.Query(ctx, `SELECT slug, coalesce(source_key, ''), tool_name FROM provider_methods`)
	var slug, key, tool string
	if _, err := pgx.ForEachRow(rows, []any{&slug, &key, &tool}, func() error { taken[slug] = methodKey(key, tool); return nil }); err != nil {
		return nil, fail("load catalog: slugs", err)
	}
	return taken, nil
}

// providerRows are the rows of provider p's methods. The provider is made (made)
// when a method needs it: a sparse method over a kept one stays with the kept one's
// provider.
func providerRows(ctx context.Context, tx pgx.Tx, p catalog.Provider, prevs map[string]keptMethod, taken map[string]string) (rows []methodRow, made bool, err error) {
	var id int64
	for i := range p.Methods {
		m, providerID := &p.Methods[i], id
		if prev, ok := prevs[methodKey(m.SourceKey, m.Tool)]; ok && m.Sparse {
			merged := m.Over(prev.method)
			m, providerID = &merged, prev.providerID
		} else if id == 0 {
			err := tx.QueryRow(ctx, `
				INSERT INTO providers (name) VALUES ($1)
				ON CONFLICT (name) DO UPDATE SET name = EXCLUDED.name
				RETURNING id`, p.Name).Scan(&id)
			if err != nil {
				return nil, made, fmt.Errorf("postgres: load provider %q: %w", p.Name, err)
			}
			made, providerID = true, id
		}
		r, err := newMethodRow(m, providerID, taken)
		if err != nil {
			return nil, made, err
		}
		rows = append(rows, r)
	}
	return rows, made, nil
}

// newMethodRow is method m's row under provider providerID. A method with a source
// key whose slug another method holds gets its slug with a hash of its key after
// it; taken records the slug as the method's.
func newMethodRow(m *catalog.Method, providerID int64, taken map[string]string) (methodRow, error) {
	host, err := endpointHost(m.Endpoint.URL)
	if err != nil {
		return methodRow{}, fmt.Errorf("postgres: load method %q: %w", m.Slug, err)
	}
	slug, key := m.Slug, methodKey(m.SourceKey, m.Tool)
	if owner, ok := taken[slug]; ok && m.SourceKey != "" && owner != key {
		sum := sha256.Sum256([]byte(key))
		slug += "-" + hex.EncodeToString(sum[:3])
	}
	taken[slug] = key
	offers, err := json.Marshal(nonNil(m.Offers))
	if err != nil {
		return methodRow{}, fmt.Errorf("postgres: load method %q: %w", slug, err)
	}
	guidance := []byte(m.Guidance)
	if len(guidance) == 0 {
		guidance = []byte("{}")
	}
	return methodRow{providerID, slug, host, m, offers, guidance}, nil
}

// upsertMethods upserts the methods' merchants and the methods in one batch,
// counting in res the methods inserted, updated and left unchanged.
func upsertMethods(ctx context.Context, tx pgx.Tx, methods []methodRow, res *LoadResult) error {
	hosts := map[string]bool{}
	for _, r := range methods {
		hosts[r.hostname] = true
	}
	batch := &pgx.Batch{}
	for h := range hosts {
		batch.Queue(`INSERT INTO merchants (hostname) VALUES ($1) ON CONFLICT DO NOTHING`, h)
	}
	for _, r := range methods {
		queueMethod(batch, r)
	}
	br := tx.SendBatch(ctx, batch)
	for range hosts {
		if _, err := br.Exec(); err != nil {
			br.Close()
			return fail("load merchants", err)
		}
	}
	for _, r := range methods {
		var inserted bool
		switch err := br.QueryRow().Scan(&inserted); {
		case err == pgx.ErrNoRows:
			res.Unchanged++
		case err != nil:
			br.Close()
			return fmt.Errorf("postgres: load method %q: %w", r.slug, err)
		case inserted:
			res.Inserted++
		default:
			res.Updated++
		}
	}
	if err := br.Close(); err != nil {
		return fail("load methods", err)
	}
	return nil
}

// queueMethod queues the upsert of method row r, matched by its source key (and MCP
// tool) when it has one, else by its slug. The upsert answers whether it inserted,
// and no row when the method is unchanged or an origin's listing holds it.
func queueMethod(b *pgx.Batch, r methodRow) {
	conflict := "(slug)"
	var sourceKey, source *string
	if r.m.SourceKey != "" {
		conflict = "(source_key, tool_name)"
		sourceKey = &r.m.SourceKey
	}
	if r.m.Source != "" {
		source = &r.m.Source
	}
	var l catalog.Listing
	if r.m.Listing != nil {
		l = *r.m.Listing
	}
	b.Queue(`
		INSERT INTO provider_methods AS pm (provider_id, slug, name, description, category,
			kind, hostname, endpoint_method, endpoint_url, enabled, guidance, offers, source_key,
			tool_name, source, listed_calls_30d, listed_payers_30d, listed_last_called_at,
			listed_updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)
		ON CONFLICT `+conflict+` DO UPDATE SET
			provider_id = EXCLUDED.provider_id, name = EXCLUDED.name,
			description = EXCLUDED.description, category = EXCLUDED.category,
			kind = EXCLUDED.kind, hostname = EXCLUDED.hostname,
			endpoint_method = EXCLUDED.endpoint_method, endpoint_url = EXCLUDED.endpoint_url,
			enabled = EXCLUDED.enabled, guidance = EXCLUDED.guidance,
			offers = EXCLUDED.offers, source = EXCLUDED.source,
			listed_calls_30d = EXCLUDED.listed_calls_30d,
			listed_payers_30d = EXCLUDED.listed_payers_30d,
			listed_last_called_at = EXCLUDED.listed_last_called_at,
			listed_updated_at = EXCLUDED.listed_updated_at, updated_at = now(),
			origin_id = CASE WHEN EXCLUDED.source = 'origin' THEN pm.origin_id END,
			owner_verified = pm.owner_verified AND coalesce(EXCLUDED.source = 'origin', false)
		WHERE (pm.source IS DISTINCT FROM 'origin' OR NOT pm.enabled OR coalesce(EXCLUDED.source = 'origin', false))
		AND (pm.provider_id, pm.name, pm.description, pm.category, pm.kind, pm.hostname,
			pm.endpoint_method, pm.endpoint_url, pm.enabled, pm.guidance, pm.offers, pm.source,
			pm.listed_calls_30d, pm.listed_payers_30d, pm.listed_last_called_at,
			pm.listed_updated_at)
		IS DISTINCT FROM (EXCLUDED.provider_id, EXCLUDED.name, EXCLUDED.description,
			EXCLUDED.category, EXCLUDED.kind, EXCLUDED.hostname, EXCLUDED.endpoint_method,
			EXCLUDED.endpoint_url, EXCLUDED.enabled, EXCLUDED.guidance, EXCLUDED.offers,
			EXCLUDED.source, EXCLUDED.listed_calls_30d, EXCLUDED.listed_payers_30d,
			EXCLUDED.listed_last_called_at, EXCLUDED.listed_updated_at)
		RETURNING (xmax = 0)`,
		r.providerID, r.slug, r.m.Name, r.m.Description, r.m.Category, r.m.Kind, r.hostname,
		strings.ToUpper(r.m.Endpoint.Method), r.m.Endpoint.URL, !r.m.Disabled, r.guidance, r.offers,
		sourceKey, r.m.Tool, source, l.Calls30d, l.Payers30d, l.LastCalledAt, l.UpdatedAt)
}

// keptMethod is a method as an earlier load kept it: what a sparse record loaded
// over it keeps.
type keptMethod struct {
	providerID int64
	method     catalog.Method
}

// sparsePrevs reads the kept methods the catalog's sparse methods fall on, by
// methodKey.
func sparsePrevs(ctx context.Context, tx pgx.Tx, cat catalog.Catalog) (map[string]keptMethod, error) {
	var keys, tools []string
	for _, p := range cat.Providers {
		for _, m := range p.Methods {
			if m.Sparse && m.SourceKey != "" {
				keys, tools = append(keys, m.SourceKey), append(tools, m.Tool)
			}
		}
	}
	out := map[string]keptMethod{}
	if len(keys) == 0 {
		return out, nil
	}
	rows, _ := tx.Query(ctx, `
		SELECT pm.provider_id, pm.source_key, pm.tool_name, pm.name, pm.description, pm.category,
			pm.kind, pm.endpoint_method, pm.endpoint_url, pm.guidance, pm.offers,
			pm.listed_calls_30d, pm.listed_payers_30d, pm.listed_last_called_at, pm.listed_updated_at
		FROM provider_methods pm JOIN unnest($1::text[], $2::text[]) AS l (key, tool)
			ON l.key = pm.source_key AND l.tool = pm.tool_name`, keys, tools)
	var k keptMethod
	var guidance, offers []byte
	var l catalog.Listing
	m := &k.method
	_, err := pgx.ForEachRow(rows, []any{&k.providerID, &m.SourceKey, &m.Tool, &m.Name, &m.Description,
		&m.Category, &m.Kind, &m.Endpoint.Method, &m.Endpoint.URL, &guidance, &offers,
		&l.Calls30d, &l.Payers30d, &l.LastCalledAt, &l.UpdatedAt}, func() error {
		c := k
		c.method.Guidance = append(json.RawMessage(nil), guidance...)
		if err := json.Unmarshal(offers, &c.method.Offers); err != nil {
			return fmt.Errorf("offers of %s: %w", m.SourceKey, err)
		}
		listing := l
		listing.LastCalledAt, listing.UpdatedAt = utc(l.LastCalledAt), utc(l.UpdatedAt)
		c.method.Listing = &listing
		out[methodKey(m.SourceKey, m.Tool)] = c
		return nil
	})
	if err != nil {
		return nil, fail("load catalog: kept methods", err)
	}
	return out, nil
}

// delist disables the enabled methods a listing says it no longer holds, as a
// complete sync disables what vanished: their rows, probes and payments stay, and
// a later listing of them enables them again.
func delist(ctx context.Context, tx pgx.Tx, ds []catalog.Delisting) (int, error) {
	bySource := map[string][]string{}
	for _, d := range ds {
		if d.Source != "" && d.SourceKey != "" {
			bySource[d.Source] = append(bySource[d.Source], d.SourceKey)
		}
	}
	disabled := 0
	for source, keys := range bySource {
		tag, err := tx.Exec(ctx, `
			UPDATE provider_methods SET enabled = false, updated_at = now()
			WHERE source = $1 AND enabled AND source_key = ANY($2)`, source, keys)
		if err != nil {
			return disabled, fail("load catalog: delist", err)
		}
		disabled += int(tag.RowsAffected())
	}
	return disabled, nil
}

// nonNil is s, or an empty slice for nil, so that it encodes as [] and not null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func endpointHost(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("endpoint url: %w", err)
	}
	if u.Scheme != "https" && u.Scheme != "http" {
		return "", fmt.Errorf("endpoint url %q: scheme must be http or https", raw)
	}
	return catalog.NormalizeHostname(u.Hostname())
}

func loadMerchantFacts(ctx context.Context, tx pgx.Tx, mc catalog.Merchant, now time.Time) error {
	host, err := catalog.NormalizeHostname(mc.Hostname)
	if err != nil {
		return fmt.Errorf("postgres: load merchant %q: %w", mc.Hostname, err)
	}
	for _, p := range mc.Probes {
		tag, err := tx.Exec(ctx, `
			INSERT INTO probes (method_id, hostname, probed_at, outcome, http_status, latency_ms,
				scheme, network, asset, pay_to, amount, reason)
			SELECT id, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12
			FROM provider_methods WHERE slug = $1 AND hostname = $2`,
			p.Slug, host, now.Add(-time.Duration(p.Age)), p.Outcome, nullInt(p.HTTPStatus),
			nullInt(p.LatencyMS), p.Scheme, p.Network, p.Asset, p.PayTo, p.Amount, p.Reason)
		if err != nil {
			return fmt.Errorf("postgres: load probe of %q: %w", p.Slug, err)
		}
		if tag.RowsAffected() != 1 {
			return fmt.Errorf("postgres: load probe: no method %q on %s", p.Slug, host)
		}
	}
	if mc.Payments.Settled > 0 {
		_, err := tx.Exec(ctx, `
			INSERT INTO settled_payments (hostname, settled_at, delivered)
			SELECT $1, $2::timestamptz - make_interval(hours => g), g <= $4
			FROM generate_series(1, $3::int) AS g`,
			host, now, mc.Payments.Settled, mc.Payments.Delivered)
		if err != nil {
			return fmt.Errorf("postgres: load payments of %s: %w", host, err)
		}
	}
	if o := mc.Override; o != nil {
		var expires *time.Time
		if o.ExpiresIn != nil {
			t := now.Add(time.Duration(*o.ExpiresIn))
			expires = &t
		}
		_, err := tx.Exec(ctx, `
			INSERT INTO merchant_overrides (hostname, verdict, reason, set_by, set_at, expires_at)
			VALUES ($1, $2, $3, 'catalog', $4, $5)`, host, o.Verdict, o.Reason, now, expires)
		if err != nil {
			return fmt.Errorf("postgres: load override of %s: %w", host, err)
		}
	}
	return nil
}

// utc is t in UTC, so that a time encodes the same whatever the session's zone.
func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

func nullInt(v int) *int {
	if v == 0 {
		return nil
	}
	return &v
}

// HostProbeLimit is how many recent probes a merchant record shows.
const HostProbeLimit = 20

// directoryMethods is where the directory's methods are read from: the enabled ones,
// but a listing's copies on an origin that lists itself (the owner's word stands over
// a listing's copies). The word covers that origin alone: a copy on another port or
// scheme of the hostname is a neighbour the origin never proved, and stays.
const directoryMethods = `
	FROM provider_methods m JOIN providers p ON p.id = m.provider_id
		LEFT JOIN origins o ON o.id = m.origin_id AND m.source = 'origin'
	WHERE m.enabled
		AND NOT (m.source = 'x402-bazaar' AND EXISTS (SELECT 1 FROM origins lo
			WHERE lo.origin = m.endpoint_origin AND lo.status <> 'delisted'))`

// methodVersion names the versions of the rows a method's record is read from (its
// own, its provider's and its origin's): any change to one is a new version of it.
const methodVersion = `concat_ws('/', m.xmin, p.xmin, o.xmin)`

// DirectoryRecords reads the enabled methods and the facts their trust is computed
// from, in one read-only transaction so that they agree with each other.
func (s *Store) DirectoryRecords(ctx context.Context, now time.Time) (trust.Records, error) {
	return s.DirectoryRecordsAfter(ctx, now, nil)
}

// DirectoryRecordsAfter is DirectoryRecords for a reader holding the methods of an
// earlier read, prev (in order of ID): a method whose rows are the versions prev's
// record was read from is prev's record, not read and decoded again, so that a read
// after a change to a few methods costs what changed. Methods gone since are gone.
// prev is given up: the records are merged into its array when its capacity holds
// them all, rather than copied.
func (s *Store) DirectoryRecordsAfter(ctx context.Context, now time.Time, prev []trust.MethodRecord) (trust.Records, error) {
	rec := trust.Records{
		Probes:     map[int64][]trust.Observation{},
		HostProbes: map[string][]trust.Observation{},
		Overrides:  map[string]*directory.Override{},
		Payments:   map[string]trust.Payments{},
	}
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly, IsoLevel: pgx.RepeatableRead})
	if err != nil {
		return rec, fail("directory records", err)
	}
	defer tx.Rollback(ctx)
	// Without JIT compilation: these reads scan every method once, and compiling
	// their expressions costs more than it saves. At a hundred thousand methods the
	// read of the methods' versions after a change took 0.34 to 0.43 s with it, 0.14
	// to 0.17 s without.
	if _, err := tx.Exec(ctx, `SET LOCAL jit = off`); err != nil {
		return rec, fail("directory records", err)
	}

	if rec.Methods, err = directoryMethodRecords(ctx, tx, prev); err != nil {
		return rec, err
	}

	scanProbe := func(row pgx.CollectableRow) (probeRow, error) {
		var p probeRow
		o := &p.Observation
		err := row.Scan(&p.key, &p.methodID, &o.ProbedAt, &o.Outcome, &o.HTTPStatus, &o.LatencyMS,
			&o.Scheme, &o.Network, &o.Asset, &o.PayTo, &o.Amount, &o.Reason)
		return p, err
	}
	rows, _ := tx.Query(ctx, `
		SELECT '', method_id, probed_at, outcome, http_status, latency_ms, scheme, network, asset, pay_to, amount, reason
		FROM (SELECT *, row_number() OVER (PARTITION BY method_id ORDER BY probed_at DESC, id DESC) AS n
			FROM probes) p
		WHERE n = 1 OR probed_at > $1
		ORDER BY method_id, probed_at DESC, id DESC`, now.Add(-trust.Window))
	probes, err := pgx.CollectRows(rows, scanProbe)
	if err != nil {
		return rec, fail("directory probes", err)
	}
	for _, p := range probes {
		rec.Probes[p.methodID] = append(rec.Probes[p.methodID], p.Observation)
	}
	rows, _ = tx.Query(ctx, `
		SELECT hostname, method_id, probed_at, outcome, http_status, latency_ms, scheme, network, asset, pay_to, amount, reason
		FROM (SELECT *, row_number() OVER (PARTITION BY hostname ORDER BY probed_at DESC, id DESC) AS n
			FROM probes) p
		WHERE n <= $1
		ORDER BY hostname, probed_at DESC, id DESC`, HostProbeLimit)
	probes, err = pgx.CollectRows(rows, scanProbe)
	if err != nil {
		return rec, fail("merchant probes", err)
	}
	for _, p := range probes {
		rec.HostProbes[p.key] = append(rec.HostProbes[p.key], p.Observation)
	}

	rows, _ = tx.Query(ctx, `
		SELECT DISTINCT ON (hostname) hostname, verdict, reason, set_at, expires_at
		FROM merchant_overrides
		WHERE removed_at IS NULL AND (expires_at IS NULL OR expires_at > $1)
		ORDER BY hostname, set_at DESC, id DESC`, now)
	var host string
	var o directory.Override
	_, err = pgx.ForEachRow(rows, []any{&host, &o.Verdict, &o.Reason, &o.SetAt, &o.ExpiresAt}, func() error {
		c := o
		c.SetAt = c.SetAt.UTC()
		if c.ExpiresAt != nil {
			t := c.ExpiresAt.UTC()
			c.ExpiresAt = &t
		}
		rec.Overrides[host] = &c
		return nil
	})
	if err != nil {
		return rec, fail("directory overrides", err)
	}

	rec.Origins = map[string]*directory.OriginListing{}
	rows, _ = tx.Query(ctx, `
		SELECT hostname, origin, status, reason, owner, listed_at, checked_at FROM origins
		WHERE status <> 'delisted' ORDER BY hostname, listed_at, id`)
	var ol directory.OriginListing
	var reason, owner string
	_, err = pgx.ForEachRow(rows, []any{&host, &ol.Origin, &ol.Status, &reason, &owner, &ol.ListedAt, &ol.CheckedAt}, func() error {
		if _, ok := rec.Origins[host]; ok {
			return nil // a hostname served on two ports or schemes: the first listed speaks
		}
		c := ol
		c.ListedAt, c.CheckedAt = c.ListedAt.UTC(), c.CheckedAt.UTC()
		if reason != "" {
			r := reason
			c.Reason = &r
		}
		if owner != "" {
			o := owner
			c.Owner = &o
		}
		rec.Origins[host] = &c
		return nil
	})
	if err != nil {
		return rec, fail("directory origins", err)
	}

	if rec.Listed, err = merchantsListed(ctx, tx); err != nil {
		return rec, err
	}

	rows, _ = tx.Query(ctx, `
		SELECT hostname, count(*), count(*) FILTER (WHERE delivered)
		FROM settled_payments GROUP BY hostname`)
	var p trust.Payments
	_, err = pgx.ForEachRow(rows, []any{&host, &p.Settled, &p.Delivered}, func() error {
		rec.Payments[host] = p
		return nil
	})
	if err != nil {
		return rec, fail("directory payments", err)
	}
	if err := directoryReports(ctx, tx, &rec, now); err != nil {
		return rec, err
	}
	return rec, nil
}

// directoryMethodRecords reads the directory's methods in order of ID, those whose rows
// are the versions of prev's record of them (prev in order of ID) taken from prev.
func directoryMethodRecords(ctx context.Context, tx pgx.Tx, prev []trust.MethodRecord) ([]trust.MethodRecord, error) {
	if len(prev) == 0 {
		// Room for every enabled method, counted first: at a hundred thousand
		// methods, growing the slice row by row copied it over and over.
		var enabled int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM provider_methods WHERE enabled`).Scan(&enabled); err != nil {
			return nil, fail("directory methods", err)
		}
		return readMethodRecords(ctx, tx, make([]trust.MethodRecord, 0, enabled), `ORDER BY m.id`)
	}
	// The versions first, a few bytes a method, each compared with prev's as it comes
	// and not kept; then what changed, in full. prev is compacted in place to the
	// records kept, in order: the one kept next is never before the one compared.
	rows, _ := tx.Query(ctx, `SELECT m.id, `+methodVersion+directoryMethods+` ORDER BY m.id`)
	var (
		id      int64
		version pgtype.DriverBytes // the driver's, valid until the next row
		changed []int64
		kept, j int
	)
	_, err := pgx.ForEachRow(rows, []any{&id, &version}, func() error {
		for j < len(prev) && prev[j].ID < id {
			j++
		}
		if j < len(prev) && prev[j].ID == id && prev[j].Version == string(version) {
			prev[kept] = prev[j]
			kept++
		} else {
			changed = append(changed, id)
		}
		return nil
	})
	if err != nil {
		return nil, fail("directory method versions", err)
	}
	var read []trust.MethodRecord
	if len(changed) > 0 {
		if read, err = readMethodRecords(ctx, tx, make([]trust.MethodRecord, 0, len(changed)), `AND m.id = ANY($1) ORDER BY m.id`, changed); err != nil {
			return nil, err
		}
	}
	// Both in order of ID: merged, not sorted again, into prev's array when it has
	// room, from the end, so that no record is moved before it is taken.
	n := kept + len(read)
	if n > cap(prev) {
		out := make([]trust.MethodRecord, 0, n)
		i, k := 0, 0
		for i < kept || k < len(read) {
			if k == len(read) || i < kept && prev[i].ID < read[k].ID {
				out = append(out, prev[i])
				i++
			} else {
				out = append(out, read[k])
				k++
			}
		}
		return out, nil
	}
	if n < len(prev) {
		clear(prev[n:]) // what was compacted away, not held through the array
	}
	out := prev[:n]
	i, k := kept-1, len(read)-1
	for at := n - 1; at >= 0; at-- {
		if k < 0 || i >= 0 && prev[i].ID > read[k].ID {
			out[at] = prev[i]
			i--
		} else {
			out[at] = read[k]
			k--
		}
	}
	return out, nil
}

// readMethodRecords appends to out the directory's methods that rest, a clause after
// directoryMethods' with its arguments args, reads.
func readMethodRecords(ctx context.Context, tx pgx.Tx, out []trust.MethodRecord, rest string, args ...any) ([]trust.MethodRecord, error) {
	rows, _ := tx.Query(ctx, `
		SELECT m.id, `+methodVersion+`, m.slug, m.name, p.name, m.hostname, m.description, m.category, m.kind,
			m.endpoint_method, m.endpoint_url, m.guidance, m.source, m.listed_calls_30d,
			m.listed_payers_30d, m.listed_last_called_at, m.listed_updated_at,
			CASE WHEN m.owner_verified THEN coalesce(o.owner, '') ELSE '' END, coalesce(o.origin, '')`+
		directoryMethods+` `+rest, args...)
	out, err := pgx.AppendRows(out, rows, func(row pgx.CollectableRow) (trust.MethodRecord, error) {
		var r trust.MethodRecord
		var guidance []byte
		var source *string
		var l directory.Listing
		m := &r.Method
		err := row.Scan(&r.ID, &r.Version, &m.Slug, &m.Name, &m.Provider, &m.Hostname, &m.Description,
			&m.Category, &m.Kind, &m.Endpoint.Method, &m.Endpoint.URL, &guidance,
			&source, &l.Calls30d, &l.Payers30d, &l.LastCalledAt, &l.UpdatedAt, &r.Owner, &r.Origin)
		if err != nil {
			return r, err
		}
		m.Guidance = guidance
		if source != nil {
			// What the listing says of the method, shown apart from the service's own
			// stats.
			l.Source = *source
			l.LastCalledAt, l.UpdatedAt = utc(l.LastCalledAt), utc(l.UpdatedAt)
			m.SourceListing = &l
		}
		return r, nil
	})
	if err != nil {
		return nil, fail("directory methods", err)
	}
	return out, nil
}

type probeRow struct {
	key      string
	methodID int64
	trust.Observation
}
