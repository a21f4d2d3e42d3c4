package api

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The memory's tool: resolve_fields, as POST /sessions/{id}/resolve.

// addResolveTools adds the memory's tools.
func (s *Server) addResolveTools(srv *mcp.Server) {
	addTool(srv, &mcp.Tool{Name: "resolve_fields", OutputSchema: outputSchema("Resolution"), Title: "Resolve a form's fields",
		Description: "For a site or an intent, the directory's methods and, per field a form asks for, the person's saved values that could fill it, as handles with whether the person must approve their use, plus what is missing and the next action." + noValues},
		s.toolResolveFields)
}

type resolveIn struct {
	SessionID string           `json:"sessionId"`
	Intent    string           `json:"intent,omitempty"`
	TargetURL string           `json:"targetUrl,omitempty"`
	Fields    []map[string]any `json:"fields,omitempty" jsonschema:"[{key, label, type}] the form asks for"`
}

// toolResolveFields resolves a form's fields as POST /sessions/{id}/resolve does,
// its search charged as the route's.
func (s *Server) toolResolveFields(ctx context.Context, _ *mcp.CallToolRequest, in resolveIn) (*mcp.CallToolResult, map[string]any, error) {
	sid, p, err := sessionPath(in.SessionID, "/resolve")
	if err != nil {
		return nil, nil, err
	}
	var req resolveRequest
	return toolResult(s.toolPost(ctx, p, in.body(), &req, func() (any, error) {
		return s.resolve(ctx, s.mcpSearchCaller(ctx), sid, req)
	}))
}

// body is the body of POST /sessions/{id}/resolve that the arguments say: those of
// them that are set.
func (in resolveIn) body() map[string]any {
	body := map[string]any{}
	if in.Intent != "" {
		body["intent"] = in.Intent
	}
	if in.TargetURL != "" {
		body["targetUrl"] = in.TargetURL
	}
	if in.Fields != nil {
		body["fields"] = in.Fields
	}
	return body
}
