package api_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// toolCall calls an MCP tool with agentKey and answers its result: the structured
// content, or the error result's text.
func (e *authEnv) toolCall(t *testing.T, agentKey, tool, args string) (out map[string]any, failure string) {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args + `}}`
	r := e.call("POST", "/mcp", agentKey, body, "Accept", "application/json, text/event-stream").want(t, 200)
	raw := string(r.body)
	for _, line := range strings.Split(raw, "\n") { // an event stream's data line, or the JSON itself
		if rest, ok := strings.CutPrefix(line, "data: "); ok {
			raw = rest
		}
	}
	var res struct {
		Result struct {
			IsError           bool             `json:"isError"`
			StructuredContent map[string]any   `json:"structuredContent"`
			Content           []map[string]any `json:"content"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(raw), &res); err != nil {
		t.Fatalf("%s: not a JSON-RPC answer: %v\n%s", tool, err, r.body)
	}
	if res.Result.IsError {
		text, _ := res.Result.Content[0]["text"].(string)
		return nil, text
	}
	return res.Result.StructuredContent, ""
}

// The workflow's tools call the routes' use cases directly and keep their rules: a
// retry by client id answers the same, through the tool or the route; another body
// under the same id conflicts; a body holding a protected value is refused; the
// caps are the routes'.
func TestMCPWorkflowToolsKeepTheRoutesRules(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	uid, userKey := e.user("ada")
	_, agentKey := e.agent(uid, "scout")
	const canary = "Quartz_Canary_4417"
	e.call("POST", "/memory/items", userKey, `{"label":"Door","fields":[{"fieldRef":"code","label":"Code","secret":true,"value":"`+canary+`"}]}`).want(t, 201)

	first, failure := e.toolCall(t, agentKey, "open_session", `{"description":"buy a map","clientSessionId":"c1"}`)
	if failure != "" {
		t.Fatalf("open_session: %s", failure)
	}
	again, _ := e.toolCall(t, agentKey, "open_session", `{"description":"buy a map","clientSessionId":"c1"}`)
	if again["id"] != first["id"] || first["type"] != "task" {
		t.Fatalf("a retry opened another session: %v, then %v", first, again)
	}
	if _, failure := e.toolCall(t, agentKey, "open_session", `{"description":"buy a globe","clientSessionId":"c1"}`); !strings.HasPrefix(failure, "idempotency_conflict (409)") {
		t.Errorf("another body under the same client id: %q", failure)
	}
	if _, failure := e.toolCall(t, agentKey, "open_session", `{"description":"buy a map","type":"Not A Word"}`); !strings.HasPrefix(failure, "validation_failed (422)") {
		t.Errorf("an invalid session: %q", failure)
	}
	sid := first["id"].(string)

	ev, failure := e.toolCall(t, agentKey, "append_event", `{"sessionId":"`+sid+`","type":"runtime.step","clientEventId":"e1"}`)
	if failure != "" {
		t.Fatalf("append_event: %s", failure)
	}
	// The route answers the tool's event again, for the body the tool wrote.
	r := e.call("POST", "/sessions/"+sid+"/events", agentKey, `{"clientEventId":"e1","type":"runtime.step"}`).want(t, 200)
	if r.Header.Get("Idempotent-Replayed") != "true" || r.decode(t)["seq"] != ev["seq"] {
		t.Errorf("the route did not replay the tool's event: %s %s", r.Header, r.body)
	}
	if _, failure := e.toolCall(t, agentKey, "append_event", `{"sessionId":"`+sid+`","type":"runtime.step","data":{"note":"`+canary+`"}}`); !strings.HasPrefix(failure, "protected_value_detected") || strings.Contains(failure, canary) {
		t.Errorf("an event holding a protected value: %q", failure)
	}
	if _, failure := e.toolCall(t, agentKey, "claim_artifact", `{"sessionId":"`+sid+`","requestId":"00000000-0000-4000-8000-000000000000"}`); !strings.HasPrefix(failure, "not_found (404)") {
		t.Errorf("claiming no request: %q", failure)
	}
	done, failure := e.toolCall(t, agentKey, "complete_session", `{"sessionId":"`+sid+`","status":"completed","summary":"done"}`)
	if failure != "" || done["session"].(map[string]any)["status"] != "completed" {
		t.Errorf("complete_session: %v %q", done, failure)
	}
}
