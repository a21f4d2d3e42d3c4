package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/pgvector/pgvector-go"

	"github.com/waystation/waystation/internal/search"
)

var (
	_ search.Store          = (*Store)(nil)
	_ search.ModelStore     = (*Store)(nil)
	_ search.EmbeddingStore = (*Store)(nil)
	_ search.VectorStore    = (*Store)(nil)
)

var modelID = regexp.MustCompile(`^[A-Za-z0-9:._/-]{1,100}$`)

// The vector index. Every model is indexed and searched as halfvec (half precision):
// half the size of vector, and at 100,000 methods of the hybrid model (make bench) a
// better recall@3 for the same time, since a page holds twice the vectors. The graph
// is denser than pgvector's default (m 16, ef_construction 64), which found only 87%
// of the exact three nearest there at ef_search 400: the synthetic catalog's many
// near-twins need more links. Measured on 100k hybrid vectors, 2 cores: m 24 and
// ef_construction 200 build in under a minute and reach 0.985 at ef_search 200
// (p99 under 5 ms).
const (
	indexM              = 24
	indexEfConstruction = 200
	efSearch            = 200
)

// vectorType is the SQL type a model's vectors are cast to, to match its index.
func vectorType(m search.ModelRecord) string {
	return "halfvec(" + strconv.Itoa(m.Dimensions) + ")"
}

// literal is the model id as an SQL string literal. The id is checked against a strict
// pattern first: it is pasted, not bound, so that the planner matches the partial
// index's predicate in every plan, prepared or not.
func modelLiteral(m search.ModelRecord) string {
	return "'" + strings.ReplaceAll(m.ID, "'", "''") + "'"
}

// indexName names a model's index after the model and the index's recipe, so that a
// new recipe builds a new index (and the old one is dropped).
func indexName(m search.ModelRecord) string {
	sum := sha256.Sum256([]byte(m.ID + "|" + vectorType(m) + "|" + strconv.Itoa(indexM) + "|" + strconv.Itoa(indexEfConstruction)))
	return "method_embeddings_hnsw_" + hex.EncodeToString(sum[:6])
}

