package api

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/waystation/waystation/internal/request"
)

// The request's tools: raise_request, wait_request and claim_artifact, as POST
// /sessions/{id}/requests, a long poll of GET /sessions/{id}/requests/{rid} and
// POST /sessions/{id}/requests/{rid}/claim.

// addRequestTools adds the request's tools.
func (s *Server) addRequestTools(srv *mcp.Server) {
	addTool(srv, &mcp.Tool{Name: "raise_request", OutputSchema: outputSchema("Request"), Title: "Ask the person",
		Description: "Raise a request the person answers on its approval page: confirm, choice, provide_missing (values come back as handles), ask_before_use (of saved values, by handle), choose_candidate. With waitSeconds, waits for the answer with progress notifications." + noValues},
		s.toolRaiseRequest)
	addTool(srv, &mcp.Tool{Name: "wait_request", OutputSchema: outputSchema("Request"), Title: "Wait for the person",
		Description: "Wait for a request to leave waiting_user (and, for a payment, to be paid), sending progress notifications meanwhile; answers the request." + noValues},
		s.toolWaitRequest)
	addTool(srv, &mcp.Tool{Name: "claim_artifact", OutputSchema: outputSchema("ClaimedArtifact"), Title: "Claim what a request yielded",
		Description: "Claim a fulfilled request's artifact, once: handles to provided values, a confirmation, the chosen option, or a payment's receipt with the seller's answer." + noValues},
		s.toolClaimArtifact)
}

type raiseIn struct {
	SessionID       string           `json:"sessionId"`
	ClientRequestID string           `json:"clientRequestId" jsonschema:"makes a retry safe: the same id answers the same request"`
	Kind            string           `json:"kind" jsonschema:"confirm, choice, provide_missing, ask_before_use or choose_candidate"`
	TTLSeconds      *int64           `json:"ttlSeconds,omitempty" jsonschema:"how long the person has (30 to 86400; default 900)"`
	Context         map[string]any   `json:"context,omitempty" jsonschema:"{url, pageTitle, merchantName, reason}: what you are looking at and why you ask"`
	Fields          []map[string]any `json:"fields,omitempty" jsonschema:"[{key, label, type, handle?}] for provide_missing, ask_before_use and choose_candidate"`
	Options         []map[string]any `json:"options,omitempty" jsonschema:"[{id, label, description?}] for choice and choose_candidate"`
	Params          map[string]any   `json:"params,omitempty" jsonschema:"{summary, amount, currency, recipient} for confirm; {purpose} for the use of values"`
	WaitSeconds     int              `json:"waitSeconds,omitempty" jsonschema:"wait up to this many seconds (at most 600) for the person, with progress notifications"`
}

type waitIn struct {
	SessionID   string `json:"sessionId"`
	RequestID   string `json:"requestId"`
	WaitSeconds int    `json:"waitSeconds,omitempty" jsonschema:"at most 600; default 60"`
}

type claimIn struct {
	SessionID string `json:"sessionId"`
	RequestID string `json:"requestId"`
}

// waitStep is how long one long poll of wait_request lasts before it reports progress.
const waitStep = 5 * time.Second

// toolRaiseRequest raises a request as POST /sessions/{id}/requests does, once per
// client id, and with waitSeconds waits for it as wait_request does.
func (s *Server) toolRaiseRequest(ctx context.Context, req *mcp.CallToolRequest, in raiseIn) (*mcp.CallToolResult, map[string]any, error) {
	sid, p, err := sessionPath(in.SessionID, "/requests")
	if err != nil {
		return nil, nil, err
	}
	var raise createRequestRequest
	a := s.toolCreate(ctx, p, in.body(), &raise, func() (any, error) {
		out, err := s.svc.Requests.Raise(ctx, principalOf(ctx), sid, raise.New, s.svc.Sessions.Limits.Events)
		return s.requestBody(out), err
	})
	return s.waitRaised(ctx, req, in.SessionID, a, in.WaitSeconds, raisedID)
}

// body is the body of POST /sessions/{id}/requests that the arguments say: those
// of them that are set.
func (in raiseIn) body() map[string]any {
	body := map[string]any{"clientRequestId": in.ClientRequestID, "kind": in.Kind}
	for k, v := range map[string]map[string]any{"context": in.Context, "params": in.Params} {
		if v != nil {
			body[k] = v
		}
	}
	for k, v := range map[string][]map[string]any{"fields": in.Fields, "options": in.Options} {
		if v != nil {
			body[k] = v
		}
	}
	if in.TTLSeconds != nil {
		body["ttlSeconds"] = *in.TTLSeconds
	}
	return body
}

