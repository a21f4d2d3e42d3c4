package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// bearer adds a key to every request of an MCP client.
type bearer struct {
	key  string
	next http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return b.next.RoundTrip(r)
}

// mcpClient connects the MCP SDK's own client to the server, with key (none if
// empty); every tool result and notification it receives is kept in seen.
type mcpClient struct {
	t       *testing.T
	session *mcp.ClientSession
	mu      sync.Mutex
	seen    []string
	notes   int
}

func connectMCP(t *testing.T, base, key string) (*mcpClient, error) {
	t.Helper()
	c := &mcpClient{t: t}
	httpClient := &http.Client{Timeout: 2 * time.Minute}
	if key != "" {
		httpClient.Transport = bearer{key, http.DefaultTransport}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "waystation-test", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			b, _ := json.Marshal(req.Params)
			c.mu.Lock()
			c.seen = append(c.seen, string(b))
			c.notes++
			c.mu.Unlock()
		},
	})
	s, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: base + "/functions/v1/api/mcp",
		HTTPClient: httpClient, DisableStandaloneSSE: true}, nil)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { s.Close() })
	c.session = s
	return c, nil
}

// call calls a tool and returns its structured content; wantError says whether the
// result must be an error result.
func (c *mcpClient) call(name string, args any, wantError bool, progress ...string) map[string]any {
	c.t.Helper()
	params := &mcp.CallToolParams{Name: name, Arguments: args}
	if len(progress) > 0 {
		params.SetProgressToken(progress[0])
	}
	res, err := c.session.CallTool(context.Background(), params)
	if err != nil {
		c.t.Fatalf("%s: %v", name, err)
	}
	b, _ := json.Marshal(res)
	c.mu.Lock()
	c.seen = append(c.seen, string(b))
	c.mu.Unlock()
	if res.IsError != wantError {
		c.t.Fatalf("%s: isError %v, want %v: %s", name, res.IsError, wantError, b)
	}
	out, _ := res.StructuredContent.(map[string]any)
	if !wantError && out == nil {
		c.t.Fatalf("%s: no structured content: %s", name, b)
	}
	return out
}

func toolNames(t *testing.T, c *mcpClient) []string {
	t.Helper()
	res, err := c.session.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		if tool.OutputSchema == nil || tool.InputSchema == nil || tool.Description == "" {
			t.Errorf("%s lacks an output schema, an input schema or a description", tool.Name)
		}
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return names
}

// TestMCPDirectoryToolsWithoutAKey: the SDK's client initialises, lists the four
// directory tools, and calls each; a wrong key is refused at the door.
func TestMCPDirectoryToolsWithoutAKey(t *testing.T) {
	t.Parallel()
	dbURL := demoDatabase(t)
	srv := serveLogged(t, map[string]string{"DATABASE_URL": dbURL})
	c, err := connectMCP(t, srv.base, "")
	if err != nil {
		t.Fatal(err)
	}
	if got := toolNames(t, c); !slices.Equal(got, []string{"check_merchant", "get_method", "list_categories", "search_sellers"}) {
		t.Fatalf("tools %v", got)
	}
	if init := c.session.InitializeResult(); init == nil || init.ServerInfo.Name != "waystation" || !strings.Contains(init.Instructions, "materialize") {
		t.Errorf("initialize: %+v", init)
	}
	found := c.call("search_sellers", map[string]any{"query": "ethereum block number"}, false)
	results, _ := found["results"].([]any)
	if len(results) == 0 {
		t.Fatalf("search: %v", found)
	}
	first := results[0].(map[string]any)
	slug, host := first["slug"].(string), first["hostname"].(string)
	if slug == "" || first["verdict"] == nil {
		t.Fatalf("result %v", first)
	}
	m := c.call("get_method", map[string]any{"slug": slug}, false)
	if m["slug"] != slug || m["guidance"] == nil || m["endpoint"] == nil {
		t.Errorf("method %v", m)
	}
	if b, _ := json.Marshal(m); len(b) > 16<<10 {
		t.Errorf("get_method answered %d bytes: too much for a model's context", len(b))
	}
	mer := c.call("check_merchant", map[string]any{"hostname": "https://" + host + "/x"}, false)
	if mer["hostname"] != host || mer["verdict"] == nil || len(mer["methods"].([]any)) == 0 {
		t.Errorf("merchant %v", mer)
	}
	cats := c.call("list_categories", map[string]any{}, false)
	if list, _ := cats["categories"].([]any); len(list) == 0 {
		t.Errorf("categories %v", cats)
	}
	c.call("get_method", map[string]any{"slug": "no-such-method"}, true)
	c.call("check_merchant", map[string]any{"hostname": "not a host"}, true)
	// A workflow tool called without a key does nothing and says it takes an agent key.
	res, err := c.session.CallTool(context.Background(), &mcp.CallToolParams{Name: "open_session", Arguments: map[string]any{"description": "x"}})
	if err != nil || !res.IsError || len(res.Content) == 0 || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "agent key") {
		t.Errorf("a workflow tool without a key: %+v %v, want an error result saying it takes an agent key", res, err)
	}
	if _, err := connectMCP(t, srv.base, "sk_agent_0123456789abcdef_"+strings.Repeat("a", 43)); err == nil {
		t.Error("a wrong key connected")
	}
}

