package search

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"slices"

	"github.com/waystation/waystation/internal/directory"
	"github.com/waystation/waystation/internal/embedding"
)

// Evidence is what the band reads, off a query's nearest methods and the catalog's
// words, to tell "the catalog does this" from "the catalog does something near this":
// a query that only comes near a category ("weather on Mars") scores about as high on
// similarity as a paraphrase, but its words are not the catalog's, the nearest method
// covers few of them, and its neighbours lead each other by little.
type Evidence [NumFeatures]float64

// The features of Evidence.
const (
	FeatSimilarity    = iota // the nearest method's similarity
	FeatSemantic             // its sentence encoder part (the similarity under a model of one part)
	FeatLexical              // its lexical part (0 under a model of one part)
	FeatGap                  // how far it leads the next
	FeatLead                 // how far it leads the mean of the others
	FeatAgree                // the share of the next four in its category
	FeatCover                // the IDF-weighted share of the query's concepts it holds
	FeatCover3               // the same, for the nearest three together
	FeatKnown                // the share of the query's concepts the catalog has at all
	FeatWords                // log(1 + the query's concepts)
	FeatDomain               // the mean, over the query's words, of how much likelier the catalog writes them than general English
	FeatDomainMin            // the least of those: the query's most foreign word
	FeatSynCover             // the IDF-weighted share of the query's concepts the nearest method does not hold but holds a WordNet relative of (0 without a thesaurus)
	FeatSynCover3            // the same, for the nearest three together
	FeatSynKnown             // the share of the query's concepts the catalog does not have but has a WordNet relative of
	FeatVecCover             // soft coverage: the IDF-weighted mean, over the query's concepts, of each one's best word-vector cosine to the nearest method's (1 held exactly; 0 without word vectors)
	FeatVecCover3            // the same, for the nearest three together
	FeatVecKnown             // the mean, over the query's concepts, of each one's best word-vector cosine to the catalog's
	FeatVecSimilarity        // the cosine of the query's IDF-weighted word vectors' sum to the nearest method's
	FeatKNNOff               // the similarity-weighted share of off-topic queries among the nearest labelled queries (0 without them: QueryNeighbours)
	FeatKNNOffBest           // the similarity of the nearest off-topic labelled query
	FeatKNNOnBest            // the similarity of the nearest on-topic labelled query
	FeatKNNOn3               // the similarity of the nearest on-topic labelled query one of whose methods is among the ranking's three
	FeatAsk                  // 1 when the query asks a question (a question word first, or a question mark), 0 when it asks for an act
	FeatFirstHeld            // 1 when the nearest method holds the query's first concept (the act an imperative asks for)
	FeatAct                  // 1 when the query asks for an act of commerce or transaction (its main verb, after any "can you", "i want to", is one of actGroups)
	FeatActUnheld            // 1 when it asks for one the nearest method's name, path and description do not name (by the act's words, stemmed)
	FeatActUnheld3           // 1 when it asks for one none of the nearest three name
	FeatActGet               // 1 when it asks for one and the nearest method is called with GET
	FeatVerbHeld             // 1 when the query's main verb (an act, or a verb of lookup or computation) is among the nearest method's concepts
	NumFeatures
)

// FeatureNames name the features, as calibrations store their weights.
var FeatureNames = [NumFeatures]string{"similarity", "semantic", "lexical", "gap", "lead", "agree", "cover", "cover3", "known", "words",
	"domain", "domain_min", "syn_cover", "syn_cover3", "syn_known",
	"vec_cover", "vec_cover3", "vec_known", "vec_similarity", "knn_off", "knn_off_best", "knn_on_best", "knn_on3", "ask", "first_held",
	"act", "act_unheld", "act_unheld3", "act_get", "verb_held"}

