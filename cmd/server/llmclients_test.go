package main

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waystation/waystation/internal/llmecho"
	"github.com/waystation/waystation/internal/postgres/pgtest"
	"github.com/waystation/waystation/internal/redact/redacttest"
)

// The tools the client test runs: Node.js, and the directories the official OpenAI
// and Anthropic clients are installed in (make test installs them and sets these).
const (
	envNode         = "WAYSTATION_NODE"
	envOpenAIJS     = "WAYSTATION_OPENAI_JS"
	envAnthropicJS  = "WAYSTATION_ANTHROPIC_JS"
	llmClientCanary = "Quartz-Canary-4417"
)

// llmClientTools is Node.js and the NODE_PATH under which the official clients are
// found. Without them the test is skipped, except under CI, where that is a failure.
func llmClientTools(t *testing.T) (node, nodePath string) {
	t.Helper()
	node, openai, anthropic := os.Getenv(envNode), os.Getenv(envOpenAIJS), os.Getenv(envAnthropicJS)
	if node == "" || openai == "" || anthropic == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s, %s and %s must be set under CI: make test installs the clients and sets them", envNode, envOpenAIJS, envAnthropicJS)
		}
		t.Skipf("%s, %s or %s is not set: make test installs Node.js and the official OpenAI and Anthropic clients and runs this test with them", envNode, envOpenAIJS, envAnthropicJS)
	}
	for _, p := range []string{node, filepath.Join(openai, "node_modules", "openai", "package.json"), filepath.Join(anthropic, "node_modules", "@anthropic-ai", "sdk", "package.json")} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%v (make llm-clients installs the clients)", err)
		}
	}
	return node, filepath.Join(openai, "node_modules") + string(os.PathListSeparator) + filepath.Join(anthropic, "node_modules")
}

