package api_test

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/waystation/waystation/api"
	"github.com/waystation/waystation/api/openapitest"
	"github.com/waystation/waystation/internal/llm"
	"github.com/waystation/waystation/internal/llmecho"
	"github.com/waystation/waystation/internal/redact/redacttest"
)

// echoUpstream is the stand-in model, OpenAI's routes at /v1 and Anthropic's at its
// root, keeping every call that reached it.
type echoUpstream struct {
	url   string
	mu    sync.Mutex
	calls []llmecho.Call
}

const anthropicUpstreamKey = "sk-ant-upstream-secret-0042"

func newEchoUpstream(t *testing.T) *echoUpstream {
	u := &echoUpstream{}
	s := llmecho.New()
	s.Called = func(c llmecho.Call) {
		u.mu.Lock()
		defer u.mu.Unlock()
		u.calls = append(u.calls, c)
	}
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	u.url = hs.URL
	return u
}

func (u *echoUpstream) configure(a *api.Authenticated) {
	a.LLM = llm.Config{URL: u.url + "/v1", Key: upstreamKey, AnthropicURL: u.url, AnthropicKey: anthropicUpstreamKey}
}

func (u *echoUpstream) received() []llmecho.Call {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]llmecho.Call(nil), u.calls...)
}

// all is every body the upstream received, and every header value.
func (u *echoUpstream) all() string {
	var b strings.Builder
	for _, c := range u.received() {
		b.Write(c.Body)
		for _, vs := range c.Header {
			b.WriteString("\n" + strings.Join(vs, "\n"))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// protectedEnv is an agent's key, of a user whose protected values are the canaries.
// The values count as given to the agent (everythingGiven): a value it was never
// given is refused and counted before any of this (protect_test.go).
func protectedEnv(t *testing.T, u *echoUpstream) (e *authEnv, userKey, agentKey string) {
	e = newAuthEnv(t, u.configure, everythingGiven)
	uid, userKey := e.user("ada")
	_, agentKey = e.agent(uid, "scout")
	e.call("POST", "/memory/items", userKey, `{"label":"Door","askBeforeUse":false,"fields":[{"fieldRef":"code","label":"Code","secret":true,"value":"`+llmCanary+`"}]}`).want(t, 201)
	e.call("POST", "/memory/items", userKey, `{"label":"Me","fields":[{"fieldRef":"born","label":"Birthday","valueType":"date","value":"1990-04-17"}]}`).want(t, 201)
	return e, userKey, agentKey
}

const llmCanary = "Quartz-Canary-4417"

func quoteJSON(v string) string { b, _ := json.Marshal(v); return string(b) }

// Invariant 2 on OpenAI's Responses API: a protected value, in every written form, in
// the instructions, the input (a string, a message, a function call's arguments, its
// output), the tools and the metadata's values, is blanked, whole and streamed;
// where it cannot be blanked (the model, a call_id, a member name, a number, the
// previous response) it is refused and nothing is forwarded. The count comes back in
// X-Redactions and as an llm.redacted event.
func TestLLMResponsesNeverForwardAProtectedValue(t *testing.T) {
	t.Parallel()
	up := newEchoUpstream(t)
	e, _, agentKey := protectedEnv(t, up)
	sid := e.openSession(agentKey, "s1")
	forms := redacttest.Forms(llmCanary)
	for name, form := range forms {
		q := quoteJSON(form)
		body := `{"model":"echo","instructions":` + quoteJSON("The code is "+form+".") + `,"input":[
			{"role":"user","content":` + quoteJSON("pay with "+form) + `},
			{"type":"message","role":"user","content":[{"type":"input_text","text":` + q + `}]},
			{"type":"function_call","call_id":"call_1","name":"pay","arguments":` + quoteJSON(`{"code":`+q+`}`) + `},
			{"type":"function_call_output","call_id":"call_1","output":` + quoteJSON("paid with "+form) + `}],
			"tools":[{"type":"function","name":"pay","description":` + q + `,"parameters":{"type":"object","properties":{"code":{"type":"string","description":` + q + `}}}}],
			"metadata":{"note":` + q + `},"text":{"format":{"type":"json_schema","name":"out","schema":{"type":"object","description":` + q + `}}}}`
		r := e.call("POST", "/llm/v1/responses", agentKey, body, "X-Session-Id", sid).want(t, 200)
		if r.Header.Get("X-Redactions") != "9" {
			t.Errorf("%s: X-Redactions %q", name, r.Header.Get("X-Redactions"))
		}
		var res struct {
			Object string
			Output []struct{ Content []struct{ Text string } }
		}
		r.into(t, &res)
		if res.Object != "response" || len(res.Output) != 1 || !strings.Contains(res.Output[0].Content[0].Text, "function_call_output: paid with [redacted]") {
			t.Errorf("%s: %s", name, r.body)
		}
	}
	var events struct {
		Items []struct {
			Type string
			Data map[string]any
		}
	}
	e.call("GET", "/sessions/"+sid+"/events", agentKey, "").want(t, 200).into(t, &events)
	if last := events.Items[len(events.Items)-1]; last.Type != "llm.redacted" || last.Data["count"] != float64(9) {
		t.Errorf("event %+v", last)
	}

	// Streamed, a date in another form: blanked, and the events come through.
	req := e.request("POST", "/llm/v1/responses", agentKey, `{"model":"echo","stream":true,"input":"born 17/04/1990"}`)
	rec := httptest.NewRecorder()
	e.srv.ServeHTTP(rec, req)
	if rec.Code != 200 || rec.Header().Get("Content-Type") != "text/event-stream" || rec.Header().Get("X-Redactions") != "1" ||
		!strings.Contains(rec.Body.String(), "event: response.completed") || !strings.Contains(rec.Body.String(), "[redacted]") {
		t.Errorf("stream: %d %v %s", rec.Code, rec.Header(), rec.Body)
	}

	sent := len(up.received())
	for _, form := range forms {
		q := quoteJSON(form)
		for _, body := range []string{
			`{"model":` + q + `,"input":"hi"}`,
			`{"model":"echo","previous_response_id":` + q + `}`,
			`{"model":"echo","input":[{"type":"function_call_output","call_id":` + q + `,"output":"ok"}]}`,
			`{"model":"echo","input":"hi","metadata":{` + q + `:"x"}}`,
			`{"model":"echo","input":[{"role":` + q + `,"content":"hi"}]}`,
			`{"model":"echo","input":"hi","tools":[{"type":"function","name":"pay","parameters":{"type":"object","properties":{` + q + `:{"type":"string"}}}}]}`,
		} {
			r := e.call("POST", "/llm/v1/responses", agentKey, body).want(t, 422, "protected_value_detected")
			if strings.Contains(string(r.body), form) {
				t.Errorf("the refusal repeats the value: %s", r.body)
			}
		}
	}
	e.call("POST", "/llm/v1/responses", agentKey, `{"model":"echo","input":"hi","max_output_tokens":19900417}`).want(t, 422, "protected_value_detected")
	e.call("POST", "/llm/v1/responses", agentKey, `{"model":"echo","input":"hi","max_output_tokens":4096}`).want(t, 200)
	e.call("POST", "/llm/v1/responses", agentKey, `{"model":"echo","input":[{"role":"user","content":[{"type":"input_image","image_url":"https://x.example/a.png"}]}]}`).want(t, 422, "validation_failed")
	if n := len(up.received()); n != sent+1 {
		t.Errorf("a refused body was forwarded: %d calls, want %d", n, sent+1)
	}
	got := up.all()
	for name, form := range forms {
		if strings.Contains(got, form) {
			t.Errorf("the upstream received the value %s", name)
		}
	}
	for _, leak := range []string{"1990", "17/04"} {
		if strings.Contains(got, leak) {
			t.Errorf("the upstream received %q", leak)
		}
	}
	for _, c := range up.received() {
		if c.Path != "/v1/responses" || c.Header.Get("Authorization") != "Bearer "+upstreamKey {
			t.Errorf("upstream call %s with %q", c.Path, c.Header.Get("Authorization"))
		}
	}
}

// Invariant 2 on Anthropic's Messages API, with the agent's key as Anthropic's
// clients send it (x-api-key) or as a Bearer key: a protected value, in every written
// form, in the system prompt, a message's text, a tool call's input, a tool's result
// and the tools, is blanked, whole and streamed; where it cannot be blanked (the
// model, a tool_use_id, a member name, a number, the anthropic-version header) it is
// refused and nothing is forwarded. Upstream, the call carries the upstream's key as
// x-api-key and the client's anthropic-version (2023-06-01 when it sent none).
func TestLLMMessagesNeverForwardAProtectedValue(t *testing.T) {
	t.Parallel()
	up := newEchoUpstream(t)
	e, _, agentKey := protectedEnv(t, up)
	sid := e.openSession(agentKey, "s1")
	forms := redacttest.Forms(llmCanary)
	for name, form := range forms {
		q := quoteJSON(form)
		body := `{"model":"echo","max_tokens":64,"system":[{"type":"text","text":` + quoteJSON("The code is "+form+".") + `}],"messages":[
			{"role":"user","content":` + quoteJSON("pay with "+form) + `},
			{"role":"assistant","content":[{"type":"text","text":` + q + `},{"type":"tool_use","id":"toolu_1","name":"pay","input":{"code":` + q + `,"list":[` + q + `]}}]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":` + quoteJSON("paid with "+form) + `}]}]}],
			"tools":[{"name":"pay","description":` + q + `,"input_schema":{"type":"object","properties":{"code":{"type":"string","description":` + q + `}}}}],
			"metadata":{"user_id":` + q + `},"stop_sequences":[` + q + `]}`
		r := e.call("POST", "/llm/v1/messages", "", body, "X-Api-Key", agentKey, "X-Session-Id", sid, "Anthropic-Version", "2023-06-01").want(t, 200)
		if r.Header.Get("X-Redactions") != "10" {
			t.Errorf("%s: X-Redactions %q", name, r.Header.Get("X-Redactions"))
		}
		var msg struct {
			Type    string
			Content []struct{ Text string }
		}
		r.into(t, &msg)
		if msg.Type != "message" || len(msg.Content) != 1 || !strings.Contains(msg.Content[0].Text, "tool_result: paid with [redacted]") {
			t.Errorf("%s: %s", name, r.body)
		}
	}
	var events struct {
		Items []struct {
			Type string
			Data map[string]any
		}
	}
	e.call("GET", "/sessions/"+sid+"/events", agentKey, "").want(t, 200).into(t, &events)
	if last := events.Items[len(events.Items)-1]; last.Type != "llm.redacted" || last.Data["count"] != float64(10) {
		t.Errorf("event %+v", last)
	}

	// Streamed, with a Bearer key and no anthropic-version: blanked, the default sent.
	req := e.request("POST", "/llm/v1/messages", agentKey, `{"model":"echo","max_tokens":9,"stream":true,"messages":[{"role":"user","content":"born April 17, 1990"}]}`)
	rec := httptest.NewRecorder()
	e.srv.ServeHTTP(rec, req)
	if rec.Code != 200 || rec.Header().Get("Content-Type") != "text/event-stream" || rec.Header().Get("X-Redactions") != "1" ||
		!strings.Contains(rec.Body.String(), "event: message_stop") || !strings.Contains(rec.Body.String(), "[redacted]") {
		t.Errorf("stream: %d %v %s", rec.Code, rec.Header(), rec.Body)
	}
	calls := up.received()
	if last := calls[len(calls)-1]; last.Header.Get("Anthropic-Version") != llm.AnthropicVersion {
		t.Errorf("anthropic-version %q", last.Header.Get("Anthropic-Version"))
	}

	sent := len(calls)
	for _, form := range forms {
		q := quoteJSON(form)
		for _, body := range []string{
			`{"model":` + q + `,"max_tokens":9,"messages":[{"role":"user","content":"hi"}]}`,
			`{"model":"echo","max_tokens":9,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":` + q + `,"content":"ok"}]}]}`,
			`{"model":"echo","max_tokens":9,"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"pay","input":{` + q + `:1}}]}]}`,
			`{"model":"echo","max_tokens":9,"messages":[{"role":` + q + `,"content":"hi"}]}`,
			`{"model":"echo","max_tokens":9,"messages":[{"role":"user","content":"hi"}],"tools":[{"name":"pay","input_schema":{"type":"object","properties":{` + q + `:{}}}}]}`,
		} {
			r := e.call("POST", "/llm/v1/messages", "", body, "X-Api-Key", agentKey).want(t, 422, "protected_value_detected")
			if strings.Contains(string(r.body), form) {
				t.Errorf("the refusal repeats the value: %s", r.body)
			}
		}
	}
	e.call("POST", "/llm/v1/messages", "", `{"model":"echo","max_tokens":19900417,"messages":[{"role":"user","content":"hi"}]}`, "X-Api-Key", agentKey).want(t, 422, "protected_value_detected")
	e.call("POST", "/llm/v1/messages", "", `{"model":"echo","max_tokens":4096,"messages":[{"role":"user","content":"hi"}]}`, "X-Api-Key", agentKey).want(t, 200)
	e.call("POST", "/llm/v1/messages", "", `{"model":"echo","max_tokens":9,"messages":[{"role":"user","content":"hi"}]}`, "X-Api-Key", agentKey, "Anthropic-Version", "1990-04-17").want(t, 422, "protected_value_detected")
	e.call("POST", "/llm/v1/messages", "", `{"model":"echo","max_tokens":9,"messages":[{"role":"user","content":"hi"}]}`, "X-Api-Key", agentKey, "Anthropic-Version", "latest").want(t, 422, "validation_failed")
	e.call("POST", "/llm/v1/messages", "", `{"model":"echo","max_tokens":9,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"url","url":"https://x.example/a.png"}}]}]}`, "X-Api-Key", agentKey).want(t, 422, "validation_failed")
	calls = up.received()
	if len(calls) != sent+1 {
		t.Errorf("a refused body was forwarded: %d calls, want %d", len(calls), sent+1)
	}
	got := up.all()
	for name, form := range forms {
		if strings.Contains(got, form) {
			t.Errorf("the upstream received the value %s", name)
		}
	}
	if strings.Contains(got, "1990") || strings.Contains(got, agentKey) {
		t.Error("the upstream received the birthday or the agent's key")
	}
	for _, c := range calls {
		if c.Path != "/v1/messages" || c.Header.Get("X-Api-Key") != anthropicUpstreamKey || c.Header.Get("Authorization") != "" || c.Header.Get("Anthropic-Version") == "" {
			t.Errorf("upstream call %s with x-api-key %q, Authorization %q", c.Path, c.Header.Get("X-Api-Key"), c.Header.Get("Authorization"))
		}
	}
}

// The Messages route answers its errors in Anthropic's shape, which Anthropic's
// clients read ({"type":"error","error":{"type","message"}}), with the problem's code
// as error.code, and as the OpenAPI document says; the Responses route in OpenAI's.
// x-api-key is taken on the Messages route only, and never together with another
// Bearer key.
func TestLLMMessagesErrorsAreInAnthropicsShape(t *testing.T) {
	t.Parallel()
	doc := openapitest.Load(t, "openapi.json")
	up := newEchoUpstream(t)
	e, userKey, agentKey := protectedEnv(t, up)
	off := newAuthEnv(t, func(a *api.Authenticated) { a.LLM = llm.Config{URL: up.url + "/v1"} })
	offUID, _ := off.user("bo")
	_, offKey := off.agent(offUID, "scout")
	msg := func(content string) string {
		return `{"model":"echo","max_tokens":9,"messages":[{"role":"user","content":"` + content + `"}]}`
	}
	for _, c := range []struct {
		env       *authEnv
		header    []string
		body      string
		status    int
		code, typ string
	}{
		{e, nil, msg("hi"), 401, "unauthenticated", "authentication_error"},
		{e, []string{"X-Api-Key", "sk_agent_nottherightlength"}, msg("hi"), 401, "invalid_api_key", "authentication_error"},
		{e, []string{"X-Api-Key", agentKey, "Authorization", "Bearer " + userKey}, msg("hi"), 401, "invalid_api_key", "authentication_error"},
		{e, []string{"X-Api-Key", userKey}, msg("hi"), 403, "wrong_key_scope", "permission_error"},
		{e, []string{"X-Api-Key", agentKey}, `{"model":"echo"}`, 422, "validation_failed", "invalid_request_error"},
		{e, []string{"X-Api-Key", agentKey}, `{"model":"` + llmCanary + `","max_tokens":9,"messages":[{"role":"user","content":"hi"}]}`, 422, "protected_value_detected", "invalid_request_error"},
		{e, []string{"X-Api-Key", agentKey, "X-Session-Id", "00000000-0000-4000-8000-000000000000"}, msg("hi"), 404, "not_found", "not_found_error"},
		{off, []string{"X-Api-Key", offKey}, msg("hi"), 503, "llm_not_configured", "api_error"},
	} {
		r := c.env.call("POST", "/llm/v1/messages", "", c.body, c.header...)
		var got struct {
			Type  string
			Error struct{ Type, Message, Code string }
		}
		if err := json.Unmarshal(r.body, &got); err != nil || r.StatusCode != c.status || got.Type != "error" || got.Error.Code != c.code ||
			got.Error.Type != c.typ || got.Error.Message == "" || r.Header.Get("Content-Type") != "application/json; charset=utf-8" {
			t.Errorf("%v: %d %s, want %d with error.code %s and error.type %s", c.header, r.StatusCode, r.body, c.status, c.code, c.typ)
		}
		if strings.Contains(string(r.body), llmCanary) {
			t.Errorf("the error repeats the protected value: %s", r.body)
		}
		doc.CheckResponse(t, c.env.request("POST", "/llm/v1/messages", "", c.body, c.header...), r.Response, r.body)
	}
	// Elsewhere x-api-key is no key; the Responses route answers in OpenAI's shape.
	e.call("POST", "/llm/v1/responses", "", `{"model":"echo","input":"hi"}`, "X-Api-Key", agentKey).want(t, 401, "unauthenticated")
	e.call("GET", "/agent/me", "", "", "X-Api-Key", agentKey).want(t, 401, "unauthenticated")
	for _, c := range []struct {
		key, body string
		status    int
		code      string
	}{
		{userKey, `{"model":"echo","input":"hi"}`, 403, "wrong_key_scope"},
		{agentKey, `{"model":"echo","input":7}`, 422, "validation_failed"},
		{agentKey, `{"model":"` + llmCanary + `","input":"hi"}`, 422, "protected_value_detected"},
	} {
		r := e.call("POST", "/llm/v1/responses", c.key, c.body).want(t, c.status, c.code)
		var got struct {
			Error struct{ Type, Message string }
		}
		if json.Unmarshal(r.body, &got); got.Error.Type == "" || got.Error.Message == "" {
			t.Errorf("responses: %s", r.body)
		}
		doc.CheckResponse(t, e.request("POST", "/llm/v1/responses", c.key, c.body), r.Response, r.body)
	}
	off.call("POST", "/llm/v1/responses", offKey, `{"model":"echo","input":"hi"}`).want(t, 200)
	if got := up.all(); strings.Contains(got, llmCanary) {
		t.Errorf("the upstream received %q", got)
	}
}
