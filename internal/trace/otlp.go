package trace

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	codepb "google.golang.org/genproto/googleapis/rpc/code"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	statuspb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/waystation/waystation/internal/problem"
)

// Encoding is how an OTLP/HTTP export is written: JSON or binary protobuf.
type Encoding int

const (
	JSON Encoding = iota
	Protobuf
)

// ContentType is the media type of an export, and of its answer, in encoding e.
func (e Encoding) ContentType() string {
	if e == Protobuf {
		return "application/x-protobuf"
	}
	return "application/json"
}

// nesting bounds how deeply an export's messages nest: five levels down to a span's
// attribute, and a dozen or more levels of lists and maps in a value.
const nesting = 40

// Parse reads an OTLP/HTTP trace export (an ExportTraceServiceRequest) written in
// encoding enc into spans, each with the session its attributes (or its resource's)
// name ("" when none does). Both encodings are decoded by the official protos:
// protobuf as they are, JSON with protojson once OTLP/JSON's hex trace and span ids
// are made the base64 that protojson reads. Fields the protos do not know are
// ignored, as OTLP asks of a receiver. Malformed input is validation_failed; more
// than MaxSpans is payload_too_large.
func Parse(body []byte, enc Encoding) ([]Span, error) {
	var data tracepb.TracesData // ExportTraceServiceRequest's twin on the wire
	var err error
	if enc == Protobuf {
		err = proto.UnmarshalOptions{DiscardUnknown: true, RecursionLimit: nesting}.Unmarshal(body, &data)
	} else {
		if body, err = protoJSON(body); err != nil {
			return nil, err
		}
		err = protojson.UnmarshalOptions{DiscardUnknown: true, RecursionLimit: nesting}.Unmarshal(body, &data)
	}
	if err != nil {
		return nil, problem.Invalid("The body is not an OTLP trace export in " + enc.name() + " (resourceSpans, scopeSpans, spans): " + describe(err, enc))
	}
	n := 0
	for _, rs := range data.ResourceSpans {
		for _, ss := range rs.GetScopeSpans() {
			n += len(ss.GetSpans())
		}
	}
	if n > MaxSpans {
		return nil, problem.New(problem.PayloadTooLarge, "An export carries at most "+strconv.Itoa(MaxSpans)+" spans.")
	}
	out := make([]Span, 0, n)
	for _, rs := range data.ResourceSpans {
		res := attributes(rs.GetResource().GetAttributes())
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				sp, err := fromProto(s, res)
				if err != nil {
					return nil, err
				}
				out = append(out, sp)
			}
		}
	}
	return out, nil
}

func (e Encoding) name() string {
	if e == Protobuf {
		return "protobuf"
	}
	return "JSON"
}

// describe says where and what a decoder found wrong without a byte of what it was
// sent: the decoders quote the value they refused, and the JSON encoder that writes
// a problem escapes <, > and & so that a value spelt between them would pass any
// check of the answer. Only a field's name is said, and only when it is one of
// OTLP's own (fieldNames), so that nothing an agent chose is repeated.
func describe(err error, enc Encoding) string {
	if enc == Protobuf {
		return "it is not protobuf wire format, or a string in it is not UTF-8."
	}
	m := invalidValue.FindStringSubmatch(err.Error())
	if m == nil || !fieldNames[m[2]] {
		return "a member holds a value of the wrong type."
	}
	return "member " + m[2] + " must be a " + m[1] + "."
}

// invalidValue is protojson's complaint about a member's value: its type and field.
var invalidValue = regexp.MustCompile(`invalid value for ([a-z0-9]+) field ([A-Za-z0-9_]+)`)

// fieldNames are the JSON and proto names of every field of an export's messages.
var fieldNames = func() map[string]bool {
	names := map[string]bool{}
	var walk func(md protoreflect.MessageDescriptor)
	walk = func(md protoreflect.MessageDescriptor) {
		fs := md.Fields()
		for i := 0; i < fs.Len(); i++ {
			f := fs.Get(i)
			if names[string(f.Name())] && names[f.JSONName()] {
				continue
			}
			names[string(f.Name())], names[f.JSONName()] = true, true
			if f.Message() != nil {
				walk(f.Message())
			}
		}
	}
	walk((&tracepb.TracesData{}).ProtoReflect().Descriptor())
	return names
}()

