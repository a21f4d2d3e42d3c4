package api_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/waystation/waystation/api"
	"github.com/waystation/waystation/api/openapitest"
	"github.com/waystation/waystation/internal/llm"
)

// refusingUpstream is an upstream that refuses as OpenAI's and Anthropic's APIs do,
// by the model asked for, quoting the user's protected value (llmCanary) in its
// message as a hostile one may; it counts the calls it gets.
func refusingUpstream(t *testing.T) (*httptest.Server, *atomic.Int32) {
	var calls atomic.Int32
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		var body struct{ Model string }
		b, _ := io.ReadAll(r.Body)
		json.Unmarshal(b, &body)
		if r.Method == http.MethodGet {
			body.Model = "missing"
		}
		anthropic := r.URL.Path == "/v1/messages"
		refuse := func(status int, typ, code, message string) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			if anthropic {
				json.NewEncoder(w).Encode(map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": message}})
				return
			}
			json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": message, "type": typ, "code": code, "param": nil}})
		}
		h := w.Header()
		switch body.Model {
		case "missing":
			refuse(404, map[bool]string{true: "not_found_error", false: "invalid_request_error"}[anthropic], "model_not_found", "The model `missing` does not exist.")
		case "long":
			refuse(400, "invalid_request_error", "context_length_exceeded", "The prompt is too long: it begins 'pay with "+llmCanary+"'.")
		case "busy":
			h.Set("Retry-After", "1")
			h.Set("Retry-After-Ms", "1000")
			h.Set("X-Ratelimit-Remaining-Requests", "0")
			h.Set("X-Ratelimit-Reset-Requests", "1s")
			h.Set("Anthropic-Ratelimit-Requests-Remaining", "0")
			h.Set("X-Ratelimit-Limit-Tokens", llmCanary)
			h.Set("X-Ratelimit-Limit-Requests", strings.Repeat("9", 100))
			h.Set("Set-Cookie", "upstream=1")
			h.Set("Request-Id", "req_upstream")
			refuse(429, "rate_limit_error", "rate_limit_exceeded", "Rate limit reached.")
		case "html":
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(404)
			io.WriteString(w, "<html>not here</html>")
		case "huge":
			refuse(400, "invalid_request_error", "", strings.Repeat("x", 70<<10))
		case "down":
			refuse(503, "api_error", "", "overloaded")
		case "keyless":
			refuse(401, "authentication_error", "invalid_api_key", "Incorrect API key provided.")
		default:
			w.Header().Set("Content-Type", "application/json")
			if anthropic {
				io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"echo","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}`)
				return
			}
			io.WriteString(w, `{"id":"c1","object":"chat.completion","choices":[{"message":{"role":"assistant","content":"ok"}}]}`)
		}
	}))
	t.Cleanup(s.Close)
	return s, &calls
}

