package redact

import (
	"strings"
	"unicode/utf8"
)

// Encoded forms: a value sent as base64 (a Basic credential, a token, a data field),
// base32, hex (a dump, a header, escapes such as \x41 or 0x41) or percent-encoded (a
// URL, a form body) shows none of its letters to the projection, so such runs are
// decoded and the decoded text scanned with the same set, its own encoded runs
// included, down to maxDepth encodings. A run whose decoded text holds a value is
// blanked whole: its bytes cannot be mapped back one by one.
//
// The work is bounded: what a scan decodes and scans again is charged to a budget
// linear in the text's length (workFactor), and a text that would take more is taken
// to hold a value, so that a hostile text can neither slip a value past the scan nor
// make it slow.
const (
	// maxDepth bounds the nesting of encodings looked into (percent-encoded base64
	// nested four deep is five), so that a text cannot make a scan recurse without end.
	maxDepth = 5
	// minDecoded is the most bytes of text a decoding must give to be scanned: four
	// carry the shortest value matched, unless a set has values of fewer bytes (a
	// letter of three bytes whose projection is long enough, as a Hangul syllable's
	// is), when it is their length (Set.minText).
	minDecoded = 4
	// workFactor and workSlack bound the bytes of decoded text one scan scans again:
	// workFactor times the text's length, and workSlack more for short texts.
	workFactor = 8
	workSlack  = 64 << 10
)

// work is what one scan has done and may still do.
type work struct {
	left    int // bytes of decoded text it may still scan
	scanned int // bytes of projection scanned, for the tests
	// bufs are the decoders' buffers, one for each depth, since a decoding at one
	// depth is scanned while the one it came from is still in use.
	bufs [maxDepth][]byte
}

func newWork(n int) *work { return &work{left: workFactor*n + workSlack} }

// b64 is the value of each byte in base64, either alphabet (standard and URL); -1
// for a byte of neither.
var b64 = alphabet("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", false)

// b32 and b32hex are the value of each byte in base32, standard and extended hex
// alphabets, either case; -1 for a byte of neither.
var (
	b32    = alphabet("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", true)
	b32hex = alphabet("0123456789ABCDEFGHIJKLMNOPQRSTUV", true)
)

func alphabet(chars string, anyCase bool) (t [256]int8) {
	for i := range t {
		t[i] = -1
	}
	for i := range len(chars) {
		t[chars[i]] = int8(i)
		if anyCase {
			t[strings.ToLower(chars[i : i+1])[0]] = int8(i)
		}
	}
	if !anyCase {
		t['-'], t['_'] = 62, 63
	}
	return t
}

// encoded appends to found the encoded runs of text whose decoded text holds a
// value.
func (s *Set) encoded(text string, depth int, w *work, found [][2]int) [][2]int {
	found = s.base64Runs(text, depth, w, found)
	found = s.base32Runs(text, depth, w, found)
	found = s.hexRuns(text, depth, w, found)
	return s.percentRuns(text, depth, w, found)
}

// holds tells whether decoded, a stretch of decoded text, holds a value, charging
// its scan to w; when w has no work left it answers yes (see above).
func (s *Set) holds(decoded []byte, depth int, w *work) bool {
	if w.left -= len(decoded); w.left < 0 {
		return true
	}
	if !enoughLetters(decoded) {
		return false
	}
	return s.spans(string(decoded), depth, w, nil) != nil
}

// enoughLetters tells whether decoded may project to minValue bytes, the fewest a
// value has: most stretches of text decoded from ordinary words (a word read as
// base64 or base32 by chance) are a few bytes with a letter or two, and are let go
// without a scan. A byte of a rune beyond ASCII counts six, as it may project to
// that many letters (U+FDFA, three bytes, is eighteen).
func enoughLetters(decoded []byte) bool {
	n := 0
	for _, c := range decoded {
		if c >= utf8.RuneSelf {
			n += 6
		} else {
			n += len(asciiFold[c])
		}
		if n >= minValue {
			return true
		}
	}
	return false
}

// anyText tells whether held holds for one of the stretches of decoded that read as
// text (valid UTF-8 without control characters) of least bytes or more. What
// lies around them (bytes of a glued prefix or of a path's next segment, decoded
// out of step) is left out, and bytes that never were text are not scanned at all.
func anyText(decoded []byte, least int, held func([]byte) bool) bool {
	start := 0
	for i := 0; i < len(decoded); {
		c, size := decoded[i], 1
		text := true
		if c < utf8.RuneSelf {
			text = c >= ' ' && c != 0x7f || c == '\t' || c == '\n' || c == '\r'
		} else {
			var r rune
			r, size = utf8.DecodeRune(decoded[i:])
			text = r != utf8.RuneError || size > 1
		}
		if !text {
			if i-start >= least && held(decoded[start:i]) {
				return true
			}
			start = i + size
		}
		i += size
	}
	return len(decoded)-start >= least && held(decoded[start:])
}