// kinds and codes bound a span's kind and status code to OTLP's enums: any other
// number is one an agent chose, and is read as unspecified.
const (
	kinds = int32(tracepb.Span_SPAN_KIND_CONSUMER)
	codes = int32(tracepb.Status_STATUS_CODE_ERROR)
)

func enum(v, most int32) int {
	if v < 0 || v > most {
		return 0
	}
	return int(v)
}

func fromProto(s *tracepb.Span, res map[string]any) (Span, error) {
	if !validID(s.TraceId, 16) || !validID(s.SpanId, 8) || (len(s.ParentSpanId) != 0 && !validID(s.ParentSpanId, 8)) {
		return Span{}, problem.Invalid("traceId must be 16 bytes (32 hex digits in JSON) and spanId and parentSpanId 8 (16), not all zero.")
	}
	sp := Span{TraceID: hex.EncodeToString(s.TraceId), SpanID: hex.EncodeToString(s.SpanId), ParentSpanID: hex.EncodeToString(s.ParentSpanId),
		Name: s.Name, Kind: enum(int32(s.Kind), kinds), Start: s.StartTimeUnixNano, End: s.EndTimeUnixNano,
		Attributes: attributes(s.Attributes), Status: Status{Code: enum(int32(s.GetStatus().GetCode()), codes), Message: s.GetStatus().GetMessage()}}
	sid, _ := sp.Attributes[SessionAttribute].(string)
	if sid == "" {
		sid, _ = res[SessionAttribute].(string)
	}
	sp.SessionID = strings.ToLower(sid)
	for k, v := range res {
		if _, ok := sp.Attributes[k]; !ok {
			sp.Attributes[k] = v
		}
	}
	return sp, nil
}

func validID(b []byte, n int) bool {
	return len(b) == n && !bytes.Equal(b, make([]byte, n))
}

func attributes(kvs []*commonpb.KeyValue) map[string]any {
	out := make(map[string]any, len(kvs))
	for _, kv := range kvs {
		out[kv.GetKey()] = value(kv.GetValue())
	}
	return out
}

func value(v *commonpb.AnyValue) any {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_BoolValue:
		return x.BoolValue
	case *commonpb.AnyValue_IntValue:
		return x.IntValue
	case *commonpb.AnyValue_DoubleValue:
		return x.DoubleValue
	case *commonpb.AnyValue_BytesValue:
		return "(bytes)" // never kept: they could hold anything, unscanned
	case *commonpb.AnyValue_ArrayValue:
		vs := x.ArrayValue.GetValues()
		out := make([]any, len(vs))
		for i, e := range vs {
			out[i] = value(e)
		}
		return out
	case *commonpb.AnyValue_KvlistValue:
		return attributes(x.KvlistValue.GetValues())
	}
	return nil // empty, or a profiling signal's string index, which traces ignore
}

// idMembers are the members OTLP/JSON writes as hex where protojson reads base64.
var idMembers = map[string]int{"traceId": 16, "trace_id": 16, "spanId": 8, "span_id": 8, "parentSpanId": 8, "parent_span_id": 8}

