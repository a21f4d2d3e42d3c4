package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/pgvector/pgvector-go"

	"github.com/waystation/waystation/internal/embedding"
)

// Model is an embedding model's record: its vector size and its similarity band.
type Model struct {
	ID         string
	Dimensions int
	// Floor is the least similarity a search result may have; Margin is how far below
	// the best result's similarity the others may fall.
	Floor  float64
	Margin float64
}

var modelID = regexp.MustCompile(`^[A-Za-z0-9:._/-]{1,100}$`)

// maxVectorIndexDims is the most dimensions pgvector indexes as vector; larger models
// are indexed (and searched) as halfvec, up to its limit.
const maxVectorIndexDims = 2000

// vectorType is the SQL type a model's vectors are cast to, to match its index.
func (m Model) vectorType() string {
	if m.Dimensions > maxVectorIndexDims {
		return "halfvec(" + strconv.Itoa(m.Dimensions) + ")"
	}
	return "vector(" + strconv.Itoa(m.Dimensions) + ")"
}

// literal is the model id as an SQL string literal. The id is checked against a strict
// pattern first: it is pasted, not bound, so that the planner matches the partial
// index's predicate in every plan, prepared or not.
func (m Model) literal() string { return "'" + strings.ReplaceAll(m.ID, "'", "''") + "'" }

func (m Model) indexName() string {
	sum := sha256.Sum256([]byte(m.ID))
	return "method_embeddings_hnsw_" + hex.EncodeToString(sum[:6])
}

