package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	statuspb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/waystation/waystation/api/openapitest"
)

// The official OpenTelemetry Go exporter, configured only by its environment as a
// user configures it (the API's base as the endpoint, the key as a header), exports
// spans in gzipped protobuf to /v1/traces: they land in the session they name,
// cleaned, and the exporter reads the partial success of the one that names none.
// The card counts as given to the agent (everythingGiven): one it was never given
// refuses the export whole (protect_test.go).
func TestTheOfficialGoExporterSendsSpansIntoASession(t *testing.T) {
	e := newAuthEnv(t, everythingGiven)
	uid, userKey := e.user("ada")
	_, agentKey := e.agent(uid, "scout")
	e.call("POST", "/memory/items", userKey, `{"label":"Card","fields":[{"fieldRef":"number","label":"Card","valueType":"card_number","value":"4111111111111111"}]}`).want(t, 201)
	sid := e.openSession(agentKey, "s1")
	srv := httptest.NewServer(e.srv)
	defer srv.Close()

	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL+base)
	t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "Authorization="+url.PathEscape("Bearer "+agentKey))
	t.Setenv("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip")
	ctx := context.Background()
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp))
	tracer := tp.Tracer("shopper")
	_, sp := tracer.Start(ctx, "checkout 4111 1111 1111 1111")
	sp.SetAttributes(attribute.String("workflow.session.id", sid), attribute.String("url.full", "https://shop.example/pay?card=4111111111111111"),
		attribute.StringSlice("steps", []string{"search", "pay 4111-1111-1111-1111"}), attribute.Int64("attempt", 2), attribute.Bool("paid", true))
	sp.End()
	_, other := tracer.Start(ctx, "no session")
	other.End()
	// The exporter reads the partial success and says so: the span of no session.
	if err := tp.ForceFlush(ctx); err == nil || !strings.Contains(err.Error(), "partial success") || !strings.Contains(err.Error(), "(1 spans rejected)") {
		t.Fatalf("export: %v", err)
	}
	if err := tp.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}

	var page struct {
		Items []struct {
			Name       string
			Kind       int
			Attributes map[string]any
		}
	}
	raw := e.call("GET", "/sessions/"+sid+"/traces", userKey, "").want(t, 200)
	json.Unmarshal(raw.body, &page)
	if len(page.Items) != 1 {
		t.Fatalf("spans: %s", raw.body)
	}
	got := page.Items[0]
	if got.Name != "checkout [redacted]" || got.Kind != 1 || got.Attributes["url.full"] != "https://shop.example/pay" ||
		fmt.Sprint(got.Attributes["steps"]) != "[search pay [redacted]]" || got.Attributes["attempt"] != float64(2) || got.Attributes["paid"] != true ||
		got.Attributes["service.name"] == nil {
		t.Errorf("kept span: %s", raw.body)
	}
	for _, form := range []string{"4111111111111111", "4111 1111", "4111-1111"} { // not "4111": random ids may hold it
		if strings.Contains(string(raw.body), form) {
			t.Errorf("a protected value is kept: %s", raw.body)
		}
	}
}

