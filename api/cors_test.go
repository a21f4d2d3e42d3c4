package api_test

import (
	"net/http"
	"testing"
)

// The CORS decision: any browser origin may call the authenticated API, traces and
// the LLM routes with a key its script holds, and read the answers, errors included;
// credentials are never allowed, so no cookie is ever ambient. The MCP server answers
// only the origins it serves (its own and loopback pages); a path that does not exist
// is still 404.
func TestBrowserPagesMayCallTheKeyedAPIWithAKey(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	uid, _ := e.user("ada")
	_, agentKey := e.agent(uid, "scout")
	const page = "https://agent.example"
	for _, path := range []string{"/sessions", "/sessions/00000000-0000-4000-8000-000000000001/requests", "/traces", "/v1/traces", "/llm/v1/chat/completions", "/agent/me"} {
		r := e.call("OPTIONS", path, "", "", "Origin", page, "Access-Control-Request-Method", "POST",
			"Access-Control-Request-Headers", "authorization, content-type, idempotency-key, x-stainless-os").want(t, 204)
		if r.Header.Get("Access-Control-Allow-Origin") != "*" || r.Header.Get("Access-Control-Allow-Headers") != "authorization, content-type, idempotency-key, x-stainless-os" ||
			r.Header.Get("Access-Control-Allow-Methods") == "" || r.Header.Get("Access-Control-Allow-Credentials") != "" || r.Header.Get("Allow") == "" {
			t.Errorf("preflight %s: %v", path, r.Header)
		}
	}
	r := e.call("OPTIONS", "/sessions", "", "", "Origin", page, "Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", "x-a\r\nx-b")
	if r.StatusCode != http.StatusNoContent || r.Header.Get("Access-Control-Allow-Headers") != "" {
		t.Errorf("a malformed header list is allowed: %v", r.Header)
	}
	// Answers, refusals included, are readable by the page.
	for _, c := range []struct {
		key  string
		code int
	}{{agentKey, 200}, {"", 401}, {"ws_bogus", 401}} {
		r := e.call("GET", "/agent/me", c.key, "", "Origin", page).want(t, c.code)
		if r.Header.Get("Access-Control-Allow-Origin") != "*" || r.Header.Get("Access-Control-Allow-Credentials") != "" || r.Header.Get("Access-Control-Expose-Headers") == "" {
			t.Errorf("GET /agent/me (%d): %v", c.code, r.Header)
		}
	}
	// No Origin, no CORS headers: a program is not a page.
	if r := e.call("GET", "/agent/me", agentKey, "").want(t, 200); r.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("CORS without an Origin: %v", r.Header)
	}
	// The MCP server answers pages of the origins it serves, by name, and refuses others.
	for _, origin := range []string{"http://localhost:6274", "http://127.0.0.1:3000"} {
		r := e.call("OPTIONS", "/mcp", "", "", "Origin", origin, "Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", "content-type, mcp-protocol-version").want(t, 204)
		if r.Header.Get("Access-Control-Allow-Origin") != origin || r.Header.Get("Vary") != "Origin" {
			t.Errorf("MCP preflight from %s: %v", origin, r.Header)
		}
	}
	e.call("OPTIONS", "/mcp", "", "", "Origin", page, "Access-Control-Request-Method", "POST").want(t, 403, "origin_not_allowed")
	r = e.call("POST", "/mcp", "", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, "Origin", "http://localhost:6274", "Accept", "application/json, text/event-stream")
	if r.Header.Get("Access-Control-Allow-Origin") != "http://localhost:6274" {
		t.Errorf("MCP answer to a loopback page: %d %v", r.StatusCode, r.Header)
	}
	// A path that is not there stays 404, preflight or not.
	e.call("OPTIONS", "/nowhere", "", "", "Origin", page, "Access-Control-Request-Method", "GET").want(t, 404)
}