// EvidenceVersion names the evidence's recipe (its features and how each is read):
// a calibration fitted on another recipe weighs other numbers, and is not used. Change
// it with any change to Gather. (The thesaurus' features, syn_*, the word vectors',
// vec_*, and the labelled queries', knn_*, are 0 without them, as the service runs:
// they left the recipe as it was; v2 reads the query's form, ask. The act a query
// asks for, act_* and verb_held, and first_held are read since but weighed by no
// band, and no calibration of v2 weighs them: they leave the recipe as it was too.)
const EvidenceVersion = "evidence-v2"

// Neighbours is how many nearest methods a query's evidence reads.
const Neighbours = 10

// Reranked is how many nearest methods a calibrated band reranks (Rerank) before it
// reads the first Neighbours of them: a method that holds the query's words comes up
// from as far as fortieth. Cross-validated (make eval), forty ranks a relevant method
// among the first three more often than twenty or fifty.
const Reranked = 40

// textIndex holds one snapshot's words for the evidence: each method's concepts
// (interned, sorted ids, by list position) and the catalog's document frequency of
// each concept and count of each word. Built once per snapshot.
type textIndex struct {
	snap     *directory.Snapshot
	ids      map[string]uint32 // concept to id
	df       []int32           // by concept id
	concepts [][]uint32        // by list position
	acts     []uint64          // by list position, the acts of actGroups the method names, a bit each
	// tf counts the catalog's words, tokens of them in all.
	tf     map[string]int32
	tokens int
	// thes relates the query's concepts to the catalog's, when search has a
	// thesaurus.
	thes *thesaurusIndex
	// vec holds the catalog's concepts' word vectors, when search has them.
	vec *vectorIndex
	// groups are the catalog's near-duplicates (Collapse).
	groups groups
}

func newTextIndex(snap *directory.Snapshot, t *Thesaurus, v *WordVectors, exp map[string][]string) *textIndex {
	ms := snap.Methods()
	x := &textIndex{snap: snap, ids: map[string]uint32{}, concepts: make([][]uint32, len(ms)), acts: make([]uint64, len(ms)), tf: map[string]int32{},
		groups: newGroups(ms)}
	for p, m := range ms {
		text := embedding.MethodText(m.Name, m.Provider, m.Description, m.Category, m.Endpoint.URL)
		cs := embedding.Concepts(text)
		if extra := exp[m.Slug]; len(extra) > 0 {
			seen := map[string]bool{}
			for _, c := range cs {
				seen[c] = true
			}
			for _, q := range extra {
				for _, c := range embedding.Concepts(q) {
					if !seen[c] {
						seen[c] = true
						cs = append(cs, c)
					}
				}
			}
		}
		own := make([]uint32, len(cs))
		for i, c := range cs {
			id, ok := x.ids[c]
			if !ok {
				id = uint32(len(x.df))
				x.ids[c] = id
				x.df = append(x.df, 0)
			}
			x.df[id]++
			own[i] = id
		}
		slices.Sort(own)
		x.concepts[p] = own
		words := embedding.Words(text)
		for _, w := range words {
			x.tf[w]++
			x.tokens++
		}
		x.acts[p] = actsOf(words)
	}
	if t != nil {
		x.thes = newThesaurusIndex(t, x.ids)
	}
	if v != nil {
		x.vec = newVectorIndex(v, x.ids, x.tf)
	}
	return x
}

// textIndex is snap's, built on first use and kept until the next snapshot.
func (e *Engine) textIndex(snap *directory.Snapshot) *textIndex {
	return e.text.get(snap, func() *textIndex {
		return newTextIndex(snap, e.cfg.Thesaurus, e.cfg.WordVectors, e.cfg.Expansion)
	})
}

// idf is BM25's inverse document frequency of a concept the catalog has df times.
func (x *textIndex) idf(df int32) float64 {
	n := float64(len(x.concepts))
	return math.Log(1 + (n-float64(df)+0.5)/(float64(df)+0.5))
}

// holds tells whether the method at list position p has concept id.
func (x *textIndex) holds(p int, id uint32, known bool) bool {
	if !known || p < 0 {
		return false
	}
	_, ok := slices.BinarySearch(x.concepts[p], id)
	return ok
}

