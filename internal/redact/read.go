package redact

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"

	"github.com/waystation/waystation/internal/problem"
)

// Load is the user's protected values of src as they are now, for cleaning what was
// kept before one of them was saved on its way out: text is checked when it is
// written, against the values of then, and a value saved since is found only on
// reading. An error (src nil included) is redaction_unavailable, whose detail ends
// saying what therefore did not happen (consequence), so that nothing is read back
// unchecked.
func Load(ctx context.Context, src Source, userID, consequence string) (*Set, error) {
	unavailable := func(err error) error {
		p := problem.Wrap(problem.RedactionUnavailable, "The user's protected values could not be loaded, so "+consequence+".", err)
		p.RetryAfter = 5
		return p
	}
	if src == nil {
		return nil, unavailable(errors.New("no source of protected values"))
	}
	values, err := src.Protected(ctx, userID)
	if err != nil {
		return nil, unavailable(err)
	}
	return New(values), nil
}

// Strings blanks the set's values in each string ps points to (nil pointers are
// skipped), in place, and says how many stretches it blanked.
func (s *Set) Strings(ps ...*string) int {
	n := 0
	for _, p := range ps {
		if p == nil || *p == "" {
			continue
		}
		var c int
		*p, c = s.Redact(*p)
		n += c
	}
	return n
}

// JSON is v, decoded JSON (numbers as json.Number or float64), with the set's
// values blanked in every string, member name and number, and how many it blanked.
// A number that holds a value becomes the placeholder, a string, since no number
// can stand for it; two member names that blank alike are kept apart by a number.
// Maps and slices of v are changed in place.
func (s *Set) JSON(v any) (any, int) { return s.JSONWith(v, nil) }

// JSONWith is JSON with every string first passed through text, when text is not
// nil (a trace drops URL queries so).
func (s *Set) JSONWith(v any, text func(string) string) (any, int) {
	n := 0
	str := func(v string) string {
		if text != nil {
			v = text(v)
		}
		r, c := s.Redact(v)
		n += c
		return r
	}
	number := func(x any) any {
		if s.NumberHolds(x) {
			n++
			return Placeholder
		}
		return x
	}
	var walk func(v any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case string:
			return str(x)
		case json.Number, float64, int64:
			return number(x)
		case []any:
			for i := range x {
				x[i] = walk(x[i])
			}
		case map[string]any:
			// Keys without a value stay as they are; blanked ones take the next
			// free number, in the order of the keys they were.
			out := make(map[string]any, len(x))
			var blanked []string
			for k, e := range x {
				if s.Contains(k) {
					blanked = append(blanked, k)
					continue
				}
				out[k] = walk(e)
			}
			slices.Sort(blanked)
			for _, k := range blanked {
				base, c := s.Redact(k)
				n += c
				key := base
				for i := 2; ; i++ {
					if _, taken := out[key]; !taken {
						break
					}
					key = base + " (" + strconv.Itoa(i) + ")"
				}
				out[key] = walk(x[k])
			}
			return out
		}
		return v
	}
	return walk(v), n
}

// NumberHolds tells whether v, a number (int64, float64 or json.Number), holds a
// value in any way it is written: its digits as sent, and a float's plain and
// exponent forms (an exporter may write either).
func (s *Set) NumberHolds(v any) bool {
	var forms []string
	switch x := v.(type) {
	case int64:
		forms = []string{strconv.FormatInt(x, 10)}
	case float64:
		forms = []string{strconv.FormatFloat(x, 'f', -1, 64), strconv.FormatFloat(x, 'e', -1, 64)}
	case json.Number:
		forms = []string{x.String()}
		if f, err := x.Float64(); err == nil {
			forms = append(forms, strconv.FormatFloat(f, 'f', -1, 64))
		}
	}
	for _, f := range forms {
		if s.Contains(f) {
			return true
		}
	}
	return false
}

// RawJSON is raw, a JSON value, with the set's values blanked as JSON does; raw
// itself when nothing was blanked or it is no JSON, so that what holds no value is
// answered byte for byte as it was kept.
func (s *Set) RawJSON(raw json.RawMessage) (json.RawMessage, int) {
	if len(raw) == 0 || s.Len() == 0 {
		return raw, 0
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if d.Decode(&v) != nil {
		if r, c := s.Redact(string(raw)); c > 0 {
			b, _ := json.Marshal(r)
			return b, c
		}
		return raw, 0
	}
	v, n := s.JSON(v)
	if n == 0 {
		return raw, 0
	}
	b, err := json.Marshal(v)
	if err != nil {
		return raw, 0
	}
	return b, n
}
