package search_test

import (
	"context"
	"math"
	"net/url"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pgvector/pgvector-go"

	"github.com/waystation/waystation/generator"
	"github.com/waystation/waystation/internal/directory"
	"github.com/waystation/waystation/internal/embedding"
	"github.com/waystation/waystation/internal/embedding/sentence"
	"github.com/waystation/waystation/internal/postgres"
	"github.com/waystation/waystation/internal/postgres/pgtest"
	"github.com/waystation/waystation/internal/search"
)

type benchEnv struct {
	store  *postgres.Store
	model  search.ModelRecord
	snap   *directory.Snapshot
	engine *search.Engine
	// memory is an engine like engine that scans the vectors in memory
	// (search.Config.MemoryVectors), at any size, to compare with it.
	memory   *search.Engine
	embedder embedding.Embedder
	// embeddings counts the query embeddings the engine made.
	embeddings *embeddingCounter
	// novel numbers the novel queries asked of the engine, so that none repeats one.
	novel *atomic.Int64
	// sources and grown are, when the catalog was grown, the methods it was grown
	// from and those pgtest.GrowCatalog added.
	sources []catalogMethod
	grown   []variant
}

// realCatalogEnv imports the real catalog into a fresh database and embeds it, and
// optionally grows it to total methods with synthetic variants (pgtest.GrowCatalog),
// every one embedded by the builtin model.
func realCatalogEnv(b *testing.B, total int) benchEnv {
	b.Helper()
	ctx := context.Background()
	store, _ := pgtest.LoadRealCatalog(b)
	var sources []catalogMethod
	var grown []variant
	if total > 0 {
		sources = catalogMethods(b, store)
		if err := pgtest.GrowCatalog(ctx, store, total); err != nil {
			b.Fatal(err)
		}
		grown = variants(b, store, sources)
	}
	builtin, rec := benchModel(b)
	model, err := store.RegisterModel(ctx, rec)
	if err != nil {
		b.Fatal(err)
	}
	if total > 0 {
		// Building the index once over every vector is far quicker than growing it
		// one insert at a time.
		store.Pool().Exec(ctx, `DROP INDEX IF EXISTS `+indexName(b, store))
	}
	start := time.Now()
	if _, err := search.Sync(ctx, store, builtin); err != nil {
		b.Fatal(err)
	}
	if total > 0 {
		b.Logf("embedded %d methods in %v", total, time.Since(start).Round(time.Millisecond))
		buildIndex(b, store, model)
	}
	env := serveEnv(b, store, builtin, model)
	env.sources, env.grown = sources, grown
	return env
}

// buildIndex builds the model's vector index, which was dropped for a bulk load, over
// every vector at once.
func buildIndex(b *testing.B, store *postgres.Store, model search.ModelRecord) {
	ctx := context.Background()
	start := time.Now()
	// Building the index over every vector wants the graph in memory: a store
	// of its own whose sessions may use a gigabyte for it.
	cfg := store.Pool().Config().ConnConfig
	u := url.URL{Scheme: "postgres", User: url.User(cfg.User), Path: "/" + cfg.Database,
		RawQuery: url.Values{"host": {cfg.Host}, "port": {strconv.Itoa(int(cfg.Port))}, "sslmode": {"disable"}, "maintenance_work_mem": {"1GB"}}.Encode()}
	builder, err := postgres.Open(ctx, u.String())
	if err != nil {
		b.Fatal(err)
	}
	if _, err := builder.RegisterModel(ctx, model); err != nil {
		b.Fatal(err)
	}
	builder.Close()
	b.Logf("built the HNSW index in %v", time.Since(start).Round(time.Millisecond))
}

