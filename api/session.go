package api

import (
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/waystation/waystation/internal/problem"
	"github.com/waystation/waystation/internal/session"
)

const (
	defaultPageSize = 50
	maxPageSize     = 200
	maxEventData    = 16 << 10
)

var (
	namePattern      = regexp.MustCompile(`^[a-z][a-z0-9_.-]{0,63}$`)
	runtimeEventType = regexp.MustCompile(`^runtime(\.[a-z0-9_]+){1,4}$`)
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

func clientID(name, v string) error {
	if v == "" || len(v) > 200 {
		return problem.Invalid(name + " must be 1 to 200 bytes.")
	}
	return nil
}

type createSessionRequest struct {
	Type            string  `json:"type"`
	Description     string  `json:"description"`
	MerchantName    *string `json:"merchantName"`
	TargetURL       *string `json:"targetUrl"`
	ClientSessionID string  `json:"clientSessionId"`
}

func (c *createSessionRequest) validate() error {
	switch {
	case !namePattern.MatchString(c.Type):
		return problem.Invalid("type must be a lowercase word of at most 64 characters, such as checkout or research.")
	case strings.TrimSpace(c.Description) == "" || len(c.Description) > 2000:
		return problem.Invalid("description must be 1 to 2000 bytes.")
	case c.MerchantName != nil && (strings.TrimSpace(*c.MerchantName) == "" || len(*c.MerchantName) > 200):
		return problem.Invalid("merchantName must be 1 to 200 bytes when given.")
	}
	if c.TargetURL != nil {
		u, err := url.Parse(*c.TargetURL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || len(*c.TargetURL) > 2048 {
			return problem.Invalid("targetUrl must be an absolute http or https URL of at most 2048 bytes when given.")
		}
	}
	return clientID("clientSessionId", c.ClientSessionID)
}

// handleCreateSession opens a session, once per clientSessionId of the agent.
func (s *Server) handleCreateSession() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req createSessionRequest
		body, err := s.readJSON(w, r, &req)
		if err != nil {
			s.error(w, r, err)
			return
		}
		s.once(w, r, "POST /sessions", "clientSessionId:"+req.ClientSessionID, body, s.auth.clientIDTTL(), func(w http.ResponseWriter) {
			sess, err := s.auth.Sessions.CreateSession(r.Context(), principal(r), session.New{
				Type: req.Type, Description: req.Description, MerchantName: req.MerchantName,
				TargetURL: req.TargetURL, ClientSessionID: req.ClientSessionID}, s.auth.Limits.OpenSessions)
			if err != nil {
				s.error(w, r, err)
				return
			}
			writeJSON(w, http.StatusCreated, sess)
		})
	}
}

func (s *Server) handleSession() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id, err := sessionID(r)
		if err != nil {
			s.error(w, r, err)
			return
		}
		sess, err := s.auth.Sessions.Session(r.Context(), principal(r), id)
		if err != nil {
			s.error(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, sess)
	}
}

type sessionPage struct {
	Items      []session.Session `json:"items"`
	NextCursor *string           `json:"nextCursor"`
}

// handleSessions lists sessions newest first: an agent's own, or all of a user's
// agents'.
func (s *Server) handleSessions() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		limit, after, err := pageQuery(r)
		if err != nil {
			s.error(w, r, err)
			return
		}
		items, next, err := s.auth.Sessions.Sessions(r.Context(), principal(r), after, int(limit))
		if err != nil {
			s.error(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, sessionPage{Items: nonNil(items), NextCursor: encodeCursor(next)})
	}
}

type completeSessionRequest struct {
	ClientCompletionID string `json:"clientCompletionId"`
	Status             string `json:"status"`
	Summary            string `json:"summary"`
}

func (c *completeSessionRequest) validate() error {
	if !slices.Contains(session.CompletionStatuses, c.Status) {
		return problem.Invalid("status must be one of " + strings.Join(session.CompletionStatuses, ", ") + ".")
	}
	if len(c.Summary) > 4000 {
		return problem.Invalid("summary must be at most 4000 bytes.")
	}
	return clientID("clientCompletionId", c.ClientCompletionID)
}

type completion struct {
	Session   session.Session `json:"session"`
	Duplicate bool            `json:"duplicate"`
}

func (s *Server) handleCompleteSession() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req completeSessionRequest
		id, _, err := s.readSessionRequest(w, r, &req)
		if err != nil {
			s.error(w, r, err)
			return
		}
		sess, dup, err := s.auth.Sessions.CompleteSession(r.Context(), principal(r), id, session.Completion{
			ClientCompletionID: req.ClientCompletionID, Status: req.Status, Summary: req.Summary})
		if err != nil {
			s.error(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, completion{Session: sess, Duplicate: dup})
	}
}

type stopSessionRequest struct {
	ReasonCode string `json:"reasonCode"`
}

func (c *stopSessionRequest) validate() error {
	if !namePattern.MatchString(c.ReasonCode) {
		return problem.Invalid("reasonCode must be a lowercase code of at most 64 characters, such as user_request.")
	}
	return nil
}

func (s *Server) handleStopSession() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req stopSessionRequest
		id, _, err := s.readSessionRequest(w, r, &req)
		if err != nil {
			s.error(w, r, err)
			return
		}
		sess, err := s.auth.Sessions.StopSession(r.Context(), principal(r), id, req.ReasonCode)
		if err != nil {
			s.error(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, sess)
	}
}