// base64Runs appends the base64 runs of text that hold a value. A run is a stretch
// of either alphabet's characters, with its padding; an encoding wrapped into lines
// or groups (every 4, 64 or 76 characters, by white space) is one run.
func (s *Set) base64Runs(text string, depth int, w *work, found [][2]int) [][2]int {
	for i := 0; i < len(text); {
		if b64[text[i]] < 0 {
			i++
			continue
		}
		j := i + 1
		for j < len(text) && b64[text[j]] >= 0 {
			j++
		}
		run, end := text[i:j], padEnd(text, j)
		if end == j && (j-i)%4 == 0 {
			if joined, e := wrapped(text, i, j); e > end {
				run, end = joined, e
			}
		}
		if len(run) >= (4*s.minText+2)/3 && s.base64Holds(run, depth, w) {
			found = append(found, [2]int{i, end})
		}
		i = end
	}
	return found
}

// padEnd is where the padding (= or ==) that follows text[:j] ends.
func padEnd(text string, j int) int {
	end := j
	for end < len(text) && end-j < 2 && text[end] == '=' {
		end++
	}
	return end
}

// wrapped joins the base64 run text[i:j], of a length that is a multiple of four,
// with the runs that follow it after white space while they have its length: it
// returns them without the white space and the end of the last, or j when no run
// follows. The last may be shorter when it is padded or comes after two whole ones,
// so that a word after one base64 run is not taken for its end.
func wrapped(text string, i, j int) (string, int) {
	n := j - i
	var b strings.Builder
	end, groups := j, 1
	for {
		k := end
		for k < len(text) && k-end < 2 && (text[k] == ' ' || text[k] == '\n' || text[k] == '\r' || text[k] == '\t') {
			k++
		}
		if k == end {
			break
		}
		m := k
		for m < len(text) && b64[text[m]] >= 0 {
			m++
		}
		pad := padEnd(text, m)
		if m == k || m-k > n || m-k < n && pad == m && groups < 2 {
			break
		}
		if b.Len() == 0 {
			b.WriteString(text[i:j])
		}
		b.WriteString(text[k:m])
		end, groups = pad, groups+1
		if m-k < n || pad > m {
			break // the last group
		}
	}
	if b.Len() == 0 {
		return "", j
	}
	return b.String(), end
}

// base64Holds tells whether run, a run of base64 characters, decodes to a text
// holding a value, decoded from each of its first four characters: a character
// glued in front of an encoding (a name, a path, a sign) puts it out of step by one
// to three characters, or by a multiple of four more, which anyText leaves out.
func (s *Set) base64Holds(run string, depth int, w *work) bool {
	for k := 0; k < 4 && len(run)-k >= (4*s.minText+2)/3; k++ {
		w.bufs[depth] = decodeBits(run[k:], &b64, 6, w.bufs[depth][:0])
		if anyText(w.bufs[depth], s.minText, func(d []byte) bool { return s.holds(d, depth+1, w) }) {
			return true
		}
	}
	return false
}

// decodeBits appends to buf the bytes run encodes, bits bits a character after the
// alphabet t; bits left over at the end are dropped.
func decodeBits(run string, t *[256]int8, bits int, buf []byte) []byte {
	var acc uint32
	n := 0
	for i := 0; i < len(run); i++ {
		acc = acc<<bits | uint32(t[run[i]])
		if n += bits; n >= 8 {
			n -= 8
			buf = append(buf, byte(acc>>n))
		}
	}
	return buf
}

// base32Runs appends the base32 runs of text, in the standard or the extended hex
// alphabet, either case, padded or not, that hold a value. A run is a whole word:
// letters and digits with none other around them.
func (s *Set) base32Runs(text string, depth int, w *work, found [][2]int) [][2]int {
	for i := 0; i < len(text); {
		if !isASCIIAlnum(text[i]) {
			i++
			continue
		}
		j := i + 1
		for j < len(text) && isASCIIAlnum(text[j]) {
			j++
		}
		end := j
		for end < len(text) && end-j < 6 && text[end] == '=' {
			end++
		}
		word := text[i:j]
		if len(word) >= (8*s.minText+4)/5 && (end == len(text) || text[end] >= utf8.RuneSelf || !isAlnum(rune(text[end]))) {
			for _, t := range []*[256]int8{&b32, &b32hex} {
				if !inAlphabet(word, t) {
					continue
				}
				w.bufs[depth] = decodeBits(word, t, 5, w.bufs[depth][:0])
				if anyText(w.bufs[depth], s.minText, func(d []byte) bool { return s.holds(d, depth+1, w) }) {
					found = append(found, [2]int{i, end})
					break
				}
			}
		}
		i = end
	}
	return found
}

