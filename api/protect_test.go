package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/waystation/waystation/api"
	"github.com/waystation/waystation/internal/llm"
	"github.com/waystation/waystation/internal/redact"
	"github.com/waystation/waystation/internal/webhook"
)

// luhnCandidates is every card number a checkout page leaves open when it shows the
// BIN and the last four: the six digits between, Luhn-valid (100,000 of a million).
func luhnCandidates(bin, last4 string) []string {
	var out []string
	for mid := range 1000000 {
		if c := bin + fmt.Sprintf("%06d", mid) + last4; redact.Luhn(c) {
			out = append(out, c)
		}
	}
	return out
}

// chatWith is a chat completion whose user message is text.
func chatWith(text string) string {
	b, _ := json.Marshal(map[string]any{"model": "stub-1", "messages": []any{map[string]any{"role": "user", "content": text}}})
	return string(b)
}

// The bisection attack of a hostile agent: knowing only the BIN and last four, it
// packs half of the 100,000 candidates into one model request and reads the answer
// (refused or forwarded) as whether the card is among them, 17 calls to the card.
// The agent is paused within its budget of detections, long before the candidates
// narrow to one; every answer after the pause is the paused key's, whatever it sends;
// nothing reaches the model; and the person is told, by the agent's record and a
// webhook, and resumes it.
func TestAnAgentBisectingForACardIsPausedBeforeItKnowsIt(t *testing.T) {
	t.Parallel()
	stub := newStubLLM(t)
	e := newAuthEnv(t, func(a *api.Authenticated) {
		a.LLM = llm.Config{URL: stub.URL + "/v1", Key: upstreamKey}
		a.MaxBody = 2 << 20
		a.Webhooks = webhook.NewService(a.Requests.Store.(webhook.Store), webhook.Config{Sealer: a.Requests.Sealer.(webhook.Sealer)})
	})
	uid, userKey := e.user("ada")
	agentID, agentKey := e.agent(uid, "scout")
	const card = "4111111111111111"
	e.call("POST", "/memory/items", userKey, `{"label":"Card","fields":[{"fieldRef":"number","label":"Card number","valueType":"card_number","value":"`+card+`"}]}`).want(t, 201)
	var hook struct{ ID string }
	e.call("POST", "/webhooks", userKey, `{"url":"https://hooks.example/ops","events":["agent.paused"]}`).want(t, 201).into(t, &hook)

	left := luhnCandidates("411111", "1111")
	if len(left) != 100000 || !contains(left, card) {
		t.Fatalf("%d candidates", len(left))
	}
	calls, refused := 0, 0
	for len(left) > 1 && calls < 17 {
		half := left[:len(left)/2]
		r := e.call("POST", "/llm/v1/chat/completions", agentKey, chatWith("Check these: "+strings.Join(half, " ")))
		calls++
		switch r.StatusCode {
		case 422:
			refused++
			left = half
		case 200:
			left = left[len(left)/2:]
		case 401:
			if refused > 3 {
				t.Errorf("%d refusals before the pause, want at most the budget of 3", refused)
			}
			goto paused
		default:
			t.Fatalf("call %d: %d %s", calls, r.StatusCode, r.body)
		}
	}
	t.Fatalf("after %d calls the agent is not paused and %d candidates are left", calls, len(left))
paused:
	if len(left) < 1000 {
		t.Errorf("the agent narrowed the card to %d candidates before its pause", len(left))
	}
	if strings.Contains(stub.all(), "411111") {
		t.Error("a candidate reached the model")
	}
	// Paused, every answer is the same: a guess, nothing at all, any route.
	for _, body := range []string{chatWith(card), chatWith("hello")} {
		e.call("POST", "/llm/v1/chat/completions", agentKey, body).want(t, 401, "key_revoked")
	}
	e.call("GET", "/agent/me", agentKey, "").want(t, 401, "key_revoked")

	// The person sees why, and only the person resumes it.
	var agents struct{ Items []map[string]any }
	e.call("GET", "/agents", userKey, "").want(t, 200).into(t, &agents)
	if a := agents.Items[0]; a["status"] != "disabled" || a["pausedReason"] != "protected_values" {
		t.Errorf("agent %v", a)
	}
	var deliveries struct{ Items []map[string]any }
	e.call("GET", "/webhooks/"+hook.ID+"/deliveries", userKey, "").want(t, 200).into(t, &deliveries)
	if len(deliveries.Items) != 1 || deliveries.Items[0]["event"] != "agent.paused" {
		t.Errorf("deliveries %v", deliveries.Items)
	}
	e.call("PATCH", "/agents/"+agentID, userKey, `{"status":"active"}`).want(t, 200)
	e.call("POST", "/llm/v1/chat/completions", agentKey, chatWith("hello")).want(t, 200)
	// Detections before the resume do not count again: one more is refused, not paused.
	e.call("POST", "/llm/v1/chat/completions", agentKey, chatWith("card "+card)).want(t, 422, "protected_value_detected")
	e.call("GET", "/agent/me", agentKey, "").want(t, 200)
	if strings.Contains(e.logs.String(), card) {
		t.Error("the log holds the card")
	}
}

