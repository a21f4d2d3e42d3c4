package redact

import (
	"context"
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/mtibben/confusables"
	"golang.org/x/text/unicode/norm"

	"github.com/waystation/waystation/internal/redact/redacttest"
)

func TestRedactFindsValuesInTheFormsPeopleWriteThem(t *testing.T) {
	s := New([]string{"4242424242424242", "Ada.Lovelace@Example.com", "+44 20 7946 0958", "1990-04-17", "1 Canary Row", "zebra-quartz-7731", "123"})
	for _, c := range []struct{ in, want string }{
		{"card 4242 4242 4242 4242 please", "card [redacted] please"},
		{"card 4242-4242-4242-4242.", "card [redacted]."},
		{"card4242424242424242", "card[redacted]"},
		{"mail ADA.LOVELACE@example.COM now", "mail [redacted] now"},
		{"mail ada . lovelace @ example . com", "mail [redacted]"},
		{"call 020 7946 0958 or +44 (20) 7946-0958", "call 020 7946 0958 or +[redacted]"},
		{"born 17/04/1990", "born [redacted]"},
		{"born 04/17/1990", "born [redacted]"},
		{"born 17.04.1990", "born [redacted]"},
		{"born 19900417", "born [redacted]"},
		{"born 17 April 1990 in town", "born [redacted] in town"},
		{"born April 17, 1990", "born [redacted]"},
		{"born 17/4/1990", "born [redacted]"},
		{"at 1 canary   ROW", "at [redacted]"},
		{"code ZEBRA QUARTZ 7731!", "code [redacted]!"},
		{"code 123 is short and kept", "code 123 is short and kept"},
		{"nothing here 4242 4242", "nothing here 4242 4242"},
		{"born 1990-04-18", "born 1990-04-18"},
		{"", ""},
	} {
		got, n := s.Redact(c.in)
		if got != c.want {
			t.Errorf("%q: %q, want %q", c.in, got, c.want)
		}
		if (n > 0) != (got != c.in) || s.Contains(c.in) != (n > 0) {
			t.Errorf("%q: count %d, contains %v", c.in, n, s.Contains(c.in))
		}
	}
	// Two values, overlapping or side by side, are counted apart unless they touch.
	got, n := s.Redact("4242424242424242 and 1990-04-17")
	if got != "[redacted] and [redacted]" || n != 2 {
		t.Errorf("two: %q %d", got, n)
	}
}

// encodings are the forms a value takes in a token, a header or a URL.
var encodings = map[string]func(string) string{
	"base64":         func(v string) string { return base64.StdEncoding.EncodeToString([]byte(v)) },
	"base64 raw":     func(v string) string { return base64.RawStdEncoding.EncodeToString([]byte(v)) },
	"base64 url":     func(v string) string { return base64.URLEncoding.EncodeToString([]byte(v)) },
	"base64 raw url": func(v string) string { return base64.RawURLEncoding.EncodeToString([]byte(v)) },
	"percent every byte": func(v string) string {
		var b strings.Builder
		for i := range len(v) {
			fmt.Fprintf(&b, "%%%02X", v[i])
		}
		return b.String()
	},
	"query escape":   url.QueryEscape,
	"percent of b64": func(v string) string { return url.QueryEscape(base64.StdEncoding.EncodeToString([]byte(v))) },
	"b64 of full":    func(v string) string { return base64.StdEncoding.EncodeToString([]byte(redacttest.FullWidth(v))) },
}