// An upstream's refusal the client should read (400, 404, 429) comes back with the
// upstream's status, its error in the route's API's own shape (OpenAI's or
// Anthropic's, the upstream's type and code), the headers its client reads to wait
// (Retry-After, retry-after-ms, x-ratelimit-*, anthropic-ratelimit-*; none that is
// not a number, a duration or a date, and nothing else), and its message cleaned of
// the user's protected values. An upstream that fails without such an answer (a
// 5xx, a 401 for the gateway's own key, a body that is no error of its API or
// larger than the bound, no answer at all) is still 502 upstream_error.
func TestLLMUpstreamRefusalsPassThroughInEachAPIsShape(t *testing.T) {
	t.Parallel()
	doc := openapitest.Load(t, "openapi.json")
	up, _ := refusingUpstream(t)
	e := newAuthEnv(t, func(a *api.Authenticated) {
		a.LLM = llm.Config{URL: up.URL + "/v1", Key: upstreamKey, AnthropicURL: up.URL, AnthropicKey: anthropicUpstreamKey}
	})
	uid, userKey := e.user("ada")
	_, agentKey := e.agent(uid, "scout")
	e.call("POST", "/memory/items", userKey, `{"label":"Door","askBeforeUse":false,"fields":[{"fieldRef":"code","label":"Code","secret":true,"value":"`+llmCanary+`"}]}`).want(t, 201)
	type want struct {
		status    int
		typ, code string
		message   string
	}
	routes := []struct {
		path, body string
		header     []string
		anthropic  bool
	}{
		{"/llm/v1/chat/completions", `{"model":"%s","messages":[{"role":"user","content":"hi"}]}`, nil, false},
		{"/llm/v1/responses", `{"model":"%s","input":"hi"}`, nil, false},
		{"/llm/v1/messages", `{"model":"%s","max_tokens":9,"messages":[{"role":"user","content":"hi"}]}`, []string{"X-Api-Key", agentKey}, true},
	}
	for _, route := range routes {
		key := agentKey
		if route.anthropic {
			key = ""
		}
		for model, w := range map[string]want{
			"missing": {404, "", "model_not_found", "does not exist"},
			"long":    {400, "invalid_request_error", "context_length_exceeded", "The prompt is too long: it begins 'pay with [redacted]'."},
			"busy":    {429, "rate_limit_error", "rate_limit_exceeded", "Rate limit reached."},
			"html":    {502, "api_error", "upstream_error", "nothing of its answer is passed on"},
			"huge":    {502, "api_error", "upstream_error", "nothing of its answer is passed on"},
			"down":    {502, "api_error", "upstream_error", "nothing of its answer is passed on"},
			"keyless": {502, "api_error", "upstream_error", "nothing of its answer is passed on"},
		} {
			body := strings.Replace(route.body, "%s", model, 1)
			r := e.call("POST", route.path, key, body, route.header...)
			var got struct {
				Type  string
				Error struct {
					Type, Message string
					Code          any
				}
			}
			err := json.Unmarshal(r.body, &got)
			wantType, wantCode := w.typ, any(w.code)
			if wantType == "" {
				wantType = map[bool]string{true: "not_found_error", false: "invalid_request_error"}[route.anthropic]
			}
			if route.anthropic && w.status != 502 {
				wantCode = nil // Anthropic's errors carry none
			}
			if err != nil || r.StatusCode != w.status || got.Error.Type != wantType || got.Error.Code != wantCode || !strings.Contains(got.Error.Message, w.message) ||
				(route.anthropic != (got.Type == "error")) || r.Header.Get("Content-Type") != "application/json; charset=utf-8" || r.Header.Get("X-Request-Id") == "" {
				t.Errorf("%s %s: %d %s, want %d %s %v saying %q", route.path, model, r.StatusCode, r.body, w.status, wantType, wantCode, w.message)
			}
			if route.anthropic && r.Header.Get("Request-Id") != r.Header.Get("X-Request-Id") {
				t.Errorf("%s %s: request-id %q, X-Request-Id %q", route.path, model, r.Header.Get("Request-Id"), r.Header.Get("X-Request-Id"))
			}
			if model == "busy" {
				limit := "X-Ratelimit-"
				if route.anthropic {
					limit = "Anthropic-Ratelimit-"
				}
				for name := range r.Header {
					if strings.HasPrefix(name, "X-Ratelimit-") || strings.HasPrefix(name, "Anthropic-Ratelimit-") {
						if !strings.HasPrefix(name, limit) {
							t.Errorf("%s: %s passed on", route.path, name)
						}
					}
				}
				if r.Header.Get("Retry-After") != "1" || r.Header.Get("Retry-After-Ms") != "1000" || r.Header.Get("Set-Cookie") != "" ||
					r.Header.Get("X-Ratelimit-Limit-Tokens") != "" || r.Header.Get("X-Ratelimit-Limit-Requests") != "" ||
					(r.Header.Get("Request-Id") == "req_upstream") || (!route.anthropic && r.Header.Get("X-Ratelimit-Remaining-Requests") != "0") ||
					(route.anthropic && r.Header.Get("Anthropic-Ratelimit-Requests-Remaining") != "0") {
					t.Errorf("%s busy: headers %v", route.path, r.Header)
				}
			}
			doc.CheckResponse(t, e.request("POST", route.path, key, body, route.header...), r.Response, r.body)
		}
	}
	// The models list of an upstream that refuses it; an upstream that does not answer.
	r := e.call("GET", "/llm/v1/models", agentKey, "")
	if r.StatusCode != 404 || !strings.Contains(string(r.body), `"code":"model_not_found"`) {
		t.Errorf("models: %d %s", r.StatusCode, r.body)
	}
	doc.CheckResponse(t, e.request("GET", "/llm/v1/models", agentKey, ""), r.Response, r.body)
	up.Close()
	e.call("POST", "/llm/v1/chat/completions", agentKey, `{"model":"missing","messages":[{"role":"user","content":"hi"}]}`).want(t, 502, "upstream_error")
	noCanaryAnywhere(t, e, llmCanary)
}

