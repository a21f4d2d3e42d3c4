package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waystation/waystation/api"
	"github.com/waystation/waystation/api/openapitest"
	"github.com/waystation/waystation/internal/llm"
	"github.com/waystation/waystation/internal/redact/redacttest"
	"github.com/waystation/waystation/internal/webhook"
)

// stubLLM is an upstream OpenAI-compatible server on loopback that keeps every byte
// it receives; a streamed answer sends its chunks one by one, the last only when
// release is closed.
type stubLLM struct {
	*httptest.Server
	mu       sync.Mutex
	received []string
	auth     []string
	release  chan struct{}
}

const upstreamKey = "sk-upstream-secret-key-0042"

func newStubLLM(t *testing.T) *stubLLM {
	s := &stubLLM{release: make(chan struct{})}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.received = append(s.received, string(body))
		s.auth = append(s.auth, r.Header.Get("Authorization"))
		s.mu.Unlock()
		switch {
		case r.URL.Path == "/v1/models":
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"object":"list","data":[{"id":"stub-1","object":"model"}]}`)
		case strings.Contains(string(body), `"stream":true`):
			w.Header().Set("Content-Type", "text/event-stream")
			for i := range 3 {
				fmt.Fprintf(w, "data: {\"choices\":[{\"delta\":{\"content\":\"part%d\"}}]}\n\n", i)
				w.(http.Flusher).Flush()
			}
			<-s.release
			io.WriteString(w, "data: [DONE]\n\n")
		case strings.Contains(string(body), "fail upstream"):
			http.Error(w, `{"error":"boom `+upstreamKey+`"}`, http.StatusInternalServerError)
		default:
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"id":"c1","object":"chat.completion","choices":[{"message":{"role":"assistant","content":"ok"}}]}`)
		}
	}))
	t.Cleanup(func() {
		select {
		case <-s.release:
		default:
			close(s.release)
		}
		s.Close()
	})
	return s
}

// calls is how many requests the upstream received.
func (s *stubLLM) calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.received)
}

func (s *stubLLM) all() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.received, "\n")
}

