package api

import (
	"context"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/waystation/waystation/internal/auth"
	"github.com/waystation/waystation/internal/problem"
	"github.com/waystation/waystation/internal/search"
)

// MCPPath is where the MCP server answers, under the API's base path.
const MCPPath = "/mcp"

// mcpInstructions tell a connected client what the server is for.
const mcpInstructions = `Waystation: a directory of pay-per-call sellers (x402) with an advisory trust verdict on each, and, with an agent key, the workflow an agent runs for its person: sessions, requests the person approves, payments the service makes for the agent, CAPTCHA tasks.
Search with search_sellers, read a method with get_method (its guidance says how to call and pay), judge a seller with check_merchant.
With Authorization: Bearer <agent key>: open_session first; pay with quote_seller then pay_seller, wait for the person with wait_request, and claim_artifact for the seller's answer; then report_delivery says what the seller gave for it.
With Authorization: Bearer <user key>: submit_origin lists a seller from its own manifest (/.well-known/x402.json).
Values the person keeps (addresses, cards, passwords) never come back through these tools: only opaque handles. Your runtime reads approved values with the HTTP route POST /sessions/{id}/materialize, which is not a tool on purpose.`

// mcpCallerKey keeps, in a tool call's context, the address of the MCP request's
// client as the request and a trusted proxy tell it (a search.Caller without user).
type mcpCallerKey struct{}

// mcpSearchCaller is who a tool's search is charged to, as its route's search is
// (see searchCaller): the MCP request's key's user, else its client's address.
func (s *Server) mcpSearchCaller(ctx context.Context) search.Caller {
	c, _ := ctx.Value(mcpCallerKey{}).(search.Caller)
	c.User = principalOf(ctx).UserID
	return c
}

// handleMCP serves the MCP server over Streamable HTTP, stateless: every POST is
// answered on its own, so any replica can take any call. Without a key the
// directory's tools are listed; with an agent key (checked on every request, as on
// every route) the workflow's tools too, and with a user key the user's (see
// userTools).
func (s *Server) handleMCP() http.Handler {
	public, agent, user := s.newMCPServer(false), s.newMCPServer(true), s.newMCPServer(false)
	s.addUserTools(user)
	public.AddReceivingMiddleware(userToolsNeedAUserKey(problem.Unauthenticated))
	agent.AddReceivingMiddleware(userToolsNeedAUserKey(problem.WrongKeyScope), s.screenToolCalls)
	h := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		switch principal(r).Scope {
		case auth.ScopeAgent:
			return agent
		case auth.ScopeUser:
			return user
		}
		return public
	}, &mcp.StreamableHTTPOptions{Stateless: true, Logger: quietLog(s.log)})
	serve := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Cache-Control"] = hdrNoStore
		ctx := context.WithValue(r.Context(), mcpCallerKey{}, search.Caller{RemoteAddr: r.RemoteAddr, ForwardedFor: r.Header.Values("X-Forwarded-For")})
		quietErrors(h).ServeHTTP(w, r.WithContext(ctx))
	})
	keyed := s.authenticate(serve)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.mcpOrigin(r.Header.Values("Origin")) {
			s.error(w, r, problem.New(problem.OriginNotAllowed, "This MCP server answers pages of the service's own origin and of this machine only."))
			return
		}
		if o := r.Header["Origin"]; len(o) > 0 { // a page of an origin it answers
			w.Header()["Access-Control-Allow-Origin"] = o
			w.Header().Add("Vary", "Origin")
		}
		if len(r.Header.Values("Authorization")) > 0 {
			keyed.ServeHTTP(w, r)
			return
		}
		serve.ServeHTTP(w, r)
	})
}

// mcpOrigin tells whether a request with these Origin values may call the MCP
// server, as the transport asks against DNS rebinding: none (a program, not a
// browser), the service's own public origin, or a loopback one (a server on this
// machine). A rebinding page's origin is its own host name, which is neither.
func (s *Server) mcpOrigin(origins []string) bool {
	if len(origins) == 0 {
		return true
	}
	if len(origins) > 1 {
		return false
	}
	u, err := url.Parse(origins[0])
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" {
		return false
	}
	if pub, err := url.Parse(s.svc.PublicURL); err == nil && s.svc.PublicURL != "" &&
		strings.EqualFold(pub.Scheme, u.Scheme) && strings.EqualFold(pub.Host, u.Host) {
		return true
	}
	host := u.Hostname()
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// newMCPServer builds the MCP server: the directory's tools, and with workflow the
// agent's tools too.
func (s *Server) newMCPServer(workflow bool) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "waystation", Title: "Waystation", Version: Version},
		&mcp.ServerOptions{Instructions: mcpInstructions, Logger: quietLog(s.log)})
	srv.AddReceivingMiddleware(quietCalls)
	s.addSearchTools(srv)
	s.addDirectoryTools(srv)
	if !workflow {
		srv.AddReceivingMiddleware(keyedToolsNeedAKey)
		return srv
	}
	s.addWorkflowTools(srv)
	return srv
}

// addWorkflowTools adds the tools an agent key adds to the directory's, resource by
// resource; those of a service the server runs without are left out.
func (s *Server) addWorkflowTools(srv *mcp.Server) {
	s.addSessionTools(srv)
	s.addRequestTools(srv)
	if s.svc.Memory != nil {
		s.addResolveTools(srv)
	}
	s.addQuoteTools(srv)
	s.addPaymentTools(srv)
	s.addReportTools(srv)
	if s.svc.Captchas != nil {
		s.addCaptchaTools(srv)
	}
}

// workflowTools are the tools an agent key adds to the directory's.
var workflowTools = []string{"open_session", "complete_session", "append_event", "raise_request", "wait_request",
	"claim_artifact", "resolve_fields", "quote_seller", "pay_seller", "report_delivery", "create_captcha_task", "get_captcha_task"}

// userTools are the tools a user key adds to the directory's: what the routes of a
// user key do for a seller, as POST /origins.
var userTools = []string{"submit_origin"}

// keyedToolsNeedAKey answers a call of a workflow tool made without a key with an
// error result that says it takes an agent key, where the SDK would say only that
// the tool is unknown.
func keyedToolsNeedAKey(next mcp.MethodHandler) mcp.MethodHandler {
	return toolsTakeAKey(workflowTools, func(tool string) string {
		return "unauthenticated: " + tool + " is one of the workflow's tools, which take an agent key: connect with Authorization: Bearer sk_agent_..., and tools/list names them."
	})(next)
}

// userToolsNeedAUserKey answers a call of a user key's tool made without one with
// an error result that says it takes a user key, where the SDK would say only that
// the tool is unknown; code is the route's problem code for such a caller
// (unauthenticated without a key, wrong_key_scope with an agent key).
func userToolsNeedAUserKey(code string) mcp.Middleware {
	return toolsTakeAKey(userTools, func(tool string) string {
		return code + ": " + tool + " takes a user key, as its route does: connect with Authorization: Bearer sk_user_..."
	})
}

// toolsTakeAKey answers a call of one of tools, on a server whose key cannot call
// them, with an error result saying what say says of the tool.
func toolsTakeAKey(tools []string, say func(tool string) string) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/call" {
				if p, ok := req.GetParams().(*mcp.CallToolParamsRaw); ok && slices.Contains(tools, p.Name) {
					r := &mcp.CallToolResult{}
					r.SetError(toolFailure(say(p.Name)))
					return r, nil
				}
			}
			return next(ctx, method, req)
		}
	}
}