// serveEnv makes the snapshot and the engine the server would answer with over the
// vectors in store.
func serveEnv(b *testing.B, store *postgres.Store, builtin embedding.Embedder, model search.ModelRecord) benchEnv {
	ctx := context.Background()
	// Fresh statistics, as autovacuum would make them, or the planner may not see
	// that the index is worth it.
	if _, err := store.Pool().Exec(ctx, `ANALYZE method_embeddings; ANALYZE provider_methods`); err != nil {
		b.Fatal(err)
	}
	holder := generator.NewHolder()
	if err := holder.Refresh(ctx, store, nil); err != nil {
		b.Fatal(err)
	}
	counter := &embeddingCounter{}
	engine, err := search.NewEngine(search.Config{Observer: counter}, store, &search.Model{Embedder: embedding.WithCache(builtin, 100_000), Record: model}, nil)
	if err != nil {
		b.Fatal(err)
	}
	memory, err := search.NewEngine(search.Config{Observer: counter, MemoryVectors: math.MaxInt}, store, &search.Model{Embedder: embedding.WithCache(builtin, 100_000), Record: model}, nil)
	if err != nil {
		b.Fatal(err)
	}
	snap := holder.Current()
	start := time.Now()
	n, bytes, err := memory.LoadVectors(ctx, snap)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("loaded %d vectors into memory (%.1f MB) in %v", n, float64(bytes)/1e6, time.Since(start).Round(time.Millisecond))
	return benchEnv{store: store, model: model, snap: snap, engine: engine, memory: memory, embedder: builtin, embeddings: counter, novel: new(atomic.Int64)}
}

// embeddingCounter is the engine's observer in benchmarks: it counts the queries
// embedded, so that a benchmark can tell that an answer cost none, and keeps how long
// each took, to tell the embedding's share of a novel query's time. Benchmarks search
// from one goroutine, which embeds a query's phrasings at once.
type embeddingCounter struct {
	n    atomic.Int64
	mu   sync.Mutex
	took []time.Duration
}

var _ search.Observer = (*embeddingCounter)(nil)

func (*embeddingCounter) Searched(outcome, model string) {}

func (c *embeddingCounter) Embedded(model string, took time.Duration, err error) {
	c.n.Add(1)
	c.mu.Lock()
	c.took = append(c.took, took)
	c.mu.Unlock()
}

// benchModel is the builtin model the server runs, with its default band: the hybrid
// and its calibrated band when the encoder's files are there (WAYSTATION_SENTENCE_MODEL,
// set by make bench), else the lexical one.
func benchModel(b *testing.B) (embedding.Embedder, search.ModelRecord) {
	dir := os.Getenv("WAYSTATION_SENTENCE_MODEL")
	if dir == "" {
		b.Log("WAYSTATION_SENTENCE_MODEL is not set: the lexical builtin model")
		return embedding.Lexhash{}, search.ModelRecord{ID: embedding.BuiltinModel, Dimensions: embedding.BuiltinDimensions, Floor: search.BuiltinFloor, Margin: search.BuiltinMargin}
	}
	enc, err := sentence.Load(dir)
	if err != nil {
		b.Fatal(err)
	}
	c := search.HybridCalibration
	return embedding.NewHybrid(enc), search.ModelRecord{ID: embedding.HybridModel, Dimensions: embedding.HybridDimensions,
		Floor: search.HybridFloor, Margin: search.HybridMargin, Calibration: &c}
}

func indexName(b *testing.B, store *postgres.Store) string {
	var name string
	err := store.Pool().QueryRow(context.Background(), `SELECT indexname FROM pg_indexes WHERE indexname LIKE 'method_embeddings_hnsw_%'`).Scan(&name)
	if err != nil {
		b.Fatal(err)
	}
	return name
}

var benchQueries = []string{
	"ethereum block height", "current weather in a city", "search tweets", "token price by ticker",
	"generate an image from text", "whois for a domain", "scrape a web page", "gas price on base",
	"us inflation rate", "translate text", "company enrichment", "flight search",
}

// latencySamples is the fewest calls latency measures its percentiles on: a second
// of novel searches is too few for a 99th percentile.
const latencySamples = 500

