package api

import (
	"net/http"
	"time"

	"github.com/waystation/waystation/internal/auth"
	"github.com/waystation/waystation/internal/payment"
	"github.com/waystation/waystation/internal/problem"
	"github.com/waystation/waystation/internal/session"
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
	// MaxOpenSessions and MaxSessionEvents are 0 when there is no cap.
	MaxOpenSessions  int `json:"maxOpenSessions"`
	MaxSessionEvents int `json:"maxSessionEvents"`
	// Spending is what the person lets this agent pay and what it spent; null when
	// the server cannot pay sellers.
	Spending *payment.LimitsAndSpend `json:"spending"`
}

func (s *Server) limits() limits {
	return limits{MaxBodyBytes: s.svc.MaxBody, MaxWaitSeconds: int(s.svc.MaxWait / time.Second),
		MaxPageSize: maxPageSize, MaxEventDataBytes: session.MaxEventData,
		MaxOpenSessions: s.svc.Sessions.Limits.OpenSessions, MaxSessionEvents: s.svc.Sessions.Limits.Events}
}

func (s *Server) handleAgentMe() http.HandlerFunc {
	return s.serve(func(w http.ResponseWriter, r *http.Request) error {
		p := principal(r)
		a, err := s.svc.Auth.Agent(r.Context(), p.UserID, p.AgentID)
		if err != nil {
			return err
		}
		lim := s.limits()
		if s.svc.Payments.CheckPayer() == nil {
			sp, err := s.svc.Payments.Limits(r.Context(), a.ID)
			if err != nil {
				return err
			}
			lim.Spending = &sp
		}
		writeJSON(w, http.StatusOK, agentView{ID: a.ID, Name: a.Name, Status: a.Status, UserID: a.UserID, Limits: lim})
		return nil
	})
}

func (s *Server) handleAgentStats() http.HandlerFunc {
	return s.serve(func(w http.ResponseWriter, r *http.Request) error {
		st, err := s.svc.Sessions.AgentStats(r.Context(), principal(r).AgentID)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, st)
		return nil
	})
}

type list[T any] struct {
	Items []T `json:"items"`
}

func (s *Server) handleAgents() http.HandlerFunc {
	return s.serve(func(w http.ResponseWriter, r *http.Request) error {
		agents, err := s.svc.Auth.Agents(r.Context(), principal(r).UserID)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, list[auth.Agent]{Items: nonNil(agents)})
		return nil
	})
}

type createAgentRequest struct {
	Name string `json:"name"`
}

func (c *createAgentRequest) validate() error { return auth.CheckAgentName(c.Name) }

func (s *Server) handleCreateAgent() http.HandlerFunc {
	return s.serve(func(w http.ResponseWriter, r *http.Request) error {
		var req createAgentRequest
		_, err := s.readJSON(w, r, &req)
		if err != nil {
			return err
		}
		a, err := s.svc.Auth.CreateAgent(r.Context(), principal(r).UserID, req.Name)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusCreated, a)
		return nil
	})
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

type agentStatusRequest struct {
	Status string `json:"status"`
}

func (c *agentStatusRequest) validate() error {
	if c.Status != auth.AgentActive && c.Status != auth.AgentDisabled {
		return problem.Invalid(`status must be "active" or "disabled".`)
	}
	return nil
}

// handleSetAgentStatus pauses (disabled) or resumes (active) one of the user's
// agents: a disabled agent's keys are refused as revoked until it is active again.
func (s *Server) handleSetAgentStatus() http.HandlerFunc {
	return s.serve(func(w http.ResponseWriter, r *http.Request) error {
		id, err := agentID(r)
		if err != nil {
			return err
		}
		var req agentStatusRequest
		if _, err := s.readJSON(w, r, &req); err != nil {
			return err
		}
		a, err := s.svc.Auth.SetAgentStatus(r.Context(), principal(r).UserID, id, req.Status)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, a)
		return nil
	})
}