func inAlphabet(word string, t *[256]int8) bool {
	for i := range len(word) {
		if t[word[i]] < 0 {
			return false
		}
	}
	return true
}

// hexRuns appends the hex runs of text that hold a value: hex digits, either case,
// written together (68756e74) or in groups, each maybe after 0x or \x, apart by at
// most one of " :,;-" and a space (68 75 6e, 68:75:6E, \x68\x75, 0x68, 0x75).
func (s *Set) hexRuns(text string, depth int, w *work, found [][2]int) [][2]int {
	var digits []byte
	for i := 0; i < len(text); {
		from, to, next := hexGroup(text, i)
		if to-from < 2 || i > 0 && from == i && isASCIIAlnum(text[i-1]) {
			i = max(next, i+1)
			continue
		}
		start := i
		digits = append(digits[:0], text[from:to]...)
		end := to
		for {
			k := end
			for k < len(text) && k-end < 2 && strings.IndexByte(" :,;-", text[k]) >= 0 {
				k++
			}
			f, t, _ := hexGroup(text, k)
			if t-f < 2 || k == end && f == k {
				break // not a group, or one glued on without a prefix
			}
			digits = append(digits, text[f:t]...)
			end = t
		}
		if len(digits) >= 2*s.minText {
			for k := 0; k < 2; k++ {
				buf := w.bufs[depth][:0]
				for d := k; d+1 < len(digits); d += 2 {
					buf = append(buf, byte(unhex(digits[d])<<4|unhex(digits[d+1])))
				}
				w.bufs[depth] = buf
				if anyText(buf, s.minText, func(d []byte) bool { return s.holds(d, depth+1, w) }) {
					found = append(found, [2]int{start, end})
					break
				}
			}
		}
		i = max(end, i+1)
	}
	return found
}

// hexGroup reads the group of hex digits at text[i:], after its 0x or \x if it has
// one: the digits are text[from:to], and none when they run on into a letter or
// digit that is not hex (a word that merely starts with hex letters); next is where
// to look on.
func hexGroup(text string, i int) (from, to, next int) {
	from = i
	if i+1 < len(text) && (text[i] == '0' || text[i] == '\\') && (text[i+1] == 'x' || text[i+1] == 'X') {
		from = i + 2
	}
	to = from
	for to < len(text) && unhex(text[to]) >= 0 {
		to++
	}
	if to < len(text) && isASCIIAlnum(text[to]) && !(text[to] == '0' && to+1 < len(text) && (text[to+1] == 'x' || text[to+1] == 'X')) {
		for to < len(text) && isASCIIAlnum(text[to]) {
			to++
		}
		return from, from, to
	}
	return from, to, to
}

// percentRuns appends the percent-encoded runs of text that hold a value.
func (s *Set) percentRuns(text string, depth int, w *work, found [][2]int) [][2]int {
	if strings.IndexByte(text, '%') < 0 {
		return found
	}
	for i := 0; i < len(text); {
		if text[i] != '%' || !escape(text, i) {
			i++
			continue
		}
		from, to := i, i
		for from > 0 && !percentStop(text[from-1]) {
			from--
		}
		for to < len(text) && !percentStop(text[to]) {
			to++
		}
		if s.holds([]byte(unescape(text[from:to])), depth+1, w) {
			found = append(found, [2]int{from, to})
		}
		i = to
	}
	return found
}

// escape tells whether text[i] starts a percent escape: % and two hex digits.
func escape(text string, i int) bool {
	return i+2 < len(text) && text[i] == '%' && unhex(text[i+1]) >= 0 && unhex(text[i+2]) >= 0
}

func unhex(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// percentStop tells whether c ends a percent-encoded run: white space, a control
// byte, what quotes or brackets a URL in text, or what parts a URL (an encoded value
// has its own escaped), so that a URL loses the part holding a value, not all of it.
func percentStop(c byte) bool {
	return c <= ' ' || c == 0x7f || strings.IndexByte(`"'<>()[]{}`+"`&=?#/;", c) >= 0
}

// unescape decodes the percent escapes of run, and + as a space; anything else stays
// as it is.
func unescape(run string) string {
	var b strings.Builder
	b.Grow(len(run))
	for i := 0; i < len(run); i++ {
		switch {
		case escape(run, i):
			b.WriteByte(byte(unhex(run[i+1])<<4 | unhex(run[i+2])))
			i += 2
		case run[i] == '+':
			b.WriteByte(' ')
		default:
			b.WriteByte(run[i])
		}
	}
	return b.String()
}