// A hostile agent that tests a few guesses at a time, under the flood limit, gets the
// same refusal wherever the right one goes (a model call, an event, a search, a
// path), and its budget runs out all the same: each right guess is counted, and after
// the third the agent is paused.
func TestAnAgentTestingGuessesAFewAtATimeIsPausedAfterItsBudget(t *testing.T) {
	t.Parallel()
	stub := newStubLLM(t)
	e := newAuthEnv(t, func(a *api.Authenticated) { a.LLM = llm.Config{URL: stub.URL + "/v1", Key: upstreamKey} })
	uid, userKey := e.user("ada")
	_, agentKey := e.agent(uid, "scout")
	const born = "1990-04-17"
	e.call("POST", "/memory/items", userKey, `{"label":"Me","fields":[{"fieldRef":"born","label":"Birthday","valueType":"date","value":"`+born+`"}]}`).want(t, 201)
	sid := e.openSession(agentKey, "s1")

	var first []byte
	for i, send := range []func() response{
		func() response {
			return e.call("POST", "/llm/v1/chat/completions", agentKey, chatWith("was it 16/04/1990, 17/04/1990 or 18/04/1990?"))
		},
		func() response {
			return e.call("POST", "/sessions/"+sid+"/events", agentKey, `{"type":"runtime.note","clientEventId":"n1","data":{"guess":"April 17, 1990"}}`)
		},
		func() response {
			return e.call("GET", "/sessions/"+sid+"/events?after=0&note="+strconv.Quote("19900417"), agentKey, "")
		},
	} {
		r := send().want(t, 422, "protected_value_detected")
		var p map[string]any
		json.Unmarshal(r.body, &p)
		if i == 0 {
			first = r.body
		}
		if strings.Contains(string(r.body), "1990") || strings.Contains(string(r.body), "born") {
			t.Errorf("refusal %d says what it found: %s", i, r.body)
		}
	}
	if !strings.Contains(string(first), "protected value") {
		t.Errorf("refusal %s", first)
	}
	e.call("GET", "/agent/me", agentKey, "").want(t, 401, "key_revoked")
	if stub.calls() != 0 {
		t.Errorf("the model was called %d times", stub.calls())
	}
}

// A request of many strings shaped like a card, a date, a phone number or an email
// address is refused and counted whether or not the right one is among them: a flood
// is how guesses are tested in bulk. A prompt that quotes a few is forwarded.
func TestAFloodOfCandidatesIsRefusedWhetherOrNotOneIsRight(t *testing.T) {
	t.Parallel()
	stub := newStubLLM(t)
	e := newAuthEnv(t, func(a *api.Authenticated) { a.LLM = llm.Config{URL: stub.URL + "/v1", Key: upstreamKey} })
	uid, userKey := e.user("ada")
	_, agentKey := e.agent(uid, "scout")
	e.call("POST", "/memory/items", userKey, `{"label":"Card","fields":[{"fieldRef":"number","label":"Card number","valueType":"card_number","value":"4111111111111111"}]}`).want(t, 201)

	wrong := luhnCandidates("555555", "4444")[:200]
	e.call("POST", "/llm/v1/chat/completions", agentKey, chatWith(strings.Join(wrong, "\n"))).want(t, 422, "protected_value_detected")
	e.call("POST", "/llm/v1/chat/completions", agentKey, chatWith("The test cards are "+strings.Join(wrong[:3], ", "))).want(t, 200)
	if stub.calls() != 1 {
		t.Errorf("the model was called %d times, want once", stub.calls())
	}
}

