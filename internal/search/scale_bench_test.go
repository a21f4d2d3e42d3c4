package search_test

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/pgvector/pgvector-go"

	"github.com/waystation/waystation/internal/directory"
	"github.com/waystation/waystation/internal/embedding"
	"github.com/waystation/waystation/internal/embedding/sentence"
	"github.com/waystation/waystation/internal/postgres"
	"github.com/waystation/waystation/internal/postgres/pgtest"
	"github.com/waystation/waystation/internal/search"
)

// The live x402 Bazaar lists about 15,000 resources, twenty times the real catalog's
// 639 methods. These benchmarks grow the real catalog to that size and beyond with
// pgtest.GrowCatalog's distractors (each a near-twin of a real method: its name and
// a word, six words of three other methods' descriptions, its provider, category and
// host, an endpoint of its own) and measure what a user of the directory sees there:
// whether the development set's queries still find the real methods they are
// labelled with, through the engine's calibrated band, and how long a query takes.
//
// At 15,000 methods every distractor is embedded by the builtin model, as the server
// would embed a new method (BenchmarkSearch15k): about a minute of both cores. At
// 100,000 that takes the best part of ten (BenchmarkSearch100k pays it, for the
// index's recall), so BenchmarkSearch100kTwins makes each distractor's vector from
// the vectors of the real methods its text was made from (nearTwin): a near-twin
// vector. BenchmarkSearch15kTwins does the same at 15,000, so that the two 15,000
// runs tell what the near-twin vectors change.

// devSetPath is where the development query set sits, relative to the repository
// root: beside the repository, like the real catalog (pgtest.RealCatalogPath).
const devSetPath = "../shared/eval/dev-queries.jsonl"

// devRewritesPath holds three phrasings of each development query, written by an
// agent that saw only the query.
const devRewritesPath = "../shared/eval/dev-rewrites.jsonl"

// devRewrites reads the phrasings by query id, or returns nil when they are not
// beside the repository.
func devRewrites(b *testing.B) map[string][]string {
	f, err := os.Open(filepath.Join(pgtest.RepoRoot(b), devRewritesPath))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	out := map[string][]string{}
	dec := json.NewDecoder(f)
	for {
		var l struct {
			ID       string   `json:"id"`
			Rewrites []string `json:"rewrites"`
		}
		if err := dec.Decode(&l); err == io.EOF {
			return out
		} else if err != nil {
			b.Fatalf("%s: %v", devRewritesPath, err)
		}
		out[l.ID] = l.Rewrites
	}
}

// bazaarScale skips the benchmarks that grow the catalog, which take minutes, unless
// WAYSTATION_BENCH_100K is set (make bench sets it).
func bazaarScale(b *testing.B) {
	if os.Getenv("WAYSTATION_BENCH_100K") == "" {
		b.Skip("set WAYSTATION_BENCH_100K=1 (make bench) to run the benchmarks that grow the catalog")
	}
}

// BenchmarkSearch15k measures relevance and latency on the real catalog grown to
// 15,000 methods, every distractor embedded by the builtin model, and how near the
// near-twin vectors of BenchmarkSearch100kTwins come to those embeddings.
func BenchmarkSearch15k(b *testing.B) {
	bazaarScale(b)
	env := realCatalogEnv(b, 15_000)
	b.Run("near-twin-fidelity", func(b *testing.B) { nearTwinFidelity(b, env) })
	benchSearch(b, env)
}

// BenchmarkSearchListings measures relevance and latency on the real catalog with
// the real Bazaar's listings of a week loaded beside it (the listed and reappeared
// resources, their delistings left out, as make eval-listings loads them): real
// hosts' near-identical endpoints and resold APIs, read and grouped as the service
// reads them.
func BenchmarkSearchListings(b *testing.B) {
	bazaarScale(b)
	ctx := context.Background()
	store, _ := pgtest.LoadRealCatalog(b)
	events := pgtest.EventLog(b)
	events.Delisted = nil
	if _, err := store.LoadCatalog(ctx, events, time.Now()); err != nil {
		b.Fatal(err)
	}
	builtin, rec := benchModel(b)
	model, err := store.RegisterModel(ctx, rec)
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	n, err := search.Sync(ctx, store, builtin)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("embedded %d methods in %v", n, time.Since(start).Round(time.Millisecond))
	benchSearch(b, serveEnv(b, store, builtin, model))
}

