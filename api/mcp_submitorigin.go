package api

import (
	"context"
	"net/http"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// userTools are the tools a user key adds to the directory's: what the routes of a
// user key do for a seller, as POST /origins.
var userTools = []string{"submit_origin"}

type submitOriginIn struct {
	Origin string `json:"origin" jsonschema:"the seller's origin, as https://api.seller.example: its manifest is read from /.well-known/x402.json there"`
}

// addUserTools adds the tools of a user key.
func (s *Server) addUserTools(srv *mcp.Server) {
	addTool(srv, &mcp.Tool{Name: "submit_origin", OutputSchema: outputSchema("OriginSubmission"), Title: "List a seller from its own manifest",
		Annotations: &mcp.ToolAnnotations{IdempotentHint: true, OpenWorldHint: ptrTo(true)},
		Description: "List a seller in the directory from its own manifest (https://<origin>/.well-known/x402.json), as POST /origins does: every item is checked by the x402 rules and probed, and those whose live endpoint answers a valid 402 are listed, in place of any listing's copies of that hostname. Answers, item by item, what was listed (with its slug and whether its payee proved it owns the origin) and what was refused and why. Submitting again lists the manifest as it is now."},
		s.submitOriginTool())
}

// submitOriginTool is the submit_origin tool: toolSubmitOrigin, or, on a server
// that lists no origins (where the route is not served), one that answers as the
// missing route does.
func (s *Server) submitOriginTool() func(context.Context, *mcp.CallToolRequest, submitOriginIn) (*mcp.CallToolResult, map[string]any, error) {
	if s.auth.Origins == nil {
		return func(ctx context.Context, _ *mcp.CallToolRequest, _ submitOriginIn) (*mcp.CallToolResult, map[string]any, error) {
			return toolResult(s.toolProblem(ctx, "/origins", errNoRoute()))
		}
	}
	return s.toolSubmitOrigin
}

// toolSubmitOrigin submits an origin as the route POST /origins does: the body
// checked by the route's rules, the same use case, for the key's user.
func (s *Server) toolSubmitOrigin(ctx context.Context, _ *mcp.CallToolRequest, in submitOriginIn) (*mcp.CallToolResult, map[string]any, error) {
	const path = "/origins"
	var req submitOriginRequest
	if _, err := s.toolWrite(ctx, in, &req); err != nil {
		return toolResult(s.toolProblem(ctx, path, err))
	}
	sub, err := s.auth.Origins.Submit(ctx, principalOf(ctx).UserID, req.Origin)
	return toolResult(s.toolAnswer(ctx, path, http.StatusOK, sub, err))
}

// userToolsNeedAUserKey answers a call of a user key's tool made without one with
// an error result that says it takes a user key, where the SDK would say only that
// the tool is unknown; code is the route's problem code for such a caller
// (unauthenticated without a key, wrong_key_scope with an agent key).
func userToolsNeedAUserKey(code string) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/call" {
				if p, ok := req.GetParams().(*mcp.CallToolParamsRaw); ok && slices.Contains(userTools, p.Name) {
					r := &mcp.CallToolResult{}
					r.SetError(toolFailure(code + ": " + p.Name + " takes a user key, as its route does: connect with Authorization: Bearer sk_user_..."))
					return r, nil
				}
			}
			return next(ctx, method, req)
		}
	}
}
