// Package trace is the domain of the spans agents send (OTLP/HTTP, JSON or protobuf): read, tied
// to the sessions they name, cleaned of protected values and URL queries, kept.
package trace

import (
	"encoding/hex"
	"net/url"
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
// every attribute, its key as its string and number values (an exporter writes
// whatever it is given as a key too), and drops the query and fragment of every URL
// (and the url.query attribute), since queries carry tokens and values. It returns
// how many values it blanked. Two keys that blank alike are kept apart by a number.
//
// A number that holds a value, in any of the ways it is written, is blanked, not
// dropped: it becomes the string Placeholder, as a string attribute with the same
// digits becomes, so that the reader sees that the span said something there and
// that it was withheld; a number cannot be blanked in part and stay a number. Ids
// and times that hold a value cannot be blanked in part either: an id becomes all
// zeros (OTLP's invalid id, never a real one) and a time 0. Export rejects such a
// span before it is kept (Holds); Clean blanks them in spans kept before the value
// was saved. A kind or status code outside OTLP's enums, a number an agent chose,
// is read as unspecified.
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
	for _, id := range []*string{&s.TraceID, &s.SpanID, &s.ParentSpanID} {
		if idHolds(set, *id) {
			*id = strings.Repeat("0", len(*id))
			n++
		}
	}
	s.Kind, s.Status.Code = enum(int32(s.Kind), kinds), enum(int32(s.Status.Code), codes) // as kept before they were bounded
	for _, t := range []*uint64{&s.Start, &s.End} {
		if set.Contains(strconv.FormatUint(*t, 10)) {
			*t = 0
			n++
		}
	}
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

// Holds tells whether a span's trace, span or parent id or its start or end time
// holds one of the user's protected values: a card's sixteen digits are a valid span
// id's hex and fit in a timestamp's nineteen digits. An id is scanned as its hex and
// as its bytes, which may be the value's text.
func (s *Span) Holds(set *redact.Set) bool {
	return idHolds(set, s.TraceID) || idHolds(set, s.SpanID) || idHolds(set, s.ParentSpanID) ||
		set.Contains(strconv.FormatUint(s.Start, 10)) || set.Contains(strconv.FormatUint(s.End, 10))
}

// idHolds tells whether an id, in hex, holds a value as hex digits or as the text of
// its bytes.
func idHolds(set *redact.Set, id string) bool {
	if id == "" {
		return false
	}
	if set.Contains(id) {
		return true
	}
	b, err := hex.DecodeString(id)
	return err == nil && set.Contains(string(b))
}
