package telemetry

import (
	"math"
	"strconv"
	"time"
	"unicode"
	"unicode/utf8"
)

// accessLine is what the access log says of one request.
type accessLine struct {
	method, path, route string
	status              int
	bytes               int64
	took                time.Duration
	remote              string
	req                 *Request
	userAgent           string
}

// appendAccessLine appends the line slog's text or JSON handler would write for the
// access record, byte for byte (TestAccessLineIsSlogs), without an allocation.
func appendAccessLine(b []byte, json bool, now time.Time, l *accessLine) []byte {
	f := lineFormat{b: b, json: json}
	if json {
		f.b = append(f.b, `{"time":"`...)
		f.b = now.AppendFormat(f.b, time.RFC3339Nano)
		f.b = append(f.b, `","level":"INFO","msg":"request"`...)
	} else {
		f.b = append(f.b, "time="...)
		f.b = appendRFC3339Millis(f.b, now)
		f.b = append(f.b, " level=INFO msg=request"...)
	}
	f.str("method", l.method)
	f.str("path", l.path)
	f.str("route", l.route)
	f.int("status", int64(l.status))
	f.int("bytes", l.bytes)
	f.float("ms", float64(l.took.Microseconds())/1000)
	f.str("remote", l.remote)
	f.str("request_id", l.req.ID)
	f.str("trace_id", l.req.TraceID)
	f.str("span_id", l.req.SpanID)
	if l.req.ParentID != "" {
		f.str("parent_id", l.req.ParentID)
	}
	if l.userAgent != "" {
		f.str("user_agent", l.userAgent)
	}
	if json {
		f.b = append(f.b, '}')
	}
	return append(f.b, '\n')
}

type lineFormat struct {
	b    []byte
	json bool
}

// key starts an attribute; keys are plain words, which neither format quotes or
// escapes.
func (f *lineFormat) key(k string) {
	if f.json {
		f.b = append(f.b, ',', '"')
		f.b = append(f.b, k...)
		f.b = append(f.b, '"', ':')
	} else {
		f.b = append(f.b, ' ')
		f.b = append(f.b, k...)
		f.b = append(f.b, '=')
	}
}

func (f *lineFormat) str(k, v string) {
	f.key(k)
	switch {
	case f.json:
		f.b = append(f.b, '"')
		f.b = appendEscapedJSONString(f.b, v)
		f.b = append(f.b, '"')
	case needsQuoting(v):
		f.b = strconv.AppendQuote(f.b, v)
	default:
		f.b = append(f.b, v...)
	}
}

func (f *lineFormat) int(k string, v int64) {
	f.key(k)
	f.b = strconv.AppendInt(f.b, v, 10)
}

func (f *lineFormat) float(k string, v float64) {
	f.key(k)
	if !f.json {
		f.b = strconv.AppendFloat(f.b, v, 'g', -1, 64)
		return
	}
	// As encoding/json writes a float64, which slog's JSON handler calls.
	format := byte('f')
	if abs := math.Abs(v); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	f.b = strconv.AppendFloat(f.b, v, format, -1, 64)
	if format == 'e' {
		if n := len(f.b); n >= 4 && f.b[n-4] == 'e' && f.b[n-3] == '-' && f.b[n-2] == '0' {
			f.b[n-2] = f.b[n-1]
			f.b = f.b[:n-1]
		}
	}
}

// What follows is log/slog's own formatting of times and strings, which its handlers
// do not export.

// appendRFC3339Millis is the text handler's time: RFC 3339 to the millisecond.
func appendRFC3339Millis(b []byte, t time.Time) []byte {
	const prefixLen = len("2006-01-02T15:04:05.000")
	n := len(b)
	t = t.Truncate(time.Millisecond).Add(time.Millisecond / 10)
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b[:n+prefixLen], b[n+prefixLen+1:]...) // drop the 4th digit
}

// safeSet holds the ASCII characters a JSON string holds unescaped: all but the
// control characters, '"' and '\\'.
var safeSet = func() (s [utf8.RuneSelf]bool) {
	for c := ' '; c < utf8.RuneSelf; c++ {
		s[c] = c != '"' && c != '\\'
	}
	return s
}()

// needsQuoting tells whether the text handler quotes s.
func needsQuoting(s string) bool {
	if len(s) == 0 {
		return true
	}
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			if b != '\\' && (b == ' ' || b == '=' || !safeSet[b]) {
				return true
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError || unicode.IsSpace(r) || !unicode.IsPrint(r) {
			return true
		}
		i += size
	}
	return false
}

const hexDigits = "0123456789abcdef"

// appendEscapedJSONString is the JSON handler's string, without its quotes. It is
// slog's, not json.Marshal's (internal/jsonstr): it leaves <, > and & as they are and
// writes \b and \f as \u0008 and \u000c.
func appendEscapedJSONString(buf []byte, s string) []byte {
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if safeSet[b] {
				i++
				continue
			}
			buf = append(buf, s[start:i]...)
			buf = append(buf, '\\')
			switch b {
			case '\\', '"':
				buf = append(buf, b)
			case '\n':
				buf = append(buf, 'n')
			case '\r':
				buf = append(buf, 'r')
			case '\t':
				buf = append(buf, 't')
			default:
				buf = append(buf, 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			buf = append(buf, s[start:i]...)
			buf = append(buf, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			buf = append(buf, s[start:i]...)
			buf = append(buf, `\u202`...)
			buf = append(buf, hexDigits[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	return append(buf, s[start:]...)
}
