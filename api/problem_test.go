package api_test

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"

	"github.com/waystation/waystation/internal/redact"
	"github.com/waystation/waystation/internal/redact/redacttest"
)

// Invariant 1 for error bodies: an answer to a key repeats nothing of the request
// that holds one of its user's protected values, in any written form: not a body's
// unknown member (refused as a protected value, which names nothing), not an unknown
// query parameter, not a path segment (as instance), not a method. The code still
// says what went wrong.
// The values count as given to the agent (everythingGiven): a value it was never
// given is refused and counted before any of this (protect_test.go).
func TestErrorBodiesNeverRepeatAProtectedValue(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t, everythingGiven)
	uid, userKey := e.user("ada")
	_, agentKey := e.agent(uid, "scout")
	const canary = "Quartz_Canary_4417"
	e.call("POST", "/memory/items", userKey, `{"label":"Door","fields":[{"fieldRef":"code","label":"Code","secret":true,"value":"`+canary+`"}]}`).want(t, 201)
	sid := e.openSession(agentKey, "s1")
	forms := redacttest.Forms(canary)
	quote := func(v string) string { b, _ := json.Marshal(v); return string(b) }
	var answers []response
	for _, form := range forms {
		answers = append(answers,
			e.call("POST", "/sessions", agentKey, `{"type":"checkout","description":"x","clientSessionId":"c",`+quote(form)+`:1}`).want(t, 422, "protected_value_detected"),
			e.call("POST", "/sessions/"+sid+"/events", agentKey, `{"type":"runtime.step","clientEventId":"e",`+quote(form)+`:{}}`).want(t, 422, "protected_value_detected"),
			e.call("POST", "/sessions/"+sid+"/requests", agentKey, `{"clientRequestId":"r","kind":"confirm","params":{"summary":"s",`+quote(form)+`:"1"}}`).want(t, 422, "protected_value_detected"),
			e.call("GET", "/sessions?"+url.QueryEscape(form)+"=1", agentKey, "").want(t, 400, "unknown_parameter"),
			e.call("GET", "/sessions/"+sid+"/events?limit=1&"+url.QueryEscape(form)+"=1", userKey, "").want(t, 400, "unknown_parameter"),
			e.call("GET", "/sessions/"+url.PathEscape(form), agentKey, "").want(t, 404, "not_found"),
			e.call("GET", "/memory/items/"+url.PathEscape(form)+"/x", userKey, "").want(t, 404, "not_found"),
		)
	}
	answers = append(answers, e.call(strings.ToUpper(canary), "/sessions", agentKey, "").want(t, 405, "method_not_allowed"))
	for _, r := range answers {
		for name, form := range forms {
			if strings.Contains(string(r.body), form) || strings.Contains(string(r.body), strings.ToUpper(form)) {
				t.Errorf("%s %s: the answer repeats the value (%s): %s", r.Request.Method, r.Request.URL, name, r.body)
			}
		}
	}
	// Without a value in it, the same mistake is named, in a body as in a query.
	if r := e.call("POST", "/sessions", agentKey, `{"type":"checkout","descripton":"x","clientSessionId":"c"}`).want(t, 422, "validation_failed"); !strings.Contains(string(r.body), `it takes no member \"descripton\"`) {
		t.Errorf("the member is not named: %s", r.body)
	}
	long := strings.Repeat("é", 100)
	if r := e.call("POST", "/sessions", agentKey, `{"type":"checkout",`+quote(long)+`:"x","clientSessionId":"c"}`).want(t, 422, "validation_failed"); !strings.Contains(string(r.body), strings.Repeat("é", 32)+`…\"`) {
		t.Errorf("a long member's name is not cut short: %s", r.body)
	}
	if r := e.call("GET", "/sessions?colour=1", agentKey, "").want(t, 400, "unknown_parameter"); !strings.Contains(string(r.body), `"parameter":"colour"`) {
		t.Errorf("the parameter is not named: %s", r.body)
	}
	if r := e.call("GET", "/sessions/nope", agentKey, "").want(t, 404); !strings.Contains(string(r.body), `"instance":"/functions/v1/api/sessions/nope"`) {
		t.Errorf("the instance is not the path: %s", r.body)
	}
	noCanaryAnywhere(t, e, canary, forms["full-width"], forms["base64"])
}

// Invariant 1 for the MCP server: a tool call's failure repeats nothing of the call
// that holds one of the user's protected values, in any written form, whether the
// route refused it, the SDK found the arguments off their schema (a property the
// caller made up, a value of the wrong type) or the tool does not exist.
// The values count as given to the agent (everythingGiven): a value it was never
// given is refused and counted before any of this (protect_test.go).
func TestMCPToolErrorsNeverRepeatAProtectedValue(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t, everythingGiven)
	uid, userKey := e.user("ada")
	_, agentKey := e.agent(uid, "scout")
	const canary, pin = "Quartz_Canary_4417", "5150981273"
	e.call("POST", "/memory/items", userKey, `{"label":"Door","fields":[{"fieldRef":"code","label":"Code","secret":true,"value":"`+canary+`"}]}`).want(t, 201)
	e.call("POST", "/memory/items", userKey, `{"label":"Pin","fields":[{"fieldRef":"pin","label":"Pin","secret":true,"value":"`+pin+`"}]}`).want(t, 201)
	sid := e.openSession(agentKey, "s1")
	forms := redacttest.Forms(canary)
	call := func(tool, args string) response {
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":` + tool + `,"arguments":` + args + `}}`
		return e.call("POST", "/mcp", agentKey, body, "Accept", "application/json, text/event-stream").want(t, 200)
	}
	quote := func(v string) string { b, _ := json.Marshal(v); return string(b) }
	var answers []response
	for _, form := range forms {
		answers = append(answers,
			call(`"append_event"`, `{"sessionId":"`+sid+`","type":"runtime.step",`+quote(form)+`:1}`),
			call(`"append_event"`, `{"sessionId":"`+sid+`","type":"runtime.step","data":{"k":`+quote(form)+`}}`),
			call(quote(form), `{}`),
		)
	}
	answers = append(answers, call(`"append_event"`, `{"sessionId":"`+sid+`","type":`+pin+`}`))
	for _, r := range answers {
		if !strings.Contains(string(r.body), "validation_failed") && !strings.Contains(string(r.body), "protected_value_detected") &&
			!strings.Contains(string(r.body), "tools/list") {
			t.Errorf("the failure says nothing of what failed: %s", r.body)
		}
		for name, form := range forms {
			if strings.Contains(string(r.body), form) {
				t.Errorf("the failure repeats the value (%s): %s", name, r.body)
			}
		}
		if redact.New([]string{canary, pin}).Contains(string(r.body)) {
			t.Errorf("the failure repeats a value in some form: %s", r.body)
		}
	}
}