// Invariant 2: whatever way a protected value came in (saved as secret, saved to ask
// before use, a card, provided through a request), and in whatever form the agent
// writes it (spaced, upper-cased, another date format), the upstream never receives
// it: in messages, text parts, tool definitions, tool calls or tool results,
// streamed or not. The count comes back in X-Redactions and as an llm.redacted event;
// the upstream key is sent upstream and nowhere else.
// The values count as given to the agent (everythingGiven): a value it was never
// given is refused and counted before any of this (protect_test.go).
func TestLLMProxyNeverForwardsAProtectedValue(t *testing.T) {
	t.Parallel()
	stub := newStubLLM(t)
	e := newAuthEnv(t, func(a *api.Authenticated) { a.LLM = llm.Config{URL: stub.URL + "/v1", Key: upstreamKey} }, everythingGiven)
	uid, userKey := e.user("ada")
	_, agentKey := e.agent(uid, "scout")
	const card, birthday, code, email = "4111111111111111", "1990-04-17", "zebra-quartz-7731", "canary.llm@example.org"
	e.call("POST", "/memory/items", userKey, `{"label":"Card","askBeforeUse":false,"fields":[{"fieldRef":"number","label":"Card number","valueType":"card_number","value":"`+card+`"}]}`).want(t, 201)
	e.call("POST", "/memory/items", userKey, `{"label":"Me","fields":[{"fieldRef":"born","label":"Birthday","valueType":"date","value":"`+birthday+`"}]}`).want(t, 201)
	e.call("POST", "/memory/items", userKey, `{"label":"Door","askBeforeUse":false,"fields":[{"fieldRef":"code","label":"Code","secret":true,"value":"`+code+`"}]}`).want(t, 201)
	e.call("POST", "/memory/items", userKey, `{"label":"Public","askBeforeUse":false,"fields":[{"fieldRef":"nick","label":"Nickname","value":"adabyron"}]}`).want(t, 201)
	sid := e.openSession(agentKey, "s1")
	rid := e.raise(agentKey, sid, "r1", `{"kind":"provide_missing","fields":[{"key":"email","label":"Email","type":"email"}]}`)["id"].(string)
	e.call("POST", "/sessions/"+sid+"/requests/"+rid+"/decision", userKey, `{"decision":"approve","values":{"email":"`+email+`"}}`).want(t, 200)

	chat := `{"model":"stub-1","messages":[
		{"role":"system","content":"Pay with 4111 1111 1111 1111 for the user born 17/04/1990."},
		{"role":"user","content":[{"type":"text","text":"My code is ZEBRA QUARTZ 7731 and mail CANARY.LLM@example.org; my nick is adabyron."}]},
		{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"pay","arguments":"{\"card\":\"4111-1111-1111-1111\"}"}}]},
		{"role":"tool","tool_call_id":"call_1","content":"paid with card 4111111111111111, born April 17, 1990"}],
		"tools":[{"type":"function","function":{"name":"pay","description":"Pays; the default card is 4111 1111 1111 1111","parameters":{"type":"object","properties":{"card":{"type":"string","description":"e.g. zebra quartz 7731"}}}}}]}`
	r := e.call("POST", "/llm/v1/chat/completions", agentKey, chat, "X-Session-Id", sid).want(t, 200)
	if r.Header.Get("X-Redactions") != "9" || !strings.Contains(string(r.body), `"content":"ok"`) {
		t.Errorf("X-Redactions %q: %s", r.Header.Get("X-Redactions"), r.body)
	}
	got := stub.all()
	for _, leak := range []string{"4111", "1111 1111", "17/04/1990", "1990", "ZEBRA", "zebra", "7731", "CANARY", "canary"} {
		if strings.Contains(got, leak) {
			t.Errorf("the upstream received %q", leak)
		}
	}
	if !strings.Contains(got, "adabyron") || !strings.Contains(got, "[redacted]") || !strings.Contains(got, `"tool_call_id":"call_1"`) {
		t.Errorf("the upstream got: %s", got)
	}
	var events struct {
		Items []struct {
			Type, Actor string
			Data        map[string]any
		}
	}
	e.call("GET", "/sessions/"+sid+"/events", agentKey, "").want(t, 200).into(t, &events)
	last := events.Items[len(events.Items)-1]
	if last.Type != "llm.redacted" || last.Actor != "system" || last.Data["count"] != float64(9) || len(last.Data) != 1 {
		t.Errorf("event %+v", last)
	}

	// A stream comes through as it is made: the first chunks before the upstream ends.
	req := e.request("POST", "/llm/v1/chat/completions", agentKey, `{"model":"stub-1","stream":true,"messages":[{"role":"user","content":"card 4111111111111111"}]}`)
	hs := httptest.NewServer(e.srv)
	defer hs.Close()
	req.URL.Scheme, req.URL.Host, req.RequestURI = "http", strings.TrimPrefix(hs.URL, "http://"), ""
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/event-stream" || res.Header.Get("X-Redactions") != "1" {
		t.Fatalf("stream: %d %v", res.StatusCode, res.Header)
	}
	lines := bufio.NewReader(res.Body)
	first := make(chan string, 1)
	go func() { l, _ := lines.ReadString('\n'); first <- l }()
	select {
	case l := <-first:
		if !strings.Contains(l, "part0") {
			t.Errorf("first line %q", l)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no chunk before the upstream finished")
	}
	close(stub.release)
	rest, _ := io.ReadAll(lines)
	if !strings.Contains(string(rest), "part2") || !strings.Contains(string(rest), "[DONE]") {
		t.Errorf("rest of the stream %q", rest)
	}
	if strings.Contains(stub.all(), "4111") {
		t.Error("the streamed call forwarded the card")
	}

	// The key goes upstream only.
	for _, a := range stub.auth {
		if a != "Bearer "+upstreamKey {
			t.Errorf("upstream Authorization %q", a)
		}
	}
	r = e.call("POST", "/llm/v1/chat/completions", agentKey, `{"model":"stub-1","messages":[{"role":"user","content":"fail upstream"}]}`).want(t, 502, "upstream_error")
	models := e.call("GET", "/llm/v1/models", userKey, "").want(t, 200)
	for _, b := range []string{string(r.body), string(models.body), e.logs.String()} {
		if strings.Contains(b, upstreamKey) {
			t.Errorf("the upstream key leaked: %s", b)
		}
	}

	// Text only, agent keys only.
	e.call("POST", "/llm/v1/chat/completions", agentKey, `{"model":"stub-1","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://x.example/a.png"}}]}]}`).want(t, 422, "validation_failed")
	e.call("POST", "/llm/v1/chat/completions", userKey, `{"model":"stub-1","messages":[{"role":"user","content":"hi"}]}`).want(t, 403, "wrong_key_scope")
}

