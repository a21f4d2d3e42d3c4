// Package trace is the domain of the spans agents send (OTLP/HTTP, JSON or protobuf): read, tied
// to the sessions they name, cleaned of protected values and URL queries, kept.
package trace

import (
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/waystation/waystation/internal/redact"
)

// SessionAttribute names, on a span or its resource, the session it belongs to.
const SessionAttribute = "workflow.session.id"

// MaxSpans is the most spans one export may carry.
const MaxSpans = 1000

// Span is one span as it is kept and read back.
type Span struct {
	SessionID    string         `json:"sessionId"`
	TraceID      string         `json:"traceId"`
	SpanID       string         `json:"spanId"`
	ParentSpanID string         `json:"parentSpanId"`
	Name         string         `json:"name"`
	Kind         int            `json:"kind"`
	Start        uint64         `json:"startTimeUnixNano,string"`
	End          uint64         `json:"endTimeUnixNano,string"`
	Attributes   map[string]any `json:"attributes"`
	Status       Status         `json:"status"`
}

// Status is a span's outcome: 0 unset, 1 ok, 2 error.
type Status struct {
	Code    int    `json:"code"`
	Message string `json:"message,omitempty"`
}

// Clean blanks the user's protected values out of a span's name, status message and
// every attribute, its key as its string values (an exporter writes whatever it is
// given as a key too), and drops the query and fragment of every URL (and the
// url.query attribute), since queries carry tokens and values. It returns how many
// values it blanked. Two keys that blank alike are kept apart by a number.
func (s *Span) Clean(set *redact.Set) int {
	n := 0
	text := func(v string) string {
		v = stripQuery(v)
		r, c := set.Redact(v)
		n += c
		return r
	}
	s.Name = text(s.Name)
	s.Status.Message = text(s.Status.Message)
	delete(s.Attributes, "url.query")
	var walk func(v any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case string:
			return text(x)
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
				if set.Contains(k) {
					blanked = append(blanked, k)
					continue
				}
				out[k] = walk(e)
			}
			slices.Sort(blanked)
			for _, k := range blanked {
				base, c := set.Redact(k)
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
	if s.Attributes != nil {
		s.Attributes = walk(s.Attributes).(map[string]any)
	}
	return n
}

// stripQuery drops the query and fragment of v when it is an absolute URL.
func stripQuery(v string) string {
	if !strings.Contains(v, "://") || !strings.ContainsAny(v, "?#") {
		return v
	}
	u, err := url.Parse(strings.TrimSpace(v))
	if err != nil || u.Scheme == "" || u.Host == "" {
		return v
	}
	u.RawQuery, u.Fragment, u.RawFragment, u.ForceQuery = "", "", "", false
	return u.String()
}
