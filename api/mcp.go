package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
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
With Authorization: Bearer <agent key>: open_session first; pay with quote_seller then pay_seller, wait for the person with wait_request, and claim_artifact for the seller's answer.
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
	if pub, err := url.Parse(s.auth.PublicURL); err == nil && s.auth.PublicURL != "" &&
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

// apiAnswer is a route's answer, as a tool answers it too: its status and body, the
// body's content type, a problem's code when it is one, and whether it replays an
// answer kept for an idempotency key.
type apiAnswer struct {
	status      int
	contentType string
	body        []byte
	code        string
	replayed    bool
}

// toolWrite takes the body of a tool's write as readJSON takes its route's: at most
// MaxBody bytes, decoded into req, which validates itself, and holding none of the
// user's protected values. It answers the body's JSON, which idempotency
// fingerprints as the route's body.
func (s *Server) toolWrite(ctx context.Context, body any, req validator) ([]byte, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > s.auth.MaxBody {
		return nil, bodyTooLarge(s.auth.MaxBody)
	}
	return b, s.takeJSON(ctx, b, req)
}

// toolOnce answers a tool's write of the route POST path at most once per client
// id key, as the route does (see remember), so that a retry through either gets the
// same answer: run's value with status, or its problem.
func (s *Server) toolOnce(ctx context.Context, path, key string, body []byte, status int, run func() (any, error)) apiAnswer {
	a, err := s.remember(ctx, principalOf(ctx), "POST "+path, key, body, s.auth.clientIDTTL(), func() apiAnswer {
		v, err := run()
		return s.toolAnswer(ctx, path, status, v, err)
	})
	if err != nil {
		return s.toolProblem(ctx, path, err)
	}
	return a
}

// toolAnswer is a use case's value v as the route of path answers it with status,
// or its error as the route's problem.
func (s *Server) toolAnswer(ctx context.Context, path string, status int, v any, err error) apiAnswer {
	if err != nil {
		return s.toolProblem(ctx, path, err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return s.toolProblem(ctx, path, err)
	}
	return apiAnswer{status: status, contentType: hdrJSON[0], body: b}
}

// toolProblem is err as the route of path answers it (see Server.error): checked
// for the user's protected values, logged when it is a failure.
func (s *Server) toolProblem(ctx context.Context, path string, err error) apiAnswer {
	instance, err := s.unechoed(ctx, principalOf(ctx).UserID, BasePath+path, err)
	id := requestIDOf(ctx)
	p, kind := knownProblem(ctx, s.log, id, []any{"path", BasePath + path}, err)
	return apiAnswer{status: kind.Status, contentType: "application/problem+json", body: problemJSON(kind, p, instance, id), code: p.Code}
}

// toolResult turns a route's answer into a tool's output: its JSON, which the SDK
// checks against the tool's output schema and sends as structured content (and as
// text, for clients that read only text), or, for a problem, an error the SDK sends
// as an error result saying the code and what to do, as the protocol wants tool
// failures reported to the model.
func toolResult(a apiAnswer) (*mcp.CallToolResult, map[string]any, error) {
	if a.status >= 300 {
		return nil, nil, toolError(a)
	}
	var v map[string]any
	if err := json.Unmarshal(a.body, &v); err != nil {
		return nil, nil, toolFailure("the route answered no JSON object")
	}
	return nil, v, nil
}

// toolError is a route's problem as the error a typed tool returns: the SDK makes it
// an error result, as the protocol wants tool failures reported to the model.
func toolError(a apiAnswer) error { return toolFailure(problemText(a)) }

// toolFailure is a tool's error in the service's own words: what a model may read as
// it is, since it repeats nothing of the call (a route's problem is checked for the
// user's protected values before it is written).
type toolFailure string

func (f toolFailure) Error() string { return string(f) }

// quietCalls keeps the SDK's own refusals of a tool call from repeating it: a schema
// the arguments do not fit names the properties the caller made up and quotes its
// values, JSON it cannot read quotes them, and an unknown tool is named; any of them
// may be a protected value on its way to a model. They say what failed, not what was
// sent; the service's own failures (toolFailure) pass as they are.
func quietCalls(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if method != "tools/call" {
			return res, err
		}
		var wire *jsonrpc.Error
		if errors.As(err, &wire) {
			return nil, &jsonrpc.Error{Code: wire.Code, Message: "The call is not one this server takes: tools/list names its tools and their input schemas. This message repeats nothing of the call."}
		}
		var own toolFailure
		if r, ok := res.(*mcp.CallToolResult); ok && r.IsError && !errors.As(r.GetError(), &own) {
			r.Content = []mcp.Content{&mcp.TextContent{Text: "validation_failed: the arguments do not fit the tool's input schema (tools/list gives it). This message repeats nothing of them."}}
		}
		return res, err
	}
}

// problemText says a route's problem to a model: the code, the status, what went
// wrong and what to do.
func problemText(a apiAnswer) string {
	var p struct {
		Code   string `json:"code"`
		Detail string `json:"detail"`
	}
	json.Unmarshal(a.body, &p)
	text := fmt.Sprintf("%s (%d): %s", p.Code, a.status, p.Detail)
	if k, ok := problem.Lookup(p.Code); ok && k.Remedy != "" {
		text += " " + k.Remedy
	}
	return text
}

// sessionPath is the path of one of a session's resources, its id checked first.
func sessionPath(id string, rest ...string) (string, error) {
	if !uuidPattern.MatchString(id) {
		return "", toolFailure("sessionId must be the id open_session answered")
	}
	return "/sessions/" + strings.ToLower(id) + strings.Join(rest, ""), nil
}

// taskWait is how long get_captcha_task waits for a pending task.
const taskWait = 30 * time.Second

// waitStep is how long one long poll of wait_request lasts before it reports progress.
const waitStep = 5 * time.Second

// outputSchema is the JSON Schema of a component of the OpenAPI document, as a tool's
// output schema: the component and the components it refers to, under $defs. The
// SDK checks every structured result against it, so a tool answers what the
// document says the route answers.
func outputSchema(names ...string) map[string]any {
	schemas := componentSchemas()
	defs := map[string]any{}
	var add func(name string)
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if s, ok := x.(string); ok && k == "$ref" {
					name := strings.TrimPrefix(s, "#/components/schemas/")
					v[k] = "#/$defs/" + name
					add(name)
					continue
				}
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	add = func(name string) {
		if _, ok := defs[name]; ok {
			return
		}
		// A deep copy, so that rewriting its references leaves the parsed document alone.
		b, _ := json.Marshal(schemas[name])
		var c any
		json.Unmarshal(b, &c)
		defs[name] = c
		walk(c)
	}
	out := map[string]any{"type": "object", "$defs": defs}
	var refs []any
	for _, n := range names {
		add(n)
		refs = append(refs, map[string]any{"$ref": "#/$defs/" + n})
	}
	if len(refs) == 1 {
		out["$ref"] = refs[0].(map[string]any)["$ref"]
	} else {
		out["oneOf"] = refs
	}
	return out
}

// componentSchemas are the OpenAPI document's component schemas, parsed once for
// every tool of every server.
var componentSchemas = sync.OnceValue(func() map[string]any {
	var d struct {
		Components struct {
			Schemas map[string]any `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openapiJSON, &d); err != nil {
		panic(err) // the embedded document is checked by the tests
	}
	return d.Components.Schemas
})