// TestRedactSeesCompatibilityFormsAndEncodings: a value written in full-width
// letters and digits, or with accents, matches; a value inside a base64 run (either
// alphabet, padded or not) or a percent-encoded run makes the whole run blanked, in
// Contains as in Redact; text that only looks encoded is left alone.
func TestRedactSeesCompatibilityFormsAndEncodings(t *testing.T) {
	const code, card, pin = "ZEBRA-quartz-7731", "4111111111111111", "7731"
	s := New([]string{code, card, "Café Crème", pin})
	for _, c := range []struct{ in, want string }{
		{"code ＺＥＢＲＡ－ｑｕａｒｔｚ－７７３１ ok", "code [redacted] ok"},
		{"card ４１１１ １１１１ １１１１ １１１１.", "card [redacted]."},
		{"order a cafe creme", "order a [redacted]"},
		{"order a CAFÉ CRÈME", "order a [redacted]"},
		{"ligature ﬁne ①②", "ligature ﬁne ①②"},
		{"pin ７７３１ now", "pin [redacted] now"},
		{"Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte("ada:"+code)), "Authorization: Basic [redacted]"},
		{"token=" + base64.RawURLEncoding.EncodeToString([]byte(`{"card":"`+card+`"}`)) + "&x=1", "token=[redacted]&x=1"},
		{"path/to/" + base64.StdEncoding.EncodeToString([]byte(code)), "[redacted]"},
		{"GET /functions/v1/api/sessions/" + base64.RawURLEncoding.EncodeToString([]byte(code)) + "/events?limit=1", "GET [redacted]?limit=1"},
		{"https://shop.example/pay?c=4111%201111%201111%201111&n=2", "https://shop.example/pay?c=[redacted]&n=2"},
		{"see https://x.example/?q=%5A%45%42%52%41%2D%71%75%61%72%74%7A%2D%37%37%33%31 here", "see https://x.example/?q=[redacted] here"},
		{"short " + base64.StdEncoding.EncodeToString([]byte(pin)) + " too", "short [redacted] too"},
		{"Please ship the parcel to the address we discussed", "Please ship the parcel to the address we discussed"},
		{"aGVsbG8gd29ybGQ= 100% sure, 50%25 off", "aGVsbG8gd29ybGQ= 100% sure, 50%25 off"},
	} {
		got, n := s.Redact(c.in)
		if got != c.want {
			t.Errorf("%q: %q, want %q", c.in, got, c.want)
		}
		if (n > 0) != (got != c.in) || s.Contains(c.in) != (n > 0) {
			t.Errorf("%q: count %d, contains %v", c.in, n, s.Contains(c.in))
		}
	}
	for name, enc := range encodings {
		for _, v := range []string{code, card, pin} {
			in := "value " + enc(v) + " end"
			if got, n := s.Redact(in); got != "value [redacted] end" || n != 1 || !s.Contains(in) {
				t.Errorf("%s of %q: %q %d", name, v, got, n)
			}
		}
	}
}

func TestShortValuesMatchOnlyAsWholeWords(t *testing.T) {
	s := New([]string{"7731"})
	for in, want := range map[string]string{
		"pin 7731.":     "pin [redacted].",
		"pin 77 31":     "pin [redacted]",
		"id 177310":     "id 177310",
		"pin is 7731":   "pin is [redacted]",
		"room a7731":    "room a7731",
		"7731":          "[redacted]",
		"call 7731 now": "call [redacted] now",
	} {
		if got, _ := s.Redact(in); got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
}

func TestEmptyAndNilSetsFindNothing(t *testing.T) {
	var nilSet *Set
	for _, s := range []*Set{nilSet, New(nil), New([]string{"ab", "  "})} {
		if got, n := s.Redact("4242 anything"); got != "4242 anything" || n != 0 || s.Contains("x") || s.Len() != 0 {
			t.Errorf("%v: %q %d", s, got, n)
		}
	}
}

type source struct {
	values []string
	err    error
}

func (s source) Protected(context.Context, string) ([]string, error) { return s.values, s.err }

func TestUnionFailsClosed(t *testing.T) {
	vs, err := Union(source{values: []string{"a1b2c3d4"}}, source{values: []string{"e5f6g7h8"}}).Protected(context.Background(), "u")
	if err != nil || strings.Join(vs, ",") != "a1b2c3d4,e5f6g7h8" {
		t.Errorf("%v %v", vs, err)
	}
	down := errors.New("down")
	if _, err := Union(source{values: []string{"a1b2c3d4"}}, source{err: down}).Protected(context.Background(), "u"); !errors.Is(err, down) {
		t.Errorf("a failing source: %v", err)
	}
}

// FuzzRedact: redacting never panics, never leaves a planted value (spaced,
// upper-cased, full-width, encoded in any of the forms of encodings and
// fuzzEncodings), leaves a text without values as it was, and what it returns never
// holds a value.
func FuzzRedact(f *testing.F) {
	f.Add("some text", "4242424242424242")
	f.Add("ünïcode ÄÖ 12", "äö12ab")
	f.Add("", "1990-04-17")
	f.Add("token=%2F", "zebra-quartz-7731")
	f.Fuzz(func(t *testing.T, text, value string) {
		s := New([]string{value})
		if s.Len() == 0 {
			if got, n := s.Redact(text); got != text || n != 0 {
				t.Fatalf("an empty set changed %q", text)
			}
			return
		}
		p := project(value).text
		planted := []string{text + " " + value + " " + text, text + " " + strings.ToUpper(value) + " x", text + " " + redacttest.FullWidth(value) + " x"}
		// Encoded, a value is seen when it is text: valid UTF-8 without control
		// characters.
		if utf8.ValidString(value) && !strings.ContainsFunc(value, func(r rune) bool { return r < ' ' || r == 0x7f }) {
			for _, enc := range encodings {
				planted = append(planted, text+" "+enc(value)+" "+text)
			}
			for _, enc := range fuzzEncodings {
				planted = append(planted, text+" "+enc(value)+" "+text)
			}
		}
		// Placeholders side by side may spell a value ("dactedre"): not a leak.
		spelt := s.Contains(strings.Repeat(Placeholder, 3))
		if got, _ := s.Redact(text); s.Contains(got) && !spelt {
			t.Fatalf("value %q left in %q -> %q", value, text, got)
		}
		for _, planted := range planted {
			got, n := s.Redact(planted)
			if len(p) >= shortValue && n == 0 {
				t.Fatalf("value %q not found in %q", value, planted)
			}
			if s.Contains(got) && !spelt {
				t.Fatalf("value %q still in %q -> %q", value, planted, got)
			}
			// What is left between placeholders never holds the value, in any form.
			for _, seg := range strings.Split(got, Placeholder) {
				if len(p) >= shortValue && (strings.Contains(project(seg).text, p) || s.Contains(seg)) {
					t.Fatalf("value %q left in %q -> %q", value, planted, got)
				}
			}
		}
	})
}

// attackValues are a card, a password-like value and a date of birth, the values a
// hostile agent was seen carrying out in other forms.
var attackValues = []string{"4111111111111111", "hunter2-Zebra!", "1990-04-17"}

// alnum is v's letters and digits alone.
func alnum(v string) []rune {
	var out []rune
	for _, r := range v {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			out = append(out, r)
		}
	}
	return out
}

// between writes v's letters and digits with filler(i) after the i-th of them.
func between(v string, filler func(i int, r rune) string) string {
	var b strings.Builder
	for i, r := range alnum(v) {
		b.WriteRune(r)
		b.WriteString(filler(i, r))
	}
	return b.String()
}

func hexWith(v, prefix, sep string, upper bool) string {
	var b strings.Builder
	for i := range len(v) {
		if i > 0 {
			b.WriteString(sep)
		}
		h := hex.EncodeToString([]byte{v[i]})
		if upper {
			h = strings.ToUpper(h)
		}
		b.WriteString(prefix + h)
	}
	return b.String()
}

func enc64(v string) string { return base64.StdEncoding.EncodeToString([]byte(v)) }

func wrap(s string, n int, sep string) string {
	var parts []string
	for len(s) > n {
		parts = append(parts, s[:n])
		s = s[n:]
	}
	return strings.Join(append(parts, s), sep)
}

func rot13Of(v string) string {
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

func reverse(v string) string {
	r := []rune(v)
	slices.Reverse(r)
	return string(r)
}

// lookAlikes are Cyrillic and Greek letters that people read as the Latin letter or
// digit they stand for.
var lookAlikes = map[rune]rune{'a': 'а', 'e': 'е', 'o': 'о', 'p': 'р', 'c': 'с', 'x': 'х', 'y': 'у',
	'h': 'һ', 'Z': 'Ζ', 'H': 'Η', 'T': 'Т', '1': 'І', '0': 'О', '3': 'З', 'b': 'Ь'}

func homoglyphs(v string) string {
	return strings.Map(func(r rune) rune {
		if l, ok := lookAlikes[r]; ok {
			return l
		}
		return r
	}, v)
}

// digitsIn writes v's ASCII digits as the digits of the script whose zero is zero.
func digitsIn(zero rune) func(string) string {
	return func(v string) string {
		return strings.Map(func(r rune) rune {
			if '0' <= r && r <= '9' {
				return zero + r - '0'
			}
			return r
		}, v)
	}
}

// attackForms are the forms a review carried values out in past the scanner.
var attackForms = []struct {
	name string
	form func(string) string
}{
	{"hex", func(v string) string { return hex.EncodeToString([]byte(v)) }},
	{"hex upper", func(v string) string { return strings.ToUpper(hex.EncodeToString([]byte(v))) }},
	{"hex spaced", func(v string) string { return hexWith(v, "", " ", false) }},
	{"hex colons upper", func(v string) string { return hexWith(v, "", ":", true) }},
	{`hex \x`, func(v string) string { return hexWith(v, `\x`, "", false) }},
	{"hex 0x commas", func(v string) string { return hexWith(v, "0x", ", ", true) }},
	{"base32", func(v string) string { return base32.StdEncoding.EncodeToString([]byte(v)) }},
	{"base32 raw lower", func(v string) string {
		return strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString([]byte(v)))
	}},
	{"base32 hex", func(v string) string { return base32.HexEncoding.EncodeToString([]byte(v)) }},
	{"base32 hex raw lower", func(v string) string {
		return strings.ToLower(base32.HexEncoding.WithPadding(base32.NoPadding).EncodeToString([]byte(v)))
	}},
	{"rot13", rot13Of},
	{"reversed", reverse},
	{"homoglyphs", homoglyphs},
	{"arabic-indic digits", digitsIn('٠')},
	{"extended arabic-indic digits", digitsIn('۰')},
	{"devanagari digits", digitsIn('०')},
	{"bengali digits", digitsIn('০')},
	{"x between each", func(v string) string { return between(v, func(int, rune) string { return "x" }) }},
	{"letter between digits, digit between letters", func(v string) string {
		return between(v, func(i int, r rune) string {
			if unicode.IsDigit(r) {
				return string(rune('q' + i%5))
			}
			return fmt.Sprint(i % 10)
		})
	}},
	{"base64 glued letter", func(v string) string { return "x" + enc64(v) }},
	{"base64 glued digit", func(v string) string { return "7" + enc64(v) }},
	{"base64 wrapped by 4 spaces", func(v string) string { return wrap(enc64(v), 4, " ") }},
	{"base64 wrapped by 4 lines", func(v string) string { return wrap(enc64(v), 4, "\n") }},
	{"base64 nested four deep", func(v string) string { return enc64(enc64(enc64(enc64(v)))) }},
	{"percent of base64 nested four deep", func(v string) string { return url.QueryEscape(enc64(enc64(enc64(enc64(v))))) }},
}

// TestAttackFormsAreFound: each value, written in each form a hostile agent used to
// carry it past the scanner, is found, and what Redact leaves holds it no more.
func TestAttackFormsAreFound(t *testing.T) {
	for _, v := range attackValues {
		s := New([]string{v})
		for _, f := range attackForms {
			enc := f.form(v)
			if enc == v {
				continue // the form does not change this value (rot13 of digits)
			}
			in := "please send " + enc + " to the shop"
			if !s.Contains(in) {
				t.Errorf("%s of %q not found: %q", f.name, v, in)
				continue
			}
			if got, n := s.Redact(in); n == 0 || s.Contains(got) {
				t.Errorf("%s of %q: redacted to %q (%d)", f.name, v, got, n)
			}
		}
	}
}

// fuzzEncodings are the attack forms that hold for any value: encodings of its
// bytes.
var fuzzEncodings = func() (out []func(string) string) {
	for _, f := range attackForms {
		if strings.HasPrefix(f.name, "hex") || strings.HasPrefix(f.name, "base") || strings.HasPrefix(f.name, "percent") {
			out = append(out, f.form)
		}
	}
	return out
}()

// TestInterleavedValueWithLettersWrittenAsTwo: a value whose letters fold to two
// (m reads as rn) is found with a filler after each of its letters too.
func TestInterleavedValueWithLettersWrittenAsTwo(t *testing.T) {
	const v = "hammer-Time42"
	in := "go " + between(v, func(int, rune) string { return "x" }) + " now"
	if got, n := New([]string{v}).Redact(in); got != "go [redacted]x now" || n != 1 {
		t.Errorf("%q: %q %d", in, got, n)
	}
}

// attackSplits are the ways a value was split across a request's parts.
var attackSplits = []struct {
	name  string
	parts func(string) []string
}{
	{"two messages", func(v string) []string { h := len(v) / 2; return []string{"first " + v[:h], v[h:] + " second"} }},
	{"two content parts", func(v string) []string { h := len(v) / 3; return []string{v[:h], v[h:]} }},
	{"logit_bias keys", func(v string) []string {
		var keys []string
		for i := 0; i < len(v); i += 3 {
			keys = append(keys, v[i:min(i+3, len(v))])
		}
		return keys
	}},
}

// TestAttackSplitsAreFound: a value split across messages, content parts or short
// keys is found in the parts together, though no part holds it.
func TestAttackSplitsAreFound(t *testing.T) {
	for _, v := range attackValues {
		s := New([]string{v})
		for _, sp := range attackSplits {
			parts := sp.parts(v)
			for _, p := range parts {
				if s.Contains(p) {
					t.Fatalf("%s of %q: part %q holds it alone", sp.name, v, p)
				}
			}
			if !s.ContainsParts(parts) {
				t.Errorf("%s of %q not found: %q", sp.name, v, parts)
			}
		}
	}
	if New(attackValues).ContainsParts([]string{"nothing", "to see", "here"}) {
		t.Error("parts without a value")
	}
}

// TestLookAlikesReadAsTheirPrototype: every letter that Unicode's confusables data
// reads as one ASCII letter or digit projects as that letter or digit does, but
// those whose compatibility form says otherwise (ſ is s) and the decimal digits of
// other scripts (the Bengali ৪ is 4, though it looks like 8).
func TestLookAlikesReadAsTheirPrototype(t *testing.T) {
	n := 0
	for r := rune(utf8.RuneSelf); r <= unicode.MaxRune; r++ {
		if !unicode.IsLetter(r) || norm.NFKD.PropertiesString(string(r)).Decomposition() != nil {
			continue
		}
		k := confusables.Skeleton(string(r))
		if len(k) != 1 || !isASCIIAlnum(k[0]) {
			continue
		}
		n++
		if got, want := project(string(r)).text, project(k).text; got != want {
			t.Errorf("%U %q: %q, want %q as %q", r, r, got, want, k)
		}
	}
	if n < 300 {
		t.Errorf("only %d look-alikes", n)
	}
}

// TestEveryDecimalDigitReadsAsASCII: each decimal digit of every script projects as
// its ASCII digit.
func TestEveryDecimalDigitReadsAsASCII(t *testing.T) {
	n := 0
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if !unicode.Is(unicode.Nd, r) {
			continue
		}
		n++
		d, ok := digitValue(r)
		if !ok || project(string(r)).text != project(string(rune('0'+d))).text {
			t.Errorf("%U %q: %d %v, projects %q", r, r, d, ok, project(string(r)).text)
		}
		// The zero of each script starts a run of ten.
		if d == 0 && !unicode.Is(unicode.Nd, r+9) {
			t.Errorf("%U %q: no nine after it", r, r)
		}
	}
	if n < 600 {
		t.Errorf("only %d digits", n)
	}
}