// TestMCPAgentPaysAndNoValueReachesTheModel runs the workflow through the MCP tools
// with an agent key: a session, the resolution of a saved value (a canary, which
// only a handle stands for), a quote, a payment the person approves in a browser
// while the agent waits with progress notifications, and the claim of the seller's
// answer. No tool result or notification holds the canary.
func TestMCPAgentPaysAndNoValueReachesTheModel(t *testing.T) {
	t.Parallel()
	chromium := tool(t, "chromium", "/usr/bin/chromium", "/usr/bin/chromium-browser")
	stack := startPayStack(t)
	api := stack.srv.base + "/functions/v1/api"
	const canary = "canary.mcp.7731@example.org"
	post := func(path, key, body string) []byte {
		req, _ := http.NewRequest("POST", api+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		if res.StatusCode >= 300 {
			t.Fatalf("%s: %d %s", path, res.StatusCode, b)
		}
		return b
	}
	// The person saved an email for the seller's site, to be used without asking.
	post("/memory/items", stack.userKey, `{"label":"Receipts","hosts":["localhost"],"askBeforeUse":false,
		"fields":[{"fieldRef":"email","label":"Email","valueType":"email","value":"`+canary+`"}]}`)

	c, err := connectMCP(t, stack.srv.base, stack.agentKey)
	if err != nil {
		t.Fatal(err)
	}
	names := toolNames(t, c)
	for _, want := range []string{"open_session", "pay_seller", "wait_request", "claim_artifact", "resolve_fields", "quote_seller", "create_captcha_task"} {
		if !slices.Contains(names, want) {
			t.Errorf("no %s among %v", want, names)
		}
	}
	for _, n := range names {
		if strings.Contains(n, "materiali") {
			t.Errorf("%s is a tool: values would reach the model", n)
		}
	}
	s := c.call("open_session", map[string]any{"description": "Buy a report on tides", "type": "purchase"}, false)
	sid := s["id"].(string)
	res := c.call("resolve_fields", map[string]any{"sessionId": sid, "targetUrl": stack.sellerBase + "/v2/report",
		"fields": []any{map[string]any{"key": "email", "type": "email"}}}, false)
	if b, _ := json.Marshal(res); !strings.Contains(string(b), `"handle":"wh_`) {
		t.Errorf("resolve gave no handle: %s", b)
	}
	endpoint := stack.sellerBase + "/v2/report?topic=tides"
	q := c.call("quote_seller", map[string]any{"url": endpoint}, false)
	if q["outcome"] != "payment_required" {
		t.Fatalf("quote %v", q)
	}
	asked := c.call("pay_seller", map[string]any{"sessionId": sid, "clientRequestId": "p1", "maximumDebit": "0.02",
		"httpRequest": map[string]any{"url": endpoint}, "reason": "The report you asked for"}, false)
	rq := asked["request"].(map[string]any)
	rid, approvalURL := rq["id"].(string), rq["approvalUrl"].(string)
	c.call("pay_seller", map[string]any{"sessionId": sid, "clientRequestId": "p2", "maximumDebit": "0.001",
		"httpRequest": map[string]any{"url": endpoint}}, true) // price_above_maximum, as an error result

	// The agent waits while the person approves in a browser.
	type waitResult struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan waitResult, 1)
	go func() {
		params := &mcp.CallToolParams{Name: "wait_request", Arguments: map[string]any{"sessionId": sid, "requestId": rid, "waitSeconds": 90}}
		params.SetProgressToken("wait-1")
		res, err := c.session.CallTool(context.Background(), params)
		done <- waitResult{res, err}
	}()
	ctx, problems := startBrowser(t, chromium)
	do := func(actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, actions...); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(6 * time.Second) // a progress notification while the person reads
	do(chromedp.Navigate(stack.srv.base + approvalURL))
	do(chromedp.WaitVisible(chromedp.CSS("#key")), chromedp.SendKeys(chromedp.CSS("#key"), stack.userKey), chromedp.Submit(chromedp.CSS("#key")))
	do(chromedp.WaitVisible(chromedp.CSS(`button[value="approve"]`)), chromedp.Click(chromedp.CSS(`button[value="approve"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#status`)))
	var waited map[string]any
	select {
	case w := <-done:
		if w.err != nil || w.res.IsError {
			t.Fatalf("wait_request: %v %+v", w.err, w.res)
		}
		b, _ := json.Marshal(w.res)
		c.mu.Lock()
		c.seen = append(c.seen, string(b))
		c.mu.Unlock()
		waited, _ = w.res.StructuredContent.(map[string]any)
	case <-time.After(2 * time.Minute):
		t.Fatal("wait_request did not return")
	}
	if waited["status"] != "fulfilled" {
		t.Fatalf("after the approval: %v", waited)
	}
	c.mu.Lock()
	notes := c.notes
	c.mu.Unlock()
	if notes == 0 {
		t.Error("no progress notification while waiting")
	}
	art := c.call("claim_artifact", map[string]any{"sessionId": sid, "requestId": rid}, false)
	pay, _ := art["payment"].(map[string]any)
	if pay["status"] != "settled" || !strings.Contains(pay["response"].(map[string]any)["body"].(string), "On tides") {
		t.Fatalf("artifact %v", art)
	}
	c.call("claim_artifact", map[string]any{"sessionId": sid, "requestId": rid}, true)
	if l := stack.sel.Ledger(); len(l) != 1 || l[0].Value != "10000" {
		t.Fatalf("ledger %+v", l)
	}
	c.call("complete_session", map[string]any{"sessionId": sid, "status": "completed", "summary": "bought the report"}, false)

	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.seen {
		if strings.Contains(s, canary) || strings.Contains(strings.ToLower(s), testPayerKey[:24]) || signatureHex.MatchString(s) {
			t.Errorf("a tool result or notification holds a protected value, the key or a signature: %.300s", s)
		}
	}
	for _, p := range problems() {
		t.Errorf("console: %s", p)
	}
}
