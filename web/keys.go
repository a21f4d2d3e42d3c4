package web

import (
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/waystation/waystation/internal/auth"
	"github.com/waystation/waystation/internal/problem"
)

// KeysView is the person's API keys, their agents' included, and the form that
// issues one. NewKey holds a key just issued: it is on this one answer and nowhere
// else.
type KeysView struct {
	Page
	Bar     AppBar
	Keys    []KeyRow
	Agents  []AgentChoice
	NewKey  string
	Message string
}

// KeyRow is one key as listed: never its secret.
type KeyRow struct {
	Prefix, For, Created, LastUsed, Status, Revoke string
	Revoked, Current                               bool
}

// AgentChoice is an agent a key can be issued for.
type AgentChoice struct{ ID, Name string }

// handleKeys lists the person's keys.
func (s *Server) handleKeys() http.HandlerFunc {
	return s.consolePage(func(w http.ResponseWriter, r *http.Request, ws auth.WebSession, message string, status int) {
		s.keysPage(w, r, ws, message, "", status)
	})
}

func (s *Server) keysPage(w http.ResponseWriter, r *http.Request, ws auth.WebSession, message, newKey string, status int) {
	ctx := r.Context()
	keys, err := s.approvals.Auth.Keys(ctx, ws.UserID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	agents, err := s.approvals.Auth.Agents(ctx, ws.UserID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	names := map[string]string{}
	v := KeysView{Page: s.appPage("Keys"), Bar: appBar(ws), Message: message, NewKey: newKey}
	for _, a := range agents {
		names[a.ID] = agentName(a)
		v.Agents = append(v.Agents, AgentChoice{ID: a.ID, Name: agentName(a)})
	}
	// Newest first, revoked ones after the live ones.
	for pass := 0; pass < 2; pass++ {
		for i := len(keys) - 1; i >= 0; i-- {
			k := keys[i]
			if (k.RevokedAt != nil) != (pass == 1) {
				continue
			}
			row := KeyRow{Prefix: k.Prefix + "_…", For: "you (user key)", Created: formatTime(k.CreatedAt), LastUsed: "never", Status: "live",
				Revoke: appPath + "/keys/" + k.KID + "/revoke", Current: k.KID == ws.KID}
			if k.AgentID != nil {
				row.For = "agent " + names[*k.AgentID]
			}
			if k.Host != "" {
				row.For += ", connected from the host " + k.Host
			}
			if k.LastUsedAt != nil {
				row.LastUsed = formatTime(*k.LastUsedAt)
			}
			if k.RevokedAt != nil {
				row.Revoked, row.Status = true, "revoked "+formatTime(*k.RevokedAt)
			}
			v.Keys = append(v.Keys, row)
		}
	}
	s.renderApp(w, r, KeysPage(v), status)
}

// handleCreateKey issues a user key, or a key for one of the person's agents, and
// shows it on the answer, once.
func (s *Server) handleCreateKey() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ws, ok := s.consoleForm(w, r)
		if !ok {
			return
		}
		scope, agentID := auth.ScopeUser, ""
		if f := r.PostForm.Get("for"); f != "user" {
			scope, agentID = auth.ScopeAgent, strings.ToLower(f)
			if !uuidPattern.MatchString(agentID) {
				s.keysPage(w, r, ws, "Nothing was issued: choose yourself or one of your agents.", "", http.StatusUnprocessableEntity)
				return
			}
		}
		_, token, err := s.approvals.Auth.IssueKey(r.Context(), ws.UserID, scope, agentID)
		f := form{page: func(message string, status int) { s.keysPage(w, r, ws, message, "", status) },
			refusals: append([]refusal{{err: auth.ErrNoPepper, message: "This server has no pepper, so it issues no keys.", status: http.StatusServiceUnavailable}},
				detailed("Nothing was issued: ", http.StatusUnprocessableEntity, problem.ValidationFailed, problem.QuotaExceeded)...)}
		s.answer(w, r, f, err, func() { s.keysPage(w, r, ws, "", token, http.StatusCreated) })
	}
}

// handleRevokeKey revokes one of the person's keys at once; revoking the key of this
// sign-in signs the browser out on its next page.
func (s *Server) handleRevokeKey() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		kid := chi.URLParam(r, "kid")
		ws, ok := s.consoleForm(w, r)
		if !ok {
			return
		}
		err := s.approvals.Auth.RevokeKey(r.Context(), ws.UserID, "", kid)
		s.answer(w, r, form{}, err, seeOther(w, r, appPath+"/keys"))
	}
}

// handleCreateAgent adds an agent of the person's from the agents page.
func (s *Server) handleCreateAgent() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ws, ok := s.consoleForm(w, r)
		if !ok {
			return
		}
		name := strings.TrimSpace(r.PostForm.Get("name"))
		_, err := s.approvals.Auth.CreateAgent(r.Context(), ws.UserID, name)
		f := form{page: func(message string, status int) { s.agentsPage(w, r, ws, message, status) },
			refusals: detailed("No agent was added: ", http.StatusUnprocessableEntity, problem.ValidationFailed, problem.QuotaExceeded)}
		s.answer(w, r, f, err, seeOther(w, r, appPath+"/agents"))
	}
}

// handleAgentStatus pauses an agent (its keys are refused, as revoked ones are,
// until it is resumed) or resumes it.
func (s *Server) handleAgentStatus() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id, ws, ok := s.consoleItemForm(w, r)
		if !ok {
			return
		}
		_, err := s.approvals.Auth.SetAgentStatus(r.Context(), ws.UserID, id, r.PostForm.Get("status"))
		f := form{page: func(message string, status int) { s.agentsPage(w, r, ws, message, status) }, refusals: []refusal{
			{code: problem.ValidationFailed, message: "Nothing was changed: the form asked for neither pause nor resume.", status: http.StatusUnprocessableEntity}}}
		s.answer(w, r, f, err, seeOther(w, r, appPath+"/agents#agent-"+id))
	}
}