// holdsAny tells whether the method at list position p has any of ids (sorted).
func (x *textIndex) holdsAny(p int, ids []uint32) bool {
	if p < 0 || len(ids) == 0 {
		return false
	}
	own := x.concepts[p]
	i, j := 0, 0
	for i < len(own) && j < len(ids) {
		switch {
		case own[i] == ids[j]:
			return true
		case own[i] < ids[j]:
			i++
		default:
			j++
		}
	}
	return false
}

// Gather reads the evidence of query (normalised) over its nearest methods, most
// similar first; general, when the model has one, is a word's log-probability in
// general English.
func (x *textIndex) Gather(query string, near []Neighbour, general func(string) float64) Evidence {
	var e Evidence
	if len(near) == 0 {
		return e
	}
	if asks(query) {
		e[FeatAsk] = 1
	}
	best := near[0]
	e[FeatSimilarity], e[FeatSemantic] = best.Similarity, best.Similarity
	if best.Parts {
		e[FeatSemantic], e[FeatLexical] = best.Semantic, best.Lexical
	}
	if len(near) > 1 {
		e[FeatGap] = best.Similarity - near[1].Similarity
		sum := 0.0
		for _, n := range near[1:] {
			sum += n.Similarity
		}
		e[FeatLead] = best.Similarity - sum/float64(len(near)-1)
	}
	if m, ok := x.method(best.Slug); ok {
		same, others := 0, 0
		for _, n := range near[1:min(len(near), 5)] {
			if o, ok := x.method(n.Slug); ok {
				others++
				if o.Category == m.Category {
					same++
				}
			}
		}
		if others > 0 {
			e[FeatAgree] = float64(same) / float64(others)
		}
	}
	q := x.queryConcepts(query)
	if len(q.ids) == 0 {
		return e
	}
	pos := make([]int, min(len(near), 3))
	for i, n := range near[:len(pos)] {
		pos[i] = x.position(n.Slug)
	}
	var cover, cover3, syn, syn3 float64
	synKnown := 0
	for i, id := range q.ids {
		held := x.holds(pos[0], id, q.known[i])
		if held {
			cover += q.weights[i]
		}
		held3 := false
		for _, p := range pos {
			if x.holds(p, id, q.known[i]) {
				cover3 += q.weights[i]
				held3 = true
				break
			}
		}
		if q.related == nil {
			continue
		}
		rel := q.related[i]
		if !q.known[i] && len(rel) > 0 {
			synKnown++
		}
		if !held && x.holdsAny(pos[0], rel) {
			syn += q.weights[i]
		}
		if !held3 && slices.ContainsFunc(pos, func(p int) bool { return x.holdsAny(p, rel) }) {
			syn3 += q.weights[i]
		}
	}
	e[FeatCover], e[FeatCover3] = cover/q.total, cover3/q.total
	if x.holds(pos[0], q.ids[0], q.known[0]) {
		e[FeatFirstHeld] = 1
	}
	x.gatherAct(&e, query, pos)
	e[FeatKnown] = float64(q.knownCount) / float64(len(q.ids))
	e[FeatSynCover], e[FeatSynCover3] = syn/q.total, syn3/q.total
	e[FeatSynKnown] = float64(synKnown) / float64(len(q.ids))
	e[FeatWords] = math.Log1p(float64(len(q.ids)))
	if q.vectors != nil {
		x.gatherVectors(&e, q, pos)
	}
	if general != nil {
		words := embedding.Words(query)
		least := math.Inf(1)
		for _, w := range words {
			d := math.Log((float64(x.tf[w])+0.5)/float64(x.tokens+1)) - general(w)
			e[FeatDomain] += d
			least = min(least, d)
		}
		if len(words) > 0 {
			e[FeatDomain] /= float64(len(words))
			e[FeatDomainMin] = least
		}
	}
	return e
}

