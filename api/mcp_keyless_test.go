package api

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// toolNames lists srv's tools through a client of the SDK.
func toolNames(t *testing.T, srv *mcp.Server) []string {
	t.Helper()
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	var names []string
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	return names
}

// A workflow tool called without a key says it takes an agent key, rather than
// being an unknown tool; workflowTools are exactly the tools an agent key adds to a
// server with every service configured.
func TestKeylessCallsOfWorkflowToolsSayTheyTakeAKey(t *testing.T) {
	t.Parallel()
	s := everyRoute()
	public, agent := toolNames(t, s.newMCPServer(false)), toolNames(t, s.newMCPServer(true))
	var added []string
	for _, n := range agent {
		if !slices.Contains(public, n) {
			added = append(added, n)
		}
	}
	slices.Sort(added)
	want := slices.Sorted(slices.Values(workflowTools))
	if !slices.Equal(added, want) {
		t.Fatalf("an agent key adds %v; workflowTools says %v", added, want)
	}
	for _, tool := range []string{"open_session", "pay_seller"} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, BasePath+MCPPath, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"`+tool+`","arguments":{}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		s.ServeHTTP(rec, req)
		body := rec.Body.String()
		if rec.Code != http.StatusOK || !strings.Contains(body, `"isError":true`) || !strings.Contains(body, "take an agent key") || !strings.Contains(body, tool) {
			t.Errorf("%s without a key: %d %s", tool, rec.Code, body)
		}
	}
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, BasePath+MCPPath, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"no_such_tool","arguments":{}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	s.ServeHTTP(rec, req)
	if strings.Contains(rec.Body.String(), "agent key") {
		t.Errorf("an unknown tool is said to take a key: %s", rec.Body.String())
	}
}