// raisedID is the id of the request that POST /sessions/{id}/requests answers (a
// replay's too).
func raisedID(body []byte) string {
	var r struct{ ID string }
	json.Unmarshal(body, &r)
	return r.ID
}

// waitRaised answers a, the answer of a write that raises a request, or, when it
// raised one and seconds asks to wait, waits for it as wait_request does; id reads
// the request's id in a's body.
func (s *Server) waitRaised(ctx context.Context, req *mcp.CallToolRequest, sessionID string, a apiAnswer, seconds int, id func(body []byte) string) (*mcp.CallToolResult, map[string]any, error) {
	if a.status >= 300 || seconds <= 0 {
		return toolResult(a)
	}
	return s.waitRequest(ctx, req, sessionID, id(a.body), seconds)
}

// toolWaitRequest waits for a request (see waitRequest).
func (s *Server) toolWaitRequest(ctx context.Context, req *mcp.CallToolRequest, in waitIn) (*mcp.CallToolResult, map[string]any, error) {
	if _, _, err := sessionPath(in.SessionID); err != nil {
		return nil, nil, err
	}
	if err := idArg("requestId", in.RequestID, "a request's id"); err != nil {
		return nil, nil, err
	}
	return s.waitRequest(ctx, req, in.SessionID, in.RequestID, in.WaitSeconds)
}

// toolClaimArtifact claims a request's artifact as POST
// /sessions/{id}/requests/{rid}/claim does.
func (s *Server) toolClaimArtifact(ctx context.Context, _ *mcp.CallToolRequest, in claimIn) (*mcp.CallToolResult, map[string]any, error) {
	if err := idArg("requestId", in.RequestID, "a request's id"); err != nil {
		return nil, nil, err
	}
	id := strings.ToLower(in.RequestID)
	sid, p, err := sessionPath(in.SessionID, "/requests/", id, "/claim")
	if err != nil {
		return nil, nil, err
	}
	art, at, err := s.svc.Requests.Claim(ctx, principalOf(ctx), sid, id)
	return toolResult(s.toolAnswer(ctx, p, http.StatusOK, claimed{RequestID: id, Artifact: art, ClaimedAt: at}, err))
}

// waitRequest long-polls a request until it is no longer waiting for its person
// (nor being carried out), or seconds pass, notifying progress every step.
func (s *Server) waitRequest(ctx context.Context, req *mcp.CallToolRequest, sessionID, id string, seconds int) (*mcp.CallToolResult, map[string]any, error) {
	if seconds <= 0 {
		seconds = 60
	}
	seconds = min(seconds, 600)
	rid := strings.ToLower(id)
	sid, p, err := sessionPath(sessionID, "/requests/", rid)
	if err != nil {
		return nil, nil, err
	}
	if !uuidPattern.MatchString(id) {
		return toolResult(s.toolProblem(ctx, p, request.ErrNotFound))
	}
	deadline := time.Now().Add(time.Duration(seconds) * time.Second)
	for step := 1; ; step++ {
		wait := min(time.Until(deadline), waitStep, s.svc.MaxWait).Truncate(time.Second)
		body, err := s.await(ctx, sid, max(wait, 0), s.pollRequest(ctx, sid, rid))
		a := s.toolAnswer(ctx, p, http.StatusOK, body, err)
		if err != nil {
			return toolResult(a)
		}
		status := body.(requestJSON).Status
		open := status == request.StatusWaitingUser || status == request.StatusApproved || status == request.StatusExecuting
		if !open || time.Now().After(deadline) || ctx.Err() != nil {
			return toolResult(a)
		}
		notifyWaiting(ctx, req, step, status)
	}
}

// notifyWaiting tells a caller that asked for progress that a request is still
// open, at its step-th look.
func notifyWaiting(ctx context.Context, req *mcp.CallToolRequest, step int, status string) {
	token := req.Params.GetProgressToken()
	if token == nil {
		return
	}
	msg := "waiting for the person to decide"
	if status != request.StatusWaitingUser {
		msg = "approved; the service is carrying it out"
	}
	req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: float64(step), Message: msg})
}
