package api_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/waystation/waystation/internal/redact/redacttest"
)

// span is one OTLP/JSON span naming session sid, with extra attributes.
func span(sid, spanID, name string, attrs ...string) string {
	kv := []string{}
	if sid != "" {
		kv = append(kv, `{"key":"workflow.session.id","value":{"stringValue":"`+sid+`"}}`)
	}
	for i := 0; i+1 < len(attrs); i += 2 {
		kv = append(kv, `{"key":"`+attrs[i]+`","value":{"stringValue":"`+attrs[i+1]+`"}}`)
	}
	return `{"traceId":"4bf92f3577b34da6a3ce929d0e0e4736","spanId":"` + spanID + `","name":"` + name + `","kind":3,
		"startTimeUnixNano":"1700000000000000000","endTimeUnixNano":1700000000500000000,"attributes":[` + strings.Join(kv, ",") + `],
		"status":{"code":2,"message":"card 4111 1111 1111 1111 declined"}}`
}

func exportOf(spans ...string) string {
	return `{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"shopper"}}]},
		"scopeSpans":[{"scope":{"name":"agent"},"spans":[` + strings.Join(spans, ",") + `]}]}]}`
}

// Spans go to the sessions they name when the key may see them, the others are
// counted as rejected; what is kept holds no protected value and no URL query.
// The values count as given to the agent (everythingGiven): a value it was never
// given refuses the export whole (protect_test.go).
func TestTracesAreTiedToSessionsAndCleaned(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t, everythingGiven)
	uid, userKey := e.user("ada")
	_, agentKey := e.agent(uid, "scout")
	bobID, _ := e.user("bob")
	_, bobAgent := e.agent(bobID, "runner")
	e.call("POST", "/memory/items", userKey, `{"label":"Card","fields":[{"fieldRef":"number","label":"Card","valueType":"card_number","value":"4111111111111111"}]}`).want(t, 201)
	sid := e.openSession(agentKey, "s1")
	bobSession := e.openSession(bobAgent, "b1")

	body := exportOf(
		span(sid, "00f067aa0ba902b7", "checkout 4111-1111-1111-1111", "url.full", "https://shop.example/pay?card=4111111111111111&token=abc#frag",
			"url.query", "card=4111111111111111", "note", "paid with 4111 1111 1111 1111"),
		span(bobSession, "00f067aa0ba902b8", "bob's"),
		span("", "00f067aa0ba902b9", "nobody's"),
		span("not-a-session", "00f067aa0ba902ba", "bad"),
	)
	var res struct {
		PartialSuccess struct{ RejectedSpans, ErrorMessage string }
	}
	e.call("POST", "/traces", agentKey, body).want(t, 200).into(t, &res)
	if res.PartialSuccess.RejectedSpans != "3" {
		t.Errorf("rejected %+v", res)
	}
	// Sent again, nothing is kept twice; gzip is taken.
	var zipped bytes.Buffer
	zw := gzip.NewWriter(&zipped)
	zw.Write([]byte(exportOf(span(sid, "00f067aa0ba902b7", "again"))))
	zw.Close()
	if r := e.call("POST", "/traces", agentKey, zipped.String(), "Content-Encoding", "gzip").want(t, 200); strings.Contains(string(r.body), "rejected") {
		t.Errorf("gzip: %s", r.body)
	}

	var page struct {
		Items []struct {
			SpanID, Name string
			Attributes   map[string]any
			Status       struct{ Message string }
		}
	}
	raw := e.call("GET", "/sessions/"+sid+"/traces", userKey, "").want(t, 200)
	json.Unmarshal(raw.body, &page)
	if len(page.Items) != 1 {
		t.Fatalf("spans: %s", raw.body)
	}
	sp := page.Items[0]
	if sp.Name != "checkout [redacted]" || sp.Attributes["url.full"] != "https://shop.example/pay" || sp.Attributes["url.query"] != nil ||
		sp.Attributes["note"] != "paid with [redacted]" || sp.Attributes["service.name"] != "shopper" || sp.Status.Message != "card [redacted] declined" {
		t.Errorf("kept span: %s", raw.body)
	}
	e.call("GET", "/sessions/"+sid+"/traces", bobAgent, "").want(t, 404)
	json.Unmarshal(e.call("GET", "/sessions/"+bobSession+"/traces", bobAgent, "").want(t, 200).body, &page)
	if len(page.Items) != 0 {
		t.Error("ada's agent wrote into bob's session")
	}
	noCanaryAnywhere(t, e, "4111111111111111", "4111 1111", "token=abc")
}

