package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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
	t.Parallel()
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

// The official OpenAI and Anthropic clients read an upstream's refusal through the
// proxy as they read their provider's own: an unknown model (404), a context too
// long (400) and a rate limit (429) come with the upstream's status, in each API's
// error class with its type and message, the message cleaned of the user's
// protected value the upstream quoted, the request's id where each client reads it
// (x-request-id, request-id), and the 429's Retry-After visible and its
// retry-after-ms honoured (one retry, after the wait the upstream asked for). An
// Anthropic client with the same key in both of its headers is served; with two
// different keys it reads a 401 saying so.
func TestOfficialLLMClientsReadTheUpstreamsRefusals(t *testing.T) {
	t.Parallel()
	node, nodePath := llmClientTools(t)
	dbURL := pgtest.URL(t)
	userKey, agentKey := apiKeys(t, dbURL)

	var mu sync.Mutex
	calls := map[string]int{}
	echo := llmecho.New()
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct{ Model string }
		b, _ := io.ReadAll(r.Body)
		json.Unmarshal(b, &body)
		mu.Lock()
		calls[r.URL.Path+" "+body.Model]++
		mu.Unlock()
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
		switch body.Model {
		case "missing":
			refuse(404, "not_found_error", "model_not_found", "model: missing")
		case "long":
			refuse(400, "invalid_request_error", "context_length_exceeded", "prompt is too long: 'pay with "+llmClientCanary+"'")
		case "busy":
			w.Header().Set("Retry-After", "1")
			w.Header().Set("Retry-After-Ms", "1500")
			w.Header().Set("X-Ratelimit-Remaining-Requests", "0")
			w.Header().Set("Anthropic-Ratelimit-Requests-Remaining", "0")
			refuse(429, "rate_limit_error", "rate_limit_exceeded", "Rate limited.")
		default:
			r.Body = io.NopCloser(bytes.NewReader(b))
			echo.ServeHTTP(w, r)
		}
	}))
	defer upstream.Close()
	srv := serveLogged(t, map[string]string{"DATABASE_URL": dbURL,
		"LLM_UPSTREAM_URL": upstream.URL + "/v1", "LLM_UPSTREAM_KEY": "sk-upstream-openai-0042",
		"LLM_ANTHROPIC_URL": upstream.URL, "LLM_ANTHROPIC_KEY": "sk-ant-upstream-0042"})
	api := srv.base + "/functions/v1/api"
	if r := mustSend(t, "POST", api+"/memory/items", userKey, `{"label":"Door","askBeforeUse":false,"fields":[{"fieldRef":"code","label":"Code","secret":true,"value":"`+llmClientCanary+`"}]}`); r.StatusCode != http.StatusCreated {
		t.Fatalf("the canary: %d %s", r.StatusCode, r.body)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join("testdata", "llmclients", "refusals.cjs"))
	cmd.Env = []string{"NODE_PATH=" + nodePath, "WAYSTATION_API=" + api, "AGENT_KEY=" + agentKey, "USER_KEY=" + userKey,
		"FORMS=[]", "NO_PROXY=*", "HOME=" + t.TempDir()}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("refusals.cjs: %v\n%s\nserver log:\n%s", err, stderr.String(), srv.logs)
	}
	t.Logf("refusals.cjs read: %s", stdout.String())
	type apiError struct {
		Thrown                         bool
		Name, Type, Message, RequestID string
		Status                         int
		RetryAfter, RetryAfterMs       *string
		Remaining                      *string
		MS                             int
	}
	var out struct {
		OpenAI, Anthropic struct {
			Missing, Long, Busy apiError
			AnswerRequestID     string
			BothKeys            string
			TwoKeys             apiError
			Sent                []struct{ APIKey, Bearer bool }
		}
	}
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("refusals.cjs wrote %q: %v", stdout.String(), err)
	}
	id := regexp.MustCompile(`^[0-9a-f]{32}$`)
	for client, got := range map[string]struct {
		missing, long, busy apiError
		missingType         string
	}{
		"openai":    {out.OpenAI.Missing, out.OpenAI.Long, out.OpenAI.Busy, "not_found_error"},
		"anthropic": {out.Anthropic.Missing, out.Anthropic.Long, out.Anthropic.Busy, "not_found_error"},
	} {
		for _, c := range []struct {
			name       string
			e          apiError
			status     int
			class, typ string
			message    string
		}{
			{"missing", got.missing, 404, "NotFoundError", got.missingType, "model: missing"},
			{"long", got.long, 400, "BadRequestError", "invalid_request_error", "prompt is too long: 'pay with [redacted]'"},
			{"busy", got.busy, 429, "RateLimitError", "rate_limit_error", "Rate limited."},
		} {
			if !c.e.Thrown || c.e.Status != c.status || c.e.Name != c.class || c.e.Type != c.typ || !strings.Contains(c.e.Message, c.message) || !id.MatchString(c.e.RequestID) {
				t.Errorf("%s %s: the client read %+v, want a %d %s (%s) saying %q with a request id", client, c.name, c.e, c.status, c.class, c.typ, c.message)
			}
			if strings.Contains(c.e.Message, llmClientCanary) {
				t.Errorf("%s %s: the message repeats the protected value: %s", client, c.name, c.e.Message)
			}
		}
		b := got.busy
		if b.RetryAfter == nil || *b.RetryAfter != "1" || b.RetryAfterMs == nil || *b.RetryAfterMs != "1500" || b.Remaining == nil || *b.Remaining != "0" || b.MS < 1400 {
			t.Errorf("%s busy: Retry-After %v, retry-after-ms %v, remaining %v, %d ms: want them visible and the wait honoured", client, b.RetryAfter, b.RetryAfterMs, b.Remaining, b.MS)
		}
	}
	mu.Lock()
	if calls["/v1/chat/completions busy"] != 2 || calls["/v1/messages busy"] != 2 {
		t.Errorf("the upstream got %v: want each busy call tried again once", calls)
	}
	mu.Unlock()
	if !id.MatchString(out.Anthropic.AnswerRequestID) {
		t.Errorf("anthropic: an answer's request id %q", out.Anthropic.AnswerRequestID)
	}
	if len(out.Anthropic.Sent) != 2 || !out.Anthropic.Sent[0].APIKey || !out.Anthropic.Sent[0].Bearer || !out.Anthropic.Sent[1].APIKey || !out.Anthropic.Sent[1].Bearer {
		t.Errorf("anthropic: the client sent %+v, want x-api-key and a Bearer key on both calls", out.Anthropic.Sent)
	}
	if out.Anthropic.BothKeys != "user: hi" {
		t.Errorf("anthropic with the key in both headers: %q", out.Anthropic.BothKeys)
	}
	if k := out.Anthropic.TwoKeys; !k.Thrown || k.Status != 401 || k.Name != "AuthenticationError" || !strings.Contains(k.Message, "different keys") {
		t.Errorf("anthropic with two keys: %+v", k)
	}
	if strings.Contains(srv.logs.String(), llmClientCanary) {
		t.Error("the server logged the protected value")
	}
}
