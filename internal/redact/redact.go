// Package redact finds a user's protected values in text, in the forms people and
// models write them, and blanks them out before the text leaves for a language
// model or is stored.
//
// Text and values are compared on their projection: the letters and digits alone,
// in their compatibility forms without accents, lower-cased, so that "4242
// 4242-4242 4242", "ADA@Example.com", "ada @ example . com" and the full-width
// "ＡＤＡ＠ｅｘａｍｐｌｅ．ｃｏｍ" all match their value. A value that reads as a date also
// matches its other common forms (1990-04-17, 17/04/1990, 04/17/1990, 17.04.1990,
// 19900417, 17 April 1990, April 17, 1990, 17 Apr 1990). Every form is a pattern of
// one Aho–Corasick automaton, so a text is scanned once whatever the number of
// values. Runs of base64 and of percent-encoding are decoded and scanned too, since
// an agent may carry a value in a token, a header or a URL.
package redact

import (
	"context"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
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
	for _, v := range values {
		add(project(v).text)
		for _, d := range dateForms(v) {
			add(d)
		}
	}
	s := &Set{n: len(patterns)}
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

// Redact returns text with every protected value found replaced by Placeholder,
// and how many stretches it replaced.
func (s *Set) Redact(text string) (string, int) {
	return s.scan(text, true)
}

func (s *Set) scan(text string, rewrite bool) (string, int) {
	if s == nil || s.ac == nil || text == "" {
		return text, 0
	}
	spans := s.spans(text, 0, nil)
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
// decoded from.
func (s *Set) spans(text string, depth int, found [][2]int) [][2]int {
	p := project(text)
	if len(p.text) > 0 {
		s.ac.each(p.text, func(start, end int) {
			from, to := p.from[start], p.to[end-1]
			if end-start < shortValue && !wholeWord(text, from, to) {
				return
			}
			found = append(found, [2]int{from, to})
		})
	}
	if depth < maxDepth {
		found = s.encoded(text, depth, found)
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

// projection is a text's letters and digits, lower-cased, with, for each of its
// bytes, where the rune it belongs to starts and ends in the text.
type projection struct {
	text     string
	from, to []int
}

func project(s string) projection {
	var b strings.Builder
	b.Grow(len(s))
	p := projection{from: make([]int, 0, len(s)), to: make([]int, 0, len(s))}
	for i, r := range s {
		if r < utf8.RuneSelf { // ASCII, the common case, without the Unicode tables
			switch {
			case 'a' <= r && r <= 'z' || '0' <= r && r <= '9':
			case 'A' <= r && r <= 'Z':
				r += 'a' - 'A'
			default:
				continue
			}
			b.WriteByte(byte(r))
			p.from = append(p.from, i)
			p.to = append(p.to, i+1)
			continue
		}
		end := i + utf8.RuneLen(r)
		if r == utf8.RuneError {
			end = i + 1
		}
		// A compatibility form (full-width Ａ, the ligature ﬁ, the circled ①) reads
		// as what it decomposes to, and an accented letter as its base letter: every
		// rune of its decomposition that is a letter or digit counts, the marks do not.
		// Each maps back to the whole rune, so that blanking never splits one.
		if d := norm.NFKD.PropertiesString(s[i:end]).Decomposition(); d != nil {
			for _, dr := range string(d) {
				p.add(&b, dr, i, end)
			}
			continue
		}
		p.add(&b, r, i, end)
	}
	p.text = b.String()
	return p
}

// add writes r, folded, to b when it is a letter or digit, as the projection of the
// text's bytes from to end.
func (p *projection) add(b *strings.Builder, r rune, from, end int) {
	f := fold(r)
	if !isAlnum(f) {
		return
	}
	n := b.Len()
	b.WriteRune(f)
	for range b.Len() - n {
		p.from = append(p.from, from)
		p.to = append(p.to, end)
	}
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