// gatherAct reads the evidence of the act query asks for (the act_* features and
// verb_held) over the methods at list positions pos, the nearest first.
func (x *textIndex) gatherAct(e *Evidence, query string, pos []int) {
	verb := mainVerb(query)
	g := act(verb)
	if g < 0 && !taskVerbs[verb] {
		return
	}
	if id, ok := x.ids[embedding.Concept(verb)]; x.holds(pos[0], id, ok) {
		e[FeatVerbHeld] = 1
	}
	if g < 0 {
		return
	}
	e[FeatAct] = 1
	bit := uint64(1) << g
	named := func(p int) bool { return p >= 0 && x.acts[p]&bit != 0 }
	if !named(pos[0]) {
		e[FeatActUnheld] = 1
	}
	if !slices.ContainsFunc(pos, named) {
		e[FeatActUnheld3] = 1
	}
	if pos[0] >= 0 && x.snap.Methods()[pos[0]].Endpoint.Method == "GET" {
		e[FeatActGet] = 1
	}
}

// queryConcepts are a query's concepts as the catalog knows them: each one's id (and
// whether the catalog has it at all) and IDF weight, and the weights' sum.
type queryConcepts struct {
	ids        []uint32
	known      []bool
	related    [][]uint32  // by concept, the catalog's concepts related to it (nil without a thesaurus)
	vectors    [][]float32 // by concept, its unit word vector, nil for one without (all nil without word vectors)
	weights    []float64
	total      float64
	knownCount int
}

func (x *textIndex) queryConcepts(query string) queryConcepts {
	cs := embedding.Concepts(query)
	q := queryConcepts{ids: make([]uint32, len(cs)), known: make([]bool, len(cs)), weights: make([]float64, len(cs))}
	for i, c := range cs {
		id, ok := x.ids[c]
		var df int32
		if ok {
			df = x.df[id]
			q.knownCount++
		}
		q.ids[i], q.known[i], q.weights[i] = id, ok, x.idf(df)
		q.total += q.weights[i]
	}
	if x.thes != nil {
		q.related = make([][]uint32, len(cs))
		for i, c := range cs {
			q.related[i] = x.thes.of(c, q.ids[i], q.known[i], x.thes.t.Hypernyms)
		}
	}
	if x.vec != nil {
		q.vectors = x.vec.queryVectors(query, cs)
	}
	return q
}

// position is the list position of the method slug names, or -1.
func (x *textIndex) position(slug string) int {
	if p, ok := x.snap.Position(slug); ok {
		return p
	}
	return -1
}

// cover is the IDF-weighted share of q's concepts the method at list position p holds.
func (x *textIndex) cover(q queryConcepts, p int) float64 {
	if q.total == 0 {
		return 0
	}
	held := 0.0
	for i, id := range q.ids {
		switch {
		case x.holds(p, id, q.known[i]):
			held += q.weights[i]
		case q.related != nil && x.thes.t.Weight > 0 && x.holdsAny(p, q.related[i]):
			held += x.thes.t.Weight * q.weights[i]
		case q.vectors != nil && x.vec.v.Weight > 0 && q.vectors[i] != nil && p >= 0:
			held += x.vec.v.Weight * x.vec.v.soft(x.vec.best(q.vectors[i], x.concepts[p])) * q.weights[i]
		}
	}
	return held / q.total
}

// Rerank orders query's nearest methods (most similar first) by their similarity
// plus w times the IDF-weighted share of the query's concepts each holds, and keeps
// the first Neighbours, one of each group of near-duplicates (Collapse): a method
// that names what the query asks for climbs over one the encoder only finds near
// it. near itself is left as it is (the engine caches it); the similarities are not
// changed, only their order.
func (x *textIndex) Rerank(query string, near []Neighbour, w float64) []Neighbour {
	if w == 0 || len(near) < 2 {
		near = x.Collapse(near)
		return near[:min(len(near), Neighbours)]
	}
	q := x.queryConcepts(query)
	if q.total == 0 {
		near = x.Collapse(near)
		return near[:min(len(near), Neighbours)]
	}
	out := slices.Clone(near)
	for i := range out {
		out[i].Score = out[i].Similarity + w*x.cover(q, x.position(out[i].Slug))
	}
	slices.SortStableFunc(out, func(a, b Neighbour) int { return cmp.Compare(b.Score, a.Score) })
	out = x.Collapse(out)
	return out[:min(len(out), Neighbours)]
}