// BenchmarkSearch15kTwins is BenchmarkSearch15k with near-twin vectors in place of
// the distractors' embeddings: what the 100,000-method figures owe to them.
func BenchmarkSearch15kTwins(b *testing.B) {
	bazaarScale(b)
	benchSearch(b, twinCatalogEnv(b, 15_000))
}

// BenchmarkSearch100kTwins measures relevance and latency on the real catalog grown
// to 100,000 methods, the distractors with near-twin vectors.
func BenchmarkSearch100kTwins(b *testing.B) {
	bazaarScale(b)
	benchSearch(b, twinCatalogEnv(b, 100_000))
}

// devSet reads the development query set, or returns nil when it is not beside the
// repository.
func devSet(b *testing.B) []search.Query {
	f, err := os.Open(filepath.Join(pgtest.RepoRoot(b), devSetPath))
	if os.IsNotExist(err) {
		b.Logf("the development set %s is not beside the repository: no relevance figures", devSetPath)
		return nil
	}
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	qs, err := search.ReadQueries(f)
	if err != nil {
		b.Fatal(err)
	}
	return qs
}

// devSetRecall runs the development set's queries through the engine once, as the
// relevance harness (internal/search/eval) scores them: recall@3 over the on-topic
// queries, overall and per kind, on the endpoint URLs of the answer's first three
// methods; the false-match rate, the share of off-topic queries that got any method;
// the recall@3 of the nearest three whatever the band says, which tells a ranking that
// lost the labelled method from a band that refused it; and, in a grown catalog, the
// recall@3 that counts a near-twin of a labelled method as that method, since it is a
// copy of its listing (its name, provider and host). With rewrites, each query is
// asked with its phrasings beside it, as an agent sends them.
func devSetRecall(b *testing.B, env benchEnv, dev []search.Query, rewrites map[string][]string) {
	ctx := context.Background()
	// origin is the method a grown one was made from, by slug.
	origin := map[string]string{}
	for _, v := range env.grown {
		origin[v.Slug] = env.sources[v.A].Slug
	}
	url := func(slug string) string {
		p, _ := env.snap.Position(slug)
		return search.EndpointKey(env.snap.Methods()[p].Endpoint.URL)
	}
	type tally struct{ n, hits, twins, nearest, refused int }
	kinds := map[string]*tally{}
	var on tally
	var off, falseMatches, repeated int
	for _, q := range dev {
		res, err := env.engine.SearchPhrased(ctx, "", env.snap, q.Text, rewrites[q.ID], directory.Filter{})
		if err != nil {
			b.Fatal(err)
		}
		if q.Kind == search.KindOffTopic {
			off++
			if len(res.Hits) > 0 {
				falseMatches++
			}
			continue
		}
		relevant := map[string]bool{}
		for _, u := range q.Relevant {
			relevant[search.EndpointKey(u)] = true
		}
		// A hit holds a relevant method when it is one or one of its near-duplicates
		// is: a group is one answer.
		holds := func(hits []search.Hit, twins bool) bool {
			return slices.ContainsFunc(hits[:min(len(hits), 3)], func(h search.Hit) bool {
				return slices.ContainsFunc(append([]int{h.Pos}, h.Similar...), func(p int) bool {
					slug := env.snap.Methods()[p].Slug
					if o, ok := origin[slug]; ok && twins {
						slug = o
					}
					return relevant[url(slug)]
				})
			})
		}
		// One result per group: no hit is among another's near-duplicates.
		seen := map[int]bool{}
		for _, h := range res.Hits {
			if seen[h.Pos] {
				repeated++
				break
			}
			for _, p := range h.Similar {
				seen[p] = true
			}
		}
		nearest := slices.Clone(res.Hits)
		for _, n := range res.Nearest {
			nearest = append(nearest, n.Hit)
		}
		slices.SortStableFunc(nearest, func(x, y search.Hit) int { return cmp.Compare(y.Similarity, x.Similarity) })
		k := kinds[q.Kind]
		if k == nil {
			k = &tally{}
			kinds[q.Kind] = k
		}
		for _, t := range []*tally{&on, k} {
			t.n++
			if holds(res.Hits, false) {
				t.hits++
			}
			if holds(res.Hits, true) {
				t.twins++
			}
			if holds(nearest, false) {
				t.nearest++
				if len(res.Hits) == 0 {
					t.refused++
				}
			}
		}
	}
	for b.Loop() {
	}
	ratio := func(x, n int) float64 { return float64(x) / float64(max(1, n)) }
	b.ReportMetric(ratio(on.hits, on.n), "recall@3")
	for _, kind := range []string{"paraphrase", "task", "keyword"} {
		if k := kinds[kind]; k != nil {
			b.ReportMetric(ratio(k.hits, k.n), kind+"-recall@3")
		}
	}
	b.ReportMetric(ratio(falseMatches, off), "false-match-rate")
	b.ReportMetric(ratio(on.nearest, on.n), "nearest3-recall@3")
	b.ReportMetric(float64(repeated), "answers-with-a-group-twice")
	if len(env.grown) > 0 {
		b.ReportMetric(ratio(on.twins, on.n), "twin-recall@3")
	}
	summary := fmt.Sprintf("%d methods: recall@3 %d/%d", env.snap.Len(), on.hits, on.n)
	if rewrites != nil {
		summary = fmt.Sprintf("%d methods, each query with its phrasings: recall@3 %d/%d", env.snap.Len(), on.hits, on.n)
	}
	for _, kind := range []string{"paraphrase", "task", "keyword"} {
		if k := kinds[kind]; k != nil {
			summary += fmt.Sprintf(", %s %d/%d", kind, k.hits, k.n)
		}
	}
	summary += fmt.Sprintf("; false matches %d/%d; the nearest three hold a labelled method for %d/%d (", falseMatches, off, on.nearest, on.n)
	for i, kind := range []string{"paraphrase", "task", "keyword"} {
		if k := kinds[kind]; k != nil {
			if i > 0 {
				summary += ", "
			}
			summary += fmt.Sprintf("%s %d/%d", kind, k.nearest, k.n)
		}
	}
	summary += fmt.Sprintf("), of which the band refused %d; answers holding one group twice: %d", on.refused, repeated)
	if len(env.grown) > 0 {
		summary += fmt.Sprintf("; with near-twins of a labelled method counted as it, recall@3 %d/%d", on.twins, on.n)
	}
	b.Log(summary)
}

