package search

import (
	"fmt"
	"slices"
	"strings"

	"github.com/waystation/waystation/internal/embedding"
	"github.com/waystation/waystation/internal/embedding/wordnet"
)

// Thesaurus relates words the way WordNet does, over concepts as the evidence reads
// them (embedding.Concept): two concepts are related when one of each's words share
// a synset or are derivationally related forms of each other ("translate",
// "translation"), and a concept is over another when one of its words is a direct
// hypernym of one of the other's. A paraphrase shares few words with the method it
// wants, but often its words' synonyms: the evidence counts a query's concept held
// through a related one too, apart from an exact hold.
//
// It holds single-word lemmas only, as a graph over their concepts; each snapshot's
// evidence keeps the part of it its catalog's concepts reach (thesaurusIndex).
//
// The service runs without one: cross-validated (make eval-wordnet), the features it
// gives add no recall beyond the spread over folds, with or without hypernyms, in
// the evidence or in the rerank, and the builtin band weighs none of them.
type Thesaurus struct {
	// Hypernyms counts a query's concept as held by a method that holds one over it
	// too ("vehicle" for "automobile"); false as loaded.
	Hypernyms bool
	// Weight is how much a concept held through a relative weighs in the rerank,
	// against 1 for one held exactly; 0 as loaded.
	Weight float64
	// forms maps a concept to the lemma it may be a form of ("translat", of
	// "translating": translate), by lemma id; a negative value -i-1 names a list of
	// several in shared[i].
	forms  map[string]int32
	shared [][]int32
	// related and hyponyms are, by lemma id, the lemmas related to it and those one
	// step under it.
	related, hyponyms adjacency
	lemmas            int
}

// adjacency is a graph in compressed rows: node i's neighbours are to[start[i]:start[i+1]].
type adjacency struct {
	start, to []int32
}

func (a adjacency) of(i int32) []int32 { return a.to[a.start[i]:a.start[i+1]] }

func newAdjacency(lists [][]int32) adjacency {
	a := adjacency{start: make([]int32, len(lists)+1)}
	n := 0
	for i, l := range lists {
		slices.Sort(l)
		l = slices.Compact(l)
		lists[i] = l
		n += len(l)
		a.start[i+1] = int32(n)
	}
	a.to = make([]int32, 0, n)
	for _, l := range lists {
		a.to = append(a.to, l...)
	}
	return a
}

// LoadThesaurus reads WordNet's data files from dir (make wordnet fetches them).
func LoadThesaurus(dir string) (*Thesaurus, error) {
	b := newThesaurusBuilder()
	if err := wordnet.Read(dir, b.add); err != nil {
		return nil, err
	}
	return b.build()
}

// thesaurusBuilder gathers WordNet's synsets as they are read, their words as lemma
// ids, so that the graph is built once every pointer's target is known.
type thesaurusBuilder struct {
	t       *Thesaurus
	ids     map[string]int32 // a lemma's concept to its lemma id
	words   map[string]int32 // a word read to its lemma id, -1 when not kept
	synsets map[wordnet.ID]lemmaSynset
}

// lemmaSynset is a synset as the thesaurus keeps it.
type lemmaSynset struct {
	words    []int32 // lemma ids by word number - 1; -1 for a word not kept
	pointers []wordnet.Pointer
}

func newThesaurusBuilder() *thesaurusBuilder {
	// Sized for WordNet 3.1 (117,000 synsets, 148,000 words, 74,000 single-word
	// lemmas' concepts), so that the maps are not grown step by step.
	return &thesaurusBuilder{
		t:       &Thesaurus{forms: make(map[string]int32, 100_000)},
		ids:     make(map[string]int32, 80_000),
		words:   make(map[string]int32, 160_000),
		synsets: make(map[wordnet.ID]lemmaSynset, 120_000),
	}
}

// add keeps synset s with the pointers the thesaurus follows: derivationally
// related forms and hyponyms (instances too).
func (b *thesaurusBuilder) add(s wordnet.Synset) error {
	ss := lemmaSynset{words: make([]int32, len(s.Words))}
	for i, w := range s.Words {
		ss.words[i] = b.lemma(w)
	}
	for _, p := range s.Pointers {
		if p.Symbol == "+" || p.Symbol == "~" || p.Symbol == "~i" {
			ss.pointers = append(ss.pointers, p)
		}
	}
	b.synsets[s.ID] = ss
	return nil
}

// lemma is word w's lemma id, -1 for a word the thesaurus does not keep (not a
// single word of letters, or without a concept). A new lemma's inflections are
// recorded as forms of it.
func (b *thesaurusBuilder) lemma(w string) int32 {
	if strings.ContainsFunc(w, func(r rune) bool { return r < 'a' || r > 'z' }) {
		return -1
	}
	if id, ok := b.words[w]; ok {
		return id
	}
	c := embedding.Concept(w)
	if c == "" {
		b.words[w] = -1
		return -1
	}
	id, ok := b.ids[c]
	if !ok {
		id = int32(len(b.ids))
		b.ids[c] = id
	}
	b.words[w] = id
	for _, f := range inflections(w) {
		if fc := embedding.Concept(f); fc != "" {
			b.t.addForm(fc, id)
		}
	}
	return id
}

