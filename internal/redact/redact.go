// Package redact finds a user's protected values in text, in the forms people and
// models write them and the forms a hostile agent hides them in, and blanks them out
// before the text leaves for a language model or is stored.
//
// Text and values are compared on their projection: the letters and digits alone,
// in their compatibility forms without accents, lower-cased and folded (fold.go):
// look-alikes from other scripts as the letter they stand for, after Unicode's
// confusables skeletons (UTS #39), and the decimal digits of every script as ASCII
// digits. So "4242 4242-4242 4242", "ADA@Example.com", "ada @ example . com", the
// full-width "ＡＤＡ＠ｅｘａｍｐｌｅ．ｃｏｍ", a Cyrillic "аdа" and an Arabic-Indic
// "٤٢٤٢" all match their value. A value that reads as a date also matches its other
// common forms (1990-04-17, 17/04/1990, 04/17/1990, 17.04.1990, 19900417, 17 April
// 1990, April 17, 1990, 17 Apr 1990), and a value of six letters and digits or more
// also matches written backwards and in rot13. Every form is a pattern of one
// Aho–Corasick automaton, so a text is scanned once whatever the number of values;
// the projection's every other letter or digit is scanned too, twice, for a value
// with a filler after each of its letters ("4x1x1x1..."). Runs of base64 (a
// character glued in front, or wrapped by white space, included), base32, hex and
// percent-encoding are decoded and scanned too, nested up to five deep, since an
// agent may carry a value in a token, a header or a URL; the work is bounded
// linearly in the text's length (encoded.go). ContainsParts finds a value split
// across a request's parts, and CountCandidates counts the strings shaped like a
// card, a date, a phone number or an email, for a caller that refuses a text
// carrying many guesses.
package redact

import (
	"context"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Placeholder replaces each protected value found.
const Placeholder = "[redacted]"

// Least lengths of a value's projection: shorter values are not matched at all
// (three digits are everywhere), and values under shortValue match only as a whole
// word of the text, never inside a longer run of letters and digits.
const (
	minValue   = 4
	shortValue = 6
)

// Source gives the plaintexts of a user's protected values.
type Source interface {
	Protected(ctx context.Context, userID string) ([]string, error)
}

// Set is a user's protected values, ready to scan text. The zero Set and a nil *Set
// find nothing. A Set is immutable and safe for concurrent use.
type Set struct {
	ac *automaton
	n  int
	// minText is the fewest bytes of decoded text scanned: minDecoded, or the
	// length of the shortest value when that is less.
	minText int
}

// New builds the set of values; those whose projection is shorter than four letters
// and digits are left out.
func New(values []string) *Set {
	var patterns []string
	seen := map[string]bool{}
	add := func(p string) {
		if len(p) >= minValue && !seen[p] {
			seen[p] = true
			patterns = append(patterns, p)
		}
	}
	minText := minDecoded
	for _, v := range values {
		p := project(v).text
		if len(p) >= minValue {
			minText = min(minText, len(strings.TrimSpace(v)))
		}
		add(p)
		// Upper and lower case may fold apart for letters outside ASCII (fold.go).
		add(project(strings.ToUpper(v)).text)
		add(project(strings.ToLower(v)).text)
		for _, d := range dateForms(v) {
			add(d)
		}
		// A value written backwards or in rot13 is found by the same scan, as two more
		// patterns; only long values, so that prose does not match them by chance.
		if len(p) >= shortValue {
			add(project(rot13(v)).text)
			add(project(reverseRunes(v)).text)
		}
	}
	s := &Set{n: len(patterns), minText: max(minText, 1)}
	if len(patterns) > 0 {
		s.ac = build(patterns)
	}
	return s
}

// Len is the number of patterns the set scans for (a value's forms count apart).
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return s.n
}

// Contains tells whether text holds a protected value in any form.
func (s *Set) Contains(text string) bool {
	_, n := s.scan(text, false)
	return n > 0
}

