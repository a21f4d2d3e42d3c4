package api

import (
	"context"
	"net/http"
	"time"

	"github.com/waystation/waystation/internal/problem"
	"github.com/waystation/waystation/internal/request"
)

// AppPath is where the approval pages for people hang: a request's page is
// AppPath + "/requests/{id}".
const AppPath = "/app"

// requestJSON is a request as the API shows it, with the page where its user
// decides. The link locates the page; it grants nothing.
type requestJSON struct {
	request.Request
	ApprovalURL string `json:"approvalUrl"`
}

func (s *Server) requestBody(r request.Request) requestJSON {
	if r.Fields == nil {
		r.Fields = []request.Field{}
	}
	if r.Options == nil {
		r.Options = []request.Option{}
	}
	return requestJSON{Request: r, ApprovalURL: s.svc.PublicURL + AppPath + "/requests/" + r.ID}
}

// requestIDs are the session and request ids of the path, or a 404.
func requestIDs(r *http.Request) (sid, id string, err error) {
	if sid, err = sessionID(r); err != nil {
		return "", "", err
	}
	id, err = uuidParam(r, "rid", request.ErrNotFound)
	return sid, id, err
}

type createRequestRequest struct{ request.New }

func (c *createRequestRequest) validate() error { return c.New.Validate() }

func (c *createRequestRequest) clientKey() string { return "clientRequestId:" + c.ClientRequestID }

// handleCreateRequest raises a request in the agent's session, once per
// clientRequestId.
func (s *Server) handleCreateRequest() http.HandlerFunc {
	return s.serve(func(w http.ResponseWriter, r *http.Request) error {
		var req createRequestRequest
		id, body, err := s.readSessionRequest(w, r, &req)
		if err != nil {
			return err
		}
		route := "POST /sessions/" + id + "/requests"
		s.once(w, r, route, req.clientKey(), body, s.svc.clientIDTTL(), func(w http.ResponseWriter) error {
			out, err := s.svc.Requests.Raise(r.Context(), principal(r), id, req.New, s.svc.Sessions.Limits.Events)
			if err != nil {
				return err
			}
			writeJSON(w, http.StatusCreated, s.requestBody(out))
			return nil
		})
		return nil
	})
}

type requestPage struct {
	Items      []requestJSON `json:"items"`
	NextCursor *string       `json:"nextCursor"`
}

// handleRequests lists a session's requests, newest first.
func (s *Server) handleRequests() http.HandlerFunc {
	return s.serve(func(w http.ResponseWriter, r *http.Request) error {
		id, err := sessionID(r)
		if err != nil {
			return err
		}
		limit, after, err := pageQuery(r)
		if err != nil {
			return err
		}
		items, next, err := s.svc.Requests.Requests(r.Context(), principal(r), id, after, limit)
		if err != nil {
			return err
		}
		page := requestPage{Items: make([]requestJSON, len(items)), NextCursor: encodeCursor(next)}
		for i, it := range items {
			page.Items[i] = s.requestBody(it)
		}
		writeJSON(w, http.StatusOK, page)
		return nil
	})
}

// handleRequest answers a request's status: at once, or with wait=N after up to N
// seconds while it has not ended (a long poll, woken by the session's events).
func (s *Server) handleRequest() http.HandlerFunc {
	return s.serve(func(w http.ResponseWriter, r *http.Request) error {
		sid, id, err := requestIDs(r)
		if err != nil {
			return err
		}
		// Waited on until it ends: through waiting for its user (until it expires at
		// the latest), approved and executing (a payment being made), to fulfilled,
		// failed or another end. Every change appends a session event, which wakes
		// the wait on any replica; the recheck is the expiry, or a while when the
		// request is in the service's hands.
		s.longPoll(w, r, sid, s.pollRequest(r.Context(), sid, id))
		return nil
	})
}

// pollRequest reads request id of session sid for a wait on it (see
// request.Service.Poll), answering it as the API shows it.
func (s *Server) pollRequest(ctx context.Context, sid, id string) func() (any, bool, time.Time, error) {
	return func() (any, bool, time.Time, error) {
		out, pending, recheck, err := s.svc.Requests.Poll(ctx, principalOf(ctx), sid, id)
		return s.requestBody(out), pending, recheck, err
	}
}

type decisionRequest struct{ request.Decision }

func (d *decisionRequest) validate() error {
	if d.Decision.Decision != request.Approve && d.Decision.Decision != request.Deny {
		return problem.Invalid("decision must be approve or deny.")
	}
	return nil
}

// handleDecision applies the user's decision. Only user keys reach it: an agent,
// even one holding the approval link, cannot approve its own request.
func (s *Server) handleDecision() http.HandlerFunc {
	return s.serve(func(w http.ResponseWriter, r *http.Request) error {
		var req decisionRequest
		body, err := s.readBody(w, r)
		if err != nil {
			return err
		}
		// The body may hold provided values: it is decoded without echoing any of it.
		if err := decodeSealed(body, &req); err != nil {
			return err
		}
		sid, id, err := requestIDs(r)
		if err != nil {
			return err
		}
		out, err := s.svc.Requests.Decide(r.Context(), principal(r), sid, id, req.Decision)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, s.requestBody(out))
		return nil
	})
}

// handleCancelRequest withdraws a request on its agent's word.
func (s *Server) handleCancelRequest() http.HandlerFunc {
	return s.serve(func(w http.ResponseWriter, r *http.Request) error {
		sid, id, err := requestIDs(r)
		if err != nil {
			return err
		}
		out, err := s.svc.Requests.Cancel(r.Context(), principal(r), sid, id)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, s.requestBody(out))
		return nil
	})
}

type claimed struct {
	RequestID string `json:"requestId"`
	request.Artifact
	ClaimedAt time.Time `json:"claimedAt"`
}

// handleClaim hands a fulfilled request's value-free artifact to its agent, once.
func (s *Server) handleClaim() http.HandlerFunc {
	return s.serve(func(w http.ResponseWriter, r *http.Request) error {
		sid, id, err := requestIDs(r)
		if err != nil {
			return err
		}
		art, at, err := s.svc.Requests.Claim(r.Context(), principal(r), sid, id)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, claimed{RequestID: id, Artifact: art, ClaimedAt: at})
		return nil
	})
}
