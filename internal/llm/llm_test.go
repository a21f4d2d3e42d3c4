package llm

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/waystation/waystation/internal/problem"
	"github.com/waystation/waystation/internal/redact"
)

// Each path under the gateway's root is served to one provider's clients: the
// Messages route and anything under it (count_tokens, which the gateway does not
// serve) to Anthropic's, the rest to OpenAI's.
func TestProviderOfARoute(t *testing.T) {
	for route, want := range map[string]Provider{
		"/messages": Anthropic, "/messages/count_tokens": Anthropic, "/messages/batches/b1": Anthropic,
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

// A model that is not a name is the 400 the upstream would answer, naming model.
func TestDecodeRefusesAModelThatIsNotAName(t *testing.T) {
	for _, a := range []*API{ChatCompletions, Responses, Messages} {
		for _, model := range []string{"42", "null", `["m"]`, `{"id":"m"}`, "true"} {
			_, err := a.Request.Decode([]byte(`{"model":` + model + `,"max_tokens":8,"input":"hi","messages":[{"role":"user","content":"hi"}]}`))
			if p, ok := problem.As(err); !ok || p.Code != problem.InvalidParameter || p.Parameter != "model" || problem.Status(p.Code) != 400 {
				t.Errorf("%s, model %s: %v", a.Route, model, err)
			}
		}
	}
}

// An upstream's 400, 404 and 429 in its provider's shape is an *UpstreamError: its
// status, type, code, param and message (cut to a bound, valid UTF-8), and only the
// headers its clients read to wait, each a number, a duration or a date. Anything
// else (another status, a body of another shape or over the bound, no answer) is
// upstream_error.
func TestCallReadsAnUpstreamsRefusal(t *testing.T) {
	var status int
	var body string
	header := http.Header{}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for k, vs := range header {
			w.Header()[k] = vs
		}
		w.WriteHeader(status)
		io.WriteString(w, body)
	}))
	defer up.Close()
	c := Config{URL: up.URL, AnthropicURL: up.URL, Timeout: 5 * time.Second}
	call := func(p Provider) error {
		e, err := p.Endpoint(c, http.Header{})
		if err != nil {
			t.Fatal(err)
		}
		res, cancel, err := c.Call(context.Background(), e, http.MethodPost, "/x", []byte(`{}`))
		if err == nil {
			cancel()
			res.Body.Close()
			t.Fatal("a refusal came back as an answer")
		}
		return err
	}
	refusal := func(err error) *UpstreamError {
		var u *UpstreamError
		errors.As(err, &u)
		return u
	}
	status, body = 429, `{"error":{"message":"slow down","type":"rate_limit_error","code":"rate_limit_exceeded","param":null}}`
	header = http.Header{"Retry-After": {"2"}, "Retry-After-Ms": {"2000"}, "X-Ratelimit-Reset-Requests": {"6m0s"}, "X-Ratelimit-Limit-Tokens": {"a\"b"},
		"Anthropic-Ratelimit-Requests-Remaining": {"0"}, "Set-Cookie": {"a=b"}, "X-Request-Id": {"up"}}
	u := refusal(call(OpenAI))
	if u == nil || u.Answer != (Error{Status: 429, Type: "rate_limit_error", Message: "slow down", Code: "rate_limit_exceeded"}) ||
		len(u.Header) != 3 || u.Header.Get("Retry-After") != "2" || u.Header.Get("Retry-After-Ms") != "2000" || u.Header.Get("X-Ratelimit-Reset-Requests") != "6m0s" {
		t.Errorf("OpenAI 429: %+v", u)
	}
	status, body = 404, `{"type":"error","error":{"type":"not_found_error","message":"model: x"}}`
	header = http.Header{"Anthropic-Ratelimit-Requests-Remaining": {"3"}, "X-Ratelimit-Remaining-Requests": {"3"}}
	u = refusal(call(Anthropic))
	if u == nil || u.Answer != (Error{Status: 404, Type: "not_found_error", Message: "model: x"}) || len(u.Header) != 1 || u.Header.Get("Anthropic-Ratelimit-Requests-Remaining") != "3" {
		t.Errorf("Anthropic 404: %+v", u)
	}
	status, body, header = 400, `{"error":{"message":"`+strings.Repeat("é", 3000)+`","type":"a type with spaces","code":7}}`, http.Header{}
	u = refusal(call(OpenAI))
	if u == nil || len(u.Answer.Message) > maxMessage || !strings.HasPrefix(u.Answer.Message, "éé") || u.Answer.Type != "invalid_request_error" || u.Answer.Code != "" {
		t.Errorf("OpenAI 400, long: %+v", u)
	}
	for _, c := range []struct {
		p      Provider
		status int
		body   string
	}{
		{OpenAI, 500, `{"error":{"message":"boom","type":"server_error"}}`},
		{OpenAI, 401, `{"error":{"message":"bad key","type":"invalid_request_error"}}`},
		{OpenAI, 404, `<html>no</html>`},
		{Anthropic, 404, `{"error":{"message":"x","type":"invalid_request_error"}}`},
		{Anthropic, 400, `{"type":"error","error":{"type":"invalid_request_error","message":"` + strings.Repeat("x", maxErrorBody) + `"}}`},
		{Anthropic, 429, `{"type":"error","error":{"type":"rate_limit_error","message":""}}`},
	} {
		status, body = c.status, c.body
		if err := call(c.p); refusal(err) != nil || problem.CodeOf(err) != problem.UpstreamError {
			t.Errorf("%s %d %.40s: %v, want upstream_error", c.p.Name(), c.status, c.body, err)
		}
	}
	up.Close()
	if err := call(OpenAI); problem.CodeOf(err) != problem.UpstreamError {
		t.Errorf("no upstream: %v", err)
	}
}
