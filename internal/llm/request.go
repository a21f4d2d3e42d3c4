package llm

import (
	"bytes"
	"encoding/json"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/waystation/waystation/internal/problem"
	"github.com/waystation/waystation/internal/redact"
)

// Rule is the one rule for a request body the gateway forwards to a model: every
// string of it, member names and numbers included, is scanned for the user's
// protected values. Free text is blanked, as a model reads it the same with a value
// missing. What cannot be blanked without changing what the request means — a member
// name, a number, the value of a member that says what a part is rather than what it
// holds — is refused with protected_value_detected, and nothing is forwarded. Each
// API has its rule; they differ in the members they fix.
type Rule struct {
	// Name is what the body must be, for the error of one that is not.
	Name string
	// Shape refuses a body that is not of the API, or holds a part that is not text:
	// the gateway forwards text only, which it can check for protected values.
	Shape func(body map[string]any) error
	// Fixed are the members whose string values (or arrays of them) say what a part
	// is, not what it holds: the model, a role, a part's type, an id.
	Fixed map[string]bool
	// TokenMaps are the top-level members whose member names must be token ids
	// (decimal integers), since the upstream reads them as numbers.
	TokenMaps []string
}

// tokenID is what a member name of a token map must be.
var tokenID = regexp.MustCompile(`^[0-9]{1,10}$`)

// Decode reads raw as a request of the rule: one JSON object (numbers kept as
// written, as json.Number) of the API's shape, text only. A model that is not a
// name (model: 42) is the 400 the upstream would answer, invalid_parameter, and
// nothing goes upstream.
func (m Rule) Decode(raw []byte) (map[string]any, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var body map[string]any
	if err := d.Decode(&body); err != nil || d.More() || body == nil {
		return nil, problem.Invalid("The body must be one JSON object: " + m.Name + ".")
	}
	if model, ok := body["model"]; ok {
		if _, name := model.(string); !name {
			return nil, problem.Param(problem.InvalidParameter, "model", "model must be a string: a model's name.")
		}
	}
	if err := m.Shape(body); err != nil {
		return nil, err
	}
	return body, nil
}

// Clean blanks the protected values of set in the free text of body, a decoded JSON
// object whose numbers are json.Number, and returns how many it blanked; an error,
// and a body to drop, when a value sits where it cannot be blanked or a token map
// holds a member name that is not a token id.
func (m Rule) Clean(set *redact.Set, body map[string]any) (int, error) {
	n, err := m.walk(set, body, "")
	if err != nil {
		return 0, err
	}
	for _, name := range m.TokenMaps {
		switch x := body[name].(type) {
		case nil:
		case map[string]any:
			for k := range x {
				if !tokenID.MatchString(k) {
					return 0, problem.Invalid(name + " must map token ids, decimal integers, to numbers.")
				}
			}
		default:
			return 0, problem.Invalid(name + " must be an object.")
		}
	}
	return n, nil
}

// walk blanks the free text of v, the value of member (or of an element of its
// array), in place, and counts what it blanked.
func (m Rule) walk(set *redact.Set, v any, member string) (int, error) {
	n := 0
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if set.Contains(k) {
				return 0, m.refusal()
			}
			if str, ok := e.(string); ok && !m.Fixed[k] {
				r, c := set.Redact(str)
				x[k], n = r, n+c
				continue
			}
			c, err := m.walk(set, e, k)
			if err != nil {
				return 0, err
			}
			n += c
		}
	case []any:
		for i, e := range x {
			if str, ok := e.(string); ok && !m.Fixed[member] {
				r, c := set.Redact(str)
				x[i], n = r, n+c
				continue
			}
			c, err := m.walk(set, e, member)
			if err != nil {
				return 0, err
			}
			n += c
		}
	case string: // a fixed member's
		if set.Contains(x) {
			return 0, m.refusal()
		}
	case json.Number:
		if set.Contains(x.String()) {
			return 0, m.refusal()
		}
	}
	return n, nil
}

// refusal says where a value cannot be blanked, without saying which value or
// member held it.
func (m Rule) refusal() error {
	fixed := slices.Sorted(maps.Keys(m.Fixed))
	return problem.New(problem.ProtectedValueDetected, "A member name, a number or the value of "+strings.Join(fixed, ", ")+
		" holds one of the user's protected values, in some written form; the proxy cannot blank those, so nothing was forwarded. Refer to values by handle.")
}

// textParts refuses v, the content at, unless it is a string or an array of parts
// of the types given.
func textParts(v any, at string, types ...string) error {
	switch c := v.(type) {
	case string:
		return nil
	case []any:
		for _, part := range c {
			p, ok := part.(map[string]any)
			if !ok {
				return problem.Invalid(at + " must be a string or an array of objects.")
			}
			if typ, _ := p["type"].(string); !slices.Contains(types, typ) {
				return problem.Invalid(at + " holds a part that is not one of " + strings.Join(types, ", ") + ": the proxy forwards text only, which it can check for protected values.")
			}
		}
		return nil
	default:
		return problem.Invalid(at + " must be a string or an array of parts.")
	}
}
