package api

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/waystation/waystation/internal/auth"
)

// agentView is what an agent key learns about itself.
type agentView struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	Status string `json:"status"`
	UserID string `json:"userId"`
	Limits limits `json:"limits"`
}

// limits are the bounds the API holds every caller to.
type limits struct {
	MaxBodyBytes      int64 `json:"maxBodyBytes"`
	MaxWaitSeconds    int   `json:"maxWaitSeconds"`
	MaxPageSize       int   `json:"maxPageSize"`
	MaxEventDataBytes int   `json:"maxEventDataBytes"`
}

func (s *Server) limits() limits {
	return limits{MaxBodyBytes: s.auth.MaxBody, MaxWaitSeconds: int(s.auth.MaxWait / time.Second),
		MaxPageSize: maxPageSize, MaxEventDataBytes: maxEventData}
}

func (s *Server) handleAgentMe() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p := principal(r)
		a, err := s.auth.Store.Agent(r.Context(), p.UserID, p.AgentID)
		if err != nil {
			s.error(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, agentView{ID: a.ID, Name: a.Name, Status: a.Status, UserID: a.UserID, Limits: s.limits()})
	}
}

func (s *Server) handleAgentStats() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		st, err := s.auth.Store.AgentStats(r.Context(), principal(r).AgentID)
		if err != nil {
			s.error(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, st)
	}
}

// handleRevokeCurrentKey lets an agent give up the key it calls with; the next call
// with it gets 401.
func (s *Server) handleRevokeCurrentKey() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p := principal(r)
		if err := s.auth.Store.RevokeKey(r.Context(), p.UserID, p.AgentID, p.KID); err != nil {
			s.error(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]string{"kid": p.KID, "status": "revoked"})
	}
}

type list[T any] struct {
	Items []T `json:"items"`
}

func (s *Server) handleAgents() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		agents, err := s.auth.Store.Agents(r.Context(), principal(r).UserID)
		if err != nil {
			s.error(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, list[auth.Agent]{Items: nonNil(agents)})
	}
}

type createAgentRequest struct {
	Name string `json:"name"`
}

func (c *createAgentRequest) validate() error {
	if strings.TrimSpace(c.Name) == "" || len(c.Name) > 200 {
		return invalidf("name must be 1 to 200 bytes, not only spaces.")
	}
	return nil
}

func (s *Server) handleCreateAgent() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req createAgentRequest
		_, err := s.readJSON(w, r, &req)
		if err != nil {
			s.error(w, r, err)
			return
		}
		a, err := s.auth.Store.CreateAgent(r.Context(), principal(r).UserID, req.Name)
		if errors.Is(err, auth.ErrExists) {
			err = invalidf("An agent of this name exists.")
		}
		if err != nil {
			s.error(w, r, err)
			return
		}
		writeJSON(w, http.StatusCreated, a)
	}
}

func (s *Server) handleKeys() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		keys, err := s.auth.Store.Keys(r.Context(), principal(r).UserID)
		if err != nil {
			s.error(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, list[auth.Key]{Items: nonNil(keys)})
	}
}

type createKeyRequest struct {
	Scope   auth.Scope `json:"scope"`
	AgentID string     `json:"agentId"`
}

func (c *createKeyRequest) validate() error {
	switch {
	case !c.Scope.Valid():
		return invalidf(`scope must be "agent" or "user".`)
	case c.Scope == auth.ScopeAgent && !uuidPattern.MatchString(c.AgentID):
		return invalidf("An agent key needs the agentId of one of your agents.")
	case c.Scope == auth.ScopeUser && c.AgentID != "":
		return invalidf("A user key takes no agentId.")
	}
	return nil
}

// createdKey is the only answer that ever holds a key's secret.
type createdKey struct {
	auth.Key
	Token string `json:"key"`
}

// handleCreateKey issues a key and shows it once. It is never idempotent: a stored
// response would keep the secret.
func (s *Server) handleCreateKey() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p := principal(r)
		var req createKeyRequest
		_, err := s.readJSON(w, r, &req)
		if err != nil {
			s.error(w, r, err)
			return
		}
		if req.Scope == auth.ScopeAgent {
			if _, err := s.auth.Store.Agent(r.Context(), p.UserID, req.AgentID); err != nil {
				if errors.Is(err, auth.ErrNotFound) {
					err = invalidf("agentId names none of your agents.")
				}
				s.error(w, r, err)
				return
			}
		}
		nk, err := auth.Generate(req.Scope, s.auth.Pepper)
		if err != nil {
			s.error(w, r, err)
			return
		}
		k, err := s.auth.Store.InsertKey(r.Context(), nk, p.UserID, req.AgentID)
		if err != nil {
			s.error(w, r, err)
			return
		}
		writeJSON(w, http.StatusCreated, createdKey{Key: k, Token: nk.Token})
	}
}

func (s *Server) handleRevokeKey() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		err := s.auth.Store.RevokeKey(r.Context(), principal(r).UserID, "", chi.URLParam(r, "kid"))
		if errors.Is(err, auth.ErrNotFound) {
			err = problemf(CodeNotFound, "No key with this kid is visible to this key.")
		}
		if err != nil {
			s.error(w, r, err)
			return
		}
		w.Header()["Cache-Control"] = hdrNoStore
		w.WriteHeader(http.StatusNoContent)
	}
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