// Invariant 2 for every string of the body and every written form: a value in free
// text, plain, full-width, base64 or percent-encoded, is blanked; a value where the
// proxy cannot blank it (the model, a role, an id, a member name such as a key of
// logit_bias or of a tool's schema, a number) is refused with
// protected_value_detected and nothing is forwarded; logit_bias takes token ids only.
// The values count as given to the agent (everythingGiven): a value it was never
// given is refused and counted before any of this (protect_test.go).
func TestLLMProxyBlanksOrRefusesAProtectedValueWhereverItIs(t *testing.T) {
	t.Parallel()
	stub := newStubLLM(t)
	e := newAuthEnv(t, func(a *api.Authenticated) { a.LLM = llm.Config{URL: stub.URL + "/v1", Key: upstreamKey} }, everythingGiven)
	uid, userKey := e.user("ada")
	_, agentKey := e.agent(uid, "scout")
	const canary, pin = "Quartz-Canary-4417", "5150981273"
	e.call("POST", "/memory/items", userKey, `{"label":"Door","askBeforeUse":false,"fields":[{"fieldRef":"code","label":"Code","secret":true,"value":"`+canary+`"}]}`).want(t, 201)
	e.call("POST", "/memory/items", userKey, `{"label":"Pin","askBeforeUse":false,"fields":[{"fieldRef":"pin","label":"Pin","secret":true,"value":"`+pin+`"}]}`).want(t, 201)
	forms := redacttest.Forms(canary)
	chat := func(members string) string {
		return `{"model":"stub-1","messages":[{"role":"user","content":"hello"}]` + members + `}`
	}
	quote := func(v string) string { b, _ := json.Marshal(v); return string(b) }

	// Free text, in every form: blanked, counted, forwarded.
	for name, form := range forms {
		body := `{"model":"stub-1","messages":[{"role":"user","content":` + quote("the code is "+form+", use it") + `}],"stop":[` + quote(form) + `],"user":` + quote(form) + `}`
		r := e.call("POST", "/llm/v1/chat/completions", agentKey, body).want(t, 200)
		if r.Header.Get("X-Redactions") != "3" {
			t.Errorf("%s in free text: X-Redactions %q", name, r.Header.Get("X-Redactions"))
		}
	}
	sent := stub.calls()
	if sent != len(forms) {
		t.Fatalf("the upstream got %d calls, want %d", sent, len(forms))
	}

	// Where it cannot be blanked: refused, in every form, and nothing forwarded.
	for name, form := range forms {
		for _, body := range []string{
			`{"model":` + quote(form) + `,"messages":[{"role":"user","content":"hello"}]}`,
			chat(`,"logit_bias":{` + quote(form) + `:-100}`),
			chat(`,` + quote(form) + `:true`),
			`{"model":"stub-1","messages":[{"role":` + quote(form) + `,"content":"hello"}]}`,
			`{"model":"stub-1","messages":[{"role":"assistant","content":null,"tool_calls":[{"id":` + quote(form) + `,"type":"function","function":{"name":"pay","arguments":"{}"}}]}]}`,
			chat(`,"tools":[{"type":"function","function":{"name":"pay","parameters":{"type":"object","properties":{` + quote(form) + `:{"type":"string"}}}}}]`),
		} {
			r := e.call("POST", "/llm/v1/chat/completions", agentKey, body).want(t, 422, "protected_value_detected")
			for _, f := range forms {
				if strings.Contains(string(r.body), f) {
					t.Errorf("%s: the refusal repeats the value: %s", name, r.body)
				}
			}
		}
	}
	for _, body := range []string{chat(`,"logit_bias":{"` + pin + `":-100}`), chat(`,"seed":` + pin), chat(`,"max_tokens":` + pin)} {
		e.call("POST", "/llm/v1/chat/completions", agentKey, body).want(t, 422, "protected_value_detected")
	}

	// logit_bias maps token ids, decimal integers, and nothing else.
	for _, bias := range []string{`{"a":1}`, `{"-1":1}`, `{"1.5":1}`, `{" 7":1}`, `[]`, `"x"`} {
		e.call("POST", "/llm/v1/chat/completions", agentKey, chat(`,"logit_bias":`+bias)).want(t, 422, "validation_failed")
	}
	e.call("POST", "/llm/v1/chat/completions", agentKey, chat(`,"logit_bias":{"50256":-100,"7":5}`)).want(t, 200)
	if stub.calls() != sent+1 || !strings.Contains(stub.all(), `"logit_bias":{"50256":-100,"7":5}`) {
		t.Errorf("a refused body was forwarded, or a valid one was not: %d calls", stub.calls()-sent)
	}

	got := stub.all()
	for name, form := range forms {
		if strings.Contains(got, form) {
			t.Errorf("the upstream received the value %s", name)
		}
	}
	if strings.Contains(got, pin) {
		t.Error("the upstream received the pin")
	}
}