// catalogMethod is a method as pgtest.GrowCatalog reads it.
type catalogMethod struct {
	ID                      int64
	Slug, Name, Description string
}

// catalogMethods lists the catalog's methods in the order GrowCatalog numbers them.
func catalogMethods(b *testing.B, store *postgres.Store) []catalogMethod {
	rows, _ := store.Pool().Query(context.Background(), `SELECT id, slug, name, description FROM provider_methods ORDER BY id`)
	ms, err := pgx.CollectRows(rows, pgx.RowToStructByPos[catalogMethod])
	if err != nil {
		b.Fatal(err)
	}
	return ms
}

// variant is a method GrowCatalog added, and the methods it was made from: its name
// is A's and a word, its description words of B's, C's and D's (indexes of the
// methods it grew from).
type variant struct {
	ID         int64
	Slug       string
	A, B, C, D int
}

var variantSuffix = regexp.MustCompile(`-v([0-9]+)$`)

// variants finds the methods GrowCatalog added to sources and what each was made
// from, by the arithmetic GrowCatalog numbers them with; it fails if their text says
// otherwise (GrowCatalog has changed).
func variants(b *testing.B, store *postgres.Store, sources []catalogMethod) []variant {
	n := int64(len(sources))
	last := sources[n-1].ID
	var out []variant
	for _, m := range catalogMethods(b, store) {
		if m.ID <= last {
			continue
		}
		match := variantSuffix.FindStringSubmatch(m.Slug)
		if match == nil {
			b.Fatalf("method %s was not made by pgtest.GrowCatalog", m.Slug)
		}
		g, _ := strconv.ParseInt(match[1], 10, 64)
		v := variant{ID: m.ID, Slug: m.Slug, A: int(g % n), B: int(g * 7919 % n), C: int(g * 104729 % n), D: int(g * 1299709 % n)}
		words := map[string]bool{}
		for _, s := range []int{v.B, v.C, v.D} {
			for _, w := range strings.Fields(sources[s].Description) {
				words[w] = true
			}
		}
		a := sources[v.A]
		if m.Slug != a.Slug+match[0] || !strings.HasPrefix(m.Name, a.Name) ||
			slices.ContainsFunc(strings.Fields(m.Description), func(w string) bool { return !words[w] }) {
			b.Fatalf("method %s is not what pgtest.GrowCatalog made when these benchmarks were written: update variants", m.Slug)
		}
		out = append(out, v)
	}
	return out
}