// latency runs fn b.N times, then on until it has latencySamples calls (those after
// b.Loop are not in ns/op), and reports the median and the 99th percentile, how many
// queries the engine embedded per call and, if it did, the median embedding.
func latency(b *testing.B, env benchEnv, fn func(i int)) {
	var d []time.Duration
	embedded := env.embeddings.n.Load()
	env.embeddings.took = env.embeddings.took[:0]
	call := func(i int) {
		start := time.Now()
		fn(i)
		d = append(d, time.Since(start))
	}
	b.ResetTimer()
	i := 0
	for ; b.Loop(); i++ {
		call(i)
	}
	for ; i < latencySamples; i++ {
		call(i)
	}
	slices.Sort(d)
	b.ReportMetric(float64(d[len(d)/2].Nanoseconds())/1e3, "p50-µs")
	b.ReportMetric(float64(d[len(d)*99/100].Nanoseconds())/1e3, "p99-µs")
	b.ReportMetric(float64(env.embeddings.n.Load()-embedded)/float64(len(d)), "embeddings/op")
	if took := env.embeddings.took; len(took) > 0 {
		slices.Sort(took)
		b.ReportMetric(float64(took[len(took)/2].Nanoseconds())/1e3, "embed-p50-µs")
	}
}

// benchSearch measures search latency (exact, repeated and novel queries) and, when
// the development set is there, relevance (devSetRecall).
func benchSearch(b *testing.B, env benchEnv) {
	ctx := context.Background()
	run := func(q string) search.Result {
		res, err := env.engine.Search(ctx, "", env.snap, q, directory.Filter{})
		if err != nil {
			b.Fatal(err)
		}
		return res
	}
	// The first search of a snapshot builds its exact and text indexes.
	run(env.snap.Methods()[0].Slug)
	run(benchQueries[0])
	dev := devSet(b)
	if dev != nil {
		b.Run("dev-set", func(b *testing.B) { devSetRecall(b, env, dev, nil) })
		if rewrites := devRewrites(b); rewrites != nil {
			b.Run("dev-set-rewrites", func(b *testing.B) { devSetRecall(b, env, dev, rewrites) })
		}
	}
	// A method's slug or name resolves in memory, with no embedding, at any size.
	b.Run("exact", func(b *testing.B) {
		ms := env.snap.Methods()
		latency(b, env, func(i int) {
			m := ms[(i/2)%len(ms)]
			q := m.Slug
			if i%2 == 1 {
				q = m.Name
			}
			if res := run(q); res.Match != search.MatchSlug && res.Match != search.MatchMethod && res.Match != search.MatchProvider {
				b.Fatalf("%q did not resolve exactly: %s", q, res.Match)
			}
		})
	})
	// A query repeated is answered from the neighbour cache.
	b.Run("cached", func(b *testing.B) {
		for _, q := range benchQueries {
			run(q)
		}
		latency(b, env, func(i int) { run(benchQueries[i%len(benchQueries)]) })
	})
	// A query never seen: its embedding, the vector search and the band. The short
	// queries of benchQueries, and, when it is there, the development set's, which are
	// as long as people write them (a task takes a sentence), and cost the encoder
	// more.
	novel := func(queries []string) func(b *testing.B) {
		return func(b *testing.B) {
			latency(b, env, func(i int) {
				run(queries[i%len(queries)] + " " + strconv.FormatInt(env.novel.Add(1), 10))
			})
		}
	}
	queries := benchQueries
	// The store's vector search and the scan in memory, alternately, so that both
	// meet the same machine.
	for range 2 {
		for _, eng := range []struct {
			name   string
			engine *search.Engine
		}{{"", env.engine}, {"-memory", env.memory}} {
			b.Run("novel"+eng.name, func(b *testing.B) {
				latency(b, env, func(i int) {
					q := benchQueries[i%len(benchQueries)] + " " + strconv.FormatInt(env.novel.Add(1), 10)
					if _, err := eng.engine.Search(ctx, "", env.snap, q, directory.Filter{}); err != nil {
						b.Fatal(err)
					}
				})
			})
			// A query never seen with four phrasings never seen either, as an agent
			// sends them (rewrite): five embeddings and vector searches, read and fused.
			b.Run("novel-four-rewrites"+eng.name, func(b *testing.B) {
				latency(b, env, func(i int) {
					n := " " + strconv.FormatInt(env.novel.Add(1), 10)
					q := benchQueries[i%len(benchQueries)]
					rewrites := []string{benchQueries[(i+1)%len(benchQueries)] + n, q + " api" + n, "find " + q + n, q + " lookup" + n}
					if _, err := eng.engine.SearchPhrased(ctx, "", env.snap, q+n, rewrites, directory.Filter{}); err != nil {
						b.Fatal(err)
					}
				})
			})
		}
	}
	if dev != nil {
		b.Run("memory-agreement", func(b *testing.B) { memoryAgreement(b, env, dev, devRewrites(b)) })
	}
	if dev != nil {
		queries = nil
		for _, q := range dev {
			queries = append(queries, q.Text)
		}
		b.Run("novel-dev-set", novel(queries))
	}
	// The vector search alone, as a novel query makes it (through the index, the
	// neighbours the band reads): what the size of the catalog costs a query; and the
	// same search scanned in memory.
	norm := make([]string, len(queries))
	for i, q := range queries {
		norm[i] = embedding.NormalizeQuery(q)
	}
	vecs, err := env.embedder.Embed(ctx, norm)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("vector-search", func(b *testing.B) {
		latency(b, env, func(i int) {
			if _, err := env.store.Nearest(ctx, env.model, vecs[i%len(vecs)], search.Neighbours, nil); err != nil {
				b.Fatal(err)
			}
		})
	})
	b.Run("vector-search-memory", func(b *testing.B) {
		latency(b, env, func(i int) {
			if _, err := env.memory.NearestInMemory(env.snap, env.model, vecs[i%len(vecs)], search.Neighbours); err != nil {
				b.Fatal(err)
			}
		})
	})
}

