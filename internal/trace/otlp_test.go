package trace

import (
	"encoding/hex"
	"testing"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/waystation/waystation/internal/problem"
	"github.com/waystation/waystation/internal/redact"
)

func str(k, v string) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
}

// sample is an export with one span of every kind of value, as an SDK writes it.
func sample() *tracepb.TracesData {
	list := &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: []*commonpb.AnyValue{
		{Value: &commonpb.AnyValue_IntValue{IntValue: 7}}, {Value: &commonpb.AnyValue_DoubleValue{DoubleValue: 1.5}},
		{Value: &commonpb.AnyValue_BoolValue{BoolValue: true}}, {Value: &commonpb.AnyValue_BytesValue{BytesValue: []byte("secret")}},
		{Value: &commonpb.AnyValue_KvlistValue{KvlistValue: &commonpb.KeyValueList{Values: []*commonpb.KeyValue{str("k", "v")}}}},
	}}}}
	return &tracepb.TracesData{ResourceSpans: []*tracepb.ResourceSpans{{
		Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{str("service.name", "shopper"), str(SessionAttribute, "5F0C2B4E-0000-4000-8000-000000000001")}},
		ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{{
			TraceId: []byte{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36},
			SpanId:  []byte{0, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7}, Name: "pay", Kind: tracepb.Span_SPAN_KIND_CLIENT,
			StartTimeUnixNano: 1700000000000000001, EndTimeUnixNano: 1700000000500000000,
			Attributes: []*commonpb.KeyValue{{Key: "values", Value: list}},
			Status:     &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR, Message: "declined"},
		}}}},
	}}}
}

// Protobuf and OTLP/JSON (hex ids, enums as numbers or names, 64-bit numbers as
// strings or numbers, proto names or JSON names, members it does not know) read
// into the same span.
func TestBothEncodingsReadTheSameSpan(t *testing.T) {
	b, err := proto.Marshal(sample())
	if err != nil {
		t.Fatal(err)
	}
	fromPB, err := Parse(b, Protobuf)
	if err != nil || len(fromPB) != 1 {
		t.Fatalf("protobuf: %v %v", fromPB, err)
	}
	js := `{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"shopper"}},
		{"key":"workflow.session.id","value":{"stringValue":"5F0C2B4E-0000-4000-8000-000000000001"}}],"entityRefs":[]},
		"scope_spans":[{"scope":{"name":"x","version":"1"},"spans":[{"traceId":"4BF92F3577B34DA6A3CE929D0E0E4736","span_id":"00f067aa0ba902b7",
		"parentSpanId":"","name":"pay","kind":"SPAN_KIND_CLIENT","startTimeUnixNano":"1700000000000000001","endTimeUnixNano":1700000000500000000,
		"attributes":[{"key":"values","value":{"arrayValue":{"values":[{"intValue":"7"},{"doubleValue":1.5},{"boolValue":true},{"bytesValue":"c2VjcmV0"},
		{"kvlistValue":{"values":[{"key":"k","value":{"stringValue":"v"}}]}}]}}}],"links":[{"traceId":"4bf92f3577b34da6a3ce929d0e0e4736","spanId":"00f067aa0ba902b8"}],
		"status":{"code":2,"message":"declined"},"someFutureField":{"x":1}}]}]}]}`
	fromJSON, err := Parse([]byte(js), JSON)
	if err != nil || len(fromJSON) != 1 {
		t.Fatalf("json: %v %v", fromJSON, err)
	}
	a, c := fromPB[0], fromJSON[0]
	want := Span{SessionID: "5f0c2b4e-0000-4000-8000-000000000001", TraceID: "4bf92f3577b34da6a3ce929d0e0e4736", SpanID: "00f067aa0ba902b7",
		Name: "pay", Kind: 3, Start: 1700000000000000001, End: 1700000000500000000, Status: Status{Code: 2, Message: "declined"}}
	for _, s := range []Span{a, c} {
		if s.SessionID != want.SessionID || s.TraceID != want.TraceID || s.SpanID != want.SpanID || s.ParentSpanID != "" || s.Name != want.Name ||
			s.Kind != want.Kind || s.Start != want.Start || s.End != want.End || s.Status != want.Status || s.Attributes["service.name"] != "shopper" {
			t.Errorf("span %+v", s)
		}
		vs, _ := s.Attributes["values"].([]any)
		if len(vs) != 5 || vs[0] != int64(7) || vs[1] != 1.5 || vs[2] != true || vs[3] != "(bytes)" || vs[4].(map[string]any)["k"] != "v" {
			t.Errorf("values %#v", s.Attributes["values"])
		}
	}
}

// The answer is ExportTraceServiceResponse: empty when all was kept.
func TestResponseIsOTLPs(t *testing.T) {
	if got := Response(Protobuf, 0, "x"); len(got) != 0 {
		t.Errorf("protobuf, nothing rejected: %x", got)
	}
	if got := string(Response(JSON, 0, "x")); got != "{}" {
		t.Errorf("json, nothing rejected: %s", got)
	}
	// partial_success (1) { rejected_spans (1) = 3, error_message (2) = "no" }
	if got := hex.EncodeToString(Response(Protobuf, 3, "no")); got != "0a060803"+"12026e6f" {
		t.Errorf("protobuf: %s", got)
	}
	if got := string(Response(JSON, 3, "no")); got != `{"partialSuccess":{"errorMessage":"no","rejectedSpans":"3"}}` {
		t.Errorf("json: %s", got)
	}
}

// FuzzParse: no input of either encoding panics or answers anything but a clear
// problem, and what it reads is spans with well-formed ids that clean.
func FuzzParse(f *testing.F) {
	b, _ := proto.Marshal(sample())
	f.Add(b)
	f.Add([]byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"4bf92f3577b34da6a3ce929d0e0e4736","spanId":"00f067aa0ba902b7","name":"x"}]}]}]}`))
	f.Add([]byte{0x0a, 0x02, 0x0a, 0x00})
	set := redact.New([]string{"shopper"})
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, enc := range []Encoding{Protobuf, JSON} {
			spans, err := Parse(data, enc)
			if err != nil {
				if c := problem.CodeOf(err); c != problem.ValidationFailed && c != problem.PayloadTooLarge {
					t.Fatalf("%s: %v (%s)", enc.name(), err, c)
				}
				continue
			}
			for i := range spans {
				if len(spans[i].TraceID) != 32 || len(spans[i].SpanID) != 16 || (spans[i].ParentSpanID != "" && len(spans[i].ParentSpanID) != 16) {
					t.Fatalf("ids %+v", spans[i])
				}
				spans[i].Clean(set)
			}
		}
	})
}
