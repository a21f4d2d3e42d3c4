package trace

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/waystation/waystation/internal/auth"
	"github.com/waystation/waystation/internal/problem"
	"github.com/waystation/waystation/internal/redact"
)

// card is the saved value a hostile agent tries to get into the trace store.
const card = "4111111111111111"

func intValue(v int64) *commonpb.AnyValue {
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: v}}
}

func doubleValue(v float64) *commonpb.AnyValue {
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: v}}
}

func kv(k string, v *commonpb.AnyValue) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: v}
}

func mustHex(s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}

// hostileSpan is a span with well-formed random ids and times, numbered n.
func hostileSpan(n byte) *tracepb.Span {
	return &tracepb.Span{TraceId: mustHex("4bf92f3577b34da6a3ce929d0e0e4736"), SpanId: []byte{0xa0, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, n},
		Name: "step", Kind: tracepb.Span_SPAN_KIND_CLIENT, StartTimeUnixNano: 1700000000000000001, EndTimeUnixNano: 1700000000500000000}
}

// hostileExport carries the card in every number and id an export has: attribute
// numbers (of the span, in a list, in a key-value list, of the resource, of the
// scope, of an event, of a link), a span, trace and parent id, a link's ids and the
// times. Only the first span is well formed apart from its numbers.
func hostileExport() *tracepb.TracesData {
	numbers := hostileSpan(1)
	numbers.Attributes = []*commonpb.KeyValue{
		kv("int", intValue(4111111111111111)),
		kv("double", doubleValue(4111111111111111)),
		kv("fraction", doubleValue(0.4111111111111111)),
		kv("list", &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: []*commonpb.AnyValue{intValue(4111111111111111), intValue(7)}}}}),
		kv("map", &commonpb.AnyValue{Value: &commonpb.AnyValue_KvlistValue{KvlistValue: &commonpb.KeyValueList{Values: []*commonpb.KeyValue{kv("n", doubleValue(4111111111111111))}}}}),
		kv("attempt", intValue(2)),
	}
	numbers.Events = []*tracepb.Span_Event{{Name: "e", TimeUnixNano: 4111111111111111000, Attributes: []*commonpb.KeyValue{kv("n", intValue(4111111111111111))}}}
	numbers.Links = []*tracepb.Span_Link{{TraceId: mustHex("41111111111111110000000000000001"), SpanId: mustHex(card), Attributes: []*commonpb.KeyValue{kv("n", intValue(4111111111111111))}}}
	spanID := hostileSpan(2)
	spanID.SpanId = mustHex(card)
	traceID := hostileSpan(3)
	traceID.TraceId = mustHex("0000000000000000" + card)
	parentID := hostileSpan(4)
	parentID.ParentSpanId = mustHex(card)
	start := hostileSpan(5)
	start.StartTimeUnixNano = 1004111111111111111
	end := hostileSpan(6)
	end.EndTimeUnixNano = 4111111111111111000
	return &tracepb.TracesData{ResourceSpans: []*tracepb.ResourceSpans{{
		Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{str(SessionAttribute, "5f0c2b4e-0000-4000-8000-000000000001"), kv("host.pid", intValue(4111111111111111))}},
		ScopeSpans: []*tracepb.ScopeSpans{{
			Scope: &commonpb.InstrumentationScope{Name: "agent", Attributes: []*commonpb.KeyValue{kv("n", intValue(4111111111111111))}},
			Spans: []*tracepb.Span{numbers, spanID, traceID, parentID, start, end},
		}},
	}}}
}