// OpenTelemetry's JavaScript exporter for OTLP/HTTP JSON, configured the same way,
// exports into the session too: JSON as an SDK writes it (hex ids, numbers as
// strings), read by the same protos. The card counts as given, as above.
func TestTheOfficialJSONExporterSendsSpansIntoASession(t *testing.T) {
	t.Parallel()
	node, modules := os.Getenv("WAYSTATION_NODE"), os.Getenv("WAYSTATION_OTEL_JS")
	if node == "" || modules == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("WAYSTATION_NODE and WAYSTATION_OTEL_JS must be set under CI (make test sets them)")
		}
		t.Skip("WAYSTATION_NODE and WAYSTATION_OTEL_JS are not set: run make test")
	}
	e := newAuthEnv(t, everythingGiven)
	uid, userKey := e.user("ada")
	_, agentKey := e.agent(uid, "scout")
	e.call("POST", "/memory/items", userKey, `{"label":"Card","fields":[{"fieldRef":"number","label":"Card","valueType":"card_number","value":"4111111111111111"}]}`).want(t, 201)
	sid := e.openSession(agentKey, "s1")
	srv := httptest.NewServer(e.srv)
	defer srv.Close()

	cmd := exec.Command(node, filepath.Join("testdata", "otlp-json-export.cjs"))
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules, "SESSION_ID="+sid, "OTEL_EXPORTER_OTLP_ENDPOINT="+srv.URL+base,
		"OTEL_EXPORTER_OTLP_HEADERS=Authorization="+url.PathEscape("Bearer "+agentKey))
	out, err := cmd.CombinedOutput()
	var result struct {
		Code  int
		Error string
	}
	// The export succeeds; the exporter does not fail on a partial success.
	if err != nil || json.Unmarshal(lastLine(out), &result) != nil || result.Code != 0 {
		t.Fatalf("export: %v %+v\n%s", err, result, out)
	}
	var page struct {
		Items []struct {
			Name       string
			Attributes map[string]any
		}
	}
	raw := e.call("GET", "/sessions/"+sid+"/traces", userKey, "").want(t, 200)
	json.Unmarshal(raw.body, &page)
	if len(page.Items) != 1 {
		t.Fatalf("spans: %s", raw.body)
	}
	got := page.Items[0]
	if got.Name != "checkout [redacted]" || got.Attributes["url.full"] != "https://shop.example/pay" || fmt.Sprint(got.Attributes["steps"]) != "[search pay [redacted]]" ||
		got.Attributes["attempt"] != float64(2) || got.Attributes["paid"] != true || got.Attributes["service.name"] != "shopper-js" {
		t.Errorf("kept span: %s", raw.body)
	}
	for _, form := range []string{"4111111111111111", "4111 1111", "4111-1111"} { // not "4111": random ids may hold it
		if strings.Contains(string(raw.body), form) {
			t.Errorf("a protected value is kept: %s", raw.body)
		}
	}
}

func lastLine(b []byte) []byte {
	lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	return lines[len(lines)-1]
}

// exportRequest is an export of the given spans, built with the official protos.
func exportRequest(spans ...*tracepb.Span) *coltracepb.ExportTraceServiceRequest {
	return &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
		ScopeSpans: []*tracepb.ScopeSpans{{Spans: spans}},
	}}}
}

func protoSpan(sid string, n int, name string) *tracepb.Span {
	s := &tracepb.Span{TraceId: bytes.Repeat([]byte{0x4b}, 16), SpanId: []byte{0, 0, 0, 0, 0, 0, byte(n >> 8), byte(n)}, Name: name,
		Kind: tracepb.Span_SPAN_KIND_CLIENT, StartTimeUnixNano: 1700000000000000000, EndTimeUnixNano: 1700000000500000000}
	if sid != "" {
		s.Attributes = []*commonpb.KeyValue{{Key: "workflow.session.id", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: sid}}}}
	}
	return s
}

