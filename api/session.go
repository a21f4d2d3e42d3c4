package api

import (
	"net/http"

	"github.com/waystation/waystation/internal/problem"
	"github.com/waystation/waystation/internal/session"
)

const (
	defaultPageSize = 50
	maxPageSize     = 200
)

// readSessionRequest reads the session id from the path and the JSON body of a
// request about that session into req, which validates itself; the raw body is
// returned for idempotency checks.
func (s *Server) readSessionRequest(w http.ResponseWriter, r *http.Request, req validator) (id string, body []byte, err error) {
	if id, err = sessionID(r); err != nil {
		return "", nil, err
	}
	body, err = s.readJSON(w, r, req)
	return id, body, err
}

// sessionID is the {id} of the path, or a 404 if it cannot name a session.
func sessionID(r *http.Request) (string, error) { return uuidParam(r, "id", session.ErrNotFound) }

type createSessionRequest struct {
	Type            string  `json:"type"`
	Description     string  `json:"description"`
	MerchantName    *string `json:"merchantName"`
	TargetURL       *string `json:"targetUrl"`
	ClientSessionID string  `json:"clientSessionId"`
}

func (c *createSessionRequest) new() session.New {
	return session.New{Type: c.Type, Description: c.Description, MerchantName: c.MerchantName,
		TargetURL: c.TargetURL, ClientSessionID: c.ClientSessionID}
}

func (c *createSessionRequest) validate() error { return c.new().Validate() }

func (c *createSessionRequest) clientKey() string { return "clientSessionId:" + c.ClientSessionID }

// handleCreateSession opens a session, once per clientSessionId of the agent.
func (s *Server) handleCreateSession() http.HandlerFunc {
	return s.serve(func(w http.ResponseWriter, r *http.Request) error {
		var req createSessionRequest
		body, err := s.readJSON(w, r, &req)
		if err != nil {
			return err
		}
		s.once(w, r, "POST /sessions", req.clientKey(), body, s.svc.clientIDTTL(), func(w http.ResponseWriter) error {
			sess, err := s.svc.Sessions.Open(r.Context(), principal(r), req.new())
			if err != nil {
				return err
			}
			writeJSON(w, http.StatusCreated, sess)
			return nil
		})
		return nil
	})
}

func (s *Server) handleSession() http.HandlerFunc {
	return s.serve(func(w http.ResponseWriter, r *http.Request) error {
		id, err := sessionID(r)
		if err != nil {
			return err
		}
		sess, err := s.svc.Sessions.Session(r.Context(), principal(r), id)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, sess)
		return nil
	})
}

type sessionPage struct {
	Items      []session.Session `json:"items"`
	NextCursor *string           `json:"nextCursor"`
}

// handleSessions lists sessions newest first: an agent's own, or all of a user's
// agents'.
func (s *Server) handleSessions() http.HandlerFunc {
	return s.serve(func(w http.ResponseWriter, r *http.Request) error {
		limit, after, err := pageQuery(r)
		if err != nil {
			return err
		}
		items, next, err := s.svc.Sessions.Sessions(r.Context(), principal(r), after, int(limit))
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, sessionPage{Items: nonNil(items), NextCursor: encodeCursor(next)})
		return nil
	})
}

type completeSessionRequest struct {
	ClientCompletionID string `json:"clientCompletionId"`
	Status             string `json:"status"`
	Summary            string `json:"summary"`
}

func (c *completeSessionRequest) completion() session.Completion {
	return session.Completion{ClientCompletionID: c.ClientCompletionID, Status: c.Status, Summary: c.Summary}
}

func (c *completeSessionRequest) validate() error { return c.completion().Validate() }

type completion struct {
	Session   session.Session `json:"session"`
	Duplicate bool            `json:"duplicate"`
}

func (s *Server) handleCompleteSession() http.HandlerFunc {
	return s.serve(func(w http.ResponseWriter, r *http.Request) error {
		var req completeSessionRequest
		id, _, err := s.readSessionRequest(w, r, &req)
		if err != nil {
			return err
		}
		sess, dup, err := s.svc.Sessions.Complete(r.Context(), principal(r), id, req.completion())
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, completion{Session: sess, Duplicate: dup})
		return nil
	})
}

type stopSessionRequest struct {
	ReasonCode string `json:"reasonCode"`
}

func (c *stopSessionRequest) validate() error {
	if !session.CheckName(c.ReasonCode) {
		return problem.Invalid("reasonCode must be a lowercase code of at most 64 characters, such as user_request.")
	}
	return nil
}

func (s *Server) handleStopSession() http.HandlerFunc {
	return s.serve(func(w http.ResponseWriter, r *http.Request) error {
		var req stopSessionRequest
		id, _, err := s.readSessionRequest(w, r, &req)
		if err != nil {
			return err
		}
		sess, err := s.svc.Sessions.Stop(r.Context(), principal(r), id, req.ReasonCode)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, sess)
		return nil
	})
}