// memoryAgreement reports how many of the development queries, alone and with
// their rewrites, the engine that scans vectors in memory answers otherwise than
// the one that asks the store (other methods, in another order, or another match),
// and the largest difference of a hit's similarity between the two.
func memoryAgreement(b *testing.B, env benchEnv, dev []search.Query, rewrites map[string][]string) {
	ctx := context.Background()
	var differ, total int
	var worst float64
	for _, q := range dev {
		phrasings := [][]string{nil}
		if rewrites[q.ID] != nil {
			phrasings = append(phrasings, rewrites[q.ID])
		}
		for _, rw := range phrasings {
			a, err := env.engine.SearchPhrased(ctx, "", env.snap, q.Text, rw, directory.Filter{})
			if err != nil {
				b.Fatal(err)
			}
			m, err := env.memory.SearchPhrased(ctx, "", env.snap, q.Text, rw, directory.Filter{})
			if err != nil {
				b.Fatal(err)
			}
			total++
			same := a.Match == m.Match && len(a.Hits) == len(m.Hits)
			for i := 0; same && i < len(a.Hits); i++ {
				same = a.Hits[i].Pos == m.Hits[i].Pos
				worst = max(worst, math.Abs(a.Hits[i].Similarity-m.Hits[i].Similarity))
			}
			if !same {
				differ++
				b.Logf("%s %q: store %v, memory %v", q.ID, q.Text, hitPositions(a), hitPositions(m))
			}
		}
	}
	for b.Loop() {
	}
	b.ReportMetric(float64(total), "searches")
	b.ReportMetric(float64(differ), "differ")
	b.ReportMetric(worst, "max-sim-diff")
}

func hitPositions(r search.Result) []int {
	var p []int
	for _, h := range r.Hits {
		p = append(p, h.Pos)
	}
	return p
}

// BenchmarkSearch measures search latency on the real catalog.
func BenchmarkSearch(b *testing.B) {
	benchSearch(b, realCatalogEnv(b, 0))
}

