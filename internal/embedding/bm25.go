package embedding

import (
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

// lexicalQuery is a query's lexical vector: the same features as Lexhash, each word
// weighted by its IDF and (log) count.
func lexicalQuery(text string) []float32 { return Lexhash{}.Vector(text) }

// lexicalMethod is a method's lexical vector: BM25F weights, where a word's count is
// summed over the fields with their weights and length normalisation, saturated, and
// multiplied by its IDF. With the query's IDF weights, the cosine of the two vectors
// is a BM25-like score normalised to [0, 1].
func lexicalMethod(fields [fieldCount]string) []float32 {
	tf := map[string]float64{}
	var order []string
	grams := map[string]string{} // stem -> one of its words, for the n-grams
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
				grams[s] = w
			}
			tf[s] += fieldWeight[f] / norm
		}
	}
	acc := make([]float64, BuiltinDimensions)
	for _, s := range order {
		sat := tf[s] * (bm25K1 + 1) / (tf[s] + bm25K1)
		wt := sat * idfOf(s)
		add(acc, "s:"+s, weightStem*wt)
		if g, ok := synonymGroup[s]; ok {
			add(acc, "g:"+g, weightSynonym*wt)
		}
		if w := grams[s]; len(w) >= minGramWord && utf8.RuneCountInString(w) == len(w) {
			gs := ngrams("<" + w + ">")
			per := weightGrams * idfOf(s) / float64(len(gs))
			for _, g := range gs {
				add(acc, "c:"+g, per)
			}
		}
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

// Coverage is the share of a query's meaning words, weighted by IDF, that a method's
// text contains (the word's stem or a word of its synonym group): 1 when every word
// of the query is there, 0 when none is.
func Coverage(query, text string) float64 {
	have := map[string]bool{}
	for _, w := range Words(text) {
		s := stem(w)
		have[s] = true
		if g, ok := synonymGroup[s]; ok {
			have["g:"+g] = true
		}
	}
	var total, found float64
	seen := map[string]bool{}
	for _, w := range Words(query) {
		s := stem(w)
		if seen[s] {
			continue
		}
		seen[s] = true
		idf := idfOf(s)
		total += idf
		g, ok := synonymGroup[s]
		if have[s] || (ok && have["g:"+g]) {
			found += idf
		}
	}
	if total == 0 {
		return 0
	}
	return found / total
}