func (x *textIndex) method(slug string) (directory.Method, bool) {
	p, ok := x.snap.Position(slug)
	if !ok {
		return directory.Method{}, false
	}
	return x.snap.Methods()[p], true
}

// Calibration is a model's learned band: the weight of concept coverage that reranks
// a query's nearest methods (textIndex.Rerank); a logistic model of the probability
// that the catalog answers a query, given its Evidence over the reranked methods; the
// least probability the band answers at; and the margin under the nearest method's
// similarity within which the others are kept too. Its weights and threshold are
// chosen by cross-validation over labelled queries (make calibrate), never on the
// queries they are reported on.
type Calibration struct {
	Weights [NumFeatures]float64
	Bias    float64
	Least   float64
	Margin  float64
	Rerank  float64
	// Evidence is the EvidenceVersion it was fitted on.
	Evidence string
	// Fusion, when set, is how the band answers a query said several ways; nil
	// means HybridFusion.
	Fusion *Fusion
	// Large, when set, is the band for a catalog of at least LargeFrom methods: a
	// catalog seven times the size has nearer near misses and fewer leads, and a band
	// fitted on its own neighbourhoods reads them as they are (For).
	Large     *Calibration
	LargeFrom int
}

// For is the band c answers in snap with: Large when snap holds at least LargeFrom
// methods, else c.
func (c *Calibration) For(snap *directory.Snapshot) *Calibration {
	if c.Large != nil && c.LargeFrom > 0 && snap.Len() >= c.LargeFrom {
		return c.Large
	}
	return c
}

// fusion is how c answers a query said several ways.
func (c *Calibration) fusion() Fusion {
	if c.Fusion != nil {
		return *c.Fusion
	}
	return HybridFusion
}

// Probability is the model's probability that the catalog answers a query with
// evidence e.
func (c Calibration) Probability(e Evidence) float64 {
	z := c.Bias
	for i, w := range c.Weights {
		z += w * e[i]
	}
	return 1 / (1 + math.Exp(-z))
}

// calibrationJSON is a Calibration as stored: the weights by feature name, so that a
// stored calibration names what it weighs.
type calibrationJSON struct {
	Evidence string             `json:"evidence"`
	Weights  map[string]float64 `json:"weights"`
	Bias     float64            `json:"bias"`
	Least    float64            `json:"least"`
	Margin   float64            `json:"margin"`
	Rerank   float64            `json:"rerank,omitempty"`
	Fusion   *Fusion            `json:"fusion,omitempty"`
	Large    *Calibration       `json:"large,omitempty"`
	From     int                `json:"large_from,omitempty"`
}

// MarshalJSON writes the weights by feature name; a feature it does not weigh is
// left out, so that a version of the service that does not know it (one before the
// thesaurus' features) reads the calibration all the same.
func (c Calibration) MarshalJSON() ([]byte, error) {
	out := calibrationJSON{Evidence: c.Evidence, Weights: map[string]float64{}, Bias: c.Bias, Least: c.Least, Margin: c.Margin, Rerank: c.Rerank, Fusion: c.Fusion,
		Large: c.Large, From: c.LargeFrom}
	for i, w := range c.Weights {
		if w != 0 {
			out.Weights[FeatureNames[i]] = w
		}
	}
	return json.Marshal(out)
}

// UnmarshalJSON reads weights by feature name; a name it does not know is an error,
// so that a calibration made for other evidence is never read as this one.
func (c *Calibration) UnmarshalJSON(b []byte) error {
	var in calibrationJSON
	if err := json.Unmarshal(b, &in); err != nil {
		return err
	}
	*c = Calibration{Bias: in.Bias, Least: in.Least, Margin: in.Margin, Rerank: in.Rerank, Evidence: in.Evidence, Fusion: in.Fusion,
		Large: in.Large, LargeFrom: in.From}
	for name, w := range in.Weights {
		i := featureIndex(name)
		if i < 0 {
			return fmt.Errorf("search: calibration weighs an unknown feature %q", name)
		}
		c.Weights[i] = w
	}
	return nil
}