// BenchmarkSearch100k measures search latency on a synthetic 100k-method catalog and
// the HNSW index's recall@3 against exact nearest neighbours. It takes minutes, so it
// runs only with WAYSTATION_BENCH_100K set (make bench sets it).
func BenchmarkSearch100k(b *testing.B) {
	if os.Getenv("WAYSTATION_BENCH_100K") == "" {
		b.Skip("set WAYSTATION_BENCH_100K=1 (make bench) to run the 100k-method benchmark")
	}
	env := realCatalogEnv(b, 100_000)
	ctx := context.Background()
	// Recall is measured once, over 200 queries, whatever b.N: through Nearest (the
	// index at the service's search breadth), and at other breadths to show the
	// trade-off.
	var vecs [][]float32
	var exact [][]string
	var kth []float64
	for i := range 200 {
		q := benchQueries[i%len(benchQueries)]
		if i >= len(benchQueries) {
			q = env.snap.Methods()[(i*4241)%env.snap.Len()].Name
		}
		vs, err := env.embedder.Embed(ctx, []string{embedding.NormalizeQuery(q)})
		if err != nil {
			b.Fatal(err)
		}
		e, k := exactNearest(b, env, vs[0])
		vecs, exact, kth = append(vecs, vs[0]), append(exact, e), append(kth, k)
	}
	recall := func(nearest func(v []float32) []search.Neighbour) float64 {
		var found, total int
		for i, v := range vecs {
			for _, n := range nearest(v) {
				// A neighbour as near as the exact k-th (a tie, to the index's half
				// precision) counts too.
				if slices.Contains(exact[i], n.Slug) || n.Similarity >= kth[i]-1e-3 {
					found++
				}
			}
			total += len(exact[i])
		}
		return float64(found) / float64(max(1, total))
	}
	service := recall(func(v []float32) []search.Neighbour {
		near, err := env.store.Nearest(ctx, env.model, v, 3, nil)
		if err != nil {
			b.Fatal(err)
		}
		return near
	})
	b.Run("hnsw-recall@3", func(b *testing.B) {
		for b.Loop() {
		}
		b.ReportMetric(service, "recall@3")
	})
	for _, ef := range []int{40, 100, 200, 400, 800} {
		r := recall(func(v []float32) []search.Neighbour { return approxNearest(b, env, v, ef) })
		b.Run("hnsw-recall@3/ef_search="+strconv.Itoa(ef), func(b *testing.B) {
			for b.Loop() {
			}
			b.ReportMetric(r, "recall@3")
		})
	}
	benchSearch(b, env)
}

// approxNearest is Nearest through the index at search breadth ef.
func approxNearest(b *testing.B, env benchEnv, v []float32, ef int) []search.Neighbour {
	ctx := context.Background()
	tx, err := env.store.Pool().Begin(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer tx.Rollback(ctx)
	tx.Exec(ctx, `SET LOCAL hnsw.ef_search = `+strconv.Itoa(ef))
	vt := "halfvec(" + strconv.Itoa(env.model.Dimensions) + ")"
	rows, err := tx.Query(ctx, `SELECT m.slug, 1 - ((e.embedding::`+vt+`) <=> $1::`+vt+`) FROM method_embeddings e JOIN provider_methods m ON m.id = e.method_id
		WHERE e.model_id = '`+env.model.ID+`' AND m.enabled ORDER BY (e.embedding::`+vt+`) <=> $1::`+vt+` LIMIT 3`, pgvector.NewVector(v))
	if err != nil {
		b.Fatal(err)
	}
	defer rows.Close()
	var out []search.Neighbour
	for rows.Next() {
		var n search.Neighbour
		rows.Scan(&n.Slug, &n.Similarity)
		out = append(out, n)
	}
	return out
}

func exactNearest(b *testing.B, env benchEnv, v []float32) (slugs []string, kth float64) {
	ctx := context.Background()
	tx, err := env.store.Pool().Begin(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer tx.Rollback(ctx)
	tx.Exec(ctx, `SET LOCAL enable_indexscan = off`)
	rows, err := tx.Query(ctx, `SELECT m.slug, 1 - (e.embedding <=> $1) FROM method_embeddings e JOIN provider_methods m ON m.id = e.method_id
		WHERE e.model_id = $2 AND m.enabled ORDER BY e.embedding <=> $1 LIMIT 3`, pgvector.NewVector(v), env.model.ID)
	if err != nil {
		b.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var s string
		rows.Scan(&s, &kth)
		slugs = append(slugs, s)
	}
	return slugs, kth
}