// twinShare is how much of a near-twin's vector is the vector of the method whose
// name it has; the rest is the three whose descriptions lent it words, in equal
// shares. 0.6 brings a near-twin's parts nearest, on average, to the embeddings of
// its text (BenchmarkSearch15k/near-twin-fidelity): shares from 0.5 to 0.7 do about
// as well.
const twinShare = 0.6

// nearTwin is the vector of variant v made from the vectors of its sources (vecs, by
// index): under the hybrid, each part mixed apart and scaled to its share of the
// whole, as the model scales them, so that the fused cosine and the parts the band
// reads stay what they are for an embedded method.
func nearTwin(v variant, vecs [][]float32) []float32 {
	a, b, c, d := vecs[v.A], vecs[v.B], vecs[v.C], vecs[v.D]
	out := make([]float32, len(a))
	for j := range out {
		out[j] = twinShare*a[j] + (1-twinShare)/3*(b[j]+c[j]+d[j])
	}
	if len(out) != embedding.HybridDimensions {
		scale(out, 1)
		return out
	}
	semantic, lexical := out[:sentence.Dimensions], out[sentence.Dimensions:]
	if !scale(lexical, math.Sqrt(1-embedding.SemanticShare)) {
		scale(semantic, 1)
		return out
	}
	scale(semantic, math.Sqrt(embedding.SemanticShare))
	return out
}

// scale gives v the length l, unless it is zero, and reports whether it was not.
func scale(v []float32, l float64) bool {
	var sum float64
	for _, x := range v {
		sum += float64(x) * float64(x)
	}
	if sum == 0 {
		return false
	}
	f := float32(l / math.Sqrt(sum))
	for j := range v {
		v[j] *= f
	}
	return true
}

// vectorsByID reads the vectors of the methods ids under model, by method id.
func vectorsByID(b *testing.B, store *postgres.Store, model string, ids []int64) map[int64][]float32 {
	rows, err := store.Pool().Query(context.Background(), `SELECT method_id, embedding FROM method_embeddings WHERE model_id = $1 AND method_id = ANY($2)`, model, ids)
	if err != nil {
		b.Fatal(err)
	}
	defer rows.Close()
	out := make(map[int64][]float32, len(ids))
	for rows.Next() {
		var id int64
		var v pgvector.Vector
		if err := rows.Scan(&id, &v); err != nil {
			b.Fatal(err)
		}
		out[id] = v.Slice()
	}
	if err := rows.Err(); err != nil {
		b.Fatal(err)
	}
	return out
}

