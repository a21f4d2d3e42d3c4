// Package telemetry is how the service tells its operators what it does: a request
// id and a W3C trace context on every request, an access log line each, logs that
// carry both, and Prometheus metrics.
package telemetry

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"unsafe"
)

// Request is what the service knows of one request while it is served.
type Request struct {
	// ID names the request in its X-Request-Id header, its problem body and its log
	// lines: the caller's own when it is a UUID or 32 hex digits, else random.
	ID string
	// TraceID is the W3C trace the request belongs to: the caller's traceparent's
	// when it sent a valid one, else a new one. ParentID is the caller's span ("" when
	// it sent none); SpanID is this service's span, the parent of what it calls.
	TraceID, ParentID, SpanID string
	// Sampled is the caller's sampled flag.
	Sampled bool
	// Route is the pattern of the route that answered, "" until one did.
	Route string
}

type requestKey struct{}

// With returns ctx carrying r.
func With(ctx context.Context, r *Request) context.Context {
	return context.WithValue(ctx, requestKey{}, r)
}

// From returns the request ctx carries, or nil.
func From(ctx context.Context) *Request {
	r, _ := ctx.Value(requestKey{}).(*Request)
	return r
}

// RequestID is the id of the request ctx carries, "" when none.
func RequestID(ctx context.Context) string {
	if r := From(ctx); r != nil {
		return r.ID
	}
	return ""
}

// SetRoute records the pattern of the route that answers the request ctx carries,
// which names it in the metrics; routers call it once they matched.
func SetRoute(ctx context.Context, pattern string) {
	if r := From(ctx); r != nil {
		r.Route = pattern
	}
}

// Traceparent is the traceparent header for a call this request makes: the same
// trace, with this service's span as the parent. "" when ctx carries no request.
func Traceparent(ctx context.Context) string {
	r := From(ctx)
	if r == nil {
		return ""
	}
	flags := "00"
	if r.Sampled {
		flags = "01"
	}
	return "00-" + r.TraceID + "-" + r.SpanID + "-" + flags
}

// NewID is a random request id: 128 bits in hex.
func NewID() string { return randomHex(16) }

// callerID is the caller's X-Request-Id as it is kept, and whether it is: only a
// UUID or 32 hex digits, in lower case. The id comes back in every problem body and
// goes into every log line, so it may not be text: a word, a password or a card's
// digits followed by a letter are replaced by a new id. (A shape of 128 bits can
// still be chosen to spell digits; it is the narrowest that request ids in use fit.)
func callerID(s string) (string, bool) {
	switch len(s) {
	case 32:
		if !anyCaseHex(s) {
			return "", false
		}
	case 36:
		if s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' ||
			!anyCaseHex(s[0:8]) || !anyCaseHex(s[9:13]) || !anyCaseHex(s[14:18]) || !anyCaseHex(s[19:23]) || !anyCaseHex(s[24:36]) {
			return "", false
		}
	default:
		return "", false
	}
	return strings.ToLower(s), true
}

func anyCaseHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// parseTraceparent reads a W3C traceparent (Trace Context Level 1): version 00,
// trace id, parent id and flags in lowercase hex, 55 characters. Any other version,
// all-zero ids, a wrong length or a value sent twice make it invalid, and a new
// trace is started: the recommendation's reading of a later version by its first
// four fields would take a header whose tail is anything a caller likes.
func parseTraceparent(values []string) (traceID, parentID string, sampled, ok bool) {
	if len(values) != 1 {
		return "", "", false, false
	}
	v := values[0]
	if len(v) < 55 || v[2] != '-' || v[35] != '-' || v[52] != '-' {
		return "", "", false, false
	}
	version, trace, parent, flags := v[0:2], v[3:35], v[36:52], v[53:55]
	if version != "00" || len(v) != 55 || !lowerHex(trace) || !lowerHex(parent) || !lowerHex(flags) {
		return "", "", false, false
	}
	if allZero(trace) || allZero(parent) {
		return "", "", false, false
	}
	b, _ := hex.DecodeString(flags)
	return trace, parent, b[0]&1 == 1, true
}

func lowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

func allZero(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] != '0' {
			return false
		}
	}
	return true
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// init fills r from a request's headers. One read of the random source serves the
// id, the trace and the span, whichever are new; their hex is written to buf, which
// the caller never changes after (it lives as long as r).
func (r *Request) init(ids, traceparents []string, buf *[80]byte) {
	var b [40]byte
	rand.Read(b[:])
	hex.Encode(buf[:], b[:])
	random := unsafe.String(&buf[0], len(buf)) // id 0:32, trace 32:64, span 64:80
	r.ID, r.SpanID = random[0:32], random[64:80]
	if len(ids) == 1 {
		if id, ok := callerID(ids[0]); ok {
			r.ID = id
		}
	}
	var ok bool
	if r.TraceID, r.ParentID, r.Sampled, ok = parseTraceparent(traceparents); !ok {
		r.TraceID, r.ParentID, r.Sampled = random[32:64], "", false
	}
}

// requestContext is a request's context carrying its Request, as With's would,
// allocated with the rest of what the middleware keeps of a request.
type requestContext struct {
	context.Context
	req *Request
}

func (c *requestContext) Value(key any) any {
	if _, ok := key.(requestKey); ok {
		return c.req
	}
	return c.Context.Value(key)
}

// UpstreamTraceparent is the traceparent header for a call to a party that must
// learn nothing an agent chose (a language model): this service's span under a trace
// of its own. A caller's trace id is the caller's text (a card's digits fit in its
// hex), so when the request came with one the call gets a new trace id, and the
// access line's span_id, the call's parent, ties the two together; a request that
// came without one passes on the service's own trace, as Traceparent does. "" when
// ctx carries no request.
func UpstreamTraceparent(ctx context.Context) string {
	r := From(ctx)
	if r == nil {
		return ""
	}
	if r.ParentID == "" {
		return Traceparent(ctx)
	}
	flags := "00"
	if r.Sampled {
		flags = "01"
	}
	return "00-" + randomHex(16) + "-" + r.SpanID + "-" + flags
}