// protoJSON rewrites an OTLP/JSON export for protojson: the trace and span ids of its
// spans and their links, which OTLP/JSON writes in hex, are written in base64.
// Everything else (numbers as written, unknown members) passes as it is.
func protoJSON(body []byte) ([]byte, error) {
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	var doc map[string]any
	if err := d.Decode(&doc); err != nil || d.More() {
		return nil, problem.Invalid("The body is not an OTLP trace export in JSON: it is not one JSON object.")
	}
	var err error
	each := func(v any, names []string, f func(map[string]any)) {
		for _, name := range names {
			list, _ := v.(map[string]any)[name].([]any)
			for _, e := range list {
				if m, ok := e.(map[string]any); ok {
					f(m)
				}
			}
		}
	}
	ids := func(m map[string]any) {
		for k, n := range idMembers {
			s, ok := m[k].(string)
			if !ok || s == "" {
				continue
			}
			b, derr := hex.DecodeString(s)
			if derr != nil || len(b) != n {
				err = problem.Invalid("traceId must be 32 and spanId and parentSpanId 16 hex digits, not all zero.")
				continue
			}
			m[k] = base64.StdEncoding.EncodeToString(b)
		}
	}
	each(doc, []string{"resourceSpans", "resource_spans"}, func(rs map[string]any) {
		each(rs, []string{"scopeSpans", "scope_spans"}, func(ss map[string]any) {
			each(ss, []string{"spans"}, func(s map[string]any) {
				ids(s)
				each(s, []string{"links"}, ids)
			})
		})
	})
	if err != nil {
		return nil, err
	}
	return json.Marshal(doc)
}

// Response is OTLP's ExportTraceServiceResponse in encoding enc: empty when every
// span was kept, else a partial success counting and explaining the rejected ones.
func Response(enc Encoding, rejected int, message string) []byte {
	if enc == Protobuf {
		if rejected == 0 {
			return []byte{}
		}
		var ps []byte
		ps = protowire.AppendTag(ps, 1, protowire.VarintType) // rejected_spans
		ps = protowire.AppendVarint(ps, uint64(rejected))
		ps = protowire.AppendTag(ps, 2, protowire.BytesType) // error_message
		ps = protowire.AppendString(ps, message)
		out := protowire.AppendTag(nil, 1, protowire.BytesType) // partial_success
		return protowire.AppendBytes(out, ps)
	}
	if rejected == 0 {
		return []byte("{}")
	}
	b, _ := json.Marshal(map[string]any{"partialSuccess": map[string]string{"rejectedSpans": strconv.Itoa(rejected), "errorMessage": message}})
	return b
}

// Failure is the body of an OTLP/HTTP failure in encoding enc: a google.rpc.Status
// (OTLP's "Failures": every 4xx and 5xx answer carries one, in the request's
// encoding), whose code is the gRPC code of the HTTP status, whose message is the
// problem's detail, and whose details hold an ErrorInfo naming the problem's stable
// code (reason: the code in capitals; metadata: the code and its problem type) and,
// for bad data (400), a BadRequest that says what was wrong with the body.
func Failure(enc Encoding, httpStatus int, code, problemType, message string) []byte {
	st := &statuspb.Status{Code: int32(grpcCode(httpStatus)), Message: message}
	info, _ := anypb.New(&errdetails.ErrorInfo{
		Reason:   strings.ToUpper(code),
		Domain:   "waystation",
		Metadata: map[string]string{"code": code, "type": problemType},
	})
	st.Details = append(st.Details, info)
	if httpStatus == 400 {
		bad, _ := anypb.New(&errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{{Field: "body", Description: message}}})
		st.Details = append(st.Details, bad)
	}
	var b []byte
	if enc == Protobuf {
		b, _ = proto.Marshal(st)
	} else {
		b, _ = protojson.Marshal(st)
	}
	return b
}

// grpcCode is the gRPC status code of an HTTP status, as google.rpc.Code maps them.
func grpcCode(httpStatus int) codepb.Code {
	switch httpStatus {
	case 400, 413, 415, 422:
		return codepb.Code_INVALID_ARGUMENT
	case 401:
		return codepb.Code_UNAUTHENTICATED
	case 403:
		return codepb.Code_PERMISSION_DENIED
	case 404:
		return codepb.Code_NOT_FOUND
	case 409:
		return codepb.Code_ABORTED
	case 429:
		return codepb.Code_RESOURCE_EXHAUSTED
	case 501:
		return codepb.Code_UNIMPLEMENTED
	case 503:
		return codepb.Code_UNAVAILABLE
	case 504:
		return codepb.Code_DEADLINE_EXCEEDED
	}
	if httpStatus >= 500 {
		return codepb.Code_INTERNAL
	}
	return codepb.Code_UNKNOWN
}
