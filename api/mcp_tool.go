package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/waystation/waystation/internal/problem"
)

// The workflow tools: each takes its arguments as its route takes its body
// (toolWrite), calls the same use case under the MCP request's principal, and
// answers the route's JSON (toolResult). The helpers below are the parts every
// tool shares; each resource's tools are in its own file, mcp_<resource>.go.

// noValues is said in every workflow tool's description.
const noValues = " Answers never hold the person's values: only opaque handles."

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
	if int64(len(b)) > s.svc.MaxBody {
		return nil, bodyTooLarge(s.svc.MaxBody)
	}
	return b, s.takeJSON(ctx, b, req)
}

// toolPost is a tool's write of the route POST path: body taken into req as the
// route takes it (toolWrite), then run, whose value the route answers with 200.
func (s *Server) toolPost(ctx context.Context, path string, body any, req validator, run func() (any, error)) apiAnswer {
	if _, err := s.toolWrite(ctx, body, req); err != nil {
		return s.toolProblem(ctx, path, err)
	}
	v, err := run()
	return s.toolAnswer(ctx, path, http.StatusOK, v, err)
}

// toolCreate is a tool's write of the route POST path that creates: body taken into
// req as the route takes it (toolWrite), then run at most once per the client's id
// (toolOnce), its value answered with 201.
func (s *Server) toolCreate(ctx context.Context, path string, body any, req clientWrite, run func() (any, error)) apiAnswer {
	b, err := s.toolWrite(ctx, body, req)
	if err != nil {
		return s.toolProblem(ctx, path, err)
	}
	return s.toolOnce(ctx, path, req.clientKey(), b, http.StatusCreated, run)
}

// toolOnce answers a tool's write of the route POST path at most once per client
// id key, as the route does (see remember), so that a retry through either gets the
// same answer: run's value with status, or its problem.
func (s *Server) toolOnce(ctx context.Context, path, key string, body []byte, status int, run func() (any, error)) apiAnswer {
	a, err := s.remember(ctx, principalOf(ctx), "POST "+path, key, body, s.svc.clientIDTTL(), func() apiAnswer {
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

// invalid is a tool's own refusal of its arguments, as an error result.
func invalid(text string) error { return toolFailure("validation_failed: " + text) }

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

// sessionPath is the path of one of a session's resources and the session's id as
// its routes read it, the id checked first.
func sessionPath(id string, rest ...string) (sid, path string, err error) {
	if !uuidPattern.MatchString(id) {
		return "", "", invalid("sessionId must be the id open_session answered")
	}
	sid = strings.ToLower(id)
	return sid, "/sessions/" + sid + strings.Join(rest, ""), nil
}

// idArg refuses the argument name of a tool unless id is an id, as the route's path
// refuses it; what says whose id it must be (a request's id).
func idArg(name, id, what string) error {
	if !uuidPattern.MatchString(id) {
		return invalid(name + " must be " + what + ".")
	}
	return nil
}

// newClientID is the client id a tool gives a write its caller named none for.
func newClientID() string { return "mcp-" + strconv.FormatInt(time.Now().UnixNano(), 36) }

func ptrTo[T any](v T) *T { return &v }
