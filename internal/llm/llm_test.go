package llm

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/waystation/waystation/internal/problem"
	"github.com/waystation/waystation/internal/redact"
)

// Each path under the gateway's root is served to one provider's clients: the
// Messages route to Anthropic's, the rest to OpenAI's.
func TestProviderOfARoute(t *testing.T) {
	for route, want := range map[string]Provider{
		"/messages":         Anthropic,
		"/chat/completions": OpenAI, "/responses": OpenAI, "/models": OpenAI, "/embeddings": OpenAI,
		"/messagesx": OpenAI, "/": OpenAI,
	} {
		if got := ProviderOf(route); got != want {
			t.Errorf("%s: %s, want %s", route, got.Name(), want.Name())
		}
	}
}

// Each provider writes an error in the shape its clients read: OpenAI's
// {"error":{message,type,param,code}}, Anthropic's {"type":"error","error":{type,
// message,code}}; the type comes from the status unless one is given, and a body
// too large is Anthropic's request_too_large.
func TestErrorBodiesAreInEachProvidersShape(t *testing.T) {
	var o struct {
		Error map[string]any
	}
	json.Unmarshal(OpenAI.ErrorBody(Error{Status: 404, Message: "gone", Code: "not_found", Param: "model"}), &o)
	if o.Error["message"] != "gone" || o.Error["type"] != "not_found_error" || o.Error["code"] != "not_found" || o.Error["param"] != "model" {
		t.Errorf("OpenAI: %v", o.Error)
	}
	var a struct {
		Type  string
		Error map[string]any
	}
	json.Unmarshal(Anthropic.ErrorBody(Error{Status: 413, Message: "big", Code: "payload_too_large"}), &a)
	if a.Type != "error" || a.Error["type"] != "request_too_large" || a.Error["message"] != "big" || a.Error["code"] != "payload_too_large" {
		t.Errorf("Anthropic: %+v", a)
	}
	json.Unmarshal(Anthropic.ErrorBody(Error{Status: 429, Type: "overloaded_error", Message: "busy"}), &a)
	if a.Error["type"] != "overloaded_error" {
		t.Errorf("Anthropic with a type: %+v", a)
	}
	for status, want := range map[int]string{401: "authentication_error", 403: "permission_error", 404: "not_found_error",
		429: "rate_limit_error", 500: "api_error", 503: "api_error", 400: "invalid_request_error", 422: "invalid_request_error"} {
		if got := ErrorType(status); got != want {
			t.Errorf("ErrorType(%d) = %s, want %s", status, got, want)
		}
	}
}

// The upstream of each provider gets its key in the header it reads, and only the
// client's headers the API takes: Anthropic's anthropic-version, one date, or the
// default; without an upstream, llm_not_configured.
func TestEndpointsCarryTheUpstreamsKeyAndTheClientsVersion(t *testing.T) {
	c := Config{URL: "https://o.example/v1", Key: "sk-o", AnthropicURL: "https://a.example", AnthropicKey: "sk-a"}
	e, err := OpenAI.Endpoint(c, http.Header{"Anthropic-Version": {"2024-01-01"}, "X-Api-Key": {"client"}})
	if err != nil || e.URL != c.URL || e.Header.Get("Authorization") != "Bearer sk-o" || len(e.Header) != 1 || e.FromClient != nil {
		t.Errorf("OpenAI: %+v %v", e, err)
	}
	e, err = Anthropic.Endpoint(c, http.Header{})
	if err != nil || e.URL != c.AnthropicURL || e.Header.Get("X-Api-Key") != "sk-a" || e.Header.Get("Anthropic-Version") != AnthropicVersion || e.FromClient != nil {
		t.Errorf("Anthropic: %+v %v", e, err)
	}
	e, err = Anthropic.Endpoint(c, http.Header{"Anthropic-Version": {"2024-01-01"}, "Anthropic-Beta": {"files"}})
	if err != nil || e.Header.Get("Anthropic-Version") != "2024-01-01" || e.Header.Get("Anthropic-Beta") != "" || len(e.FromClient) != 1 {
		t.Errorf("Anthropic with a version: %+v %v", e, err)
	}
	for _, vs := range [][]string{{"latest"}, {"2024-01-01", "2023-06-01"}} {
		if _, err := Anthropic.Endpoint(c, http.Header{"Anthropic-Version": vs}); problem.CodeOf(err) != problem.ValidationFailed {
			t.Errorf("anthropic-version %v: %v", vs, err)
		}
	}
	for _, p := range []Provider{OpenAI, Anthropic} {
		if _, err := p.Endpoint(Config{}, http.Header{}); problem.CodeOf(err) != problem.LLMNotConfigured {
			t.Errorf("%s without an upstream: %v", p.Name(), err)
		}
	}
}

// A rule blanks free text and counts it, and refuses a value where it cannot be
// blanked (a fixed member, a member name, a number) without naming it.
func TestRuleBlanksFreeTextAndRefusesTheRest(t *testing.T) {
	set := redact.New([]string{"zebra-quartz-7731", "5150981273"})
	body, err := Messages.Request.Decode([]byte(`{"model":"m","max_tokens":8,"system":"code zebra-quartz-7731","messages":[{"role":"user","content":[{"type":"text","text":"ZEBRA QUARTZ 7731"},{"type":"tool_use","id":"t","name":"pay","input":{"list":["zebra-quartz-7731"]}}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	n, err := Messages.Request.Clean(set, body)
	out, _ := json.Marshal(body)
	if err != nil || n != 3 || strings.Contains(strings.ToLower(string(out)), "zebra") || !strings.Contains(string(out), `"id":"t"`) {
		t.Errorf("%d %v: %s", n, err, out)
	}
	for _, raw := range []string{
		`{"model":"zebra-quartz-7731","messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"m","messages":[{"role":"user","content":"hi"}],"zebra-quartz-7731":1}`,
		`{"model":"m","messages":[{"role":"user","content":"hi"}],"seed":5150981273}`,
		`{"model":"m","messages":[{"role":"tool","tool_call_id":"zebra-quartz-7731","content":"hi"}]}`,
	} {
		body, err := ChatCompletions.Request.Decode([]byte(raw))
		if err != nil {
			t.Fatal(err)
		}
		_, err = ChatCompletions.Request.Clean(set, body)
		if p, ok := problem.As(err); !ok || p.Code != problem.ProtectedValueDetected || strings.Contains(p.Detail, "zebra") {
			t.Errorf("%s: %v", raw, err)
		}
	}
}