// The official OpenAI and Anthropic clients for Node.js, pointed at the real server
// as at their providers, get what they ask of the LLM proxy: chat completions, the
// Responses API and the Messages API (Anthropic's, its key as x-api-key), whole,
// streamed and calling a tool, each answer read as the client reads its provider's,
// while the user's protected value, written into every part of every request in
// every form, never reaches the model upstream: it arrives as [redacted]. An error
// (a protected value as the model, a part that is not text, an unknown session, a
// bad key) is read by each client as an API error with the proxy's status, message
// and code.
func TestOfficialLLMClientsThroughTheProxy(t *testing.T) {
	node, nodePath := llmClientTools(t)
	dbURL := pgtest.URL(t)
	userKey, agentKey := apiKeys(t, dbURL)

	var mu sync.Mutex
	var calls []llmecho.Call
	echo := llmecho.New()
	echo.Called = func(c llmecho.Call) {
		mu.Lock()
		defer mu.Unlock()
		calls = append(calls, c)
	}
	upstream := httptest.NewServer(echo)
	defer upstream.Close()
	const openAIKey, anthropicKey = "sk-upstream-openai-0042", "sk-ant-upstream-0042"
	srv := serveLogged(t, map[string]string{"DATABASE_URL": dbURL,
		"LLM_UPSTREAM_URL": upstream.URL + "/v1", "LLM_UPSTREAM_KEY": openAIKey,
		"LLM_ANTHROPIC_URL": upstream.URL, "LLM_ANTHROPIC_KEY": anthropicKey})
	api := srv.base + "/functions/v1/api"
	if r := mustSend(t, "POST", api+"/memory/items", userKey, `{"label":"Door","askBeforeUse":false,"fields":[{"fieldRef":"code","label":"Code","secret":true,"value":"`+llmClientCanary+`"}]}`); r.StatusCode != http.StatusCreated {
		t.Fatalf("the canary: %d %s", r.StatusCode, r.body)
	}
	sid := createSession(t, api, agentKey, "llm-clients")
	materialize(t, api, agentKey, sid, "code", llmClientCanary)
	forms := slices.Sorted(maps.Values(redacttest.Forms(llmClientCanary)))
	formsJSON, _ := json.Marshal(forms)

	runClient := func(script string) map[string]json.RawMessage {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, node, filepath.Join("testdata", "llmclients", script))
		cmd.Env = []string{"NODE_PATH=" + nodePath, "WAYSTATION_API=" + api, "AGENT_KEY=" + agentKey, "SESSION_ID=" + sid,
			"FORMS=" + string(formsJSON), "NO_PROXY=*", "HOME=" + t.TempDir()}
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s: %v\n%s\nserver log:\n%s", script, err, stderr.String(), srv.logs)
		}
		t.Logf("%s read: %s", script, stdout.String())
		var out map[string]json.RawMessage
		if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
			t.Fatalf("%s wrote %q: %v\n%s", script, stdout.String(), err, stderr.String())
		}
		return out
	}
	text := func(out map[string]json.RawMessage, name string) string {
		var s string
		if err := json.Unmarshal(out[name], &s); err != nil {
			var m map[string]any
			json.Unmarshal(out[name], &m)
			s, _ = m["text"].(string)
		}
		return s
	}
	// An answer echoes what the model received: the value blanked, the rest there.
	wantEcho := func(script, name string, s string, has ...string) {
		t.Helper()
		for _, f := range forms {
			if strings.Contains(s, f) {
				t.Errorf("%s %s: the answer holds the value as %q: %s", script, name, f, s)
			}
		}
		for _, h := range append(has, "[redacted]") {
			if !strings.Contains(s, h) {
				t.Errorf("%s %s: %q, want it to hold %q", script, name, s, h)
			}
		}
	}
	type toolCall struct {
		Name      string
		Arguments map[string]string
		Input     map[string]string
	}
	wantCall := func(script, name string, raw json.RawMessage) {
		t.Helper()
		var c toolCall
		if err := json.Unmarshal(raw, &c); err != nil || c.Name != "pay" {
			t.Errorf("%s %s: %s", script, name, raw)
			return
		}
		args := c.Arguments
		if args == nil {
			args = c.Input
		}
		wantEcho(script, name, args["echo"], "Pay with")
	}
	type apiError struct {
		Thrown           bool
		Name, Type, Code string
		Message          string
		Status           int
	}
	wantError := func(script, name string, raw json.RawMessage, status int, code, typ, message string) {
		t.Helper()
		var e apiError
		json.Unmarshal(raw, &e)
		if !e.Thrown || e.Status != status || e.Code != code || e.Type != typ || !strings.Contains(e.Message, message) || strings.Contains(e.Message, "no body") {
			t.Errorf("%s %s: the client read %s, want a %d API error %s (%s) saying %q", script, name, raw, status, code, typ, message)
		}
		for _, f := range forms {
			if strings.Contains(e.Message, f) {
				t.Errorf("%s %s: the error repeats the value: %s", script, name, e.Message)
			}
		}
	}

	out := runClient("openai.cjs")
	wantEcho("openai", "chat", text(out, "chat"), "system: The code is", "user: Pay with")
	wantEcho("openai", "chatStream", text(out, "chatStream"), "user: Pay with")
	wantCall("openai", "chatToolCall", out["chatToolCall"])
	wantEcho("openai", "chatToolResult", text(out, "chatToolResult"), "tool: paid with")
	wantCall("openai", "chatStreamToolCall", out["chatStreamToolCall"])
	wantEcho("openai", "responses", text(out, "responses"), "instructions: Never say", "user: The code is")
	var rs struct{ Text, Deltas string }
	json.Unmarshal(out["responsesStream"], &rs)
	wantEcho("openai", "responsesStream", rs.Text, "user: Pay with")
	if rs.Deltas != rs.Text {
		t.Errorf("openai responsesStream: deltas %q, final text %q", rs.Deltas, rs.Text)
	}
	wantCall("openai", "responsesToolCall", out["responsesToolCall"])
	wantEcho("openai", "responsesToolResult", text(out, "responsesToolResult"), "function_call: pay", "function_call_output: paid with")
	wantCall("openai", "responsesStreamToolCall", out["responsesStreamToolCall"])
	const cannotBlank = "the proxy cannot blank those"
	wantError("openai", "chatProtectedModel", out["chatProtectedModel"], 422, "protected_value_detected", "invalid_request_error", cannotBlank)
	wantError("openai", "responsesProtectedModel", out["responsesProtectedModel"], 422, "protected_value_detected", "invalid_request_error", cannotBlank)
	wantError("openai", "responsesNotText", out["responsesNotText"], 422, "validation_failed", "invalid_request_error", "forwards text only")
	wantError("openai", "unknownSession", out["unknownSession"], 404, "not_found", "not_found_error", "")
	wantError("openai", "badKey", out["badKey"], 401, "invalid_api_key", "authentication_error", "The API key is not valid.")

	out = runClient("anthropic.cjs")
	wantEcho("anthropic", "messages", text(out, "messages"), "system: The code is", "user: Pay with", "assistant: Which code")
	var ms struct{ Text, Deltas, Stop string }
	json.Unmarshal(out["messagesStream"], &ms)
	wantEcho("anthropic", "messagesStream", ms.Text, "system: Never say", "user: Yes,")
	if ms.Deltas != ms.Text || ms.Stop != "end_turn" {
		t.Errorf("anthropic messagesStream: %s", out["messagesStream"])
	}
	wantCall("anthropic", "messagesToolCall", out["messagesToolCall"])
	wantEcho("anthropic", "messagesToolResult", text(out, "messagesToolResult"), "tool_use pay", "tool_result: paid with")
	wantCall("anthropic", "messagesStreamToolCall", out["messagesStreamToolCall"])
	wantError("anthropic", "protectedModel", out["protectedModel"], 422, "protected_value_detected", "invalid_request_error", cannotBlank)
	wantError("anthropic", "notText", out["notText"], 422, "validation_failed", "invalid_request_error", "forwards text only")
	wantError("anthropic", "unknownSession", out["unknownSession"], 404, "not_found", "not_found_error", "")
	wantError("anthropic", "badKey", out["badKey"], 401, "invalid_api_key", "authentication_error", "The API key is not valid.")
	if got := text(out, "bearer"); got != "user: hello" {
		t.Errorf("anthropic with a Bearer key: %q", got)
	}

	// What reached the model: every call, each with the upstream's key, and the value
	// in none of its forms, in no body and no header.
	mu.Lock()
	defer mu.Unlock()
	paths := map[string]int{}
	for _, c := range calls {
		paths[c.Path]++
		var raw strings.Builder
		raw.Write(c.Body)
		for k, vs := range c.Header {
			raw.WriteString("\n" + k + ": " + strings.Join(vs, ", "))
		}
		for _, f := range append(forms, agentKey) {
			if strings.Contains(raw.String(), f) {
				t.Errorf("%s reached the upstream holding %q", c.Path, f)
			}
		}
		switch c.Path {
		case "/v1/messages":
			if c.Header.Get("X-Api-Key") != anthropicKey || c.Header.Get("Authorization") != "" || c.Header.Get("Anthropic-Version") == "" {
				t.Errorf("%s: x-api-key %q, Authorization %q, anthropic-version %q", c.Path, c.Header.Get("X-Api-Key"), c.Header.Get("Authorization"), c.Header.Get("Anthropic-Version"))
			}
		default:
			if c.Header.Get("Authorization") != "Bearer "+openAIKey {
				t.Errorf("%s: Authorization %q", c.Path, c.Header.Get("Authorization"))
			}
		}
	}
	if paths["/v1/chat/completions"] != 5 || paths["/v1/responses"] != 5 || paths["/v1/messages"] != 6 {
		t.Errorf("the upstream got %v", paths)
	}
	for _, k := range []string{openAIKey, anthropicKey} {
		if strings.Contains(srv.logs.String(), k) {
			t.Error("the server logged an upstream key")
		}
	}
}