// A model that is not a name (model: 42) is refused before anything goes upstream,
// as the upstream would refuse it: 400 invalid_parameter, param model, in the route's
// API's shape (invalid_request_error).
func TestLLMModelMustBeAName(t *testing.T) {
	t.Parallel()
	doc := openapitest.Load(t, "openapi.json")
	up, calls := refusingUpstream(t)
	e := newAuthEnv(t, func(a *api.Authenticated) {
		a.LLM = llm.Config{URL: up.URL + "/v1", AnthropicURL: up.URL}
	})
	uid, _ := e.user("ada")
	_, agentKey := e.agent(uid, "scout")
	for _, c := range []struct{ path, body string }{
		{"/llm/v1/chat/completions", `{"model":42,"messages":[{"role":"user","content":"hi"}]}`},
		{"/llm/v1/responses", `{"model":["gpt"],"input":"hi"}`},
		{"/llm/v1/messages", `{"model":null,"max_tokens":9,"messages":[{"role":"user","content":"hi"}]}`},
	} {
		r := e.call("POST", c.path, agentKey, c.body)
		var got struct {
			Type  string
			Error struct{ Type, Code, Param string }
		}
		json.Unmarshal(r.body, &got)
		anthropic := strings.HasSuffix(c.path, "/messages")
		if r.StatusCode != 400 || got.Error.Type != "invalid_request_error" || got.Error.Code != "invalid_parameter" || (anthropic != (got.Type == "error")) ||
			(!anthropic && got.Error.Param != "model") {
			t.Errorf("%s: %d %s", c.path, r.StatusCode, r.body)
		}
		doc.CheckResponse(t, e.request("POST", c.path, agentKey, c.body), r.Response, r.body)
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("the upstream got %d calls", n)
	}
}

// The Anthropic route answers request-id beside X-Request-Id, as Anthropic does, so
// that its clients show a request's id, on an answer and on an error; a request
// under it the gateway does not serve (count_tokens) is a 404 in Anthropic's shape.
// Older Anthropic clients send the key as x-api-key and as a Bearer key: the same key
// in both is taken, two different ones are refused, saying so.
func TestLLMMessagesRouteSpeaksAsAnthropicDoes(t *testing.T) {
	t.Parallel()
	up, _ := refusingUpstream(t)
	e := newAuthEnv(t, func(a *api.Authenticated) { a.LLM = llm.Config{AnthropicURL: up.URL} })
	uid, _ := e.user("ada")
	_, agentKey := e.agent(uid, "scout")
	_, otherKey := e.agent(uid, "other")
	msg := `{"model":"echo","max_tokens":9,"messages":[{"role":"user","content":"hi"}]}`
	r := e.call("POST", "/llm/v1/messages", "", msg, "X-Api-Key", agentKey).want(t, 200)
	if id := r.Header.Get("Request-Id"); id == "" || id != r.Header.Get("X-Request-Id") {
		t.Errorf("request-id %q, X-Request-Id %q", id, r.Header.Get("X-Request-Id"))
	}
	e.call("POST", "/llm/v1/messages", "", msg, "X-Api-Key", agentKey, "Authorization", "Bearer "+agentKey).want(t, 200)
	r = e.call("POST", "/llm/v1/messages", "", msg, "X-Api-Key", agentKey, "Authorization", "Bearer "+otherKey).want(t, 401, "invalid_api_key")
	if !strings.Contains(string(r.body), "different keys") || r.Header.Get("Request-Id") == "" {
		t.Errorf("two keys: %v %s", r.Header, r.body)
	}
	for _, method := range []string{"POST", "GET"} {
		r = e.call(method, "/llm/v1/messages/count_tokens", "", msg, "X-Api-Key", agentKey)
		var got struct {
			Type  string
			Error struct{ Type, Code string }
		}
		json.Unmarshal(r.body, &got)
		if r.StatusCode != 404 || got.Type != "error" || got.Error.Type != "not_found_error" || got.Error.Code != "not_found" || r.Header.Get("Request-Id") == "" {
			t.Errorf("%s count_tokens: %d %v %s", method, r.StatusCode, r.Header, r.body)
		}
	}
	// OpenAI's routes keep OpenAI's shape and X-Request-Id alone.
	r = e.call("POST", "/llm/v1/embeddings", agentKey, `{}`)
	if r.StatusCode != 404 || !strings.Contains(string(r.body), `"error":{"message"`) || r.Header.Get("Request-Id") != "" {
		t.Errorf("embeddings: %d %v %s", r.StatusCode, r.Header, r.body)
	}
}
