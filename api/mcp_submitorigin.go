package api

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The tools of the origins a user lists: submit_origin, as POST /origins.

type submitOriginIn struct {
	Origin string `json:"origin" jsonschema:"the seller's origin, as https://api.seller.example: its manifest is read from /.well-known/x402.json there"`
}

// addUserTools adds the tools of a user key.
func (s *Server) addUserTools(srv *mcp.Server) {
	addTool(srv, &mcp.Tool{Name: "submit_origin", OutputSchema: outputSchema("OriginSubmission"), Title: "List a seller from its own manifest",
		Annotations: &mcp.ToolAnnotations{IdempotentHint: true, OpenWorldHint: ptrTo(true)},
		Description: "List a seller in the directory from its own manifest (https://<origin>/.well-known/x402.json), as POST /origins does: every item is checked by the x402 rules and probed, and those whose live endpoint answers a valid 402 are listed, in place of any listing's copies of that hostname. Answers, item by item, what was listed (with its slug and whether its payee proved it owns the origin) and what was refused and why. Submitting again lists the manifest as it is now."},
		s.toolSubmitOrigin)
}

// toolSubmitOrigin submits an origin as the route POST /origins does: the body
// checked by the route's rules, the same use case, for the key's user; on a server
// that lists no origins (where the route is not served), it answers as the missing
// route does.
func (s *Server) toolSubmitOrigin(ctx context.Context, _ *mcp.CallToolRequest, in submitOriginIn) (*mcp.CallToolResult, map[string]any, error) {
	const path = "/origins"
	if s.svc.Origins == nil {
		return toolResult(s.toolProblem(ctx, path, errNoRoute()))
	}
	var req submitOriginRequest
	return toolResult(s.toolPost(ctx, path, in, &req, func() (any, error) {
		return s.svc.Origins.Submit(ctx, principalOf(ctx).UserID, req.Origin)
	}))
}
