package redact

import (
	"slices"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/mtibben/confusables"
	"golang.org/x/text/unicode/norm"
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
// The skeletons are case-sensitive where the projection is not. A letter is written
// after its own skeleton when that is ASCII (the Greek ν reads as v, its capital Ν as
// N), else after that of its small letter or its capital (the Cyrillic в, whose
// capital В reads as B). So a capital and its small letter may be written apart; a
// value is matched in its upper and lower case too (Set.New), for the text written
// all in capitals or all in small letters.

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

// runeFolds holds the projection of each non-ASCII rune seen so far that is a letter
// or digit or decomposes: a skeleton costs two normalisations, and a compatibility
// form may decompose to many letters (U+FDFA to 18), which a hostile text of them
// would otherwise pay on every rune. It holds at most one entry for each such rune
// Unicode has, some two hundred thousand.
var runeFolds sync.Map // rune -> string

// runeProjection is the projection of r, a non-ASCII rune: a compatibility form (the
// full-width Ａ, the ligature ﬁ, the circled ①) reads as what it decomposes to, and an
// accented letter as its base letter; every rune of the decomposition that is a
// letter or digit counts, folded, the marks do not.
func runeProjection(r rune) string {
	if w, ok := runeFolds.Load(r); ok {
		return w.(string)
	}
	var buf [utf8.UTFMax]byte
	d := norm.NFKD.Properties(buf[:utf8.EncodeRune(buf[:], r)]).Decomposition()
	if d == nil && !isAlnum(fold(r)) {
		return "" // left out of the cache, which stays bounded
	}
	var w string
	if d == nil {
		w = foldRune(r)
	} else {
		for _, dr := range string(d) {
			w += foldRune(dr)
		}
	}
	runeFolds.Store(r, w)
	return w
}

// foldRune is the projection of r, a rune that does not decompose.
func foldRune(r rune) string {
	if r < utf8.RuneSelf {
		return asciiFold[r]
	}
	if d, ok := digitValue(r); ok {
		return asciiFold['0'+d]
	}
	return foldLetter(r)
}

// foldLetter is the projection of r, a non-ASCII rune that is not a decimal digit:
// "" when it is not a letter.
func foldLetter(r rune) string {
	if !isAlnum(fold(r)) { // a mark whose capital is a letter (ͅ, Ι) counts, as it did
		return ""
	}
	w := ""
	for _, c := range []rune{r, unicode.ToLower(r), unicode.ToUpper(r)} {
		if w = asciiProjection(confusables.Skeleton(string(c))); w != "" {
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