// The proxy fails closed: without the protected values it forwards nothing, and
// without an upstream it says so.
func TestLLMProxyFailsClosed(t *testing.T) {
	t.Parallel()
	stub := newStubLLM(t)
	e := newAuthEnv(t, func(a *api.Authenticated) {
		a.LLM = llm.Config{URL: stub.URL + "/v1", Key: upstreamKey}
		a.Protected = failing{}
	})
	uid, _ := e.user("ada")
	_, agentKey := e.agent(uid, "scout")
	e.call("POST", "/llm/v1/chat/completions", agentKey, `{"model":"stub-1","messages":[{"role":"user","content":"hello"}]}`).want(t, 503, "redaction_unavailable")
	if got := stub.all(); got != "" {
		t.Errorf("the upstream received %q", got)
	}
	off := newAuthEnv(t)
	uid, _ = off.user("ada")
	_, agentKey = off.agent(uid, "scout")
	off.call("POST", "/llm/v1/chat/completions", agentKey, `{"model":"x","messages":[{"role":"user","content":"hello"}]}`).want(t, 503, "llm_not_configured")
	off.call("GET", "/llm/v1/models", agentKey, "").want(t, 503, "llm_not_configured")
}

type failing struct{}

func (failing) Protected(context.Context, string) ([]string, error) {
	return nil, errors.New("the vault is sealed")
}

