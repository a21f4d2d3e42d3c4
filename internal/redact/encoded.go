package redact

import "strings"

// Encoded forms: a value sent as base64 (a Basic credential, a token, a data field)
// or percent-encoded (a URL, a form body) shows none of its letters to the
// projection, so such runs are decoded and the decoded text scanned with the same
// set, its own encoded runs included, down to maxDepth encodings. A run whose
// decoded text holds a value is blanked whole: its bytes cannot be mapped back one by
// one.
const (
	// maxDepth bounds the nesting of encodings looked into (percent-encoded base64 of
	// base64 is three), so that a hostile text cannot make a scan recurse without end.
	maxDepth = 3
	// minEncoded is the shortest base64 run decoded: six characters carry the four
	// bytes of the shortest value matched.
	minEncoded = 6
	// maxSeparators bounds the decodings of one base64 run of the text itself that
	// start after one of its + / - _ (a URL's path or a name glued in front of the
	// encoding), so that a run of separators costs a few decodings, not one per
	// separator; a decoded text's runs are decoded from their start only, so that
	// nesting does not multiply them.
	maxSeparators = 16
	// minDecoded is the fewest bytes of text a decoding must give to be scanned.
	minDecoded = 4
)

// b64 is the value of each byte in base64, either alphabet (standard and URL); -1
// for a byte of neither.
var b64 = func() (t [256]int8) {
	for i := range t {
		t[i] = -1
	}
	const std = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	for i := range len(std) {
		t[std[i]] = int8(i)
	}
	t['-'], t['_'] = 62, 63
	return t
}()

// encoded appends to found the base64 and percent-encoded runs of text whose
// decoded text holds a value.
func (s *Set) encoded(text string, depth int, found [][2]int) [][2]int {
	for i := 0; i < len(text); {
		if b64[text[i]] < 0 {
			i++
			continue
		}
		j, glued := i+1, false
		for j < len(text) && b64[text[j]] >= 0 {
			glued = glued || b64[text[j]] >= 62
			j++
		}
		end := j
		for end < len(text) && end-j < 2 && text[end] == '=' {
			end++
		}
		if j-i >= minEncoded && s.base64Holds(text[i:j], glued, depth) {
			found = append(found, [2]int{i, end})
		}
		i = end
	}
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
		if s.spans(unescape(text[from:to]), depth+1, nil) != nil {
			found = append(found, [2]int{from, to})
		}
		i = to
	}
	return found
}

// base64Holds tells whether run, a run of base64 characters, decodes to a text
// holding a value: from its start or, when it has separators (+ / - _) and is of the
// text itself, from just after one of its first ones.
func (s *Set) base64Holds(run string, separators bool, depth int) bool {
	var buf [256]byte
	tries := 0
	if separators && depth == 0 {
		tries = maxSeparators
	}
	for k := 0; len(run)-k >= minEncoded; tries-- {
		if d := decode64(run[k:], buf[:0]); len(d) >= minDecoded && s.spans(string(d), depth+1, nil) != nil {
			return true
		}
		if tries == 0 {
			return false
		}
		for k < len(run) && b64[run[k]] < 62 {
			k++
		}
		k++
	}
	return false
}

// decode64 appends to buf the text run encodes, in either alphabet: the bytes it
// decodes to up to the first that cannot be text (a control byte, or a byte out of
// place in UTF-8), which most words that merely look like base64 show at once and an
// encoding followed by more of the run (a path's next segment) shows where it ends.
func decode64(run string, buf []byte) []byte {
	var acc uint32
	bits, follow := 0, 0 // follow: continuation bytes the last UTF-8 lead byte wants
	whole := len(buf)    // buf up to the last whole character
	for i := 0; i < len(run); i++ {
		acc = acc<<6 | uint32(b64[run[i]])
		if bits += 6; bits < 8 {
			continue
		}
		bits -= 8
		c := byte(acc >> bits)
		switch {
		case follow > 0:
			if c&0xc0 != 0x80 {
				return buf[:whole]
			}
			follow--
		case c < 0x20 && c != '\t' && c != '\n' && c != '\r' || c == 0x7f:
			return buf[:whole]
		case c < 0x80:
		case 0xc2 <= c && c <= 0xdf:
			follow = 1
		case 0xe0 <= c && c <= 0xef:
			follow = 2
		case 0xf0 <= c && c <= 0xf4:
			follow = 3
		default:
			return buf[:whole]
		}
		buf = append(buf, c)
		if follow == 0 {
			whole = len(buf)
		}
	}
	return buf[:whole]
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
