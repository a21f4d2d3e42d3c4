// Package eval measures search relevance on the real catalog with two labelled query
// sets side by side: the project's own (testdata/queries.tsv) and the development set
// kept beside the repository (../shared/eval/dev-queries.jsonl, never copied in). Both
// are scored the way that set's relevance.py scores a running service: the endpoint
// URLs of the first three results; recall@3, the share of on-topic queries with a
// relevant URL among them; MRR@3; and the false-match rate, the share of off-topic
// queries that got any result at all. Every search system in the list (the builtin
// model, PostgreSQL full-text search) gets one row per set, with recall@3 per kind.
// `make eval` runs it in full; `make test` runs a small smoke share of the own set and
// checks that the development set parses and that its labels name catalog methods.
package eval

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/waystation/waystation/generator"
	"github.com/waystation/waystation/internal/catalog"
	"github.com/waystation/waystation/internal/directory"
	"github.com/waystation/waystation/internal/embedding"
	"github.com/waystation/waystation/internal/embedding/sentence"
	"github.com/waystation/waystation/internal/postgres"
	"github.com/waystation/waystation/internal/postgres/pgtest"
	"github.com/waystation/waystation/internal/search"
)

// DevSetPath is where the development query set sits, relative to the repository
// root: beside the repository, like the real catalog (pgtest.RealCatalogPath).
const DevSetPath = "../shared/eval/dev-queries.jsonl"

// topK is how many results are scored, as relevance.py does.
const topK = 3

// query is one labelled query: relevant holds endpoint URLs, empty when off-topic.
type query struct {
	id, text, kind string
	off            bool
	relevant       []string
}

// querySet is a labelled set; kinds are its on-topic kinds in column order.
type querySet struct {
	name    string
	kinds   []string
	queries []query
}

