package api

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The quote's tool: quote_seller, as POST /tools/x402/quote.

// addQuoteTools adds the quote's tools.
func (s *Server) addQuoteTools(srv *mcp.Server) {
	addTool(srv, &mcp.Tool{Name: "quote_seller", OutputSchema: outputSchema("Quote"), Title: "Quote a seller", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
		Description: "Ask a seller's endpoint what it charges, never paying: its x402 offer, what paying it would debit, until when, and the directory's advisory word on the seller."},
		s.toolQuoteSeller)
}

type quoteIn struct {
	URL    string `json:"url" jsonschema:"the seller's paid endpoint"`
	Method string `json:"method,omitempty" jsonschema:"GET (default), POST or HEAD"`
}

// toolQuoteSeller asks a seller its price as POST /tools/x402/quote does.
func (s *Server) toolQuoteSeller(ctx context.Context, _ *mcp.CallToolRequest, in quoteIn) (*mcp.CallToolResult, map[string]any, error) {
	var req quoteRequest
	return toolResult(s.toolPost(ctx, "/tools/x402/quote", in, &req, func() (any, error) {
		return s.quote(ctx, req)
	}))
}
