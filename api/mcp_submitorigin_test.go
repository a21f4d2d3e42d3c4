package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/waystation/waystation/api"
	"github.com/waystation/waystation/internal/seller"
)

// keyed adds a key to every request of an MCP client.
type keyed struct{ key string }

func (k keyed) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if k.key != "" {
		r.Header.Set("Authorization", "Bearer "+k.key)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// mcpSession connects the MCP SDK's own client to the API served at base, with key
// (none if empty).
func mcpSession(t *testing.T, base, key string) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "waystation-test", Version: "1"}, nil)
	s, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: base + api.BasePath + api.MCPPath,
		HTTPClient: &http.Client{Timeout: time.Minute, Transport: keyed{key}}, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// A user key's MCP session offers submit_origin, which lists the local seller as
// POST /origins does, for the key's user: its structured answer is the route's
// answer, and fits the OpenAPI document's schema (the SDK checks it against the
// tool's output schema). An agent key and no key do not list it, and a call of it
// says it takes a user key, with the route's code.
func TestSubmitOriginToolListsAsTheRouteDoes(t *testing.T) {
	t.Parallel()
	e, o := originEnv(t, seller.New(seller.Config{PayeeKey: sellerKey}))
	uid, userKey := e.user("ada")
	_, agentKey := e.agent(uid, "scout")
	srv := httptest.NewServer(e.srv)
	t.Cleanup(srv.Close)
	ctx := context.Background()

	tools := func(s *mcp.ClientSession) []string {
		var names []string
		for tool, err := range s.Tools(ctx, nil) {
			if err != nil {
				t.Fatal(err)
			}
			names = append(names, tool.Name)
		}
		return names
	}
	user := mcpSession(t, srv.URL, userKey)
	if names := tools(user); !slices.Contains(names, "submit_origin") || !slices.Contains(names, "search_sellers") || slices.Contains(names, "open_session") {
		t.Errorf("a user key's tools: %v", names)
	}
	for key, code := range map[string]string{agentKey: "wrong_key_scope", "": "unauthenticated"} {
		s := mcpSession(t, srv.URL, key)
		if slices.Contains(tools(s), "submit_origin") {
			t.Errorf("submit_origin listed for a %q key", code)
		}
		res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "submit_origin", Arguments: map[string]any{"origin": o}})
		if err != nil {
			t.Fatal(err)
		}
		if text := res.Content[0].(*mcp.TextContent).Text; !res.IsError || !strings.HasPrefix(text, code+": ") || !strings.Contains(text, "user key") {
			t.Errorf("submit_origin with a %q key: %v %q", code, res.IsError, text)
		}
	}

	res, err := user.CallTool(ctx, &mcp.CallToolParams{Name: "submit_origin", Arguments: map[string]any{"origin": o}})
	if err != nil || res.IsError {
		t.Fatalf("submit_origin: %v %+v", err, res)
	}
	var tool map[string]any
	b, _ := json.Marshal(res.StructuredContent)
	json.Unmarshal(b, &tool)
	if tool["status"] != "listed" || tool["listed"] != float64(2) || tool["owner"] == "" {
		t.Fatalf("submit_origin answered %s", b)
	}
	// Submitting again lists the manifest as it is now: the same answer.
	r := e.call("POST", "/origins", userKey, `{"origin":"`+o+`"}`).want(t, 200)
	if route := r.decode(t); !reflect.DeepEqual(tool, route) {
		t.Errorf("the tool answered\n%s\nthe route\n%s", b, r.body)
	}

	// Bad input is the route's problem, as an error result.
	res, err = user.CallTool(ctx, &mcp.CallToolParams{Name: "submit_origin", Arguments: map[string]any{"origin": "ftp://nowhere"}})
	if err != nil {
		t.Fatal(err)
	}
	if text := res.Content[0].(*mcp.TextContent).Text; !res.IsError || !strings.HasPrefix(text, "validation_failed (422)") {
		t.Errorf("a bad origin: %q", text)
	}
}