// Invariant 1 for spans: a protected value as an attribute's key (of the span, of
// its resource, of a nested list), in any written form, is blanked like a value
// before the span is kept, and a span answered is cleaned with the values saved
// since it was kept.
// The values count as given to the agent (everythingGiven): a value it was never
// given refuses the export whole (protect_test.go).
func TestTraceAttributeKeysAreCleanedWhenKeptAndWhenAnswered(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t, everythingGiven)
	uid, userKey := e.user("ada")
	_, agentKey := e.agent(uid, "scout")
	const canary, later = "Quartz-Canary-4417", "Lantern-Canary-8090"
	e.call("POST", "/memory/items", userKey, `{"label":"Door","fields":[{"fieldRef":"code","label":"Code","secret":true,"value":"`+canary+`"}]}`).want(t, 201)
	sid := e.openSession(agentKey, "s1")
	forms := redacttest.Forms(canary)
	var spans []string
	i := 0
	for _, form := range forms {
		i++
		spans = append(spans, span(sid, fmt.Sprintf("%016x", i), "step", form, "one", "note "+form, "two"))
	}
	i++
	nested := `{"traceId":"4bf92f3577b34da6a3ce929d0e0e4736","spanId":"` + fmt.Sprintf("%016x", i) + `","name":"nested","attributes":[
		{"key":"workflow.session.id","value":{"stringValue":"` + sid + `"}},
		{"key":"form","value":{"kvlistValue":{"values":[{"key":"` + forms["base64"] + `","value":{"stringValue":"x"}},{"key":"` + forms["full-width"] + `","value":{"stringValue":"y"}}]}}}]}`
	i++
	laterSpan := span(sid, fmt.Sprintf("%016x", i), "later", later, "three")
	body := `{"resourceSpans":[{"resource":{"attributes":[{"key":"` + forms["percent"] + `","value":{"stringValue":"shopper"}}]},
		"scopeSpans":[{"scope":{"name":"agent"},"spans":[` + strings.Join(append(spans, nested, laterSpan), ",") + `]}]}]}`
	e.call("POST", "/traces", agentKey, body).want(t, 200)
	// A value saved after the span was kept is not answered either.
	e.call("POST", "/memory/items", userKey, `{"label":"Lamp","fields":[{"fieldRef":"code","label":"Code","secret":true,"value":"`+later+`"}]}`).want(t, 201)

	raw := e.call("GET", "/sessions/"+sid+"/traces", userKey, "").want(t, 200)
	var page struct {
		Items []struct {
			Name       string
			Attributes map[string]any
		}
	}
	json.Unmarshal(raw.body, &page)
	if len(page.Items) != len(forms)+2 {
		t.Fatalf("spans: %s", raw.body)
	}
	for _, sp := range page.Items {
		switch sp.Name {
		case "step":
			// The span's own attribute and its resource's blank alike; both are kept
			// unless they had the same key to begin with.
			var blanked []string
			for k, v := range sp.Attributes {
				if strings.HasPrefix(k, "[redacted]") {
					blanked = append(blanked, v.(string))
				}
			}
			if !slices.Contains(blanked, "one") || sp.Attributes["note [redacted]"] != "two" || len(blanked) == 2 && !slices.Contains(blanked, "shopper") {
				t.Errorf("kept span: %v", sp.Attributes)
			}
		case "nested":
			if f, _ := sp.Attributes["form"].(map[string]any); f["[redacted]"] == nil || f["[redacted] (2)"] == nil {
				t.Errorf("nested keys: %v", sp.Attributes)
			}
		}
	}
	for name, form := range forms {
		if strings.Contains(string(raw.body), form) {
			t.Errorf("the answer holds the value %s: %s", name, raw.body)
		}
	}
	if strings.Contains(string(raw.body), later) || !strings.Contains(string(raw.body), `":"three"`) {
		t.Errorf("a value saved later is answered: %s", raw.body)
	}
	noCanaryAnywhere(t, e, slices.Collect(maps.Values(forms))...)
}

func TestTraceExportsAreBounded(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	uid, _ := e.user("ada")
	_, agentKey := e.agent(uid, "scout")
	sid := e.openSession(agentKey, "s1")
	e.call("POST", "/traces", agentKey, exportOf(span(sid, "00f067aa0ba902b7", "x")), "Content-Type", "text/plain").want(t, 415, "unsupported_media_type")
	many := make([]string, 1001)
	for i := range many {
		many[i] = span(sid, fmt.Sprintf("%016x", i+1), "x")
	}
	wantStatus(t, e.call("POST", "/traces", agentKey, exportOf(many...)), 413, "payload_too_large")
	wantStatus(t, e.call("POST", "/traces", agentKey, `{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"00","spanId":"01"}]}]}]}`), 400, "validation_failed")
	wantStatus(t, e.call("POST", "/traces", agentKey, `not json`), 400, "validation_failed")
	big := exportOf(span(sid, "00f067aa0ba902b7", strings.Repeat("x", 2<<20)))
	wantStatus(t, e.call("POST", "/traces", agentKey, big), 413, "payload_too_large")
}