// readOwnSet reads testdata/queries.tsv (its format is in its header): one set of
// kinds "on-topic" and "off-topic".
func readOwnSet(t *testing.T) querySet {
	f, err := os.Open("testdata/queries.tsv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	set := querySet{name: "own set (testdata/queries.tsv)", kinds: []string{"on-topic"}}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		text, labels, ok := strings.Cut(line, "\t")
		if !ok {
			t.Fatalf("queries.tsv:%d: no tab in %q", n, line)
		}
		q := query{id: "line" + strconv.Itoa(n), text: text, kind: "on-topic"}
		if labels == "-" {
			q.kind, q.off = "off-topic", true
		} else {
			for _, u := range strings.Fields(labels) {
				q.relevant = append(q.relevant, "https://"+u)
			}
		}
		set.queries = append(set.queries, q)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return set
}

// readDevSet reads the development set as relevance.py's load_queries does, or skips
// the test when it is not beside the repository.
func readDevSet(t *testing.T) querySet {
	path := filepath.Join(pgtest.RepoRoot(t), DevSetPath)
	if _, err := os.Stat(path); os.IsNotExist(err) {
		t.Skipf("the development set %s is not beside the repository", DevSetPath)
	}
	return readJSONLSet(t, path, "dev set ("+DevSetPath+")")
}

// NewSetPath is the project's own labelled queries in the development set's format,
// written after it, for calibration: paraphrases that share few words with the
// methods they want, and near misses from neighbouring domains.
const NewSetPath = "testdata/queries.jsonl"

// lastOlderQuery is the id of the last query of NewSetPath the band was measured on
// before the newer ones were written (each written from the need, as by someone who
// had not read the catalog, and labelled after): make eval reports the older and
// the newer apart, so that a change of data does not pass for a change of method.
const lastOlderQuery = "n316"

// lastFittedQuery is the id of the last query of NewSetPath the builtin band
// (search.HybridCalibration) was fitted on, with the development set: the queries
// written after it are held out from the band until the next refit, which moves this
// to the file's last id. make eval reports them apart.
const lastFittedQuery = "n467"

// upTo tells whether the own set's query id comes no later than last (ids are n
// and a number).
func upTo(id, last string) bool {
	n, err1 := strconv.Atoi(strings.TrimPrefix(id, "n"))
	l, err2 := strconv.Atoi(strings.TrimPrefix(last, "n"))
	if err1 != nil || err2 != nil {
		panic("eval: not an id of the own set: " + id + ", " + last)
	}
	return n <= l
}

// readJSONLSet reads a labelled set in the development set's format.
func readJSONLSet(t *testing.T, path, name string) querySet {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	qs, err := search.ReadQueries(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	set := querySet{name: name}
	kinds := map[string]int{}
	for _, l := range qs {
		q := query{id: l.ID, text: l.Text, kind: l.Kind, relevant: l.Relevant, off: l.Kind == search.KindOffTopic}
		if !q.off {
			kinds[q.kind]++
		}
		set.queries = append(set.queries, q)
	}
	for _, k := range []string{"paraphrase", "task", "keyword"} {
		if kinds[k] > 0 {
			set.kinds = append(set.kinds, k)
			delete(kinds, k)
		}
	}
	named := len(set.kinds)
	for k := range kinds {
		set.kinds = append(set.kinds, k)
	}
	slices.Sort(set.kinds[named:])
	return set
}

// normURL is relevance.py's loose URL identity (search.EndpointKey).
func normURL(u string) string { return search.EndpointKey(u) }

// system is one search system under evaluation: its name and the endpoint URLs it
// answers a query with, best first. near, when set, gives its raw nearest neighbours
// before the similarity band, for the verbose diagnostics and the band sweep.
type system struct {
	name   string
	search func(ctx context.Context, q string) ([]string, error)
	near   func(ctx context.Context, q string) ([]search.Neighbour, error)
}

// Names of the rows the assertions look at.
const (
	builtinSystem  = embedding.BuiltinModel
	allWordsSystem = "full-text, all words"
	anyWordSystem  = "full-text, any word"
)

type fixture struct {
	store  *postgres.Store
	snap   *directory.Snapshot
	engine *search.Engine
	urlOf  map[string]string // slug -> endpoint URL
	// The hybrid model, when its encoder's files are there (WAYSTATION_SENTENCE_MODEL).
	hybrid       *search.Engine
	hybridModel  embedding.Embedder
	hybridRecord search.ModelRecord
}

var builtinRecord = search.ModelRecord{ID: embedding.BuiltinModel, Dimensions: embedding.BuiltinDimensions,
	Floor: search.BuiltinFloor, Margin: search.BuiltinMargin}

func setup(t *testing.T) fixture {
	ctx := context.Background()
	// The catalog make run serves once the real one is imported: the demo's and the
	// real methods, as ../shared/eval/relevance.py measures a running service.
	store, _ := pgtest.LoadRealCatalog(t)
	demo, err := catalog.Demo()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.LoadCatalog(ctx, demo, time.Now()); err != nil {
		t.Fatal(err)
	}
	if os.Getenv("WAYSTATION_EVAL_LISTINGS") != "" {
		// The real Bazaar's listings of a week beside it (make eval-listings): the
		// listed and reappeared resources, their delistings left out, so that a
		// labelled method stays whatever the later log says of it.
		events := pgtest.EventLog(t)
		events.Delisted = nil
		if _, err := store.LoadCatalog(ctx, events, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	model, err := store.RegisterModel(ctx, builtinRecord)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := search.Sync(ctx, store, embedding.Lexhash{}); err != nil {
		t.Fatal(err)
	}
	holder := generator.NewHolder()
	if err := holder.Refresh(ctx, store, nil); err != nil {
		t.Fatal(err)
	}
	engine, err := search.NewEngine(search.Config{}, store, &search.Model{Embedder: embedding.Lexhash{}, Record: model}, nil)
	if err != nil {
		t.Fatal(err)
	}
	fx := fixture{store: store, snap: holder.Current(), engine: engine, urlOf: map[string]string{}}
	if dir := os.Getenv("WAYSTATION_SENTENCE_MODEL"); dir != "" {
		enc, err := sentence.Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		fx.hybridModel = embedding.NewHybrid(enc)
		if spec := os.Getenv("WAYSTATION_SENTENCE_ADAPT"); spec != "" {
			fx.hybridModel = adaptedHybrid(t, store, enc, spec)
		}
		c := search.HybridCalibration
		fx.hybridRecord, err = store.RegisterModel(ctx, search.ModelRecord{ID: fx.hybridModel.Model(), Dimensions: embedding.HybridDimensions,
			Floor: search.HybridFloor, Margin: search.HybridMargin, Calibration: &c})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		n, err := search.Sync(ctx, store, fx.hybridModel)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d methods embedded in %v", fx.hybridModel.Model(), n, time.Since(start).Round(time.Millisecond))
		fx.hybrid, err = search.NewEngine(search.Config{}, store, &search.Model{Embedder: fx.hybridModel, Record: fx.hybridRecord}, nil)
		if err != nil {
			t.Fatal(err)
		}
	} else {
		t.Log("WAYSTATION_SENTENCE_MODEL is not set: no row for the hybrid model (make eval sets it)")
	}
	for _, m := range fx.snap.Methods() {
		fx.urlOf[m.Slug] = m.Endpoint.URL
	}
	return fx
}

// systems lists the rows of the tables. A new engine is one more line, with
// fx.engineSearch.
func (fx fixture) systems() []system {
	var out []system
	if fx.hybrid != nil {
		out = append(out, system{name: embedding.HybridModel, search: fx.engineSearch(fx.hybrid), near: func(ctx context.Context, q string) ([]search.Neighbour, error) {
			vs, err := fx.hybridModel.Embed(ctx, []string{embedding.NormalizeQuery(q)})
			if err != nil {
				return nil, err
			}
			near, err := fx.store.Nearest(ctx, fx.hybridRecord, vs[0], topK, nil)
			search.SplitParts(fx.hybridModel, vs[0], near)
			return near, err
		}})
	}
	return append(out, []system{
		{name: builtinSystem, search: fx.engineSearch(fx.engine), near: func(ctx context.Context, q string) ([]search.Neighbour, error) {
			return fx.store.Nearest(ctx, builtinRecord, embedding.Lexhash{}.Vector(embedding.NormalizeQuery(q)), topK, nil)
		}},
		{name: allWordsSystem, search: fx.fullText(false)},
		{name: anyWordSystem, search: fx.fullText(true)},
	}...)
}

// builtin is the row of the service's builtin model: the hybrid when it is there.
func (fx fixture) builtin() string {
	if fx.hybrid != nil {
		return embedding.HybridModel
	}
	return builtinSystem
}

// engineSearch answers with a search engine, as the directory's search does.
func (fx fixture) engineSearch(e *search.Engine) func(context.Context, string) ([]string, error) {
	return func(ctx context.Context, q string) ([]string, error) {
		res, err := e.Search(ctx, "", fx.snap, q, directory.Filter{})
		var urls []string
		for _, h := range res.Hits {
			urls = append(urls, fx.snap.Methods()[h.Pos].Endpoint.URL)
		}
		return urls, err
	}
}

// fullText answers with PostgreSQL full-text search, all of the query's words or any.
func (fx fixture) fullText(anyWord bool) func(context.Context, string) ([]string, error) {
	return func(ctx context.Context, q string) ([]string, error) {
		near, err := fx.store.FullTextSearch(ctx, q, topK, anyWord)
		return fx.urls(near), err
	}
}

func (fx fixture) urls(near []search.Neighbour) []string {
	var out []string
	for _, n := range near {
		out = append(out, fx.urlOf[n.Slug])
	}
	return out
}

// checkLabels reports every label that names no method of the catalog.
func (fx fixture) checkLabels(t *testing.T, set querySet) {
	known := map[string]bool{}
	for _, u := range fx.urlOf {
		known[normURL(u)] = true
	}
	for _, q := range set.queries {
		for _, u := range q.relevant {
			if !known[normURL(u)] {
				t.Errorf("%s %s %q: label %s is not in the catalog", set.name, q.id, q.text, u)
			}
		}
	}
}

// tally counts on-topic queries, those with a relevant URL in the top 3, and the sum
// of the reciprocal ranks of the first one.
type tally struct {
	n, hits int
	rr      float64
}

func (c tally) recall() float64 { return float64(c.hits) / float64(max(1, c.n)) }
func (c tally) mrr() float64    { return c.rr / float64(max(1, c.n)) }

// score is one system's figures over a query set.
type score struct {
	system                      string
	on                          tally
	byKind                      map[string]*tally
	off, falseMatches, errCount int
}

func newScore(system string, kinds []string) *score {
	s := &score{system: system, byKind: map[string]*tally{}}
	for _, k := range kinds {
		s.byKind[k] = &tally{}
	}
	return s
}

func (s *score) falseMatchRate() float64 { return float64(s.falseMatches) / float64(max(1, s.off)) }

// add scores one answer as relevance.py's score_query does: an error is the worst
// outcome, a miss or a false match. It reports whether the answer was right: a hit
// for an on-topic query, nothing for an off-topic one.
func (s *score) add(q query, urls []string, err error) bool {
	if err != nil {
		s.errCount++
	}
	if q.off {
		s.off++
		if err != nil || len(urls) > 0 {
			s.falseMatches++
			return false
		}
		return true
	}
	k := s.byKind[q.kind]
	if k == nil {
		k = &tally{}
		s.byKind[q.kind] = k
	}
	s.on.n++
	k.n++
	if err != nil {
		return false
	}
	for i, u := range urls[:min(topK, len(urls))] {
		if slices.ContainsFunc(q.relevant, func(r string) bool { return normURL(r) == normURL(u) }) {
			s.on.hits++
			s.on.rr += 1 / float64(i+1)
			k.hits++
			k.rr += 1 / float64(i+1)
			return true
		}
	}
	return false
}

// evaluate runs set's queries through sys. Verbose, it logs the misses and false
// matches of a system with raw neighbours, and sweeps its similarity band.
func (fx fixture) evaluate(t *testing.T, set querySet, sys system) *score {
	ctx := context.Background()
	sc := newScore(sys.name, set.kinds)
	diagnose := testing.Verbose() && sys.near != nil
	var near [][]search.Neighbour
	for _, q := range set.queries {
		urls, err := sys.search(ctx, q.text)
		if err != nil {
			t.Logf("%s %s: %s %q: %v", sys.name, set.name, q.id, q.text, err)
		}
		right := sc.add(q, urls, err)
		if !diagnose {
			continue
		}
		n, err := sys.near(ctx, q.text)
		if err != nil {
			t.Fatal(err)
		}
		near = append(near, n)
		if !right {
			best := search.Confidence(n)
			what := "miss"
			if q.off {
				what = "false match"
			}
			t.Logf("%-11s %-10s %-60q best %.3f got %s", what, q.kind, q.text, best, shortURLs(urls))
		}
	}
	if diagnose {
		fx.sweep(t, set, sys, near)
	}
	return sc
}

// sweep logs the confidence's quantiles on and off topic (under a model of one part,
// the best similarity), and recall@3 and the false-match rate over a grid of bands
// (the defaults were chosen so).
func (fx fixture) sweep(t *testing.T, set querySet, sys system, near [][]search.Neighbour) {
	var onBest, offBest []float64
	parts := false
	for i, q := range set.queries {
		best := search.Confidence(near[i])
		parts = parts || (len(near[i]) > 0 && near[i][0].Parts)
		if q.off {
			offBest = append(offBest, best)
		} else {
			onBest = append(onBest, best)
		}
	}
	sort.Float64s(onBest)
	sort.Float64s(offBest)
	floors, margins := []float64{0.22, 0.24, 0.26, 0.27, 0.28, 0.30}, []float64{0.08, 0.12, 0.15, 0.20}
	if parts {
		floors, margins = []float64{0.32, 0.35, 0.38, 0.41, 0.44, 0.47}, []float64{0.05, 0.10, 0.15, 1}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s on the %s\nconfidence, on-topic:  %s\nconfidence, off-topic: %s\nband sweep, recall@3/false-match rate:\nfloor \\ margin", sys.name, set.name, quantiles(onBest), quantiles(offBest))
	for _, m := range margins {
		fmt.Fprintf(&b, "  %11.2f", m)
	}
	for _, floor := range floors {
		fmt.Fprintf(&b, "\n%14.2f", floor)
		for _, margin := range margins {
			sc := newScore("", set.kinds)
			for i, q := range set.queries {
				sc.add(q, fx.urls(search.Band(near[i], floor, margin, search.MaxResults)), nil)
			}
			fmt.Fprintf(&b, "  %.3f/%.3f", sc.on.recall(), sc.falseMatchRate())
		}
	}
	t.Log(b.String())
}

func shortURLs(urls []string) string {
	out := make([]string, len(urls))
	for i, u := range urls {
		out[i] = strings.TrimPrefix(u, "https://")
	}
	return "[" + strings.Join(out, " ") + "]"
}

func quantiles(v []float64) string {
	if len(v) == 0 {
		return "-"
	}
	q := func(p float64) float64 { return v[int(p*float64(len(v)-1))] }
	return fmt.Sprintf("min %.3f p10 %.3f p50 %.3f p90 %.3f max %.3f", q(0), q(0.1), q(0.5), q(0.9), q(1))
}

// table is the markdown table of a set: a row per system; recall@3 on all on-topic
// queries and per kind (when the set has several), MRR@3, the false-match rate, the
// counts.
func table(set querySet, scores []*score) string {
	var on, off int
	perKind := map[string]int{}
	for _, q := range set.queries {
		if q.off {
			off++
		} else {
			on++
			perKind[q.kind]++
		}
	}
	head := []string{"system", "recall@3"}
	kinds := set.kinds
	if len(kinds) < 2 {
		kinds = nil
	}
	var counts []string
	for _, k := range kinds {
		head = append(head, k)
		counts = append(counts, fmt.Sprintf("%d %s", perKind[k], k))
	}
	head = append(head, "MRR@3", "false-match rate", "errors")
	rows := [][]string{head}
	for _, s := range scores {
		row := []string{s.system, fmt.Sprintf("%.3f (%d/%d)", s.on.recall(), s.on.hits, s.on.n)}
		for _, k := range kinds {
			c := s.byKind[k]
			row = append(row, fmt.Sprintf("%.3f (%d/%d)", c.recall(), c.hits, c.n))
		}
		row = append(row, fmt.Sprintf("%.3f", s.on.mrr()), fmt.Sprintf("%.3f (%d/%d)", s.falseMatchRate(), s.falseMatches, s.off), strconv.Itoa(s.errCount))
		rows = append(rows, row)
	}
	width := make([]int, len(head))
	for _, r := range rows {
		for i, c := range r {
			width[i] = max(width[i], len(c))
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n%s: %d on-topic", set.name, on)
	if len(counts) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(counts, ", "))
	}
	fmt.Fprintf(&b, " and %d off-topic queries\n\n", off)
	for n, r := range rows {
		for i, c := range r {
			if i == 0 {
				fmt.Fprintf(&b, "| %-*s ", width[i], c)
			} else {
				fmt.Fprintf(&b, "| %*s ", width[i], c)
			}
		}
		b.WriteString("|\n")
		if n == 0 {
			for i := range r {
				if i == 0 {
					fmt.Fprintf(&b, "|%s", strings.Repeat("-", width[i]+2))
				} else {
					fmt.Fprintf(&b, "|%s:", strings.Repeat("-", width[i]+1))
				}
			}
			b.WriteString("|\n")
		}
	}
	return b.String()
}

func find(scores []*score, system string) *score {
	for _, s := range scores {
		if s.system == system {
			return s
		}
	}
	panic("eval: no system " + system)
}

// TestRelevance prints a table per query set (make eval, WAYSTATION_EVAL=1) and holds
// the builtin model to its bar on the own set: better recall@3 than full-text search,
// and under 10% false matches. Without WAYSTATION_EVAL it runs every tenth query of
// the own set and only checks that the development set's labels are in the catalog.
func TestRelevance(t *testing.T) {
	full := os.Getenv("WAYSTATION_EVAL") != ""
	fx := setup(t)
	var tables []string
	report := func(t *testing.T, set querySet) []*score {
		var scores []*score
		for _, sys := range fx.systems() {
			scores = append(scores, fx.evaluate(t, set, sys))
		}
		tables = append(tables, table(set, scores))
		return scores
	}

	t.Run("dev", func(t *testing.T) {
		set := readDevSet(t)
		fx.checkLabels(t, set)
		set.name += "; in-sample for builtin:hybrid-v1, whose band was fitted on these queries (its cross-validated figures are in the calibration tables)"
		if full {
			report(t, set)
		}
	})

	t.Run("own", func(t *testing.T) {
		set := readOwnSet(t)
		fx.checkLabels(t, set)
		if !full {
			// The smoke share for make test: every tenth query.
			var some []query
			for i := 0; i < len(set.queries); i += 10 {
				some = append(some, set.queries[i])
			}
			set.queries = some
			set.name += ", every tenth query"
		}
		scores := report(t, set)
		model, baseline := find(scores, fx.builtin()), find(scores, allWordsSystem)
		if model.errCount > 0 {
			t.Errorf("builtin: %d queries failed", model.errCount)
		}
		if model.on.recall() <= baseline.on.recall() {
			t.Errorf("builtin recall@3 %.3f does not beat full-text %.3f", model.on.recall(), baseline.on.recall())
		}
		if !full {
			// The smoke share has five off-topic queries: one false match is 20%.
			if model.on.recall() < 0.8 || model.falseMatches > 1 {
				t.Errorf("smoke: builtin recall@3 %.3f, %d false matches", model.on.recall(), model.falseMatches)
			}
			return
		}
		if fm := model.falseMatchRate(); fm >= 0.10 {
			t.Errorf("builtin false-match rate %.3f, want under 0.10", fm)
		}
	})

	// The builtin hybrid's band is the fit of the labelled queries (the project's own
	// and the development set); make eval prints its cross-validated figures.
	t.Run("calibration", func(t *testing.T) {
		if fx.hybrid == nil {
			t.Skip("no sentence model (WAYSTATION_SENTENCE_MODEL)")
		}
		dev := fx.labelled(t, readDevSet(t), "dev")
		own := readJSONLSet(t, NewSetPath, "own set ("+NewSetPath+")")
		fx.checkLabels(t, own)
		mine := fx.labelled(t, own, "own")
		var fitted []search.Labelled
		for i, q := range own.queries {
			if upTo(q.id, lastFittedQuery) {
				fitted = append(fitted, mine[i])
			}
		}
		checkBuiltinCalibration(t, append(fitted, dev...))
		if full {
			older, newer := slices.Clone(dev), []search.Labelled(nil)
			for i, q := range own.queries {
				if upTo(q.id, lastOlderQuery) {
					older = append(older, mine[i])
				} else {
					newer = append(newer, mine[i])
				}
			}
			tables = append(tables, originTable(dev, own, mine), calibrationTables(dev, older, newer))
		}
	})

	if full {
		fmt.Print(strings.Join(tables, ""))
	} else {
		t.Log(strings.Join(tables, ""))
	}
}
