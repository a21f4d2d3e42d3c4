package redact

import (
	"context"
	"errors"
	"strings"
	"testing"
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

// FuzzRedact: redacting never panics, never leaves a planted value (in the spaced and
// upper-cased form too), and leaves a text without values as it was.
func FuzzRedact(f *testing.F) {
	f.Add("some text", "4242424242424242")
	f.Add("ünïcode ÄÖ 12", "äö12ab")
	f.Add("", "1990-04-17")
	f.Fuzz(func(t *testing.T, text, value string) {
		s := New([]string{value})
		if s.Len() == 0 {
			if got, n := s.Redact(text); got != text || n != 0 {
				t.Fatalf("an empty set changed %q", text)
			}
			return
		}
		p := project(value).text
		for _, planted := range []string{text + " " + value + " " + text, text + " " + strings.ToUpper(value) + " x"} {
			got, n := s.Redact(planted)
			if len(p) >= shortValue && n == 0 {
				t.Fatalf("value %q not found in %q", value, planted)
			}
			// What is left between placeholders never holds the value.
			for _, seg := range strings.Split(got, Placeholder) {
				if len(p) >= shortValue && strings.Contains(project(seg).text, p) {
					t.Fatalf("value %q left in %q -> %q", value, planted, got)
				}
			}
		}
	})
}
