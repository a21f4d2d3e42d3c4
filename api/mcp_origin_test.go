package api_test

import (
	"testing"

	"github.com/waystation/waystation/api"
	"github.com/waystation/waystation/api/openapitest"
)

// The MCP server answers programs (no Origin), pages of the service's own origin
// and pages of this machine; a page of any other origin, which is what a DNS
// rebinding page is, gets 403 origin_not_allowed as the OpenAPI document says, keyed
// or not.
func TestMCPRefusesPagesOfOtherOrigins(t *testing.T) {
	t.Parallel()
	doc := openapitest.Load(t, "openapi.json")
	e := newAuthEnv(t, func(a *api.Authenticated) { a.PublicURL = "https://waystation.example" })
	uid, _ := e.user("ada")
	_, agentKey := e.agent(uid, "scout")
	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	for _, key := range []string{"", agentKey} {
		for origin, allowed := range map[string]bool{
			"":                                true,
			"https://waystation.example":      true,
			"HTTPS://Waystation.Example":      true,
			"http://localhost:6274":           true,
			"http://127.0.0.1:8080":           true,
			"http://[::1]:8080":               true,
			"https://evil.example":            false,
			"http://waystation.example":       false,
			"https://waystation.example.evil": false,
			"null":                            false,
			"https://waystation.example/path": false,
		} {
			h := []string{"Accept", "application/json, text/event-stream"}
			if origin != "" {
				h = append(h, "Origin", origin)
			}
			r := e.call("POST", "/mcp", key, initialize, h...)
			switch {
			case allowed:
				r.want(t, 200)
			default:
				r.want(t, 403, "origin_not_allowed")
				doc.CheckResponse(t, e.request("POST", "/mcp", key, initialize, h...), r.Response, r.body)
			}
		}
	}
}