// Invariant 1 for every body a key writes: a session's description, its summary,
// an agent's name, a memory item's label (its value is what it is for), the purpose
// of a materialisation, a webhook's URL — anything of a body that holds one of the
// user's protected values, in any written form, is refused, and nothing is kept.
// The values count as given to the agent (everythingGiven): a value it was never
// given is refused and counted before any of this (protect_test.go).
func TestEveryBodyHoldingAProtectedValueIsRefused(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t, func(a *api.Authenticated) {
		a.Webhooks = webhook.NewService(a.Requests.Store.(webhook.Store), webhook.Config{Sealer: a.Requests.Sealer.(webhook.Sealer)})
	}, everythingGiven)
	uid, userKey := e.user("ada")
	_, agentKey := e.agent(uid, "scout")
	const canary = "Quartz-Canary-4417"
	e.call("POST", "/memory/items", userKey, `{"label":"Door","fields":[{"fieldRef":"code","label":"Code","secret":true,"value":"`+canary+`"}]}`).want(t, 201)
	sid := e.openSession(agentKey, "s1")
	forms := redacttest.Forms(canary)
	for name, form := range forms {
		q, _ := json.Marshal(form)
		for _, c := range []struct{ key, path, body string }{
			{agentKey, "/sessions", `{"type":"checkout","description":` + string(q) + `,"clientSessionId":"c-` + name + `"}`},
			{agentKey, "/sessions", `{"type":"checkout","description":"d","clientSessionId":` + string(q) + `}`},
			{agentKey, "/sessions/" + sid + "/complete", `{"clientCompletionId":"c","status":"completed","summary":` + string(q) + `}`},
			{userKey, "/agents", `{"name":` + string(q) + `}`},
			{userKey, "/memory/items", `{"label":` + string(q) + `,"fields":[{"fieldRef":"f","label":"F","value":"v"}]}`},
			{agentKey, "/memory/items", `{"label":"L","fields":[{"fieldRef":"f","label":` + string(q) + `,"value":"v"}]}`},
			{agentKey, "/sessions/" + sid + "/materialize", `{"handles":["h_0123456789abcdefghijklmnop"],"purpose":` + string(q) + `}`},
			{userKey, "/webhooks", `{"url":"https://hooks.example/` + form + `","events":["request.waiting_user"]}`},
		} {
			r := e.call("POST", c.path, c.key, c.body).want(t, 422, "protected_value_detected")
			if strings.Contains(string(r.body), form) {
				t.Errorf("%s: the refusal repeats the value: %s", c.path, r.body)
			}
		}
	}
	// A value saved with an item is what the item is for.
	e.call("POST", "/memory/items", userKey, `{"label":"Again","fields":[{"fieldRef":"code","label":"Code","secret":true,"value":"`+canary+`"}]}`).want(t, 201)
	noCanaryAnywhere(t, e, slices.Collect(maps.Values(forms))...)
}

// An agent cannot write a protected value, in any form (spaced, full-width, base64,
// percent-encoded, as a member name or a number), into the event log or a request's
// context: 422 protected_value_detected, and nothing is stored.
// The values count as given to the agent (everythingGiven): a value it was never
// given is refused and counted before any of this (protect_test.go).
func TestEventsAndRequestContextsRefuseProtectedValues(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t, everythingGiven)
	uid, userKey := e.user("ada")
	_, agentKey := e.agent(uid, "scout")
	e.call("POST", "/memory/items", userKey, `{"label":"Card","fields":[{"fieldRef":"number","label":"Card number","valueType":"card_number","value":"4111111111111111"}]}`).want(t, 201)
	sid := e.openSession(agentKey, "s1")
	datas := []string{`{"card":"4111 1111 1111 1111"}`, `{"note":["paid","4111-1111-1111-1111"]}`, `{"4111111111111111":true}`, `{"card":4111111111111111}`}
	for _, form := range redacttest.Forms("4111111111111111") {
		datas = append(datas, `{"card":"`+form+`"}`, `{"`+form+`":1}`)
	}
	// The value in any form it was sent in (a random request id may hold "4111").
	sent := append(slices.Collect(maps.Values(redacttest.Forms("4111111111111111"))), "4111 1111", "4111-1111")
	for i, data := range datas {
		body := fmt.Sprintf(`{"type":"runtime.step","clientEventId":"e%d","data":%s}`, i, data)
		r := e.call("POST", "/sessions/"+sid+"/events", agentKey, body).want(t, 422, "protected_value_detected")
		for _, v := range sent {
			if strings.Contains(string(r.body), v) {
				t.Errorf("the refusal repeats the value as %q: %s", v, r.body)
			}
		}
	}
	e.call("POST", "/sessions/"+sid+"/requests", agentKey, `{"clientRequestId":"r1","kind":"confirm","params":{"summary":"Pay with 4111 1111 1111 1111"}}`).want(t, 422, "protected_value_detected")
	e.call("POST", "/sessions/"+sid+"/requests", agentKey, `{"clientRequestId":"r2","kind":"confirm","context":{"reason":"card 4111111111111111"},"params":{"summary":"Pay"}}`).want(t, 422, "protected_value_detected")
	e.call("POST", "/sessions/"+sid+"/events", agentKey, `{"type":"runtime.step","clientEventId":"ok","data":{"card":"the saved one"}}`).want(t, 201)
	noCanaryAnywhere(t, e, append(slices.Collect(maps.Values(redacttest.Forms("4111111111111111"))), "4111 1111")...)
}

