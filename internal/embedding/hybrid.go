package embedding

import (
	"context"
	"math"
	"strings"
	"sync/atomic"

	"github.com/waystation/waystation/internal/embedding/adapt"
	"github.com/waystation/waystation/internal/embedding/sentence"
)

// HybridModel is the id of the builtin hybrid model: the sentence encoder's vector and
// the BM25-like lexical vector, each normalised, weighted and concatenated. The id
// names the whole recipe (encoder, lexical features, field weights, the parts'
// weights): change any of them and the id must change too.
const HybridModel = "builtin:hybrid-v1"

// HybridDimensions is the hybrid model's vector size: the sentence encoder's 512 and
// the lexical part's 1024.
const HybridDimensions = sentence.Dimensions + BuiltinDimensions

// SemanticShare is the sentence encoder's share of the hybrid cosine, tuned on the
// development query set (make eval; 0.3 to 0.5 rank about as well): the parts are
// scaled by the square roots of SemanticShare and 1 - SemanticShare, so the cosine of
// two hybrid vectors is SemanticShare times the encoder's cosine plus the rest times
// the lexical cosine, and pgvector ranks by the fused score directly.
const SemanticShare = 0.4

// Hybrid is the builtin model: a sentence encoder that knows paraphrases, and a
// lexical part that knows names, rare words and identifiers.
type Hybrid struct {
	enc *sentence.Encoder
	// adapt maps the encoder's vectors to the catalog's domain; nil leaves them.
	adapt *adapt.Map
	freq  atomic.Pointer[Frequencies]
}

var _ Embedder = (*Hybrid)(nil)

// NewHybrid makes the hybrid model over a loaded sentence encoder.
func NewHybrid(enc *sentence.Encoder) *Hybrid { return &Hybrid{enc: enc} }

// NewAdaptedHybrid makes the hybrid model over a loaded sentence encoder whose vectors
// go through m, a map adapted to the catalog's domain; its model id names the map.
func NewAdaptedHybrid(enc *sentence.Encoder, m *adapt.Map) *Hybrid {
	return &Hybrid{enc: enc, adapt: m}
}

// SetFrequencies sets the catalog's word frequencies that weigh the words of queries
// embedded from now on, and reports whether they differ from those in force.
func (h *Hybrid) SetFrequencies(f *Frequencies) bool {
	old := h.freq.Swap(f)
	return old == nil || f == nil || old.sum != f.sum
}

// Model names the hybrid model, and its map when it has one.
func (h *Hybrid) Model() string {
	if h.adapt != nil {
		return HybridModel + "/" + h.adapt.ID()
	}
	return HybridModel
}

// Dimensions is HybridDimensions.
func (*Hybrid) Dimensions() int { return HybridDimensions }

// Embed embeds queries and method texts (MethodText), each in its own way: a method's
// lexical part weighs its fields, and its encoder part reads its name and
// description. It never fails.
func (h *Hybrid) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	sentences, lexical := h.split(texts)
	semantic := h.enc.Embed(sentences)
	a, b := float32(math.Sqrt(SemanticShare)), float32(math.Sqrt(1-SemanticShare))
	out := make([][]float32, len(texts))
	for i := range texts {
		sem := h.adapt.Apply(semantic[i])
		v := make([]float32, HybridDimensions)
		for j, x := range sem {
			v[j] = a * x
		}
		lex := lexical[i]
		if isZeroVector(lex) {
			// No word the lexical part knows: the encoder's part alone, at full
			// length, so that the vector stays normalised.
			copy(v, sem)
		}
		for j, x := range lex {
			v[sentence.Dimensions+j] = b * x
		}
		out[i] = v
	}
	return out, nil
}

// SentenceVectors are the encoder's vectors of texts (queries or method texts) before
// any map: what a map is fitted on.
func (h *Hybrid) SentenceVectors(texts []string) [][]float32 {
	sentences, _ := h.split(texts)
	return h.enc.Embed(sentences)
}

// split returns what the encoder reads of each text, and its lexical vector.
func (h *Hybrid) split(texts []string) ([]string, [][]float32) {
	sentences := make([]string, len(texts))
	lexical := make([][]float32, len(texts))
	for i, t := range texts {
		if f, ok := MethodFields(t); ok {
			sentences[i] = methodSentence(f)
			lexical[i] = lexicalMethod(f)
		} else {
			sentences[i] = t
			lexical[i] = lexicalQuery(t, h.freq.Load())
		}
		sentences[i] = strings.ToLower(sentences[i])
	}
	return sentences, lexical
}

// GeneralLogProb is a word's log-probability in general English, as the sentence
// encoder's vocabulary models it: against the catalog's own frequency of the word, it
// tells the catalog's domain from general English.
func (h *Hybrid) GeneralLogProb(word string) float64 { return h.enc.LogProb(word) }

// Parts splits the cosine of two hybrid vectors into the encoder's cosine and the
// lexical cosine.
func (*Hybrid) Parts(q, d []float32) (semantic, lexical float64) {
	if len(q) != HybridDimensions || len(d) != HybridDimensions {
		return 0, 0
	}
	var s, l, qs, ds, ql, dl float64
	for j := 0; j < sentence.Dimensions; j++ {
		s += float64(q[j]) * float64(d[j])
		qs += float64(q[j]) * float64(q[j])
		ds += float64(d[j]) * float64(d[j])
	}
	for j := sentence.Dimensions; j < HybridDimensions; j++ {
		l += float64(q[j]) * float64(d[j])
		ql += float64(q[j]) * float64(q[j])
		dl += float64(d[j]) * float64(d[j])
	}
	if qs > 0 && ds > 0 {
		semantic = s / math.Sqrt(qs*ds)
	}
	if ql > 0 && dl > 0 {
		lexical = l / math.Sqrt(ql*dl)
	}
	return semantic, lexical
}

func isZeroVector(v []float32) bool {
	for _, x := range v {
		if x != 0 {
			return false
		}
	}
	return true
}

// methodSentence is what the encoder reads of a method: its name and description.
func methodSentence(f [fieldCount]string) string {
	return f[fieldName] + ". " + f[fieldDescription]
}
