// Package search answers the directory's natural-language queries: exact resolution
// of a slug, method name or provider name in memory first, at no embedding cost; then
// one embedding of the query, its nearest enabled methods in pgvector, and the
// similarity band that keeps only results close to the best one.
package search

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/expirable"

	"github.com/waystation/waystation/internal/directory"
	"github.com/waystation/waystation/internal/embedding"
)

// MaxResults is the most methods a non-exact query returns.
const MaxResults = 3

// Matches a result can have.
const (
	MatchSlug     = "slug"
	MatchMethod   = "method"
	MatchProvider = "provider"
	MatchSemantic = "semantic"
	MatchNone     = "none"
)

// Errors Search returns; anything else is internal.
var (
	// ErrAllowanceExhausted: the day's allowance of novel embeddings is spent.
	ErrAllowanceExhausted = errors.New("search: daily allowance of novel embeddings exhausted")
	// ErrUnavailable: no model (or the vector store) can answer now.
	ErrUnavailable = errors.New("search: unavailable")
)

// Model is an embedder with its registered record (dimensions and band). The embedder
// is normally WithCache(WithBreaker(client)) or WithCache(Lexhash{}).
type Model struct {
	Embedder embedding.Embedder
	Record   ModelRecord
}

// Config tunes the engine.
type Config struct {
	// DailyAllowance is how many novel query embeddings every replica together may
	// make per UTC day; 0 means no limit.
	DailyAllowance int
	// CallerShare is the fraction of DailyAllowance (over 0, under 1) one caller may
	// spend in a day, so that no caller spends what all share; 0 (or 1) lets a caller
	// spend it all.
	CallerShare float64
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// Observer hears what search does; nil hears nothing.
	Observer Observer
	// Thesaurus, when set, relates a query's words to the catalog's for the band's
	// evidence (WordNet's synonyms and related forms: the syn_* features); without
	// it, as the service runs, those features are 0.
	Thesaurus *Thesaurus
	// WordVectors, when set, place a query's words near the catalog's for the band's
	// evidence (soft concept coverage: the vec_* features); without them those
	// features are 0.
	WordVectors *WordVectors
	// Expansion, when set, adds to a method's words (by slug) those of the texts
	// given, for the rerank and the band's evidence: labelled queries that want the
	// method, as search engines expand documents by the queries that find them.
	// Without it, as the service runs, a method's words are its own.
	Expansion map[string][]string
	// MemoryVectors is the largest catalog (in methods) whose vectors the engine
	// holds in memory, when its store lists them (VectorStore), and scans exactly in
	// place of the store's vector search; 0 holds none (DefaultMemoryVectors is the
	// service's).
	MemoryVectors int
}

// Observer hears what search does, for metrics. Its methods must be cheap and safe
// for concurrent use.
type Observer interface {
	// Searched is told each search's outcome (one of the Outcome constants) and the
	// model that answered it, "" when none did.
	Searched(outcome, model string)
	// Embedded is told how long one query's embedding under model took, and whether
	// it failed.
	Embedded(model string, took time.Duration, err error)
}

// Outcomes of a search, as an Observer hears them.
const (
	OutcomeExact              = "exact"               // a slug, method or provider name
	OutcomeMatched            = "matched"             // methods in the similarity band
	OutcomeUnmatched          = "unmatched"           // no method close enough
	OutcomeRateLimited        = "rate_limited"        // the caller's bucket was empty
	OutcomeAllowanceExhausted = "allowance_exhausted" // no novel embedding left today
	OutcomeUnavailable        = "unavailable"         // no model could answer
	OutcomeCanceled           = "canceled"            // the caller left first
)

// Outcomes lists every outcome of a search.
var Outcomes = []string{OutcomeExact, OutcomeMatched, OutcomeUnmatched, OutcomeRateLimited,
	OutcomeAllowanceExhausted, OutcomeUnavailable, OutcomeCanceled}

// Engine answers queries. It is safe for concurrent use.
type Engine struct {
	cfg      Config
	store    Store
	primary  *Model // a provider, or nil
	fallback *Model // the builtin model, or nil
	exact    perSnapshot[*exactIndex]
	text     perSnapshot[*textIndex]
	mem      memVectors
	// neighbours keeps recent vector searches, so that a repeated query costs
	// neither an embedding nor a database round trip.
	neighbours *expirable.LRU[neighbourKey, []Neighbour]
}