// The LLM proxy answers its errors in OpenAI's shape, which OpenAI's clients read
// (error.message, error.type), with the problem's code as error.code, and as the
// OpenAPI document says: a missing key, a user key, a body that is not a chat, a
// protected value, no upstream configured.
func TestLLMProxyErrorsAreInOpenAIsShape(t *testing.T) {
	t.Parallel()
	doc := openapitest.Load(t, "openapi.json")
	stub := newStubLLM(t)
	e := newAuthEnv(t, func(a *api.Authenticated) { a.LLM = llm.Config{URL: stub.URL + "/v1", Key: upstreamKey} })
	uid, userKey := e.user("ada")
	_, agentKey := e.agent(uid, "scout")
	const canary = "zebra-quartz-7731"
	e.call("POST", "/memory/items", userKey, `{"label":"Door","askBeforeUse":false,"fields":[{"fieldRef":"code","label":"Code","secret":true,"value":"`+canary+`"}]}`).want(t, 201)
	off := newAuthEnv(t)
	offUID, _ := off.user("bo")
	_, offKey := off.agent(offUID, "scout")
	chat := func(content string) string {
		return `{"model":"stub-1","messages":[{"role":"user","content":"` + content + `"}]}`
	}
	for _, c := range []struct {
		env               *authEnv
		method, path, key string
		body              string
		status            int
		code, typ         string
	}{
		{e, "POST", "/llm/v1/chat/completions", "", chat("hi"), 401, "unauthenticated", "authentication_error"},
		{e, "GET", "/llm/v1/models", "sk_agent_nottherightlength", "", 401, "invalid_api_key", "authentication_error"},
		{e, "POST", "/llm/v1/chat/completions", userKey, chat("hi"), 403, "wrong_key_scope", "permission_error"},
		{e, "POST", "/llm/v1/chat/completions", agentKey, `{"model":"stub-1"}`, 422, "validation_failed", "invalid_request_error"},
		{e, "POST", "/llm/v1/chat/completions", agentKey, `{"model":"` + canary + `","messages":[{"role":"user","content":"hi"}]}`, 422, "protected_value_detected", "invalid_request_error"},
		{off, "POST", "/llm/v1/chat/completions", offKey, chat("hi"), 503, "llm_not_configured", "api_error"},
	} {
		r := c.env.call(c.method, c.path, c.key, c.body)
		var got struct {
			Error struct{ Message, Type, Code string }
		}
		if err := json.Unmarshal(r.body, &got); err != nil || r.StatusCode != c.status || got.Error.Code != c.code || got.Error.Type != c.typ || got.Error.Message == "" ||
			r.Header.Get("Content-Type") != "application/json; charset=utf-8" || r.Header.Get("X-Request-Id") == "" {
			t.Errorf("%s %s: %d %s %s, want %d with error.code %s and error.type %s", c.method, c.path, r.StatusCode, r.Header.Get("Content-Type"), r.body, c.status, c.code, c.typ)
		}
		if strings.Contains(string(r.body), canary) {
			t.Errorf("%s %s: the error repeats the protected value: %s", c.method, c.path, r.body)
		}
		doc.CheckResponse(t, c.env.request(c.method, c.path, c.key, c.body), r.Response, r.body)
	}
	if got := stub.all(); got != "" {
		t.Errorf("the upstream received %q", got)
	}
	// The rest of the API keeps problem+json.
	if r := e.call("GET", "/sessions/not-a-session", agentKey, ""); r.Header.Get("Content-Type") != "application/problem+json" {
		t.Errorf("outside the proxy: %s", r.Header.Get("Content-Type"))
	}
}