// materialize gives the agent of agentKey the saved value of field in session sid,
// as the legitimate flow does: its handle from the session's catalog, an
// ask_before_use request (approved at once, the item does not ask), and the
// materialisation, which answers the value. An agent may repeat a value it was
// given: the proxy blanks it; any other is an attack signal (see package protect).
func materialize(t *testing.T, api, agentKey, sid, field, want string) {
	t.Helper()
	var cat struct {
		Handles []struct{ Handle, FieldRef string }
	}
	r := mustSend(t, "GET", api+"/sessions/"+sid+"/memory/catalog", agentKey, "")
	json.Unmarshal(r.body, &cat)
	handle := ""
	for _, h := range cat.Handles {
		if h.FieldRef == field {
			handle = h.Handle
		}
	}
	if handle == "" {
		t.Fatalf("no handle of %s in the catalog: %d %s", field, r.StatusCode, r.body)
	}
	r = mustSend(t, "POST", api+"/sessions/"+sid+"/requests", agentKey,
		`{"clientRequestId":"use-`+field+`","kind":"ask_before_use","fields":[{"key":"`+field+`","label":"`+field+`","handle":"`+handle+`"}]}`)
	if r.StatusCode != http.StatusCreated {
		t.Fatalf("ask_before_use: %d %s", r.StatusCode, r.body)
	}
	r = mustSend(t, "POST", api+"/sessions/"+sid+"/materialize", agentKey, `{"handles":["`+handle+`"],"purpose":"use it"}`)
	if r.StatusCode != http.StatusOK || !strings.Contains(string(r.body), want) {
		t.Fatalf("materialize: %d %s", r.StatusCode, r.body)
	}
}
