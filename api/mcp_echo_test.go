package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/waystation/waystation/internal/app"
	"github.com/waystation/waystation/internal/captcha"
	"github.com/waystation/waystation/internal/memory"
	"github.com/waystation/waystation/internal/origin"
	"github.com/waystation/waystation/internal/webhook"
)

// mcpCard is the value a hostile agent sends to the MCP server to have it repeated.
const mcpCard = "4111111111111111"

// lockedLog is a log destination the SDK's goroutines may write while a test reads.
type lockedLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// loggedServer is everyRoute's server, logging to logs.
func loggedServer(logs *lockedLog) *Server {
	return NewServer(Config{}, slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})), nil, nil, WithAuthenticated(Authenticated{Services: app.Services{
		Webhooks: webhook.NewService(nil, webhook.Config{}), Captchas: &captcha.Service{}, Memory: memory.NewService(nil, memory.Config{}),
		Origins: origin.NewService(nil, nil, nil, origin.Config{})}}))
}

// postMCP posts body to s's MCP endpoint as a client of the current protocol would.
func postMCP(s http.Handler, body string, header ...string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, BasePath+MCPPath, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	s.ServeHTTP(rec, req)
	return rec
}

// Errors the MCP server makes before a tool's guard (an unknown method, a batch, a
// resource or prompt that is not there, a tool call's params that do not decode, a
// protocol version it does not speak) say what failed by their code and a fixed
// text, never what was sent; and logging/setLevel's level goes to no log line.
func TestMCPErrorsRepeatNothingOfTheRequest(t *testing.T) {
	t.Parallel()
	var logs lockedLog
	s := loggedServer(&logs)
	call := func(method, params string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":` + params + `}`
	}
	for name, c := range map[string]struct {
		body   string
		header []string
	}{
		"unknown method":       {body: call("x/"+mcpCard, `{}`)},
		"batch":                {body: `[` + call("x/"+mcpCard, `{}`) + `,` + call("tools/call", `{"name":"`+mcpCard+`"}`) + `]`},
		"old batch":            {body: `[` + call("x/"+mcpCard, `{}`) + `]`, header: []string{"Mcp-Protocol-Version", "2025-03-26"}},
		"batch of a version":   {body: `[` + call("ping", `{}`) + `]`, header: []string{"Mcp-Protocol-Version", "2099-" + mcpCard}},
		"resources/read":       {body: call("resources/read", `{"uri":"file:///`+mcpCard+`"}`)},
		"prompts/get":          {body: call("prompts/get", `{"name":"`+mcpCard+`"}`)},
		"tools/call name":      {body: call("tools/call", `{"name":`+mcpCard+`}`)},
		"tools/call arguments": {body: call("tools/call", `{"name":"search_sellers","arguments":"`+mcpCard+`"}`)},
		"tools/call unknown":   {body: call("tools/call", `{"name":"`+mcpCard+`","arguments":{}}`)},
		"initialize":           {body: call("initialize", `{"protocolVersion":`+mcpCard+`}`)},
		"params not an object": {body: call("tools/list", `"`+mcpCard+`"`)},
		"protocol version":     {body: call("tools/list", `{}`), header: []string{"Mcp-Protocol-Version", mcpCard}},
		"not JSON":             {body: `{"jsonrpc":"2.0","id":1,"method":"` + mcpCard},
		"id":                   {body: `{"jsonrpc":"2.0","id":{"x":"` + mcpCard + `"},"method":"ping"}`},
		"logging/setLevel":     {body: call("logging/setLevel", `{"level":"`+mcpCard+`"}`)},
		"completion/complete":  {body: call("completion/complete", `{"ref":{"type":"ref/prompt","name":"`+mcpCard+`"},"argument":{"name":"a","value":"b"}}`)},
		"resources/subscribe":  {body: call("resources/subscribe", `{"uri":"file:///`+mcpCard+`"}`)},
		"notification":         {body: `{"jsonrpc":"2.0","method":"notifications/` + mcpCard + `"}`},
	} {
		rec := postMCP(s, c.body, c.header...)
		t.Logf("%s: %d %s", name, rec.Code, rec.Body.String())
		if strings.Contains(rec.Body.String(), mcpCard) || strings.Contains(rec.Body.String(), "4111") {
			t.Errorf("%s: %d %s", name, rec.Code, rec.Body.String())
		}
	}
	if strings.Contains(logs.String(), "4111") {
		t.Errorf("logged: %s", logs.String())
	}
}

// The SDK's own client, connected as a host connects, reads the server's errors
// and results through the rewriting: a prompt, a resource or a tool named by a
// card comes back as an error of its code that says nothing of it, a level set to
// it is logged nowhere, and the tools still list and answer.
func TestMCPErrorsToTheOfficialClientRepeatNothing(t *testing.T) {
	t.Parallel()
	var logs lockedLog
	srv := httptest.NewServer(loggedServer(&logs))
	t.Cleanup(srv.Close)
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: srv.URL + BasePath + MCPPath, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	var errs []error
	_, err = cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: mcpCard})
	errs = append(errs, err)
	_, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "file:///" + mcpCard})
	errs = append(errs, err)
	//lint:ignore SA1019 the logging feature is deprecated but served, and its request must echo nothing
	errs = append(errs, cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: mcpCard}))
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: mcpCard, Arguments: map[string]any{}})
	errs = append(errs, err)
	for i, err := range errs[:2] {
		var wire *jsonrpc.Error
		if !errors.As(err, &wire) || strings.Contains(err.Error(), "4111") || !strings.Contains(wire.Message, "repeats nothing") {
			t.Errorf("call %d: %v", i, err)
		}
	}
	if res != nil {
		b, _ := json.Marshal(res)
		if strings.Contains(string(b), "4111") {
			t.Errorf("an unknown tool: %s", b)
		}
	}
	if errs[3] != nil && strings.Contains(errs[3].Error(), "4111") {
		t.Errorf("an unknown tool: %v", errs[3])
	}
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Errorf("tools/list: %v", err)
	}
	if strings.Contains(logs.String(), "4111") {
		t.Errorf("logged: %s", logs.String())
	}
}
