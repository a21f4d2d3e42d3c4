package embedding

import (
	"context"
	"hash/fnv"
	"math"
	"strings"
	"unicode"
	"unicode/utf8"
)

// BuiltinModel is the id of the builtin model. The id names the whole recipe (features,
// weights, IDF table, synonyms): change any of them and the id must change too, since
// stored vectors are only comparable with vectors of the same recipe.
const BuiltinModel = "builtin:lexhash-v1"

// BuiltinDimensions is the builtin model's vector size.
const BuiltinDimensions = 1024

// Feature weights of the builtin model, tuned on the labelled query set (make eval).
const (
	weightStem    = 1.0 // a word's stem
	weightSynonym = 0.7 // the synonym group a stem belongs to
	weightGrams   = 0.2 // all character n-grams of one word together
	minGramWord   = 4   // shorter words get no n-grams
	hashSlots     = 3   // slots each feature is hashed into
)

// Lexhash is the builtin offline model: signed feature hashing of word stems, synonym
// groups and character 3-5-grams, weighted by log term frequency times a frozen IDF.
// It needs no network and no download, costs microseconds per text, and stays the
// fallback when a provider fails.
type Lexhash struct{}

var _ Embedder = Lexhash{}

// Model names the builtin model.
func (Lexhash) Model() string { return BuiltinModel }

// Dimensions is BuiltinDimensions.
func (Lexhash) Dimensions() int { return BuiltinDimensions }

// Embed embeds every text; it never fails.
func (l Lexhash) Embed(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = l.Vector(t)
	}
	return out, nil
}

// Vector embeds one text. Text without a single feature gives the zero vector, which
// is similar to nothing.
func (Lexhash) Vector(text string) []float32 {
	acc := make([]float64, BuiltinDimensions)
	words := Words(text)
	tf := make(map[string]int, len(words))
	for _, w := range words {
		tf[stem(w)]++
	}
	seenGrams := make(map[string]bool, len(words))
	for _, w := range words {
		s := stem(w)
		if seenGrams[w] {
			continue
		}
		seenGrams[w] = true
		idf := idfOf(s)
		if len(w) >= minGramWord && utf8.RuneCountInString(w) == len(w) {
			grams := ngrams("<" + w + ">")
			per := weightGrams * idf / float64(len(grams))
			for _, g := range grams {
				add(acc, "c:"+g, per)
			}
		}
	}
	for s, n := range tf {
		idf := idfOf(s)
		wt := (1 + math.Log(float64(n))) * idf
		add(acc, "s:"+s, weightStem*wt)
		if g, ok := synonymGroup[s]; ok {
			add(acc, "g:"+g, weightSynonym*wt)
		}
	}
	return normalise(acc)
}

// add hashes a feature into hashSlots signed slots, each with an equal share of its
// weight: a collision between two unrelated features then moves a similarity by a
// fraction of what it would with one slot.
func add(acc []float64, feature string, w float64) {
	h := fnv.New64a()
	h.Write([]byte(feature))
	sum := h.Sum64()
	w /= math.Sqrt(hashSlots)
	for k := 0; k < hashSlots; k++ {
		i := int(sum % BuiltinDimensions)
		v := w
		if sum>>63 == 1 {
			v = -v
		}
		acc[i] += v
		sum = sum*0x9E3779B97F4A7C15 + 0x632BE59BD9B4E019
		sum ^= sum >> 29
	}
}

func ngrams(w string) []string {
	var out []string
	for n := 3; n <= 5; n++ {
		for i := 0; i+n <= len(w); i++ {
			out = append(out, w[i:i+n])
		}
	}
	return out
}

// Words splits text into lower-case words: URL paths, camelCase and snake_case are
// split, stop words, one-letter words and long hex or digit strings are dropped.
func Words(text string) []string {
	var out []string
	var cur []rune
	flush := func() {
		if len(cur) == 0 {
			return
		}
		w := strings.ToLower(string(cur))
		cur = cur[:0]
		if keepWord(w) {
			out = append(out, w)
		}
	}
	rs := []rune(text)
	for i, r := range rs {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			flush()
			continue
		}
		if len(cur) > 0 && unicode.IsUpper(r) {
			prev := cur[len(cur)-1]
			nextLower := i+1 < len(rs) && unicode.IsLower(rs[i+1])
			if unicode.IsLower(prev) || (unicode.IsUpper(prev) && nextLower) {
				flush()
			}
		}
		cur = append(cur, r)
	}
	flush()
	return out
}

func keepWord(w string) bool {
	if utf8.RuneCountInString(w) < 2 || stopWords[w] {
		return false
	}
	if strings.HasPrefix(w, "0x") && len(w) > 8 {
		return false
	}
	digits := 0
	for _, r := range w {
		if unicode.IsDigit(r) {
			digits++
		}
	}
	return digits < 5 || digits*2 < len(w)
}

// stem strips the commonest English inflections; it only has to map a query's word
// and a description's word to the same key, not to a dictionary word.
func stem(w string) string {
	if s, ok := stemExceptions[w]; ok {
		return s
	}
	n := len(w)
	switch {
	case n > 4 && strings.HasSuffix(w, "ies"):
		return w[:n-3] + "y"
	case n > 4 && strings.HasSuffix(w, "sses"):
		return w[:n-2]
	case n > 5 && strings.HasSuffix(w, "ing"):
		return undouble(w[:n-3])
	case n > 4 && strings.HasSuffix(w, "ed") && !strings.HasSuffix(w, "eed"):
		return undouble(w[:n-2])
	case n > 3 && strings.HasSuffix(w, "es") && (strings.HasSuffix(w, "shes") || strings.HasSuffix(w, "ches") || strings.HasSuffix(w, "xes")):
		return w[:n-2]
	case n > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") && !strings.HasSuffix(w, "us") && !strings.HasSuffix(w, "is"):
		return w[:n-1]
	}
	return w
}

func undouble(w string) string {
	n := len(w)
	if n > 3 && w[n-1] == w[n-2] && !strings.ContainsRune("lsz", rune(w[n-1])) {
		return w[:n-1]
	}
	return w
}

// idfOf is the frozen inverse document frequency of a stem: generic API words weigh
// little, words the reference corpus has never seen weigh the most.
func idfOf(s string) float64 {
	if v, ok := idfTable[s]; ok {
		return v
	}
	return idfUnseen
}

// Concepts are the distinct concepts a text's words name, as the lexical part reads
// them: a word's synonym group when it has one, else its stem. A query's concepts
// found among a method's tell how much of the query the method covers.
func Concepts(text string) []string {
	var out []string
	seen := map[string]bool{}
	for _, w := range Words(text) {
		c := stem(w)
		if g, ok := synonymGroup[c]; ok {
			c = "g:" + g
		}
		if !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	}
	return out
}

// Stem is a lower-case word's stem as Concepts reads it, before any synonym group:
// "booking" and "books" are "book", "renewed" is "renew".
func Stem(w string) string { return stem(w) }

// Concept is the concept one lower-case word names, as Concepts reads it: its
// synonym group or its stem; "" for a word Concepts drops (a stop word, one letter).
func Concept(w string) string {
	if !keepWord(w) {
		return ""
	}
	c := stem(w)
	if g, ok := synonymGroup[c]; ok {
		c = "g:" + g
	}
	return c
}