// ContainsParts tells whether any of parts, or all of them written one after the
// other in order, hold a protected value: a value split across two messages, two
// content parts of one message or several short members (the keys of a map, which
// the caller lists in a stable order) is found though no part holds it alone.
func (s *Set) ContainsParts(parts []string) bool {
	if s == nil || s.ac == nil {
		return false
	}
	for _, p := range parts {
		if s.Contains(p) {
			return true
		}
	}
	return len(parts) > 1 && s.Contains(strings.Join(parts, ""))
}

// Redact returns text with every protected value found replaced by Placeholder,
// and how many stretches it replaced. Blanking can leave a value the first scan did
// not see (a short value glued to the bytes of an encoded run, an interleaving
// closed up), so what it returns is scanned again, up to redactPasses times; a text
// that still holds a value then is blanked whole.
func (s *Set) Redact(text string) (string, int) {
	out, total := s.scan(text, true)
	for pass := 1; total > 0; pass++ {
		next, n := s.scan(out, true)
		if n == 0 {
			break
		}
		if pass == redactPasses {
			return Placeholder, total + n
		}
		out, total = next, total+n
	}
	return out, total
}

// redactPasses bounds the scans of one Redact.
const redactPasses = 4

func (s *Set) scan(text string, rewrite bool) (string, int) {
	if s == nil || s.ac == nil || text == "" {
		return text, 0
	}
	spans := s.spans(text, 0, newWork(len(text)), nil)
	if len(spans) == 0 {
		return text, 0
	}
	merged := merge(spans)
	if !rewrite {
		return text, len(merged)
	}
	var b strings.Builder
	last := 0
	for _, sp := range merged {
		b.WriteString(text[last:sp[0]])
		b.WriteString(Placeholder)
		last = sp[1]
	}
	b.WriteString(text[last:])
	return b.String(), len(merged)
}

// spans appends to found the byte ranges of text that hold a value, in order of
// their end for those of the projection; depth is how many encodings text was
// decoded from, and w the work the whole scan has left.
func (s *Set) spans(text string, depth int, w *work, found [][2]int) [][2]int {
	p := project(text)
	w.scanned += len(p.text)
	s.ac.each(p.text, func(start, end int) {
		from, to := p.span(text, start, end)
		if end-start < shortValue && !wholeWord(text, from, to) {
			return
		}
		found = append(found, [2]int{from, to})
	})
	found = s.interleaved(text, p, w, found)
	if depth < maxDepth {
		found = s.encoded(text, depth, w, found)
	}
	return found
}

// interleaved appends to found the stretches of text whose every other letter or
// digit spells a value: "4x1x1x1..." or "h1u2n3...", one filler after each letter or
// digit. The projection's letters and digits (each rune's projection, so that an m
// written rn stays one) are taken one in two, from the first and from the second,
// and scanned as two more texts, for values of shortValue letters and digits or more
// only, since a short one would turn up in any text's every other letter.
func (s *Set) interleaved(text string, p projection, w *work, found [][2]int) [][2]int {
	if len(p.text) < 2*shortValue {
		return found
	}
	half := make([]byte, 0, len(p.text)/2+utf8.UTFMax)
	at := make([]int32, 0, cap(half)) // the projection's byte of each of half's
	for parity := range 2 {
		half, at = half[:0], at[:0]
		unit := -1
		for k := range len(p.text) {
			if k == 0 || p.from[k] != p.from[k-1] {
				unit++
			}
			if unit%2 == parity {
				half = append(half, p.text[k])
				at = append(at, int32(k))
			}
		}
		w.scanned += len(half)
		s.ac.each(string(half), func(start, end int) {
			if end-start >= shortValue {
				from, to := p.span(text, int(at[start]), int(at[end-1])+1)
				found = append(found, [2]int{from, to})
			}
		})
	}
	return found
}

// wholeWord tells whether text[from:to] has no letter or digit right before or after.
func wholeWord(text string, from, to int) bool {
	if from > 0 {
		r, _ := utf8.DecodeLastRuneInString(text[:from])
		if isAlnum(fold(r)) {
			return false
		}
	}
	if to < len(text) {
		r, _ := utf8.DecodeRuneInString(text[to:])
		if isAlnum(fold(r)) {
			return false
		}
	}
	return true
}

