package sentence

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf16"

	"golang.org/x/text/unicode/norm"
)

// reservedPieces is how many pieces at the start of the vocabulary are control
// symbols that text never produces (the unknown piece, <s>, </s> and three extras).
const reservedPieces = 6

// separator marks the start of a word in the vocabulary's pieces.
const separator = '\u2581'

// Tokenizer splits text into the model's vocabulary pieces the way the reference
// implementation does: NFKC, a word-start mark before every word, then the most
// probable segmentation under the pieces' log-probabilities (Viterbi), characters no
// piece covers becoming the unknown id 0, runs of them merged into one.
type Tokenizer struct {
	pieces []piece
	root   *trieNode
}

type piece struct {
	text   string
	score  float64
	length int // in UTF-16 code units, as the reference measures it when walking back
}

type trieNode struct {
	children map[rune]*trieNode
	id       int // the piece ending here, or -1
}

// NewTokenizer reads a vocabulary: a JSON array of [piece, log-probability or null] pairs,
// the piece's index being its id.
func NewTokenizer(vocabJSON []byte) (*Tokenizer, error) {
	var raw [][2]any
	if err := json.Unmarshal(vocabJSON, &raw); err != nil {
		return nil, fmt.Errorf("sentence: vocabulary: %w", err)
	}
	if len(raw) <= reservedPieces {
		return nil, fmt.Errorf("sentence: vocabulary has %d pieces", len(raw))
	}
	t := &Tokenizer{pieces: make([]piece, len(raw)), root: newTrieNode()}
	for i, r := range raw {
		text, ok1 := r[0].(string)
		score, ok2 := r[1].(float64)
		if r[1] == nil { // a few pieces have a null score, which the reference adds as 0
			ok2 = true
		}
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("sentence: vocabulary entry %d is not [string, number]", i)
		}
		t.pieces[i] = piece{text: text, score: score, length: len(utf16.Encode([]rune(text)))}
		if i < reservedPieces || text == "" {
			continue
		}
		n := t.root
		for _, c := range text {
			next := n.children[c]
			if next == nil {
				next = newTrieNode()
				n.children[c] = next
			}
			n = next
		}
		n.id = i
	}
	return t, nil
}

func newTrieNode() *trieNode { return &trieNode{children: map[rune]*trieNode{}, id: -1} }

// Encode returns the ids of text's pieces.
func (t *Tokenizer) Encode(text string) []int {
	text = norm.NFKC.String(text)
	if text == "" {
		return nil
	}
	symbols := []rune(string(separator) + strings.ReplaceAll(text, " ", string(separator)))
	n := len(symbols)
	// arcs[end] lists the pieces ending at end in ascending order of start, the
	// order the reference visits them in.
	arcs := make([][]arc, n+1)
	for i := range symbols {
		found := false
		node := t.root.children[symbols[i]]
		for j := i; j < n && node != nil; j++ {
			if node.id >= 0 {
				arcs[j+1] = append(arcs[j+1], arc{i, node.id, j + 1 - i})
				found = true
			}
			if j+1 < n {
				node = node.children[symbols[j+1]]
			}
		}
		if !found {
			arcs[i+1] = append(arcs[i+1], arc{i, 0, 1})
		}
	}
	best := make([]float64, n+1)
	words := make([]int, n+1)
	for end := 0; end <= n; end++ {
		// As in the reference, a later arc of equal score wins and a best of
		// exactly 0 counts as unset.
		for _, a := range arcs[end] {
			score := t.score(a.id) + best[end-a.length]
			if best[end] == 0 || score >= best[end] {
				best[end] = score
				words[end] = a.id
			}
		}
	}
	var ids []int
	for at := n; at > 0; at -= t.pieces[words[at]].length {
		ids = append(ids, words[at])
	}
	merged := ids[:0]
	prevUnknown := false
	for _, id := range ids {
		if !(prevUnknown && id == 0) {
			merged = append(merged, id)
		}
		prevUnknown = id == 0
	}
	for i, j := 0, len(merged)-1; i < j; i, j = i+1, j-1 {
		merged[i], merged[j] = merged[j], merged[i]
	}
	return merged
}

func (t *Tokenizer) score(id int) float64 {
	if id == 0 {
		return 0
	}
	return t.pieces[id].score
}

// arc is a piece of the text: where it starts, its id and its length in symbols.
type arc struct{ start, id, length int }
