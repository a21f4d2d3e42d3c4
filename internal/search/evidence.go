package search

import (
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
	FeatSimilarity = iota // the nearest method's similarity
	FeatSemantic          // its sentence encoder part (the similarity under a model of one part)
	FeatLexical           // its lexical part (0 under a model of one part)
	FeatGap               // how far it leads the next
	FeatLead              // how far it leads the mean of the others
	FeatAgree             // the share of the next four in its category
	FeatCover             // the IDF-weighted share of the query's concepts it holds
	FeatCover3            // the same, for the nearest three together
	FeatKnown             // the share of the query's concepts the catalog has at all
	FeatWords             // log(1 + the query's concepts)
	FeatDomain            // the mean, over the query's words, of how much likelier the catalog writes them than general English
	FeatDomainMin         // the least of those: the query's most foreign word
	NumFeatures
)

// FeatureNames name the features, as calibrations store their weights.
var FeatureNames = [NumFeatures]string{"similarity", "semantic", "lexical", "gap", "lead", "agree", "cover", "cover3", "known", "words",
	"domain", "domain_min"}

// EvidenceVersion names the evidence's recipe (its features and how each is read):
// a calibration fitted on another recipe weighs other numbers, and is not used. Change
// it with any change to Gather.
const EvidenceVersion = "evidence-v1"

// Neighbours is how many nearest methods a query's evidence reads.
const Neighbours = 10

// textIndex holds one snapshot's words for the evidence: each method's concepts
// (interned, sorted ids, by list position) and the catalog's document frequency of
// each concept and count of each word. Built once per snapshot.
type textIndex struct {
	snap     *directory.Snapshot
	ids      map[string]uint32 // concept to id
	df       []int32           // by concept id
	concepts [][]uint32        // by list position
	// tf counts the catalog's words, tokens of them in all.
	tf     map[string]int32
	tokens int
}

func newTextIndex(snap *directory.Snapshot) *textIndex {
	ms := snap.Methods()
	x := &textIndex{snap: snap, ids: map[string]uint32{}, concepts: make([][]uint32, len(ms)), tf: map[string]int32{}}
	for p, m := range ms {
		text := embedding.MethodText(m.Name, m.Provider, m.Description, m.Category, m.Endpoint.URL)
		cs := embedding.Concepts(text)
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
		for _, w := range embedding.Words(text) {
			x.tf[w]++
			x.tokens++
		}
	}
	return x
}

// textIndex is snap's, built on first use and kept until the next snapshot.
func (e *Engine) textIndex(snap *directory.Snapshot) *textIndex {
	if x := e.text.Load(); x != nil && x.snap == snap {
		return x
	}
	x := newTextIndex(snap)
	e.text.Store(x)
	return x
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

// Gather reads the evidence of query (normalised) over its nearest methods, most
// similar first; general, when the model has one, is a word's log-probability in
// general English.
func (x *textIndex) Gather(query string, near []Neighbour, general func(string) float64) Evidence {
	var e Evidence
	if len(near) == 0 {
		return e
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
	concepts := embedding.Concepts(query)
	if len(concepts) == 0 {
		return e
	}
	pos := make([]int, min(len(near), 3))
	for i, n := range near[:len(pos)] {
		pos[i] = -1
		if p, ok := x.snap.Position(n.Slug); ok {
			pos[i] = p
		}
	}
	var total, cover, cover3 float64
	known := 0
	for _, c := range concepts {
		id, ok := x.ids[c]
		var df int32
		if ok {
			df = x.df[id]
			known++
		}
		w := x.idf(df)
		total += w
		if x.holds(pos[0], id, ok) {
			cover += w
		}
		for _, p := range pos {
			if x.holds(p, id, ok) {
				cover3 += w
				break
			}
		}
	}
	e[FeatCover], e[FeatCover3] = cover/total, cover3/total
	e[FeatKnown] = float64(known) / float64(len(concepts))
	e[FeatWords] = math.Log1p(float64(len(concepts)))
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

func (x *textIndex) method(slug string) (directory.Method, bool) {
	p, ok := x.snap.Position(slug)
	if !ok {
		return directory.Method{}, false
	}
	return x.snap.Methods()[p], true
}

// Calibration is a model's learned band: a logistic model of the probability that
// the catalog answers a query, given its Evidence; the least probability the band
// answers at; and the margin under the nearest method's similarity within which the
// others are kept too. Its weights and threshold are chosen by cross-validation over
// labelled queries (make calibrate), never on the queries they are reported on.
type Calibration struct {
	Weights [NumFeatures]float64
	Bias    float64
	Least   float64
	Margin  float64
	// Evidence is the EvidenceVersion it was fitted on.
	Evidence string
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
}

// MarshalJSON writes the weights by feature name.
func (c Calibration) MarshalJSON() ([]byte, error) {
	out := calibrationJSON{Evidence: c.Evidence, Weights: map[string]float64{}, Bias: c.Bias, Least: c.Least, Margin: c.Margin}
	for i, w := range c.Weights {
		out.Weights[FeatureNames[i]] = w
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
	*c = Calibration{Bias: in.Bias, Least: in.Least, Margin: in.Margin, Evidence: in.Evidence}
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

// Evidence is the evidence of query over its nearest methods in snap, most similar
// first, as the band reads it.
func (e *Engine) Evidence(snap *directory.Snapshot, m *Model, query string, near []Neighbour) Evidence {
	return e.textIndex(snap).Gather(embedding.NormalizeQuery(query), near, generalEnglish(m))
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
