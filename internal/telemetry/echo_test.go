package telemetry_test

import (
	"regexp"
	"strings"
	"testing"
)

const card = "4111111111111111"

// A caller's X-Request-Id is answered back in every problem body and written in
// every log line, so it is kept only in a shape that holds no text: a UUID or 32 hex
// digits, in lower case. Anything else (words, a card's digits with a letter, a
// password) is replaced by a new id.
func TestCallerRequestIDsAreKeptOnlyAsUUIDsOrHex(t *testing.T) {
	s := newServed(t)
	for sent, kept := range map[string]string{
		"5f0c2b4e-0000-4000-8000-000000000001": "5f0c2b4e-0000-4000-8000-000000000001",
		"5F0C2B4E-0000-4000-8000-00000000000A": "5f0c2b4e-0000-4000-8000-00000000000a",
		"4bf92f3577b34da6a3ce929d0e0e4736":     "4bf92f3577b34da6a3ce929d0e0e4736",
	} {
		if got := s.do(t, "GET", "/things/1", "X-Request-Id", sent).Header.Get("X-Request-Id"); got != kept {
			t.Errorf("%q came back as %q", sent, got)
		}
	}
	for _, bad := range []string{"card-" + card, "x" + card, "hunter2", "abc-123", "req_01HZX.7:a",
		"5f0c2b4e00004000800000000000000g", "5f0c2b4e-0000-4000-8000-0000000000011", "5f0c2b4e_0000_4000_8000_000000000001"} {
		got := s.do(t, "GET", "/things/1", "X-Request-Id", bad).Header.Get("X-Request-Id")
		if !randomID.MatchString(got) {
			t.Errorf("%q came back as %q", bad, got)
		}
	}
	if raw := s.log.String(); strings.Contains(raw, card) || strings.Contains(raw, "hunter2") {
		t.Errorf("a caller's id was logged: %s", raw)
	}
}

// A traceparent is taken only as W3C version 00 writes it: any other version, with
// whatever it carries after, starts a new trace.
func TestTraceparentOfAnotherVersionStartsANewTrace(t *testing.T) {
	s := newServed(t)
	const trace, parent = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	for _, v := range []string{"01-" + trace + "-" + parent + "-01-" + card, "01-" + trace + "-" + parent + "-01", "cc-" + trace + "-" + parent + "-00"} {
		out := s.do(t, "GET", "/things/7", "Traceparent", v).Header.Get("Outgoing-Traceparent")
		if strings.Contains(out, trace) || !regexp.MustCompile(`^00-[0-9a-f]{32}-[0-9a-f]{16}-00$`).MatchString(out) {
			t.Errorf("%q: passed on %q", v, out)
		}
	}
	if raw := s.log.String(); strings.Contains(raw, trace) || strings.Contains(raw, parent) {
		t.Errorf("an invalid traceparent was logged: %s", raw)
	}
}

// A language model upstream never gets the traceparent its caller sent, nor the
// caller's trace id (which an agent chooses, and a card's digits fit in): it gets a
// trace of its own under this service's span, which the access line names.
func TestUpstreamTraceparentIsNeverTheCallers(t *testing.T) {
	s := newServed(t)
	const trace, parent = "00000000000000004111111111111111", "4111111111111111"
	res := s.do(t, "GET", "/things/7", "Traceparent", "00-"+trace+"-"+parent+"-01")
	up := res.Header.Get("Upstream-Traceparent")
	m := regexp.MustCompile(`^00-([0-9a-f]{32})-([0-9a-f]{16})-01$`).FindStringSubmatch(up)
	if m == nil || strings.Contains(up, card) || strings.Contains(up, trace) {
		t.Fatalf("passed upstream %q", up)
	}
	recs := s.log.records(t)
	if access := recs[len(recs)-1]; access["span_id"] != m[2] {
		t.Errorf("the access line does not name the span the upstream saw: %v", access)
	}
	// Without a caller's trace, the upstream is told the service's own.
	res = s.do(t, "GET", "/things/7")
	if up, own := res.Header.Get("Upstream-Traceparent"), res.Header.Get("Outgoing-Traceparent"); up != own {
		t.Errorf("upstream %q, own %q", up, own)
	}
}

// The access line says a path only as its route's pattern, with the ids that are
// UUIDs, and a user agent only as the name of a well-known client: a path segment or
// a user agent may hold anything an agent puts there.
func TestAccessLineHoldsNoTextACallerChose(t *testing.T) {
	s := newServed(t)
	const id = "5f0c2b4e-0000-4000-8000-000000000001"
	s.do(t, "GET", "/things/"+card+"?q="+card, "User-Agent", "agent/"+card+" (hunter2)")
	s.do(t, "GET", "/things/"+id, "User-Agent", "curl/8.5.0")
	s.do(t, "GET", "/nowhere/"+card+"/hunter2", "User-Agent", "Mozilla/5.0 (X11; Linux x86_64) hunter2/"+card)
	recs := s.log.records(t)
	if len(recs) < 5 {
		t.Fatalf("%d lines", len(recs))
	}
	var access []map[string]any
	for _, r := range recs {
		if r["msg"] == "request" {
			access = append(access, r)
		}
	}
	want := []struct{ path, ua string }{{"/things/{id}", "other"}, {"/things/" + id, "curl"}, {"/*/*/*", "Mozilla"}}
	for i, w := range want {
		if access[i]["path"] != w.path || access[i]["user_agent"] != w.ua {
			t.Errorf("line %d: %v, want path %q and user agent %q", i, access[i], w.path, w.ua)
		}
	}
	if raw := s.log.String(); strings.Contains(raw, card) || strings.Contains(raw, "hunter2") {
		t.Errorf("the log holds what a caller chose: %s", raw)
	}
}
