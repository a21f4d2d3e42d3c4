// Package trace is the domain of the spans agents send (OTLP/HTTP, JSON or protobuf): read, tied
// to the sessions they name, cleaned of protected values and URL queries, kept.
package trace

import (
	"net/url"
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
// every attribute, its key as its string and number values (an exporter writes
// whatever it is given as a key too; see redact.Set.JSON), and drops the query and fragment of every URL (and the
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
	if s.Attributes != nil {
		attrs, c := set.JSONWith(s.Attributes, stripQuery)
		s.Attributes, n = attrs.(map[string]any), n+c
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
