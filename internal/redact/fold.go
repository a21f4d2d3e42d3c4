package redact

import (
	"slices"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/mtibben/confusables"
)

// Folding: each letter or digit of a text, and of a value, is written in the
// projection as what people read it as, so that look-alikes match:
//   - every decimal digit of any script (Arabic-Indic ٤, Devanagari ४) is its ASCII
//     digit;
//   - a letter is its confusables skeleton, after Unicode's UTS #39 data (the
//     Cyrillic а and the Greek Α read as a, the Cyrillic З as 3), lower-cased;
//   - the ASCII letters and digits that case and skeleton together make one are
//     written as one: 0, o and O as o; 1, i, I and l as i; m and M as the rn they
//     look like.
//
// The skeletons are case-sensitive where the projection is not, so a letter is
// written after the skeleton of its capital when that is ASCII (the Cyrillic в, whose
// capital В reads as B), else after that of its small letter (the Cyrillic һ reads
// as h): a capital and its small letter are written alike.

// asciiFold is the projection of each ASCII byte: "" for what is not a letter or
// digit. It unites each ASCII letter or digit with its case and its skeleton, and
// writes each class as its least small letter (or least member).
var asciiFold = func() (t [utf8.RuneSelf]string) {
	var parent [utf8.RuneSelf]byte
	for i := range parent {
		parent[i] = byte(i)
	}
	find := func(c byte) byte {
		for parent[c] != c {
			c = parent[c]
		}
		return c
	}
	union := func(a, b byte) {
		if a, b = find(a), find(b); a != b {
			parent[max(a, b)] = min(a, b)
		}
	}
	multi := map[byte]string{}
	for c := byte(0); c < utf8.RuneSelf; c++ {
		if !isASCIIAlnum(c) {
			continue
		}
		if 'A' <= c && c <= 'Z' {
			union(c, c+'a'-'A')
		}
		switch k := confusables.Skeleton(string(rune(c))); {
		case len(k) == 1 && isASCIIAlnum(k[0]):
			union(c, k[0])
		case len(k) > 1:
			multi[c] = k
		}
	}
	var rep [utf8.RuneSelf]byte
	for c := byte('z'); c >= 'a'; c-- {
		rep[find(c)] = c
	}
	written := func(c byte) string {
		if r := rep[find(c)]; r != 0 {
			return string(rune(r))
		}
		return string(rune(find(c)))
	}
	for c := byte(0); c < utf8.RuneSelf; c++ {
		if isASCIIAlnum(c) {
			t[c] = written(c)
		}
	}
	// A letter whose skeleton is several (m is rn), and its class, is written as
	// their projection.
	for c, k := range multi {
		var s string
		for i := range len(k) {
			if k[i] < utf8.RuneSelf {
				s += t[k[i]]
			}
		}
		for d := byte(0); d < utf8.RuneSelf; d++ {
			if t[d] != "" && find(d) == find(c) {
				t[d] = s
			}
		}
	}
	return t
}()

// runeFolds holds the projection of each non-ASCII letter seen so far: a skeleton
// costs two normalisations, which a hostile text of look-alikes would otherwise pay
// on every rune. It holds at most one entry for each letter Unicode has.
var runeFolds sync.Map // rune -> string

// foldLetter is the projection of r, a non-ASCII rune that is not a decimal digit:
// "" when it is not a letter.
func foldLetter(r rune) string {
	if !isAlnum(fold(r)) { // a mark whose capital is a letter (ͅ, Ι) counts, as it did
		return ""
	}
	if w, ok := runeFolds.Load(r); ok {
		return w.(string)
	}
	w := ""
	for _, k := range []string{confusables.Skeleton(string(unicode.ToUpper(r))), confusables.Skeleton(string(unicode.ToLower(r)))} {
		if w = asciiProjection(k); w != "" {
			break
		}
	}
	if w == "" {
		for _, kr := range confusables.Skeleton(string(unicode.ToUpper(r))) {
			if f := fold(kr); isAlnum(f) {
				w += string(f)
			}
		}
	}
	runeFolds.Store(r, w)
	return w
}

// asciiProjection is the projection of k when its letters and digits are all ASCII
// and it has one; "" otherwise.
func asciiProjection(k string) string {
	var w string
	for _, r := range k {
		switch {
		case r < utf8.RuneSelf:
			w += asciiFold[r]
		case isAlnum(r):
			return ""
		}
	}
	return w
}

// digitValue is the value of r when it is a decimal digit (unicode.Nd) of any
// script. Unicode keeps each script's digits 0 to 9 in ten consecutive code points,
// so a digit's value is its distance from the start of its range, modulo ten.
func digitValue(r rune) (int, bool) {
	if r < utf8.RuneSelf {
		if '0' <= r && r <= '9' {
			return int(r - '0'), true
		}
		return 0, false
	}
	in := func(lo, hi rune) int {
		switch {
		case hi < r:
			return -1
		case lo > r:
			return 1
		}
		return 0
	}
	if i, ok := slices.BinarySearchFunc(unicode.Nd.R16, r, func(g unicode.Range16, _ rune) int { return in(rune(g.Lo), rune(g.Hi)) }); ok {
		return int(r-rune(unicode.Nd.R16[i].Lo)) % 10, true
	}
	if i, ok := slices.BinarySearchFunc(unicode.Nd.R32, r, func(g unicode.Range32, _ rune) int { return in(rune(g.Lo), rune(g.Hi)) }); ok {
		return int(r-rune(unicode.Nd.R32[i].Lo)) % 10, true
	}
	return 0, false
}

func isASCIIAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}