// An export answers OTLP's ExportTraceServiceResponse in the request's encoding,
// with partial_success counting the rejected spans; a bad body is a clear problem.
func TestTraceExportsAnswerInTheirEncoding(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	uid, _ := e.user("ada")
	_, agentKey := e.agent(uid, "scout")
	sid := e.openSession(agentKey, "s1")
	pb := func(m proto.Message) string {
		b, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	const protobuf = "application/x-protobuf"

	res := e.call("POST", "/v1/traces", agentKey, pb(exportRequest(protoSpan(sid, 1, "kept"), protoSpan("", 2, "nobody's"))), "Content-Type", protobuf).want(t, 200)
	var answer coltracepb.ExportTraceServiceResponse
	if ct := res.Header.Get("Content-Type"); ct != protobuf {
		t.Errorf("Content-Type %q", ct)
	}
	if err := proto.Unmarshal(res.body, &answer); err != nil || answer.GetPartialSuccess().GetRejectedSpans() != 1 || answer.GetPartialSuccess().GetErrorMessage() == "" {
		t.Errorf("answer %v (%v)", &answer, err)
	}
	res = e.call("POST", "/v1/traces", agentKey, pb(exportRequest(protoSpan(sid, 3, "kept"))), "Content-Type", protobuf).want(t, 200)
	if answer.Reset(); proto.Unmarshal(res.body, &answer) != nil || answer.PartialSuccess != nil {
		t.Errorf("all kept: %v", &answer)
	}
	// JSON, as protojson writes it (ids in base64 are not OTLP/JSON: hex is).
	js := exportOf(span(sid, "00f067aa0ba902b7", "json"), span("", "00f067aa0ba902b8", "nobody's"))
	res = e.call("POST", "/v1/traces", agentKey, js).want(t, 200)
	if answer.Reset(); protojson.Unmarshal(res.body, &answer) != nil || answer.GetPartialSuccess().GetRejectedSpans() != 1 {
		t.Errorf("JSON answer %s", res.body)
	}
	var page struct{ Items []struct{ Name string } }
	json.Unmarshal(e.call("GET", "/sessions/"+sid+"/traces", agentKey, "").want(t, 200).body, &page)
	if len(page.Items) != 3 {
		t.Errorf("kept %+v", page.Items)
	}

	// Bad bodies: OTLP's failures, a google.rpc.Status in the request's encoding.
	wantStatus(t, e.call("POST", "/v1/traces", agentKey, "\xff\xff\xff", "Content-Type", protobuf), 400, "validation_failed")
	bad := protoSpan(sid, 4, "short id")
	bad.TraceId = []byte{1, 2, 3}
	wantStatus(t, e.call("POST", "/v1/traces", agentKey, pb(exportRequest(bad)), "Content-Type", protobuf), 400, "validation_failed")
	wantStatus(t, e.call("POST", "/v1/traces", agentKey, pb(exportRequest(protoSpan(sid, 0, "zero id"))), "Content-Type", protobuf), 400, "validation_failed")
	many := make([]*tracepb.Span, 1001)
	for i := range many {
		many[i] = protoSpan(sid, i+10, "x")
	}
	wantStatus(t, e.call("POST", "/v1/traces", agentKey, pb(exportRequest(many...)), "Content-Type", protobuf), 413, "payload_too_large")
	// An encoding OTLP does not have can be answered in none of its own.
	e.call("POST", "/v1/traces", agentKey, js, "Content-Type", "text/plain").want(t, 415, "unsupported_media_type")
	wantStatus(t, e.call("POST", "/v1/traces", agentKey, js, "Content-Encoding", "br"), 415, "unsupported_media_type")
	wantStatus(t, e.call("POST", "/v1/traces", agentKey, js, "Content-Encoding", "gzip"), 400, "validation_failed")
	wantStatus(t, e.call("POST", "/v1/traces", agentKey, `{"resourceSpans": 7}`), 400, "validation_failed")
	e.call("POST", "/v1/traces", "", js).want(t, 401)
	if r := e.call("POST", "/v1/traces", agentKey, "\x0a\x02\x0a\x00", "Content-Type", protobuf); r.StatusCode != http.StatusOK {
		t.Errorf("a resource with no spans: %d %s", r.StatusCode, r.body)
	}
}

// wantStatus checks an OTLP/HTTP failure (the OTLP specification's "Failures"): the
// HTTP status, and a google.rpc.Status body in the request's encoding, protobuf or
// JSON, with a message and an ErrorInfo naming the problem's stable code; bad data
// (400) carries a BadRequest too.
func wantStatus(t *testing.T, r response, status int, code string) {
	t.Helper()
	if r.StatusCode != status {
		t.Fatalf("%s %s: status %d, want %d: %q", r.Request.Method, r.Request.URL.Path, r.StatusCode, status, r.body)
	}
	sent := r.Request.Header.Get("Content-Type")
	if sent == "" {
		sent = "application/json"
	}
	if ct := r.Header.Get("Content-Type"); ct != sent {
		t.Fatalf("%s: Content-Type %q, the request's %q", r.Request.URL.Path, ct, sent)
	}
	var st statuspb.Status
	var err error
	if sent == "application/json" {
		err = protojson.Unmarshal(r.body, &st)
	} else {
		err = proto.Unmarshal(r.body, &st)
	}
	if err != nil || st.Message == "" || len(st.Details) == 0 {
		t.Fatalf("%s: not a Status (%v): %q", r.Request.URL.Path, err, r.body)
	}
	var info errdetails.ErrorInfo
	if err := st.Details[0].UnmarshalTo(&info); err != nil || info.Metadata["code"] != code || info.Reason != strings.ToUpper(code) {
		t.Fatalf("%s: ErrorInfo %v (%v), want code %s", r.Request.URL.Path, &info, err, code)
	}
	var bad errdetails.BadRequest
	if got := len(st.Details) > 1 && st.Details[1].UnmarshalTo(&bad) == nil && len(bad.FieldViolations) == 1; got != (status == 400) {
		t.Fatalf("%s: BadRequest %v with status %d", r.Request.URL.Path, &bad, status)
	}
	traceDoc(t).CheckResponse(t, r.Request, r.Response, r.body)
}

// traceDoc is the OpenAPI document, read once for the checks of wantStatus.
var traceDoc = func() func(t *testing.T) *openapitest.Doc {
	var once sync.Once
	var doc *openapitest.Doc
	return func(t *testing.T) *openapitest.Doc {
		once.Do(func() { doc = openapitest.Load(t, "openapi.json") })
		return doc
	}
}()