// merge sorts spans and joins those that overlap or touch.
func merge(spans [][2]int) [][2]int {
	// insertion sort: spans come nearly ordered by end
	for i := 1; i < len(spans); i++ {
		for j := i; j > 0 && spans[j][0] < spans[j-1][0]; j-- {
			spans[j], spans[j-1] = spans[j-1], spans[j]
		}
	}
	out := spans[:1]
	for _, sp := range spans[1:] {
		last := &out[len(out)-1]
		if sp[0] <= last[1] {
			last[1] = max(last[1], sp[1])
			continue
		}
		out = append(out, sp)
	}
	return out
}

func isAlnum(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

// fold maps the runes a case change confuses to one: ſ and S to s, ı and I to i.
func fold(r rune) rune { return unicode.ToLower(unicode.ToUpper(r)) }

// projection is a text's letters and digits, folded (fold.go), with, for each of
// its bytes, where the rune it belongs to starts in the text.
type projection struct {
	text string
	from []int32
}

// span is the stretch of text whose projection is p.text[start:end]: from the start
// of the rune of its first byte to the end of the rune of its last.
func (p projection) span(text string, start, end int) (int, int) {
	from, last := int(p.from[start]), int(p.from[end-1])
	_, n := utf8.DecodeRuneInString(text[last:])
	return from, last + n
}

func project(s string) projection {
	b := make([]byte, 0, len(s))
	p := projection{from: make([]int32, 0, len(s))}
	for i, r := range s {
		var f string
		if r < utf8.RuneSelf { // ASCII, the common case, without the Unicode tables
			f = asciiFold[r]
			if len(f) == 1 {
				b = append(b, f[0])
				p.from = append(p.from, int32(i))
				continue
			}
		} else {
			// Each byte maps back to the whole rune, so that blanking never splits one.
			f = runeProjection(r)
		}
		b = p.write(b, f, i)
	}
	p.text = string(b)
	return p
}

// write appends f to b as the projection of the text's rune at from.
func (p *projection) write(b []byte, f string, from int) []byte {
	for range len(f) {
		p.from = append(p.from, int32(from))
	}
	return append(b, f...)
}

// rot13 turns each ASCII letter of v thirteen places on.
func rot13(v string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case 'a' <= r && r <= 'z':
			return 'a' + (r-'a'+13)%26
		case 'A' <= r && r <= 'Z':
			return 'A' + (r-'A'+13)%26
		}
		return r
	}, v)
}

// reverseRunes is v written backwards.
func reverseRunes(v string) string {
	r := []rune(v)
	slices.Reverse(r)
	return string(r)
}

// dateLayouts are the forms a date value is read from and written in.
var dateLayouts = []string{"2006-01-02", "02/01/2006", "01/02/2006", "02.01.2006", "20060102",
	"2 January 2006", "January 2, 2006", "2 Jan 2006", "Jan 2, 2006", "2006/01/02"}

// dateForms are the projections of a date value's other common forms; none for a
// value that is not a date.
func dateForms(v string) []string {
	v = strings.TrimSpace(v)
	var out []string
	for _, in := range dateLayouts {
		t, err := time.Parse(in, v)
		if err != nil {
			continue
		}
		for _, l := range dateLayouts {
			out = append(out, project(t.Format(l)).text)
		}
		// Day and month without leading zeros are common too: 17/4/1990, 4/17/1990.
		out = append(out, project(t.Format("2/1/2006")).text, project(t.Format("1/2/2006")).text)
	}
	return out
}

// Union is the values of every source together; the first error stops it, so that a
// caller fails closed.
func Union(sources ...Source) Source { return union(sources) }

type union []Source

func (u union) Protected(ctx context.Context, userID string) ([]string, error) {
	var out []string
	for _, s := range u {
		vs, err := s.Protected(ctx, userID)
		if err != nil {
			return nil, err
		}
		out = append(out, vs...)
	}
	return out, nil
}