// otlpJSON writes d as OTLP/JSON does: protojson's, with ids in hex, not base64.
func otlpJSON(t *testing.T, d *tracepb.TracesData) []byte {
	t.Helper()
	b, err := protojson.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if s, ok := e.(string); ok && (k == "traceId" || k == "spanId" || k == "parentSpanId") {
					raw, err := base64.StdEncoding.DecodeString(s)
					if err != nil {
						t.Fatal(err)
					}
					x[k] = hex.EncodeToString(raw)
					continue
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
	out, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A hostile agent that puts a saved card into a span's numbers, ids or times, in
// either encoding, gets nothing of it kept: numbers are blanked as text is, and a
// span whose trace, span or parent id or whose times hold the card is rejected and
// counted. What is kept holds the card in no form.
func TestExportKeepsNoValueInNumbersIDsOrTimes(t *testing.T) {
	set := redact.New([]string{card})
	pb, err := proto.Marshal(hostileExport())
	if err != nil {
		t.Fatal(err)
	}
	for enc, body := range map[Encoding][]byte{Protobuf: pb, JSON: otlpJSON(t, hostileExport())} {
		store := &memStore{}
		rejected, err := NewService(store, values{v: []string{card}}, Config{}).Export(context.Background(), auth.Principal{UserID: "u"}, body, enc)
		if err != nil {
			t.Fatalf("%s: %v", enc.name(), err)
		}
		if rejected != 2+5 { // the store's two, and the five spans whose ids or times hold the card
			t.Errorf("%s: rejected %d, want 7", enc.name(), rejected)
		}
		kept, _ := json.Marshal(store.saved)
		if len(store.saved) != 1 || set.Contains(string(kept)) {
			t.Errorf("%s: kept %s", enc.name(), kept)
		}
		if len(store.saved) == 1 && store.saved[0].Attributes["attempt"] != int64(2) {
			t.Errorf("%s: a number that holds no value is kept as it is: %s", enc.name(), kept)
		}
	}
}

// A span kept before the card was saved is answered with its numbers blanked and
// its ids and times that hold the card blanked too.
func TestSpansAnsweredHoldNoValueInNumbersIDsOrTimes(t *testing.T) {
	set := redact.New([]string{card})
	store := &memStore{list: []Span{{TraceID: "0000000000000000" + card, SpanID: card, ParentSpanID: card, Name: "pay", Kind: 41111111, Status: Status{Code: 41111111},
		Start: 1004111111111111111, End: 4111111111111111000,
		Attributes: map[string]any{"int": int64(4111111111111111), "double": float64(4111111111111111), "list": []any{int64(4111111111111111)},
			"map": map[string]any{"n": 0.4111111111111111}, "attempt": int64(2)}}}}
	spans, _, err := NewService(store, values{v: []string{card}}, Config{}).Spans(context.Background(), auth.Principal{}, "s", nil, 10)
	if err != nil || len(spans) != 1 {
		t.Fatalf("spans %+v %v", spans, err)
	}
	answered, _ := json.Marshal(spans)
	if set.Contains(string(answered)) || spans[0].Attributes["attempt"] != int64(2) || spans[0].Kind != 0 || spans[0].Status.Code != 0 {
		t.Errorf("answered %s", answered)
	}
}

// A span kind or status code outside OTLP's enums is a number an agent chooses: it
// is read as unspecified, never kept as sent.
func TestKindAndStatusOutsideTheirEnumsAreNotKept(t *testing.T) {
	d := sample()
	s := d.ResourceSpans[0].ScopeSpans[0].Spans[0]
	s.Kind, s.Status.Code = 41111111, 41111111
	b, _ := proto.Marshal(d)
	spans, err := Parse(b, Protobuf)
	if err != nil || len(spans) != 1 || spans[0].Kind != 0 || spans[0].Status.Code != 0 {
		t.Errorf("%+v %v", spans, err)
	}
}

// A body the decoder refuses is answered with where and what went wrong, never with
// the bytes it was sent: a value hidden between characters the JSON encoder escapes
// (<, >, &) would otherwise come back.
func TestParseErrorsQuoteNothingOfTheBody(t *testing.T) {
	hidden := "4<1>1&1<1>1&1<1>1&1<1>1&1<1>1&1"
	for _, body := range []string{
		`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"4bf92f3577b34da6a3ce929d0e0e4736","spanId":"00f067aa0ba902b7","attributes":[{"key":"k","value":{"boolValue":"` + hidden + `"}}]}]}]}]}`,
		`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"4bf92f3577b34da6a3ce929d0e0e4736","spanId":"00f067aa0ba902b7","name":{"` + hidden + `":1}}]}]}]}`,
		`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"4bf92f3577b34da6a3ce929d0e0e4736","spanId":"00f067aa0ba902b7","startTimeUnixNano":"` + hidden + `"}]}]}]}`,
		`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"4bf92f3577b34da6a3ce929d0e0e4736","spanId":"00f067aa0ba902b7","attributes":[{"key":"k","value":{"intValue":"` + hidden + `"}}]}]}]}]}`,
	} {
		_, err := Parse([]byte(body), JSON)
		p, ok := problem.As(err)
		if !ok || p.Code != problem.ValidationFailed {
			t.Fatalf("%v", err)
		}
		plain := strings.NewReplacer(`\u003c`, "", `\u003e`, "", `\u0026`, "", "<", "", ">", "", "&", "").Replace(p.Detail)
		if strings.Contains(plain, "1111") || strings.Contains(p.Detail, `\u00`) {
			t.Errorf("the detail quotes the body: %s", p.Detail)
		}
	}
	for _, id := range []string{"41111111111111g1", "4111111111111111a", "QREREREREREREQ=="} {
		body := `{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"4bf92f3577b34da6a3ce929d0e0e4736","spanId":"` + id + `"}]}]}]}`
		if _, err := Parse([]byte(body), JSON); problem.CodeOf(err) != problem.ValidationFailed || strings.Contains(err.Error(), "4111") || strings.Contains(err.Error(), id) {
			t.Errorf("span id %q: %v", id, err)
		}
	}
	d := sample()
	d.ResourceSpans[0].ScopeSpans[0].Spans[0].Name = "\xff" + card // not UTF-8
	b, _ := proto.MarshalOptions{}.Marshal(d)
	if _, err := Parse(b, Protobuf); err == nil || strings.Contains(err.Error(), "1111") {
		t.Errorf("protobuf: %v", err)
	}
}