// sourceVectors are the vectors of sources under model, by index; every source must
// have one.
func sourceVectors(b *testing.B, store *postgres.Store, model string, sources []catalogMethod) [][]float32 {
	ids := make([]int64, len(sources))
	for i, m := range sources {
		ids[i] = m.ID
	}
	byID := vectorsByID(b, store, model, ids)
	out := make([][]float32, len(sources))
	for i, m := range sources {
		if out[i] = byID[m.ID]; out[i] == nil {
			b.Fatalf("method %s has no vector to make near-twins of", m.Slug)
		}
	}
	return out
}

// twinCatalogEnv imports and embeds the real catalog in a fresh database, then grows
// it to total methods with GrowCatalog, giving each new method its near-twin vector
// (stored with its text's hash, so that Sync takes it for the embedding of that text).
func twinCatalogEnv(b *testing.B, total int) benchEnv {
	b.Helper()
	ctx := context.Background()
	store, _ := pgtest.LoadRealCatalog(b)
	builtin, rec := benchModel(b)
	model, err := store.RegisterModel(ctx, rec)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := search.Sync(ctx, store, builtin); err != nil {
		b.Fatal(err)
	}
	sources := catalogMethods(b, store)
	if err := pgtest.GrowCatalog(ctx, store, total); err != nil {
		b.Fatal(err)
	}
	grown := variants(b, store, sources)
	store.Pool().Exec(ctx, `DROP INDEX IF EXISTS `+indexName(b, store))
	vecs := sourceVectors(b, store, model.ID, sources)
	texts, err := store.MethodTexts(ctx, model.ID)
	if err != nil {
		b.Fatal(err)
	}
	hashes := make(map[int64][]byte, len(texts))
	for _, t := range texts {
		sum := sha256.Sum256([]byte(embedding.MethodText(t.Name, t.Provider, t.Description, t.Category, t.Endpoint)))
		hashes[t.MethodID] = sum[:]
	}
	n, err := store.Pool().CopyFrom(ctx, pgx.Identifier{"method_embeddings"}, []string{"method_id", "model_id", "text_hash", "embedding"},
		pgx.CopyFromSlice(len(grown), func(i int) ([]any, error) {
			v := grown[i]
			return []any{v.ID, model.ID, hashes[v.ID], pgvector.NewVector(nearTwin(v, vecs))}, nil
		}))
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("stored the near-twin vectors of %d methods", n)
	// Nothing is left to embed: this sync gives the model the grown catalog's word
	// frequencies, as the server's would.
	if n, err := search.Sync(ctx, store, builtin); err != nil || n != 0 {
		b.Fatalf("sync after the near-twins embedded %d methods: %v", n, err)
	}
	buildIndex(b, store, model)
	env := serveEnv(b, store, builtin, model)
	env.sources, env.grown = sources, grown
	return env
}

// nearTwinFidelity reports how near the near-twin vectors of the grown methods come
// to their embeddings: the mean cosine of the two, and of each part under the hybrid.
func nearTwinFidelity(b *testing.B, env benchEnv) {
	if len(env.grown) == 0 {
		b.Skip("the catalog was not grown")
	}
	ids := make([]int64, 0, len(env.grown))
	for _, v := range env.grown {
		ids = append(ids, v.ID)
	}
	got := vectorsByID(b, env.store, env.model.ID, ids)
	vecs := sourceVectors(b, env.store, env.model.ID, env.sources)
	parts, hasParts := embedding.Find[interface {
		Parts(q, d []float32) (semantic, lexical float64)
	}](env.embedder)
	var whole, semantic, lexical float64
	for _, v := range env.grown {
		twin, emb := nearTwin(v, vecs), got[v.ID]
		var dot float64
		for j := range twin {
			dot += float64(twin[j]) * float64(emb[j])
		}
		whole += dot
		if hasParts {
			s, l := parts.Parts(twin, emb)
			semantic += s
			lexical += l
		}
	}
	for b.Loop() {
	}
	n := float64(len(env.grown))
	b.ReportMetric(whole/n, "cosine")
	if hasParts {
		b.ReportMetric(semantic/n, "semantic-cosine")
		b.ReportMetric(lexical/n, "lexical-cosine")
	}
}
