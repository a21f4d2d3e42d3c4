package api

import (
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/waystation/waystation/internal/auth"
	"github.com/waystation/waystation/internal/problem"
)

// handleRevokeCurrentKey lets an agent give up the key it calls with; the next call
// with it gets 401.
func (s *Server) handleRevokeCurrentKey() http.HandlerFunc {
	return s.serve(func(w http.ResponseWriter, r *http.Request) error {
		p := principal(r)
		if err := s.svc.Auth.RevokeKey(r.Context(), p.UserID, p.AgentID, p.KID); err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, map[string]string{"kid": p.KID, "status": "revoked"})
		return nil
	})
}

func (s *Server) handleKeys() http.HandlerFunc {
	return s.serve(func(w http.ResponseWriter, r *http.Request) error {
		keys, err := s.svc.Auth.Keys(r.Context(), principal(r).UserID)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, list[auth.Key]{Items: nonNil(keys)})
		return nil
	})
}

type createKeyRequest struct {
	Scope   auth.Scope `json:"scope"`
	AgentID string     `json:"agentId"`
}

func (c *createKeyRequest) validate() error {
	switch {
	case !c.Scope.Valid():
		return problem.Invalid(`scope must be "agent" or "user".`)
	case c.Scope == auth.ScopeAgent && !uuidPattern.MatchString(c.AgentID):
		return problem.Invalid("An agent key needs the agentId of one of your agents.")
	case c.Scope == auth.ScopeUser && c.AgentID != "":
		return problem.Invalid("A user key takes no agentId.")
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
	return s.serve(func(w http.ResponseWriter, r *http.Request) error {
		p := principal(r)
		var req createKeyRequest
		_, err := s.readJSON(w, r, &req)
		if err != nil {
			return err
		}
		k, token, err := s.svc.Auth.IssueKey(r.Context(), p.UserID, req.Scope, req.AgentID)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusCreated, createdKey{Key: k, Token: token})
		return nil
	})
}

func (s *Server) handleRevokeKey() http.HandlerFunc {
	return s.serve(func(w http.ResponseWriter, r *http.Request) error {
		err := s.svc.Auth.RevokeKey(r.Context(), principal(r).UserID, "", chi.URLParam(r, "kid"))
		if err != nil {
			return err
		}
		w.Header()["Cache-Control"] = hdrNoStore
		w.WriteHeader(http.StatusNoContent)
		return nil
	})
}