func featureIndex(name string) int {
	for i, n := range FeatureNames {
		if n == name {
			return i
		}
	}
	return -1
}

// Evidence is the evidence of query over its nearest methods in snap, in the
// ranking's order, as the band reads it.
func (e *Engine) Evidence(snap *directory.Snapshot, m *Model, query string, near []Neighbour) Evidence {
	return e.textIndex(snap).Gather(embedding.NormalizeQuery(query), near, generalEnglish(m))
}

// Rerank orders query's nearest methods in snap (most similar first) by their
// similarity plus w times the share of the query's concepts each holds, and keeps the
// first Neighbours.
func (e *Engine) Rerank(snap *directory.Snapshot, query string, near []Neighbour, w float64) []Neighbour {
	return e.textIndex(snap).Rerank(embedding.NormalizeQuery(query), near, w)
}

// generalEnglish is m's model of general English, when it has one.
func generalEnglish(m *Model) func(string) float64 {
	if g, ok := embedding.Find[interface{ GeneralLogProb(string) float64 }](m.Embedder); ok {
		return g.GeneralLogProb
	}
	return nil
}

// Report explains the calibrated band's decision on a query with evidence ev over
// near.
func (c *Calibration) Report(ev Evidence, near []Neighbour) BandReport {
	r := BandReport{Confidence: c.Probability(ev), Least: c.Least, Margin: c.Margin, Calibrated: true}
	if len(near) > 0 && near[0].Parts {
		r.Parts, r.Semantic, r.Lexical, r.Gap = true, near[0].Semantic, near[0].Lexical, gap(near)
	}
	return r
}

// Band keeps the neighbours (most similar first) the calibrated band answers with:
// none when the probability p that the catalog answers the query is under Least, else
// those within Margin of the nearest one's similarity, at most max of them.
func (c *Calibration) Band(p float64, near []Neighbour, max int) []Neighbour {
	if len(near) == 0 || p < c.Least {
		return nil
	}
	var out []Neighbour
	for _, n := range near {
		if len(out) == max || n.Similarity < near[0].Similarity-c.Margin {
			break
		}
		out = append(out, n)
	}
	return out
}

// gatherVectors reads the word vectors' evidence (the vec_* features) of q over the
// methods at list positions pos, the nearest first.
func (x *textIndex) gatherVectors(e *Evidence, q queryConcepts, pos []int) {
	v := x.vec
	var cover, cover3, known float64
	sum := make([]float32, v.dims)
	for i, id := range q.ids {
		qv := q.vectors[i]
		best, best3 := 0.0, 0.0
		for k, p := range pos {
			s := 0.0
			switch {
			case x.holds(p, id, q.known[i]):
				s = 1
			case qv != nil && p >= 0:
				s = v.v.soft(v.best(qv, x.concepts[p]))
			}
			if k == 0 {
				best = s
			}
			best3 = max(best3, s)
		}
		cover += best * q.weights[i]
		cover3 += best3 * q.weights[i]
		switch {
		case q.known[i]:
			known++
		case qv != nil:
			known += v.v.soft(v.bestAll(qv))
		}
		if qv != nil {
			w := float32(q.weights[i])
			for j, f := range qv {
				sum[j] += w * f
			}
		}
	}
	e[FeatVecCover], e[FeatVecCover3] = cover/q.total, cover3/q.total
	e[FeatVecKnown] = known / float64(len(q.ids))
	if pos[0] < 0 || !unit(sum) {
		return
	}
	own := make([]float32, v.dims)
	for _, id := range x.concepts[pos[0]] {
		if v.has[id] {
			w := float32(x.idf(x.df[id]))
			for j, f := range v.of(id) {
				own[j] += w * f
			}
		}
	}
	if unit(own) {
		e[FeatVecSimilarity] = float64(dot(sum, own))
	}
}