// neighbourKey names one vector search: the snapshot it ran against (a new catalog
// is a new snapshot), the model, the normalised query and what the filter selects.
type neighbourKey struct {
	snapshot, model, query, filter string
}

// Bounds of the neighbour cache. The entries expire too, since the embeddings of a
// snapshot's methods may still be catching up just after it is published.
const (
	neighbourCacheSize = 4096
	neighbourCacheTTL  = time.Minute
)

func filterKey(f directory.Filter) string {
	payable := ""
	if f.Payable != nil {
		payable = strconv.FormatBool(*f.Payable)
	}
	return strings.Join(f.Categories, ",") + "|" + strings.Join(f.Verdicts, ",") + "|" +
		strings.Join(f.Kinds, ",") + "|" + payable + "|" + f.Hostname
}

// NewEngine makes an engine answering with primary and, when primary cannot, with
// fallback (degraded). Either may be nil, not both.
func NewEngine(cfg Config, store Store, primary, fallback *Model) (*Engine, error) {
	if primary == nil && fallback == nil {
		return nil, errors.New("search: no model")
	}
	if primary == nil {
		primary, fallback = fallback, nil
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Engine{cfg: cfg, store: store, primary: primary, fallback: fallback,
		neighbours: expirable.NewLRU[neighbourKey, []Neighbour](neighbourCacheSize, nil, neighbourCacheTTL)}, nil
}

// Hit is one result: a list position in the snapshot searched, its similarity, and
// the score the answer is ordered by (the similarity reranked by the concepts the
// method holds, or the fused score of a query said several ways).
type Hit struct {
	Pos        int
	Similarity float64
	Score      float64
	// Similar are the list positions of the method's near-duplicates the filter
	// allows, the most trusted first (see Collapse); none for an exact match.
	Similar []int
}

// Result is a search's answer.
type Result struct {
	Match    string
	Model    string
	Degraded bool
	Hits     []Hit
	// Band tells why a query that was embedded got the methods it got, or none; nil
	// for an exact match.
	Band *BandReport
	// Nearest are the methods nearest the query outside the band, most similar first,
	// when the band kept fewer than it may: with Hits, at most the most a query
	// returns. They are not matches; nil for an exact match.
	Nearest []Near
}

// NearEnough tells whether r's nearest methods are plausibly near what was asked,
// to be shown at all beside an answer or in place of one: the band's confidence is
// at least half the least it answers at. An off-topic query ("a recipe for banana
// bread") still has nearest methods, and a person would read them as answers.
func (r Result) NearEnough() bool {
	return r.Band != nil && len(r.Nearest) > 0 && r.Band.Confidence >= r.Band.Least/2
}

// BandReport explains the band's decision: the confidence that the nearest method
// answers the query, against the least the model accepts, and the margin that kept
// the others.
type BandReport struct {
	Confidence float64
	Least      float64
	Margin     float64
	// Calibrated tells that Confidence is the calibrated band's probability that the
	// catalog answers the query, and Least the least it answers at.
	Calibrated bool
	// Parts tells that Semantic and Lexical hold the nearest method's similarity
	// parts; Gap is how far it leads the next.
	Parts             bool
	Semantic, Lexical float64
	Gap               float64
	// Phrasings, when more than 0, is how many phrasings of the query were read
	// (the query's own and the caller's rewrites): Agreed is how many of them hold
	// the first method among their first three, of Needed; Confidence is then the
	// share of their probability that vouches for it (the probabilities of those that
	// agree, summed, over the number read), and Least the least share the fusion
	// answers at; unless the fusion fell short and the query alone answered, when
	// they are its band's, as without phrasings.
	Phrasings, Agreed, Needed int
}

// Models are the engine's models, the primary first.
func (e *Engine) Models() []*Model {
	if e.fallback == nil {
		return []*Model{e.primary}
	}
	return []*Model{e.primary, e.fallback}
}

// Status is "ok", or "degraded" when the primary model's breaker is open and queries
// are answered by the fallback, or "unavailable" when no model can answer.
func (e *Engine) Status() string {
	if e == nil {
		return "unavailable"
	}
	if !open(e.primary.Embedder) {
		return "ok"
	}
	if e.fallback != nil {
		return "degraded"
	}
	return "unavailable"
}

// Search answers q for caller over the methods of snap that pass f's filters; f.Limit
// may narrow the results. A novel query is charged to caller's share of the daily
// allowance; an empty caller is charged to the allowance alone.
func (e *Engine) Search(ctx context.Context, caller string, snap *directory.Snapshot, q string, f directory.Filter) (Result, error) {
	return e.SearchPhrased(ctx, caller, snap, q, nil, f)
}

// SearchPhrased is Search with the caller's own phrasings of q beside it (at most
// MaxRewrites): under a calibrated model each is read alone and the answers fused
// (Fusion); each novel one is charged to the allowance as q is. Phrasings are not
// read for an exact match of q, nor under a model without a calibration.
func (e *Engine) SearchPhrased(ctx context.Context, caller string, snap *directory.Snapshot, q string, rewrites []string, f directory.Filter) (Result, error) {
	norm := embedding.NormalizeQuery(q)
	if match, pos := e.exactIndex(snap).lookup(norm); match != "" {
		var hits []Hit
		for _, p := range pos {
			if snap.Allows(f, int(p)) && (f.Limit == 0 || len(hits) < f.Limit) {
				hits = append(hits, Hit{Pos: int(p), Similarity: 1, Score: 1})
			}
		}
		if len(hits) > 0 {
			return Result{Match: match, Model: e.primary.Record.ID, Hits: hits}, nil
		}
	}

	m, degraded := e.primary, false
	if open(m.Embedder) && e.fallback != nil {
		m, degraded = e.fallback, true
	}
	if phrasings := e.phrasings(norm, rewrites, m); len(phrasings) > 0 {
		// The query is embedded while its phrasings are, in a pass of the model of
		// their own, as they would be one after the other: the same vectors, on two
		// processors. The query is charged first, as it would be. Then all are
		// looked up together: in memory, in one pass over the vectors.
		paid, err := e.chargeNovel(ctx, caller, snap, m, norm, f)
		if err != nil {
			return Result{}, err
		}
		var (
			own      *vsearch
			answered = m
			fellBack = degraded
			ownErr   error
			wg       sync.WaitGroup
		)
		wg.Go(func() {
			own, answered, fellBack, ownErr = e.vectorOf(ctx, caller, snap, m, degraded, norm, f, paid)
		})
		ls, err := e.phrasingVectors(ctx, caller, snap, m, degraded, phrasings, f, false)
		wg.Wait()
		if ownErr != nil {
			return Result{}, ownErr
		}
		if answered != m && !errors.Is(err, ErrAllowanceExhausted) {
			// The provider failed on the query just now, and the fallback answered
			// it: its phrasings are read again under the fallback, as below, each
			// charged already.
			if err := e.lookUp(ctx, snap, f, []*vsearch{own}); err != nil {
				return Result{}, err
			}
			return e.phrased(ctx, caller, snap, answered, fellBack, norm, own.near, rewrites, f, true)
		}
		if err != nil {
			return Result{}, err
		}
		ls = append([]*vsearch{own}, ls...)
		if err := e.lookUp(ctx, snap, f, ls); err != nil {
			return Result{}, err
		}
		res := Result{Match: MatchNone, Model: m.Record.ID, Degraded: degraded}
		return e.fuse(res, snap, f, m, append([]string{norm}, phrasings...), nearOf(ls)), nil
	}
	near, m, degraded, err := e.nearest(ctx, caller, snap, m, degraded, norm, f, false)
	if err != nil {
		return Result{}, err
	}
	return e.phrased(ctx, caller, snap, m, degraded, norm, near, rewrites, f, false)
}

// chargeNovel charges the normalised query norm to caller's allowance when it will
// cost an embedding under m (neither its nearest methods nor its vector are cached),
// and reports whether it did.
func (e *Engine) chargeNovel(ctx context.Context, caller string, snap *directory.Snapshot, m *Model, norm string, f directory.Filter) (bool, error) {
	key := neighbourKey{snapshot: snap.Info().ID, model: m.Record.ID, query: norm, filter: filterKey(f)}
	if _, ok := e.neighbours.Peek(key); ok {
		return false, nil
	}
	if _, ok := lookup(m.Embedder, norm); ok {
		return false, nil
	}
	return true, e.charge(ctx, caller)
}

// phrased answers the normalised query norm, whose nearest methods under m are near,
// with the caller's rewrites read under m too when m reads phrasings; unless paid,
// each novel one is charged to the allowance.
func (e *Engine) phrased(ctx context.Context, caller string, snap *directory.Snapshot, m *Model, degraded bool, norm string, near []Neighbour, rewrites []string, f directory.Filter, paid bool) (Result, error) {
	res := Result{Match: MatchNone, Model: m.Record.ID, Degraded: degraded}
	phrasings := e.phrasings(norm, rewrites, m)
	if len(phrasings) == 0 {
		return e.answer(res, snap, f, m, norm, near), nil
	}
	all, err := e.readPhrasings(ctx, caller, snap, m, degraded, phrasings, f, paid)
	if err != nil {
		return Result{}, err
	}
	return e.fuse(res, snap, f, m, append([]string{norm}, phrasings...), append([][]Neighbour{near}, all...)), nil
}

// readPhrasings returns the nearest methods of each of the normalised phrasings
// under m: those to embed are embedded in one pass of the model (unless paid, each
// charged to the allowance), then all looked up together.
func (e *Engine) readPhrasings(ctx context.Context, caller string, snap *directory.Snapshot, m *Model, degraded bool, phrasings []string, f directory.Filter, paid bool) ([][]Neighbour, error) {
	ls, err := e.phrasingVectors(ctx, caller, snap, m, degraded, phrasings, f, paid)
	if err != nil {
		return nil, err
	}
	if err := e.lookUp(ctx, snap, f, ls); err != nil {
		return nil, err
	}
	return nearOf(ls), nil
}

// phrasingVectors returns the vector search to make for each of the normalised
// phrasings under m (or its answer, from the cache): those to embed are embedded in
// one pass of the model, unless paid each charged to the allowance.
func (e *Engine) phrasingVectors(ctx context.Context, caller string, snap *directory.Snapshot, m *Model, degraded bool, phrasings []string, f directory.Filter, paid bool) ([]*vsearch, error) {
	var warmed map[string]bool
	if !paid {
		var err error
		if warmed, err = e.warm(ctx, caller, snap, m, phrasings, f); err != nil {
			return nil, err
		}
	}
	ls := make([]*vsearch, len(phrasings))
	for i, p := range phrasings {
		l, _, _, err := e.vectorOf(ctx, caller, snap, m, degraded, p, f, paid || warmed[p])
		if err != nil {
			return nil, err
		}
		ls[i] = l
	}
	return ls, nil
}

// each runs fn for each of 0..n-1 (n is at most 1+MaxRewrites), all at once, and
// returns the first step's error: each step waits on the vector store far more than
// it computes, and the store answers several at once on every processor.
func each(n int, fn func(i int) error) error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs[i] = fn(i) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// warm embeds those of the normalised phrasings norms whose answer and vector under
// m are in neither cache in one batch, each charged to caller's allowance, and
// leaves their vectors in m's cache for nearest: a model reads a batch of short
// texts in about the time it reads one. It does nothing under a model without a
// cache, or with fewer than two to embed; when the model fails, nearest tries each
// again, without charging it twice. It returns the phrasings it charged.
func (e *Engine) warm(ctx context.Context, caller string, snap *directory.Snapshot, m *Model, norms []string, f directory.Filter) (map[string]bool, error) {
	if _, ok := embedding.Find[interface {
		Lookup(string) ([]float32, bool)
	}](m.Embedder); !ok {
		return nil, nil
	}
	var missing []string
	for _, n := range norms {
		key := neighbourKey{snapshot: snap.Info().ID, model: m.Record.ID, query: n, filter: filterKey(f)}
		if _, ok := e.neighbours.Peek(key); ok {
			continue
		}
		if _, ok := lookup(m.Embedder, n); !ok {
			missing = append(missing, n)
		}
	}
	if len(missing) < 2 {
		return nil, nil
	}
	paid := make(map[string]bool, len(missing))
	for _, n := range missing {
		if err := e.charge(ctx, caller); err != nil {
			return nil, err
		}
		paid[n] = true
	}
	start := time.Now()
	_, err := m.Embedder.Embed(ctx, missing)
	if o := e.cfg.Observer; o != nil {
		took := time.Since(start) / time.Duration(len(missing))
		for range missing {
			o.Embedded(m.Record.ID, took, err)
		}
	}
	return paid, nil
}

// phrasings are the distinct normalised rewrites that differ from the query norm,
// when m's band reads phrasings (it has a calibration); else none.
func (e *Engine) phrasings(norm string, rewrites []string, m *Model) []string {
	if m.Record.Calibration == nil {
		return nil
	}
	var out []string
	for _, r := range rewrites[:min(len(rewrites), MaxRewrites)] {
		if p := embedding.NormalizeQuery(r); p != "" && p != norm && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// Novel tells how many of the phrasings of q (q first, then rewrites) would cost a
// new embedding under the model that answers now: what a caller's rate is charged
// for a search said several ways.
func (e *Engine) Novel(snap *directory.Snapshot, q string, rewrites []string) int {
	norm := embedding.NormalizeQuery(q)
	if match, _ := e.exactIndex(snap).lookup(norm); match != "" {
		return 0
	}
	m := e.primary
	if open(m.Embedder) && e.fallback != nil {
		m = e.fallback
	}
	n := 0
	for _, p := range append([]string{norm}, e.phrasings(norm, rewrites, m)...) {
		if _, ok := lookup(m.Embedder, p); !ok {
			n++
		}
	}
	return n
}

// nearest are the nearest methods of the normalised query norm under m among
// those of snap f selects, from the cache or embedded and looked up; when the
// provider fails this once, under the fallback (degraded), which it returns. A
// phrasing already paid for is not charged to the allowance again.
func (e *Engine) nearest(ctx context.Context, caller string, snap *directory.Snapshot, m *Model, degraded bool, norm string, f directory.Filter, paid bool) ([]Neighbour, *Model, bool, error) {
	l, m, degraded, err := e.vectorOf(ctx, caller, snap, m, degraded, norm, f, paid)
	if err != nil {
		return nil, m, degraded, err
	}
	if err := e.lookUp(ctx, snap, f, []*vsearch{l}); err != nil {
		return nil, m, degraded, err
	}
	return l.near, m, degraded, nil
}

// vsearch is one phrasing's vector search: its nearest methods, from the neighbour
// cache or once looked up, and until then the vector to look them up by under the
// model that embedded it.
type vsearch struct {
	key    neighbourKey
	model  *Model
	vec    []float32
	near   []Neighbour
	cached bool
}

// nearOf are the nearest methods of each of ls.
func nearOf(ls []*vsearch) [][]Neighbour {
	out := make([][]Neighbour, len(ls))
	for i, l := range ls {
		out[i] = l.near
	}
	return out
}

// vectorOf is the vector search of the normalised query norm under m among the
// methods of snap f selects: its answer from the cache, or its vector, embedded;
// when the provider fails this once, under the fallback (degraded), which it
// returns. A phrasing already paid for is not charged to the allowance again.
func (e *Engine) vectorOf(ctx context.Context, caller string, snap *directory.Snapshot, m *Model, degraded bool, norm string, f directory.Filter, paid bool) (*vsearch, *Model, bool, error) {
	key := neighbourKey{snapshot: snap.Info().ID, model: m.Record.ID, query: norm, filter: filterKey(f)}
	if near, ok := e.neighbours.Get(key); ok {
		return &vsearch{key: key, model: m, near: near, cached: true}, m, degraded, nil
	}
	vec, err := e.embed(ctx, caller, m, norm, paid)
	if err != nil && m == e.primary && e.fallback != nil && !errors.Is(err, ErrAllowanceExhausted) && ctx.Err() == nil {
		// The provider failed this once (its breaker counts it): answer degraded.
		m, degraded = e.fallback, true
		vec, err = e.embedNoAllowance(ctx, m, norm)
	}
	if err != nil {
		return nil, m, degraded, err
	}
	key.model = m.Record.ID // the fallback's, if the provider failed just now
	return &vsearch{key: key, model: m, vec: vec}, m, degraded, nil
}

// lookUp finds the nearest methods of each of ls not answered yet, among those of
// snap f selects, and caches them: under a model whose vectors are held in memory,
// all of them in one pass over the vectors; else each from the store, all at once.
// A vector of zeros (a query the model reads nothing in) has none.
func (e *Engine) lookUp(ctx context.Context, snap *directory.Snapshot, f directory.Filter, ls []*vsearch) error {
	var todo []*vsearch
	for _, l := range ls {
		if !l.cached && l.near == nil && !isZero(l.vec) {
			todo = append(todo, l)
		}
	}
	if len(todo) == 0 {
		return nil
	}
	var only []string
	if !filtersNothing(f) {
		pos := snap.Matching(f)
		if len(pos) == 0 {
			return nil
		}
		only = make([]string, len(pos))
		for i, p := range pos {
			only[i] = snap.Methods()[p].Slug
		}
	}
	// By model: a phrasing whose provider failed was embedded by the fallback.
	for len(todo) > 0 {
		m := todo[0].model
		var same, rest []*vsearch
		for _, l := range todo {
			if l.model == m {
				same = append(same, l)
			} else {
				rest = append(rest, l)
			}
		}
		todo = rest
		found := make([][]Neighbour, len(same))
		if x := e.memIndex(snap, m.Record); x != nil {
			vecs := make([][]float32, len(same))
			for i, l := range same {
				vecs[i] = l.vec
			}
			found = x.NearestEach(vecs, fetched, only)
		} else if err := each(len(same), func(i int) error {
			var err error
			found[i], err = e.store.Nearest(ctx, m.Record, same[i].vec, fetched, only)
			return err
		}); err != nil {
			return fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		for i, l := range same {
			SplitParts(m.Embedder, l.vec, found[i])
			l.near = found[i]
			e.neighbours.Add(l.key, found[i])
		}
	}
	return nil
}

// answer fills res with the neighbours of query norm in m's band that the filter
// allows, at most the filter's limit: the calibrated band when m has a calibration,
// else its floor and margin.
func (e *Engine) answer(res Result, snap *directory.Snapshot, f directory.Filter, m *Model, norm string, near []Neighbour) Result {
	if near == nil {
		return res
	}
	want := MaxResults
	if f.Limit > 0 {
		want = min(want, f.Limit)
	}
	x := e.textIndex(snap)
	if c := m.Record.Calibration; c != nil {
		c = c.For(snap)
		near = x.Rerank(norm, near, c.Rerank)
		band := c.Report(x.Gather(norm, near, generalEnglish(m)), near)
		return banded(res, snap, f, x, band, c.Band(band.Confidence, near, want), near, want)
	}
	near = x.Collapse(near)
	band := Report(near, m.Record)
	return banded(res, snap, f, x, band, Band(near, m.Record.Floor, m.Record.Margin, want), near, want)
}

// banded fills res with the neighbours kept of near (ranked, grouped), as band
// decided, that the filter allows, and the nearest outside them, want in all.
func banded(res Result, snap *directory.Snapshot, f directory.Filter, x *textIndex, band BandReport, kept, near []Neighbour, want int) Result {
	res.Band = &band
	for _, n := range kept {
		if p, ok := snap.Position(n.Slug); ok && snap.Allows(f, p) {
			res.Hits = append(res.Hits, Hit{Pos: p, Similarity: n.Similarity, Score: n.score(), Similar: x.similar(p, snap, f)})
		}
	}
	if len(res.Hits) > 0 {
		res.Match = MatchSemantic
	}
	res.Nearest = outside(near, kept, band, snap, f, want-len(res.Hits))
	return res
}

// fuse fills res with the fused answer of the phrasings norms (the query's own
// first) whose nearest methods are near, under m's calibrated band and its fusion.
// When the phrasings fall short of agreeing, the query alone is answered as it is
// without them: phrasings never cost a caller an answer its query had.
func (e *Engine) fuse(res Result, snap *directory.Snapshot, f directory.Filter, m *Model, norms []string, near [][]Neighbour) Result {
	want := MaxResults
	if f.Limit > 0 {
		want = min(want, f.Limit)
	}
	c := m.Record.Calibration.For(snap)
	x := e.textIndex(snap)
	rs := make([]Reading, len(norms))
	var own Evidence // the query's own, for its band alone
	for i, q := range norms {
		ranked := x.Rerank(q, near[i], c.Rerank)
		rs[i] = Reading{Near: ranked}
		if len(ranked) > 0 {
			ev := x.Gather(q, ranked, generalEnglish(m))
			if i == 0 {
				own = ev
			}
			rs[i].P = c.Probability(ev)
		}
	}
	fu := c.fusion()
	got := fu.Fuse(rs, want, x.group)
	band := BandReport{Confidence: got.Share, Least: fu.Least, Margin: c.Margin, Calibrated: true,
		Phrasings: len(norms), Agreed: got.Agreed, Needed: min(fu.Top, len(norms))}
	if len(got.Kept) == 0 && len(rs[0].Near) > 0 {
		b := c.Report(own, rs[0].Near)
		if alone := banded(res, snap, f, x, b, c.Band(b.Confidence, rs[0].Near, want), rs[0].Near, want); len(alone.Hits) > 0 {
			alone.Band.Phrasings, alone.Band.Agreed, alone.Band.Needed = band.Phrasings, band.Agreed, band.Needed
			return alone
		}
	}
	res.Band = &band
	for i, n := range got.Kept {
		if p, ok := snap.Position(n.Slug); ok && snap.Allows(f, p) {
			res.Hits = append(res.Hits, Hit{Pos: p, Similarity: n.Similarity, Score: got.Scores[i], Similar: x.similar(p, snap, f)})
		}
	}
	if len(res.Hits) > 0 {
		res.Match = MatchSemantic
		return res
	}
	// Refused: the query's own nearest methods, as a query without phrasings shows them.
	res.Nearest = outside(rs[0].Near, nil, band, snap, f, want)
	return res
}

// Band keeps the neighbours (most similar first) that answer the query: none when
// the confidence in the nearest (Confidence) is under floor, else those whose
// similarity is at least the best one's minus margin, at most max of them. Under a
// model of one part, each kept similarity is at least floor too.
func Band(near []Neighbour, floor, margin float64, max int) []Neighbour {
	if len(near) == 0 || Confidence(near) < floor {
		return nil
	}
	var out []Neighbour
	for _, n := range near {
		if len(out) == max || n.Similarity < near[0].Similarity-margin || (!n.Parts && n.Similarity < floor) {
			break
		}
		out = append(out, n)
	}
	return out
}

// Weights of the confidence under the hybrid model, calibrated on the development
// query set over the catalog make run serves (the demo and the real one) and over the
// real one alone: off-topic queries that come near a method ("weather on Mars")
// score about as high as paraphrases on either part alone, so the confidence reads
// both parts and, most of all, how far the nearest method leads the next.
const (
	confidenceSemantic = 0.55
	confidenceLexical  = 0.25
	confidenceGap      = 1.0
)

// Confidence is how sure the band is that the nearest neighbour answers the query:
// under a model of one part, its similarity; under the hybrid, a weighted sum of its
// encoder similarity, its lexical similarity and its lead over the next neighbour.
func Confidence(near []Neighbour) float64 {
	if len(near) == 0 {
		return 0
	}
	best := near[0]
	if !best.Parts {
		return best.Similarity
	}
	return confidenceSemantic*best.Semantic + confidenceLexical*best.Lexical + confidenceGap*gap(near)
}

// gap is how far the nearest neighbour leads the next; 0 with one alone.
func gap(near []Neighbour) float64 {
	if len(near) < 2 {
		return 0
	}
	return near[0].Similarity - near[1].Similarity
}

// Report explains the band's decision over near under model m.
func Report(near []Neighbour, m ModelRecord) BandReport {
	r := BandReport{Confidence: Confidence(near), Least: m.Floor, Margin: m.Margin}
	if len(near) > 0 && near[0].Parts {
		r.Parts, r.Semantic, r.Lexical, r.Gap = true, near[0].Semantic, near[0].Lexical, gap(near)
	}
	return r
}

// SplitParts fills the similarity parts of the neighbours of q under a model of two
// parts, and drops their vectors, which are not kept.
func SplitParts(e embedding.Embedder, q []float32, near []Neighbour) {
	p, _ := embedding.Find[interface {
		Parts(q, d []float32) (semantic, lexical float64)
	}](e)
	for i := range near {
		if p != nil && len(near[i].Vector) == len(q) {
			near[i].Semantic, near[i].Lexical = p.Parts(q, near[i].Vector)
			near[i].Parts = true
		}
		near[i].Vector = nil
	}
}

// embed returns the query's vector under m: from the cache, or, if the day's
// allowance and caller's share of it have one left (or it is paid for already),
// freshly embedded.
func (e *Engine) embed(ctx context.Context, caller string, m *Model, norm string, paid bool) ([]float32, error) {
	if v, ok := lookup(m.Embedder, norm); ok {
		return v, nil
	}
	if !paid {
		if err := e.charge(ctx, caller); err != nil {
			return nil, err
		}
	}
	return e.embedNoAllowance(ctx, m, norm)
}

// charge takes one novel embedding from the day's allowance and caller's share of it,
// when there is an allowance.
func (e *Engine) charge(ctx context.Context, caller string) error {
	if e.cfg.DailyAllowance <= 0 {
		return nil
	}
	ok, err := e.store.UseAllowance(ctx, e.cfg.Now(), e.cfg.DailyAllowance, caller, e.callerShare())
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	if !ok {
		return ErrAllowanceExhausted
	}
	return nil
}

// callerShare is how many novel embeddings one caller may make in a day: CallerShare
// of the allowance, at least one; 0 when a caller may spend it all.
func (e *Engine) callerShare() int {
	if e.cfg.CallerShare <= 0 || e.cfg.CallerShare >= 1 {
		return 0
	}
	return max(1, int(e.cfg.CallerShare*float64(e.cfg.DailyAllowance)))
}

func (e *Engine) embedNoAllowance(ctx context.Context, m *Model, norm string) ([]float32, error) {
	start := time.Now()
	vs, err := m.Embedder.Embed(ctx, []string{norm})
	if e.cfg.Observer != nil {
		e.cfg.Observer.Embedded(m.Record.ID, time.Since(start), err)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return vs[0], nil
}

// RetryAfter is how long until the allowance is renewed: the next UTC midnight.
func (e *Engine) RetryAfter() time.Duration {
	now := e.cfg.Now().UTC()
	next := time.Date(now.Year(), now.Month(), now.Day()+1, 0, 0, 0, 0, time.UTC)
	return next.Sub(now)
}

func filtersNothing(f directory.Filter) bool {
	f.Limit, f.Offset = 0, 0
	return f.IsZero()
}

func isZero(v []float32) bool {
	for _, x := range v {
		if x != 0 {
			return false
		}
	}
	return true
}

// open reports whether some breaker in e's chain of wrappers is open.
func open(e embedding.Embedder) bool {
	b, ok := embedding.Find[interface{ Open() bool }](e)
	return ok && b.Open()
}

// lookup finds a cached vector in e's chain of wrappers without embedding.
func lookup(e embedding.Embedder, norm string) ([]float32, bool) {
	c, ok := embedding.Find[interface {
		Lookup(string) ([]float32, bool)
	}](e)
	if !ok {
		return nil, false
	}
	return c.Lookup(norm)
}

// The builtin lexical model's default similarity band, tuned on the project's own
// query set (make eval). A registered model's band lives in its embedding_models row.
const (
	BuiltinFloor  = 0.27
	BuiltinMargin = 0.20
)

// The hybrid model's default band: the least confidence (Confidence) and the margin,
// calibrated on the development query set (make eval) to keep false matches under
// one off-topic query in five.
const (
	HybridFloor  = 0.41
	HybridMargin = 0.10
)