// RegisterModel records a model, with the given band if it is new, and creates its
// partial HNSW index. An existing record keeps its band, so an operator's tuning in
// the table survives restarts. A model registered before with other dimensions is an
// error: its vectors could not be compared.
func (s *Store) RegisterModel(ctx context.Context, m search.ModelRecord) (search.ModelRecord, error) {
	if !modelID.MatchString(m.ID) {
		return m, fmt.Errorf("postgres: register model: invalid id %q", m.ID)
	}
	if m.Dimensions <= 0 || m.Dimensions > 4000 {
		return m, fmt.Errorf("postgres: register model %s: %d dimensions", m.ID, m.Dimensions)
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return m, fail("register model", err)
	}
	defer conn.Release()
	// Replicas starting together create the index once.
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock(hashtext('waystation.register_model'))`); err != nil {
		return m, fail("register model: lock", err)
	}
	defer conn.Exec(context.Background(), `SELECT pg_advisory_unlock(hashtext('waystation.register_model'))`)

	var cal []byte
	if m.Calibration != nil {
		if cal, err = json.Marshal(m.Calibration); err != nil {
			return m, fmt.Errorf("postgres: register model %s: %w", m.ID, err)
		}
	}
	// A model's calibration (an operator's, from make calibrate) is kept while it was
	// fitted on the evidence this version reads; else the one given replaces it (none,
	// for a model without a default: its floor and margin answer until make
	// calibrate runs again).
	var got search.ModelRecord
	var stored []byte
	err = conn.QueryRow(ctx, `
		WITH ins AS (
			INSERT INTO embedding_models (id, dimensions, similarity_floor, similarity_margin, calibration)
			VALUES ($1, $2, $3, $4, $5) ON CONFLICT (id) DO UPDATE
				SET calibration = CASE WHEN embedding_models.calibration->>'evidence' = $6
					THEN embedding_models.calibration ELSE excluded.calibration END
			RETURNING id, dimensions, similarity_floor, similarity_margin, calibration)
		SELECT id, dimensions, similarity_floor::float8, similarity_margin::float8, calibration FROM ins`,
		m.ID, m.Dimensions, m.Floor, m.Margin, cal, search.EvidenceVersion).
		Scan(&got.ID, &got.Dimensions, &got.Floor, &got.Margin, &stored)
	if err != nil {
		return m, fmt.Errorf("postgres: register model %s: %w", m.ID, err)
	}
	if stored != nil {
		got.Calibration = new(search.Calibration)
		if err := json.Unmarshal(stored, got.Calibration); err != nil {
			return m, fmt.Errorf("postgres: register model %s: calibration: %w", m.ID, err)
		}
	}
	if got.Dimensions != m.Dimensions {
		return got, fmt.Errorf("postgres: model %s is registered with %d dimensions, not %d", m.ID, got.Dimensions, m.Dimensions)
	}
	_, err = conn.Exec(ctx, `CREATE INDEX IF NOT EXISTS `+indexName(got)+` ON method_embeddings
		USING hnsw ((embedding::`+vectorType(got)+`) halfvec_cosine_ops)
		WITH (m = `+strconv.Itoa(indexM)+`, ef_construction = `+strconv.Itoa(indexEfConstruction)+`)
		WHERE model_id = `+modelLiteral(got))
	if err != nil {
		return got, fmt.Errorf("postgres: register model %s: index: %w", m.ID, err)
	}
	// An index of an older recipe for the same model is no longer searched.
	rows, _ := conn.Query(ctx, `SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'method_embeddings'
		AND indexname LIKE 'method\_embeddings\_hnsw\_%' AND indexname <> $1`, indexName(got))
	indexes, err := pgx.CollectRows(rows, pgx.RowToStructByPos[struct{ Name, Def string }])
	if err != nil {
		return got, fmt.Errorf("postgres: register model %s: older indexes: %w", m.ID, err)
	}
	for _, ix := range indexes {
		if !strings.HasSuffix(ix.Def, "WHERE (model_id = "+modelLiteral(got)+"::text)") {
			continue
		}
		if _, err := conn.Exec(ctx, `DROP INDEX IF EXISTS `+pgx.Identifier{ix.Name}.Sanitize()); err != nil {
			return got, fmt.Errorf("postgres: register model %s: drop %s: %w", m.ID, ix.Name, err)
		}
	}
	return got, nil
}

// SetCalibration sets a model's calibrated band (make calibrate).
func (s *Store) SetCalibration(ctx context.Context, id string, c search.Calibration) error {
	b, err := json.Marshal(c)
	if err != nil {
		return fmt.Errorf("postgres: set calibration of %s: %w", id, err)
	}
	tag, err := s.pool.Exec(ctx, `UPDATE embedding_models SET calibration = $2, updated_at = now() WHERE id = $1`, id, b)
	if err == nil && tag.RowsAffected() != 1 {
		err = errors.New("no such model")
	}
	if err != nil {
		return fmt.Errorf("postgres: set calibration of %s: %w", id, err)
	}
	return nil
}

// SetBand changes a model's similarity band.
func (s *Store) SetBand(ctx context.Context, id string, floor, margin float64) error {
	_, err := s.pool.Exec(ctx, `UPDATE embedding_models SET similarity_floor = $2, similarity_margin = $3,
		updated_at = now() WHERE id = $1`, id, floor, margin)
	if err != nil {
		return fmt.Errorf("postgres: set band of %s: %w", id, err)
	}
	return nil
}

// MethodTexts lists every enabled method's text with the hash of the text its
// vector under model was made from.
func (s *Store) MethodTexts(ctx context.Context, model string) ([]search.MethodText, error) {
	rows, _ := s.pool.Query(ctx, `
		SELECT m.id, m.name, p.name, m.description, m.category, m.endpoint_url, e.text_hash
		FROM provider_methods m JOIN providers p ON p.id = m.provider_id
		LEFT JOIN method_embeddings e ON e.method_id = m.id AND e.model_id = $1
		WHERE m.enabled
		ORDER BY m.id`, model)
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (search.MethodText, error) {
		var t search.MethodText
		return t, r.Scan(&t.MethodID, &t.Name, &t.Provider, &t.Description, &t.Category, &t.Endpoint, &t.VectorHash)
	})
	if err != nil {
		return nil, fail("method texts", err)
	}
	return out, nil
}

// SaveEmbeddings stores vectors under model in one batch, replacing older ones.
func (s *Store) SaveEmbeddings(ctx context.Context, model string, es []search.Embedding) error {
	batch := &pgx.Batch{}
	for _, e := range es {
		batch.Queue(`
			INSERT INTO method_embeddings (method_id, model_id, text_hash, embedding)
			VALUES ($1, $2, $3, $4)
			ON CONFLICT (model_id, method_id) DO UPDATE SET text_hash = EXCLUDED.text_hash,
				embedding = EXCLUDED.embedding, updated_at = now()`,
			e.MethodID, model, e.TextHash, pgvector.NewVector(e.Vector))
	}
	if err := s.pool.SendBatch(ctx, batch).Close(); err != nil {
		return fmt.Errorf("postgres: store embeddings of %s: %w", model, err)
	}
	return nil
}

// Nearest returns the k enabled methods nearest to v under model m, most similar
// first, through the model's HNSW index. With only set, the search is limited to
// those slugs (the methods matching the list filters): a small set is ranked exactly,
// a large one through the index with pgvector's iterative scan, which keeps reading
// the graph until k of them are found. The transaction that scopes the planner's
// settings, the settings and the search go in one batch: one round trip, where a
// statement each cost five.
func (s *Store) Nearest(ctx context.Context, m search.ModelRecord, v []float32, k int, only []string) ([]search.Neighbour, error) {
	if !modelID.MatchString(m.ID) {
		return nil, fmt.Errorf("postgres: nearest: invalid model id %q", m.ID)
	}
	vt := vectorType(m)
	dist := `(e.embedding::` + vt + `) <=> $1::` + vt
	// The inner query finds the neighbours; its cast of each one's vector to its own
	// dimensions reads the vector out of TOAST once, and the similarity and the
	// vector returned both take that copy, where each read it again.
	q := `SELECT m.slug, e.embedding::vector(` + strconv.Itoa(m.Dimensions) + `) AS embedding
		FROM method_embeddings e JOIN provider_methods m ON m.id = e.method_id
		WHERE e.model_id = ` + modelLiteral(m) + ` AND m.enabled`
	// The vector goes as the index's half precision, in binary: what the cast of its
	// text made of it, without the text.
	args := []any{pgvector.NewHalfVector(v), k}
	var set string
	switch {
	case only == nil:
		// The planner underrates what casting and comparing every vector costs and
		// sorts a small catalog rather than walking the graph: 15 to 20 ms on the real
		// catalog against 2 to 3 through the index.
		set = `SELECT set_config('enable_sort', 'off', true), set_config('hnsw.ef_search', '` + strconv.Itoa(efSearch) + `', true)`
	case len(only) <= exactRankLimit:
		// Ranking a couple of hundred vectors exactly is as cheap as walking the graph,
		// and exact.
		q += ` AND m.slug = ANY($3)`
		args = append(args, only)
		set = `SELECT set_config('enable_indexscan', 'off', true)`
	default:
		q += ` AND m.slug = ANY($3)`
		args = append(args, only)
		set = `SELECT set_config('enable_sort', 'off', true), set_config('hnsw.iterative_scan', 'relaxed_order', true),
			set_config('hnsw.ef_search', '` + strconv.Itoa(efSearch) + `', true)`
	}
	q = `SELECT slug, 1 - ((embedding::` + vt + `) <=> $1::` + vt + `)::float8, embedding
		FROM (` + q + ` ORDER BY ` + dist + ` LIMIT $2) nearest`
	batch := &pgx.Batch{}
	batch.Queue(`BEGIN READ ONLY`)
	batch.Queue(set)
	batch.Queue(q, args...)
	batch.Queue(`COMMIT`)
	// A batch that fails leaves its connection inside the transaction, and the pool
	// closes a connection it gets back that way.
	br := s.pool.SendBatch(ctx, batch)
	defer br.Close()
	for range 2 {
		if _, err := br.Exec(); err != nil {
			return nil, fail("nearest", err)
		}
	}
	rows, _ := br.Query()
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (search.Neighbour, error) {
		var n search.Neighbour
		var v pgvector.Vector
		err := r.Scan(&n.Slug, &n.Similarity, &v)
		n.Vector = v.Slice()
		return n, err
	})
	if err != nil {
		return nil, fail("nearest", err)
	}
	if _, err := br.Exec(); err != nil {
		return nil, fail("nearest", err)
	}
	// relaxed_order may return neighbours slightly out of order.
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].Similarity > out[j-1].Similarity; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out, nil
}

// MethodVectors returns the vector of every enabled method under model m, as
// stored (single precision), for a search that scans them in memory.
func (s *Store) MethodVectors(ctx context.Context, m search.ModelRecord) ([]search.SlugVector, error) {
	rows, _ := s.pool.Query(ctx, `
		SELECT m.slug, e.embedding
		FROM method_embeddings e JOIN provider_methods m ON m.id = e.method_id
		WHERE e.model_id = $1 AND m.enabled
		ORDER BY m.id`, m.ID)
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (search.SlugVector, error) {
		var sv search.SlugVector
		var v pgvector.Vector
		err := r.Scan(&sv.Slug, &v)
		sv.Vector = v.Slice()
		return sv, err
	})
	if err != nil {
		return nil, fail("method vectors", err)
	}
	return out, nil
}

// VectorsVersion changes whenever a vector under model m is stored or removed: their
// count and the time the last was stored.
func (s *Store) VectorsVersion(ctx context.Context, m search.ModelRecord) (string, error) {
	var n int64
	var last *time.Time
	err := s.pool.QueryRow(ctx, `SELECT count(*), max(updated_at) FROM method_embeddings WHERE model_id = $1`, m.ID).Scan(&n, &last)
	if err != nil {
		return "", fail("vectors version", err)
	}
	v := strconv.FormatInt(n, 10)
	if last != nil {
		v += "@" + last.UTC().Format(time.RFC3339Nano)
	}
	return v, nil
}

// exactRankLimit is the largest candidate set Nearest ranks without the index: each
// vector compared costs about 25 µs (cast to halfvec and cosine over 1,536 dimensions),
// so 250 of them cost about what a walk of the graph does.
const exactRankLimit = 250

// UseAllowance takes one novel embedding from the day's allowance (the UTC day of
// now) and, when caller and share are given, from caller's share of it, and reports
// whether there was one to take in both. Every replica shares the counts: each
// increment is one statement that does nothing once its limit is reached, and both
// are made in one transaction, so a refusal by either takes from neither. The first
// use of a day forgets the callers of the days before.
func (s *Store) UseAllowance(ctx context.Context, now time.Time, limit int, caller string, share int) (bool, error) {
	if limit <= 0 {
		return false, nil
	}
	day := now.UTC().Format(time.DateOnly)
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return false, fail("use search allowance", err)
	}
	defer tx.Rollback(ctx)
	var used int
	if caller != "" && share > 0 {
		err = tx.QueryRow(ctx, `
			INSERT INTO search_caller_allowance AS a (day, caller, used) VALUES ($1, $2, 1)
			ON CONFLICT (day, caller) DO UPDATE SET used = a.used + 1 WHERE a.used < $3
			RETURNING used`, day, caller, share).Scan(&used)
		if errors.Is(err, pgx.ErrNoRows) {
			return false, nil
		}
		if err != nil {
			return false, fail("use search allowance", err)
		}
	}
	err = tx.QueryRow(ctx, `
		INSERT INTO search_allowance AS a (day, used) VALUES ($1, 1)
		ON CONFLICT (day) DO UPDATE SET used = a.used + 1 WHERE a.used < $2
		RETURNING used`, day, limit).Scan(&used)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fail("use search allowance", err)
	}
	if used == 1 {
		if _, err := tx.Exec(ctx, `DELETE FROM search_caller_allowance WHERE day < $1`, day); err != nil {
			return false, fail("use search allowance", err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return false, fail("use search allowance", err)
	}
	return true, nil
}

// FullTextSearch ranks enabled methods by PostgreSQL full-text search over their name
// and description (ts_rank over to_tsvector, English): every query word must match,
// or with anyWord any one of them. It is the baseline the embedding models are
// measured against.
func (s *Store) FullTextSearch(ctx context.Context, query string, k int, anyWord bool) ([]search.Neighbour, error) {
	tsq := `plainto_tsquery('english', $1)`
	if anyWord {
		tsq = `to_tsquery('english', replace(plainto_tsquery('english', $1)::text, ' & ', ' | '))`
	}
	rows, _ := s.pool.Query(ctx, `
		SELECT slug, ts_rank(to_tsvector('english', name || ' ' || description), q)::float8 AS r
		FROM provider_methods, `+tsq+` AS q
		WHERE enabled AND to_tsvector('english', name || ' ' || description) @@ q
		ORDER BY r DESC, slug LIMIT $2`, query, k)
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (search.Neighbour, error) {
		var n search.Neighbour
		return n, r.Scan(&n.Slug, &n.Similarity)
	})
	if err != nil {
		return nil, fail("full-text search", err)
	}
	return out, nil
}

// AllowanceUsed is how many novel query embeddings every replica together made on
// now's UTC day.
func (s *Store) AllowanceUsed(ctx context.Context, now time.Time) (int, error) {
	var used int
	err := s.pool.QueryRow(ctx, `SELECT used FROM search_allowance WHERE day = $1`, now.UTC().Format(time.DateOnly)).Scan(&used)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	return used, fail("search allowance used", err)
}
