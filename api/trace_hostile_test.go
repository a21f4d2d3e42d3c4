package api_test

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/waystation/waystation/internal/redact"
)

// numberAttr is an attribute holding an int or, with double set, a double.
func numberAttr(k string, v int64, double bool) *commonpb.KeyValue {
	if double {
		return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: float64(v)}}}
	}
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: v}}}
}

// cardSpans are spans of session sid carrying a saved card in their numbers (of the
// span, a list, a key-value list, the resource, the scope, an event, a link), their
// ids and their times; n makes their ids apart from another export's.
func cardSpans(sid string, n byte) *tracepb.TracesData {
	const card = 4111111111111111
	hexID := func(s string) []byte {
		b, _ := hex.DecodeString(s)
		return b
	}
	base := func(i byte) *tracepb.Span {
		return &tracepb.Span{TraceId: hexID("4bf92f3577b34da6a3ce929d0e0e4736"), SpanId: []byte{0xb0, n, 0, 0, 0, 0, 0, i}, Name: "step",
			StartTimeUnixNano: 1700000000000000000 + uint64(i), EndTimeUnixNano: 1700000000500000000}
	}
	numbers := base(1)
	numbers.Attributes = []*commonpb.KeyValue{numberAttr("int", card, false), numberAttr("double", card, true),
		{Key: "list", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: []*commonpb.AnyValue{numberAttr("", card, false).Value}}}}},
		{Key: "map", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_KvlistValue{KvlistValue: &commonpb.KeyValueList{Values: []*commonpb.KeyValue{numberAttr("n", card, true)}}}}}}
	numbers.Events = []*tracepb.Span_Event{{Name: "e", TimeUnixNano: card * 1000, Attributes: []*commonpb.KeyValue{numberAttr("n", card, false)}}}
	numbers.Links = []*tracepb.Span_Link{{TraceId: hexID("41111111111111114111111111111111"), SpanId: hexID("4111111111111111"), Attributes: []*commonpb.KeyValue{numberAttr("n", card, false)}}}
	spanID, traceID, parentID, start := base(2), base(3), base(4), base(5)
	spanID.SpanId = hexID("4111111111111111")
	traceID.TraceId = hexID("00000000000000004111111111111111")
	parentID.ParentSpanId = hexID("4111111111111111")
	start.StartTimeUnixNano = 1004111111111111111
	return &tracepb.TracesData{ResourceSpans: []*tracepb.ResourceSpans{{
		Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{{Key: "workflow.session.id", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: sid}}},
			numberAttr("host.pid", card, false)}},
		ScopeSpans: []*tracepb.ScopeSpans{{Scope: &commonpb.InstrumentationScope{Name: "agent", Attributes: []*commonpb.KeyValue{numberAttr("n", card, false)}},
			Spans: []*tracepb.Span{numbers, spanID, traceID, parentID, start}}},
	}}}
}

// A hostile agent that sends a saved card as span numbers, ids and times, in OTLP
// protobuf and OTLP/JSON, gets the spans with ids or times holding it rejected and
// counted, and the numbers of the span kept blanked: GET /sessions/{id}/traces
// answers nothing of the card, and no table holds it. The card counts as given to
// the agent (everythingGiven): one it was never given refuses the export whole and
// counts against its budget (TestATraceHoldingAValueNeverGivenIsRefusedAndCounted).
func TestTracesKeepNoSavedValueInNumbersIDsOrTimes(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t, everythingGiven)
	uid, userKey := e.user("ada")
	_, agentKey := e.agent(uid, "scout")
	e.call("POST", "/memory/items", userKey, `{"label":"Card","fields":[{"fieldRef":"number","label":"Card","valueType":"card_number","value":"4111111111111111"}]}`).want(t, 201)
	sid := e.openSession(agentKey, "s1")
	set := redact.New([]string{"4111111111111111"})

	pb, err := proto.Marshal(cardSpans(sid, 1))
	if err != nil {
		t.Fatal(err)
	}
	var answer struct {
		PartialSuccess struct{ RejectedSpans string }
	}
	res := e.call("POST", "/v1/traces", agentKey, string(pb), "Content-Type", "application/x-protobuf").want(t, 200)
	var pbAnswer coltracepb.ExportTraceServiceResponse
	if err := proto.Unmarshal(res.body, &pbAnswer); err != nil || pbAnswer.GetPartialSuccess().GetRejectedSpans() != 4 {
		t.Errorf("protobuf: answered %v (%v)", &pbAnswer, err)
	}
	js := otlpJSONOf(t, cardSpans(sid, 2))
	e.call("POST", "/v1/traces", agentKey, js).want(t, 200).into(t, &answer)
	if answer.PartialSuccess.RejectedSpans != "4" {
		t.Errorf("JSON: rejected %+v", answer)
	}
	raw := e.call("GET", "/sessions/"+sid+"/traces", userKey, "").want(t, 200)
	if set.Contains(string(raw.body)) || strings.Count(string(raw.body), `"spanId"`) != 2 || !strings.Contains(string(raw.body), `"int":"[redacted]"`) {
		t.Errorf("answered %s", raw.body)
	}
	noCanaryAnywhere(t, e, "4111111111111111")
}

// otlpJSONOf writes d as OTLP/JSON: protojson's, with ids in hex, not base64.
func otlpJSONOf(t *testing.T, d *tracepb.TracesData) string {
	t.Helper()
	b, err := protojson.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	json.Unmarshal(b, &doc)
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if s, ok := e.(string); ok && (k == "traceId" || k == "spanId" || k == "parentSpanId") {
					raw, _ := base64.StdEncoding.DecodeString(s)
					x[k] = hex.EncodeToString(raw)
				}
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(doc)
	out, _ := json.Marshal(doc)
	return string(out)
}