// build links the lemmas: those of a synset and derivationally related forms are
// related both ways, and a synset's lemmas are over its hyponyms' lemmas.
func (b *thesaurusBuilder) build() (*Thesaurus, error) {
	t := b.t
	t.lemmas = len(b.ids)
	related, hyponyms := make([][]int32, len(b.ids)), make([][]int32, len(b.ids))
	for _, s := range b.synsets {
		link(related, s.words, s.words)
		for _, p := range s.pointers {
			to, ok := b.synsets[p.To]
			if !ok {
				return nil, fmt.Errorf("search: thesaurus: a pointer to %c %d, not a synset", p.To.POS, p.To.Offset)
			}
			if p.Symbol != "+" {
				link(hyponyms, s.words, to.words)
				continue
			}
			// A derivation relates one word of each synset, by word number.
			if p.Source < 1 || p.Source > len(s.words) || p.Target < 1 || p.Target > len(to.words) {
				continue
			}
			a, z := s.words[p.Source-1:p.Source], to.words[p.Target-1:p.Target]
			link(related, a, z)
			link(related, z, a)
		}
	}
	t.related, t.hyponyms = newAdjacency(related), newAdjacency(hyponyms)
	return t, nil
}

// link adds to lists an edge from each lemma of from to each other lemma of to,
// leaving out the words not kept.
func link(lists [][]int32, from, to []int32) {
	for _, a := range from {
		for _, b := range to {
			if a >= 0 && b >= 0 && a != b {
				lists[a] = append(lists[a], b)
			}
		}
	}
}

// inflections are the forms of a lemma a text may use whose concept may differ from
// the lemma's own: its past and present participle after a final e ("translated",
// "translating": "translat"), a doubled consonant ("added": "ad") or a y
// ("classified": "classifi"). Its plural, third person and the other participles
// come to the lemma's own concept (embedding.Concept strips them).
func inflections(w string) []string {
	out := []string{w}
	n := len(w)
	switch {
	case n > 2 && w[n-1] == 'e':
		out = append(out, w+"d", w[:n-1]+"ing")
	case n > 2 && w[n-1] == 'y':
		out = append(out, w[:n-1]+"ied")
	case n > 3 && w[n-1] == w[n-2]:
		out = append(out, w+"ed", w+"ing")
	}
	return out
}

// addForm adds lemma id to the lemmas concept c may be a form of.
func (t *Thesaurus) addForm(c string, id int32) {
	v, ok := t.forms[c]
	switch {
	case !ok:
		t.forms[c] = id
	case v >= 0 && v != id:
		t.shared = append(t.shared, []int32{v, id})
		t.forms[c] = -int32(len(t.shared))
	case v < 0 && !slices.Contains(t.shared[-v-1], id):
		t.shared[-v-1] = append(t.shared[-v-1], id)
	}
}

// lemmasOf are the lemmas concept c may be a form of.
func (t *Thesaurus) lemmasOf(c string) []int32 {
	v, ok := t.forms[c]
	switch {
	case !ok:
		return nil
	case v >= 0:
		return []int32{v}
	}
	return t.shared[-v-1]
}

// Lemmas is how many single-word lemmas' concepts t holds.
func (t *Thesaurus) Lemmas() int { return t.lemmas }

// thesaurusIndex is the part of a thesaurus a snapshot's catalog reaches: for each
// lemma, the catalog's concepts related to it, and those one step over it (sorted
// ids of textIndex.ids).
type thesaurusIndex struct {
	t        *Thesaurus
	related  map[int32][]uint32
	hypernym map[int32][]uint32
}

func newThesaurusIndex(t *Thesaurus, ids map[string]uint32) *thesaurusIndex {
	x := &thesaurusIndex{t: t, related: map[int32][]uint32{}, hypernym: map[int32][]uint32{}}
	for c, id := range ids {
		for _, l := range t.lemmasOf(c) {
			x.related[l] = append(x.related[l], id)
			for _, r := range t.related.of(l) {
				x.related[r] = append(x.related[r], id)
			}
			for _, h := range t.hyponyms.of(l) {
				x.hypernym[h] = append(x.hypernym[h], id)
			}
		}
	}
	for _, m := range []map[int32][]uint32{x.related, x.hypernym} {
		for l, ids := range m {
			slices.Sort(ids)
			m[l] = slices.Compact(ids)
		}
	}
	return x
}

// of is the catalog's concepts related to concept c (and, with hypernyms, one step
// over it), but c's own id, sorted; nil when there is none.
func (x *thesaurusIndex) of(c string, own uint32, known, hypernyms bool) []uint32 {
	var out []uint32
	for _, l := range x.t.lemmasOf(c) {
		out = append(out, x.related[l]...)
		if hypernyms {
			out = append(out, x.hypernym[l]...)
		}
	}
	if len(out) == 0 {
		return nil
	}
	slices.Sort(out)
	out = slices.Compact(out)
	if known {
		if i, ok := slices.BinarySearch(out, own); ok {
			out = slices.Delete(out, i, i+1)
		}
	}
	return out
}
