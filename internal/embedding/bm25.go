package embedding

import (
	"crypto/sha256"
	"math"
	"strings"
	"unicode/utf8"
)

// The fields of a method's text, in the order MethodText joins them.
const (
	fieldName = iota
	fieldProvider
	fieldDescription
	fieldCategory
	fieldPath
	fieldCount
)

// MethodFields splits a method's text (MethodText) back into its five fields; the
// description may span lines, the other fields never do. A query is never a method's
// text: queries are normalised to one line.
func MethodFields(text string) ([fieldCount]string, bool) {
	var f [fieldCount]string
	parts := strings.Split(text, "\n")
	n := len(parts)
	if n < fieldCount {
		return f, false
	}
	f[fieldName], f[fieldProvider] = parts[0], parts[1]
	f[fieldDescription] = strings.Join(parts[2:n-2], "\n")
	f[fieldCategory], f[fieldPath] = parts[n-2], parts[n-1]
	return f, true
}

// BM25 parameters of the lexical part: how much a word counts in each field, how far
// a field's length normalises its counts, and how fast repeated words saturate.
var (
	fieldWeight = [fieldCount]float64{fieldName: 2.0, fieldProvider: 0.6, fieldDescription: 1.0, fieldCategory: 0.5, fieldPath: 1.2}
	fieldB      = [fieldCount]float64{fieldName: 0.3, fieldProvider: 0.3, fieldDescription: 0.75, fieldCategory: 0.3, fieldPath: 0.5}
)

const bm25K1 = 1.2

// fieldLength is the mean number of words of each field in the reference corpus,
// set with the IDF table.
var fieldLength [fieldCount]float64

// Frequencies are a catalog's document frequencies of stems: the lexical part weighs
// a query's words by them (BM25's IDF), so that a word few methods have counts most.
// Only queries carry the IDF: a method's vector is the same whatever the catalog.
type Frequencies struct {
	df  map[string]int
	n   int
	sum [sha256.Size]byte // of the texts counted, to tell a change
}

// NewFrequencies counts the stems of method texts (MethodText).
func NewFrequencies(texts []string) *Frequencies {
	f := &Frequencies{df: map[string]int{}, n: len(texts)}
	h := sha256.New()
	for _, t := range texts {
		h.Write([]byte(t))
		h.Write([]byte{0})
		seen := map[string]bool{}
		for _, w := range Words(t) {
			s := stem(w)
			if !seen[s] {
				seen[s] = true
				f.df[s]++
			}
		}
	}
	h.Sum(f.sum[:0])
	return f
}

// idf is BM25's inverse document frequency of a stem; without frequencies, the
// frozen table's.
func (f *Frequencies) idf(s string) float64 {
	if f == nil || f.n == 0 {
		return idfOf(s)
	}
	df := float64(f.df[s])
	return math.Log(1 + (float64(f.n)-df+0.5)/(df+0.5))
}

// lexicalQuery is a query's lexical vector: each distinct stem weighted by its IDF,
// with the same synonym and n-gram features as a method's.
func lexicalQuery(text string, f *Frequencies) []float32 {
	acc := make([]float64, BuiltinDimensions)
	seen := map[string]bool{}
	for _, w := range Words(text) {
		s := stem(w)
		if seen[s] {
			continue
		}
		seen[s] = true
		features(acc, s, w, f.idf(s))
	}
	return normalise(acc)
}

// features adds a stem's features with weight wt: the stem, its synonym group and the
// character n-grams of one of its words.
func features(acc []float64, s, w string, wt float64) {
	add(acc, "s:"+s, weightStem*wt)
	if g, ok := synonymGroup[s]; ok {
		add(acc, "g:"+g, weightSynonym*wt)
	}
	if len(w) >= minGramWord && utf8.RuneCountInString(w) == len(w) {
		gs := ngrams("<" + w + ">")
		per := weightGrams * wt / float64(len(gs))
		for _, g := range gs {
			add(acc, "c:"+g, per)
		}
	}
}

// lexicalMethod is a method's lexical vector: BM25F term weights, where a word's
// count is summed over the fields with their weights and length normalisation, then
// saturated. Its cosine with a query's vector is a BM25-like score in [0, 1].
func lexicalMethod(fields [fieldCount]string) []float32 {
	tf := map[string]float64{}
	var order []string
	word := map[string]string{} // stem -> one of its words, for the n-grams
	for f, text := range fields {
		words := Words(text)
		if len(words) == 0 {
			continue
		}
		norm := 1 - fieldB[f] + fieldB[f]*float64(len(words))/max(fieldLength[f], 1)
		for _, w := range words {
			s := stem(w)
			if _, ok := tf[s]; !ok {
				order = append(order, s)
				word[s] = w
			}
			tf[s] += fieldWeight[f] / norm
		}
	}
	acc := make([]float64, BuiltinDimensions)
	for _, s := range order {
		features(acc, s, word[s], tf[s]*(bm25K1+1)/(tf[s]+bm25K1))
	}
	return normalise(acc)
}

func normalise(acc []float64) []float32 {
	var norm float64
	for _, v := range acc {
		norm += v * v
	}
	vec := make([]float32, len(acc))
	if norm == 0 {
		return vec
	}
	norm = math.Sqrt(norm)
	for i, v := range acc {
		vec[i] = float32(v / norm)
	}
	return vec
}