// The legitimate flow works as before: the person approves, the value is
// materialised to the agent, and the agent's repeating it is no attack. The proxy
// blanks it before the model, as many times as the agent sends it, and a write that
// would keep it is refused without counting.
func TestAnAgentRepeatingAValueItWasGivenIsNotAnAttacker(t *testing.T) {
	t.Parallel()
	stub := newStubLLM(t)
	e := newAuthEnv(t, func(a *api.Authenticated) { a.LLM = llm.Config{URL: stub.URL + "/v1", Key: upstreamKey} })
	uid, userKey := e.user("ada")
	_, agentKey := e.agent(uid, "scout")
	const code = "zebra-quartz-7731"
	e.call("POST", "/memory/items", userKey, `{"label":"Door","hosts":["rain.example"],"fields":[{"fieldRef":"code","label":"Door code","secret":true,"value":"`+code+`"}]}`).want(t, 201)
	sid := e.openSession(agentKey, "s1")
	h := handlesIn(t, e, agentKey, sid, "https://rain.example/door")
	ask := e.raise(agentKey, sid, "use-code", `{"kind":"ask_before_use","fields":[{"key":"code","label":"Door code","handle":"`+h["code"]+`"}],"params":{"purpose":"open the door"}}`)
	e.call("POST", "/sessions/"+sid+"/requests/"+ask["id"].(string)+"/decision", userKey, `{"decision":"approve"}`).want(t, 200)
	r := e.call("POST", "/sessions/"+sid+"/materialize", agentKey, `{"handles":["`+h["code"]+`"],"purpose":"open the door"}`).want(t, 200)
	if !strings.Contains(string(r.body), code) {
		t.Fatalf("materialized %s", r.body)
	}
	for i := range 5 {
		r := e.call("POST", "/llm/v1/chat/completions", agentKey, chatWith("type "+code+" at the door")).want(t, 200)
		if r.Header.Get("X-Redactions") != "1" {
			t.Errorf("call %d: X-Redactions %q", i, r.Header.Get("X-Redactions"))
		}
		e.call("POST", "/sessions/"+sid+"/events", agentKey, `{"type":"runtime.note","clientEventId":"n`+strconv.Itoa(i)+`","data":{"note":"`+code+`"}}`).
			want(t, 422, "protected_value_detected")
	}
	e.call("GET", "/agent/me", agentKey, "").want(t, 200)
	if got := stub.all(); strings.Contains(got, "zebra") || strings.Count(got, "[redacted]") != 5 {
		t.Errorf("the model got %s", got)
	}
	var n int
	if err := e.store.Pool().QueryRow(context.Background(), `SELECT count(*) FROM detections`).Scan(&n); err != nil || n != 0 {
		t.Errorf("%d detections (%v)", n, err)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// An agent's MCP tool calls are screened as its routes are, read tools included: a
// guess in any argument is refused with the one refusal and counted, and after the
// budget the agent's key is refused by the MCP server too.
func TestAnAgentGuessingThroughMCPToolsIsPausedAlike(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	uid, userKey := e.user("ada")
	_, agentKey := e.agent(uid, "scout")
	const code = "zebra-quartz-7731"
	e.call("POST", "/memory/items", userKey, `{"label":"Door","fields":[{"fieldRef":"code","label":"Code","secret":true,"value":"`+code+`"}]}`).want(t, 201)
	sid := e.openSession(agentKey, "s1")
	for _, c := range []struct{ tool, args string }{
		{"get_captcha_task", `{"sessionId":"` + sid + `","taskId":"ZEBRA QUARTZ 7731"}`},
		{"wait_request", `{"sessionId":"` + sid + `","requestId":"emVicmEtcXVhcnR6LTc3MzE="}`},
		{"search_sellers", `{"query":"zebra quartz 7731"}`},
	} {
		_, failure := e.toolCall(t, agentKey, c.tool, c.args)
		if !strings.HasPrefix(failure, "protected_value_detected: ") || strings.Contains(strings.ToLower(failure), "zebra") {
			t.Errorf("%s: %q", c.tool, failure)
		}
	}
	e.call("POST", "/mcp", agentKey, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, "Accept", "application/json, text/event-stream").want(t, 401, "key_revoked")
}

// A trace export is an agent's traffic too: a span holding a value the agent was
// never given, as an attribute, a number or an id, refuses the whole export with the
// one refusal (a rejected span would tell the agent its guess was right) and counts;
// after the budget the agent is paused.
func TestATraceHoldingAValueNeverGivenIsRefusedAndCounted(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	uid, userKey := e.user("ada")
	_, agentKey := e.agent(uid, "scout")
	e.call("POST", "/memory/items", userKey, `{"label":"Card","fields":[{"fieldRef":"number","label":"Card","valueType":"card_number","value":"4111111111111111"}]}`).want(t, 201)
	sid := e.openSession(agentKey, "s1")
	span := func(attr string) string {
		return `{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b174","name":"pay",
			"startTimeUnixNano":"1700000000000000000","endTimeUnixNano":"1700000000100000000",
			"attributes":[{"key":"workflow.session.id","value":{"stringValue":"` + sid + `"}},` + attr + `]}]}]}]}`
	}
	e.call("POST", "/traces", agentKey, span(`{"key":"step","value":{"stringValue":"checkout"}}`), "Content-Type", "application/json").want(t, 200)
	for _, attr := range []string{
		`{"key":"card","value":{"stringValue":"4111 1111 1111 1111"}}`,
		`{"key":"n","value":{"intValue":"4111111111111111"}}`,
		`{"key":"hex","value":{"stringValue":"34313131313131313131313131313131"}}`,
	} {
		r := e.call("POST", "/traces", agentKey, span(attr), "Content-Type", "application/json")
		wantStatus(t, r, 422, "protected_value_detected")
		if strings.Contains(string(r.body), "rejected") {
			t.Errorf("the refusal counts spans: %s", r.body)
		}
	}
	e.call("GET", "/agent/me", agentKey, "").want(t, 401, "key_revoked")
}