// RegisterModel records a model, with the given band if it is new, and creates its
// partial HNSW index. An existing record keeps its band, so an operator's tuning in
// the table survives restarts. A model registered before with other dimensions is an
// error: its vectors could not be compared.
func (s *Store) RegisterModel(ctx context.Context, m Model) (Model, error) {
	if !modelID.MatchString(m.ID) {
		return m, fmt.Errorf("postgres: register model: invalid id %q", m.ID)
	}
	if m.Dimensions <= 0 || m.Dimensions > 4000 {
		return m, fmt.Errorf("postgres: register model %s: %d dimensions", m.ID, m.Dimensions)
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return m, fmt.Errorf("postgres: register model: %w", err)
	}
	defer conn.Release()
	// Replicas starting together create the index once.
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock(hashtext('waystation.register_model'))`); err != nil {
		return m, fmt.Errorf("postgres: register model: lock: %w", err)
	}
	defer conn.Exec(context.Background(), `SELECT pg_advisory_unlock(hashtext('waystation.register_model'))`)

	var got Model
	err = conn.QueryRow(ctx, `
		WITH ins AS (
			INSERT INTO embedding_models (id, dimensions, similarity_floor, similarity_margin)
			VALUES ($1, $2, $3, $4) ON CONFLICT (id) DO NOTHING
			RETURNING id, dimensions, similarity_floor, similarity_margin)
		SELECT id, dimensions, similarity_floor::float8, similarity_margin::float8 FROM ins
		UNION ALL
		SELECT id, dimensions, similarity_floor::float8, similarity_margin::float8
		FROM embedding_models WHERE id = $1`, m.ID, m.Dimensions, m.Floor, m.Margin).
		Scan(&got.ID, &got.Dimensions, &got.Floor, &got.Margin)
	if err != nil {
		return m, fmt.Errorf("postgres: register model %s: %w", m.ID, err)
	}
	if got.Dimensions != m.Dimensions {
		return got, fmt.Errorf("postgres: model %s is registered with %d dimensions, not %d", m.ID, got.Dimensions, m.Dimensions)
	}
	ops := "vector_cosine_ops"
	if m.Dimensions > maxVectorIndexDims {
		ops = "halfvec_cosine_ops"
	}
	_, err = conn.Exec(ctx, `CREATE INDEX IF NOT EXISTS `+got.indexName()+` ON method_embeddings
		USING hnsw ((embedding::`+got.vectorType()+`) `+ops+`) WHERE model_id = `+got.literal())
	if err != nil {
		return got, fmt.Errorf("postgres: register model %s: index: %w", m.ID, err)
	}
	return got, nil
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

// embedBatch is how many method texts go to a model in one call.
const embedBatch = 64

// SyncEmbeddings embeds every enabled method whose text changed since its vector was
// made under model e (or that has none), and returns how many it embedded. Vectors of
// unchanged text are kept, so a sync after an import costs only what changed.
func (s *Store) SyncEmbeddings(ctx context.Context, e embedding.Embedder) (int, error) {
	rows, _ := s.pool.Query(ctx, `
		SELECT m.id, m.name, p.name, m.description, m.category, m.endpoint_url, e.text_hash
		FROM provider_methods m JOIN providers p ON p.id = m.provider_id
		LEFT JOIN method_embeddings e ON e.method_id = m.id AND e.model_id = $1
		WHERE m.enabled
		ORDER BY m.id`, e.Model())
	type stale struct {
		id   int64
		text string
		hash []byte
	}
	var todo []stale
	var id int64
	var name, provider, desc, category, endpoint string
	var old []byte
	_, err := pgx.ForEachRow(rows, []any{&id, &name, &provider, &desc, &category, &endpoint, &old}, func() error {
		text := embedding.MethodText(name, provider, desc, category, endpoint)
		sum := sha256.Sum256([]byte(text))
		if string(sum[:]) != string(old) {
			todo = append(todo, stale{id, text, sum[:]})
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("postgres: sync embeddings: %w", err)
	}
	done := 0
	for start := 0; start < len(todo); start += embedBatch {
		part := todo[start:min(start+embedBatch, len(todo))]
		texts := make([]string, len(part))
		for i, t := range part {
			texts[i] = t.text
		}
		vecs, err := e.Embed(ctx, texts)
		if err != nil {
			return done, fmt.Errorf("postgres: sync embeddings of %s: %w", e.Model(), err)
		}
		batch := &pgx.Batch{}
		for i, t := range part {
			batch.Queue(`
				INSERT INTO method_embeddings (method_id, model_id, text_hash, embedding)
				VALUES ($1, $2, $3, $4)
				ON CONFLICT (model_id, method_id) DO UPDATE SET text_hash = EXCLUDED.text_hash,
					embedding = EXCLUDED.embedding, updated_at = now()`,
				t.id, e.Model(), t.hash, pgvector.NewVector(vecs[i]))
		}
		if err := s.pool.SendBatch(ctx, batch).Close(); err != nil {
			return done, fmt.Errorf("postgres: store embeddings of %s: %w", e.Model(), err)
		}
		done += len(part)
	}
	return done, nil
}

// Neighbour is a method near a query vector.
type Neighbour struct {
	Slug       string
	Similarity float64
}

// Nearest returns the k enabled methods nearest to v under model m, most similar
// first, through the model's HNSW index. With only set, the search is limited to
// those slugs (the methods matching the list filters): a small set is ranked exactly,
// a large one through the index with pgvector's iterative scan, which keeps reading
// the graph until k of them are found.
func (s *Store) Nearest(ctx context.Context, m Model, v []float32, k int, only []string) ([]Neighbour, error) {
	if !modelID.MatchString(m.ID) {
		return nil, fmt.Errorf("postgres: nearest: invalid model id %q", m.ID)
	}
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, fmt.Errorf("postgres: nearest: %w", err)
	}
	defer tx.Rollback(ctx)
	vt := m.vectorType()
	dist := `(e.embedding::` + vt + `) <=> $1::` + vt
	q := `SELECT m.slug, 1 - (` + dist + `)::float8
		FROM method_embeddings e JOIN provider_methods m ON m.id = e.method_id
		WHERE e.model_id = ` + m.literal() + ` AND m.enabled`
	args := []any{pgvector.NewVector(v), k}
	switch {
	case only == nil:
		if _, err := tx.Exec(ctx, `SET LOCAL hnsw.ef_search = `+strconv.Itoa(efSearch)); err != nil {
			return nil, fmt.Errorf("postgres: nearest: %w", err)
		}
	case len(only) <= exactRankLimit:
		// Ranking a few hundred vectors exactly is cheaper than walking the graph.
		q += ` AND m.slug = ANY($3)`
		args = append(args, only)
		if _, err := tx.Exec(ctx, `SET LOCAL enable_indexscan = off`); err != nil {
			return nil, fmt.Errorf("postgres: nearest: %w", err)
		}
	default:
		q += ` AND m.slug = ANY($3)`
		args = append(args, only)
		for _, set := range []string{`SET LOCAL hnsw.iterative_scan = relaxed_order`, `SET LOCAL hnsw.ef_search = ` + strconv.Itoa(efSearch)} {
			if _, err := tx.Exec(ctx, set); err != nil {
				return nil, fmt.Errorf("postgres: nearest: %w", err)
			}
		}
	}
	q += ` ORDER BY ` + dist + ` LIMIT $2`
	rows, _ := tx.Query(ctx, q, args...)
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Neighbour, error) {
		var n Neighbour
		return n, r.Scan(&n.Slug, &n.Similarity)
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: nearest: %w", err)
	}
	// relaxed_order may return neighbours slightly out of order.
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].Similarity > out[j-1].Similarity; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out, nil
}

// efSearch is the HNSW search breadth: the hashed lexical vectors are sparse, which
// graphs navigate poorly, so it is well above pgvector's default of 40 (make bench
// reports the recall@3 it buys at 100k methods).
const efSearch = 400

// exactRankLimit is the largest candidate set Nearest ranks without the index.
const exactRankLimit = 2000

// UseAllowance takes one novel embedding from the day's allowance (the UTC day of
// now) and reports whether there was one to take. Every replica shares the count: the
// increment is one atomic statement that does nothing once the limit is reached.
func (s *Store) UseAllowance(ctx context.Context, now time.Time, limit int) (bool, error) {
	if limit <= 0 {
		return false, nil
	}
	var used int
	err := s.pool.QueryRow(ctx, `
		INSERT INTO search_allowance AS a (day, used) VALUES ($1, 1)
		ON CONFLICT (day) DO UPDATE SET used = a.used + 1 WHERE a.used < $2
		RETURNING used`, now.UTC().Format(time.DateOnly), limit).Scan(&used)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("postgres: use search allowance: %w", err)
	}
	return true, nil
}

// FullTextSearch ranks enabled methods by PostgreSQL full-text search over their name
// and description (ts_rank over to_tsvector, English): every query word must match,
// or with anyWord any one of them. It is the baseline the embedding models are
// measured against.
func (s *Store) FullTextSearch(ctx context.Context, query string, k int, anyWord bool) ([]Neighbour, error) {
	tsq := `plainto_tsquery('english', $1)`
	if anyWord {
		tsq = `to_tsquery('english', replace(plainto_tsquery('english', $1)::text, ' & ', ' | '))`
	}
	rows, _ := s.pool.Query(ctx, `
		SELECT slug, ts_rank(to_tsvector('english', name || ' ' || description), q)::float8 AS r
		FROM provider_methods, `+tsq+` AS q
		WHERE enabled AND to_tsvector('english', name || ' ' || description) @@ q
		ORDER BY r DESC, slug LIMIT $2`, query, k)
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Neighbour, error) {
		var n Neighbour
		return n, r.Scan(&n.Slug, &n.Similarity)
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: full-text search: %w", err)
	}
	return out, nil
}
