// Package jsonstr appends a string as encoding/json writes it, for the encoders that
// write their JSON by hand (the search answer, the site's manifest) because reflection
// costs too much where they run, and that must answer the same bytes as json.Marshal.
package jsonstr

import "unicode/utf8"

// plain holds the ASCII bytes json.Marshal writes as they are: all but the control
// characters, the quote, the backslash and the three it escapes for HTML (<, >, &).
var plain = func() (p [utf8.RuneSelf]bool) {
	for c := byte(' '); c < utf8.RuneSelf; c++ {
		p[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return p
}()

const hex = "0123456789abcdef"

// Append appends s, quoted, as json.Marshal encodes a string, without its allocation:
// the quote and the backslash escaped, \b, \f, \n, \r and \t by their letters, the
// other control characters and <, > and & as \u00XX, U+2028 and U+2029 escaped (a
// JavaScript parser takes them for line ends), and each byte of invalid UTF-8 as
// \ufffd. (Go's own quoting, strconv.Quote, is not JSON: it writes \a, \v, \x01 and
// \U0010ffff, which parsers refuse.)
func Append(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if plain[b] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '"', '\\':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
