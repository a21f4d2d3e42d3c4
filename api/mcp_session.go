package api

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The session's tools: open_session, complete_session and append_event, as POST
// /sessions, POST /sessions/{id}/complete and POST /sessions/{id}/events.

// addSessionTools adds the session's tools.
func (s *Server) addSessionTools(srv *mcp.Server) {
	addTool(srv, &mcp.Tool{Name: "open_session", OutputSchema: outputSchema("Session"), Title: "Open a session",
		Description: "Open a session: one workflow you run for your person, holding its events, requests and payments. Answers its id." + noValues},
		s.toolOpenSession)
	addTool(srv, &mcp.Tool{Name: "complete_session", OutputSchema: outputSchema("Completion"), Title: "Complete a session",
		Description: "Close a session with its outcome; open requests in it are canceled." + noValues},
		s.toolCompleteSession)
	addTool(srv, &mcp.Tool{Name: "append_event", OutputSchema: outputSchema("Event"), Title: "Append an event",
		Description: "Record a step of the workflow in the session's log (runtime.* events, value-free)." + noValues},
		s.toolAppendEvent)
}

type openSessionIn struct {
	Description     string `json:"description" jsonschema:"what the workflow is for, shown to the person"`
	Type            string `json:"type,omitempty" jsonschema:"a word for the kind of workflow, e.g. purchase (default task)"`
	MerchantName    string `json:"merchantName,omitempty"`
	TargetURL       string `json:"targetUrl,omitempty"`
	ClientSessionID string `json:"clientSessionId,omitempty" jsonschema:"makes a retry safe: the same id answers the same session (default: a new one)"`
}

type completeIn struct {
	SessionID          string `json:"sessionId"`
	Status             string `json:"status" jsonschema:"completed, failed or abandoned"`
	Summary            string `json:"summary"`
	ClientCompletionID string `json:"clientCompletionId,omitempty"`
}

type eventIn struct {
	SessionID     string         `json:"sessionId"`
	Type          string         `json:"type" jsonschema:"runtime.<something>, e.g. runtime.step"`
	Data          map[string]any `json:"data,omitempty" jsonschema:"value-free data: never a value of the person's"`
	ClientEventID string         `json:"clientEventId,omitempty"`
}

// toolOpenSession opens a session as POST /sessions does, of type task unless told,
// once per client id: a new one unless told.
func (s *Server) toolOpenSession(ctx context.Context, _ *mcp.CallToolRequest, in openSessionIn) (*mcp.CallToolResult, map[string]any, error) {
	if in.Type == "" {
		in.Type = "task"
	}
	if in.ClientSessionID == "" {
		in.ClientSessionID = newClientID()
	}
	var req createSessionRequest
	return toolResult(s.toolCreate(ctx, "/sessions", in, &req, func() (any, error) {
		return s.svc.Sessions.Open(ctx, principalOf(ctx), req.new())
	}))
}

// toolCompleteSession completes a session as POST /sessions/{id}/complete does.
func (s *Server) toolCompleteSession(ctx context.Context, _ *mcp.CallToolRequest, in completeIn) (*mcp.CallToolResult, map[string]any, error) {
	sid, p, err := sessionPath(in.SessionID, "/complete")
	if err != nil {
		return nil, nil, err
	}
	if in.ClientCompletionID == "" {
		in.ClientCompletionID = "mcp-complete"
	}
	var req completeSessionRequest
	body := map[string]string{"clientCompletionId": in.ClientCompletionID, "status": in.Status, "summary": in.Summary}
	return toolResult(s.toolPost(ctx, p, body, &req, func() (any, error) {
		sess, dup, err := s.svc.Sessions.Complete(ctx, principalOf(ctx), sid, req.completion())
		return completion{Session: sess, Duplicate: dup}, err
	}))
}

// toolAppendEvent appends a runtime event as POST /sessions/{id}/events does, once
// per client id: a new one unless told.
func (s *Server) toolAppendEvent(ctx context.Context, _ *mcp.CallToolRequest, in eventIn) (*mcp.CallToolResult, map[string]any, error) {
	sid, p, err := sessionPath(in.SessionID, "/events")
	if err != nil {
		return nil, nil, err
	}
	if in.ClientEventID == "" {
		in.ClientEventID = newClientID()
	}
	body := map[string]any{"type": in.Type, "clientEventId": in.ClientEventID}
	if in.Data != nil {
		body["data"] = in.Data
	}
	var req appendEventRequest
	return toolResult(s.toolCreate(ctx, p, body, &req, func() (any, error) {
		return s.svc.Sessions.AppendRuntime(ctx, principalOf(ctx), sid, req.event())
	}))
}
