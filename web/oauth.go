package web

import (
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/waystation/waystation/internal/auth"
	"github.com/waystation/waystation/internal/oauth"
	"github.com/waystation/waystation/internal/problem"
)

// consentPath is where, under the console, a person answers a host's authorization
// request, its id appended: the API's authorization endpoint sends them here.
const consentPath = "/oauth/"

// ConsentView is a host's authorization request as the person answers it: who asks,
// where the answer goes, what the host may do, and as which agent.
type ConsentView struct {
	Page
	Bar          AppBar
	Action       string
	Host         string
	RedirectHost string
	Resource     string
	Scopes       []ScopeRow
	Agents       []AgentChoice
	Message      string
}

// ScopeRow is a scope the host asks for, and what it lets the host do.
type ScopeRow struct{ Name, Meaning string }

// scopeMeanings say what each scope lets a host do, in the person's words.
var scopeMeanings = map[string]string{
	oauth.ScopeAgent: "act as the agent you choose: open its sessions, ask you for approvals, and pay within its limits. It never sees your saved values, and it cannot approve anything itself.",
}

// handleConsent shows a host's authorization request to the signed-in person; a
// browser not signed in is asked to, and comes back here.
func (s *Server) handleConsent() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id, ok := idParam(r)
		if !ok {
			s.appNotFound(w, r)
			return
		}
		ws, ok := s.signedIn(w, r, consentBack+id, http.StatusOK)
		if !ok {
			return
		}
		s.consentPage(w, r, ws, id, "", http.StatusOK)
	}
}

func (s *Server) consentPage(w http.ResponseWriter, r *http.Request, ws auth.WebSession, id, message string, status int) {
	ctx := r.Context()
	req, err := s.approvals.OAuth.AuthorizationRequest(ctx, id)
	if errors.Is(err, oauth.ErrRequestNotFound) {
		s.consentGone(w, r)
		return
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	agents, err := s.approvals.Auth.Agents(ctx, ws.UserID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	v := ConsentView{Page: s.appPage("Connect " + req.Client.Name), Bar: appBar(ws), Action: appPath + consentPath + id,
		Host: req.Client.Name, RedirectHost: req.RedirectHost(), Resource: req.Resource, Message: message}
	for _, sc := range req.Scopes {
		v.Scopes = append(v.Scopes, ScopeRow{Name: sc, Meaning: scopeMeanings[sc]})
	}
	for _, a := range agents {
		if a.Status == auth.AgentActive {
			v.Agents = append(v.Agents, AgentChoice{ID: a.ID, Name: agentName(a)})
		}
	}
	// The answer's redirect leaves for the host's redirect URI, which the form's
	// policy must allow.
	if u, err := url.Parse(req.RedirectURI); err == nil {
		w.Header().Set("Content-Security-Policy", strings.Replace(w.Header().Get("Content-Security-Policy"),
			"form-action 'self'", "form-action 'self' "+u.Scheme+"://"+u.Host, 1))
	}
	s.renderApp(w, r, ConsentPage(v), status)
}

// consentGone answers a request answered before, or out of time.
func (s *Server) consentGone(w http.ResponseWriter, r *http.Request) {
	v := MessageView{Page: s.appPage("Not found"), Heading: "This request is over",
		Message: "The host's request was answered already or its time ran out. Connect again from the host.", Back: requestURL("")}
	s.renderApp(w, r, MessagePage(v), http.StatusNotFound)
}

// handleAnswerConsent approves (as an existing agent, or a new one the person
// names) or denies a host's authorization request, and sends the browser back to
// the host's redirect URI with the code, or the refusal.
func (s *Server) handleAnswerConsent() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id, ws, ok := s.consoleItemForm(w, r)
		if !ok {
			return
		}
		ctx := r.Context()
		if r.PostForm.Get("decision") != "approve" {
			to, err := s.approvals.OAuth.Deny(ctx, id)
			s.consentAnswered(w, r, to, err)
			return
		}
		again := func(message string) { s.consentPage(w, r, ws, id, message, http.StatusUnprocessableEntity) }
		agentID := strings.ToLower(r.PostForm.Get("agent"))
		if agentID == "new" {
			// A request that is over makes no agent.
			if _, err := s.approvals.OAuth.AuthorizationRequest(ctx, id); err != nil {
				s.consentAnswered(w, r, "", err)
				return
			}
			a, err := s.approvals.Auth.CreateAgent(ctx, ws.UserID, r.PostForm.Get("name"))
			if c := problem.CodeOf(err); c == problem.ValidationFailed || c == problem.QuotaExceeded {
				p, _ := problem.As(err)
				again("Nothing was approved: " + p.Detail)
				return
			}
			if err != nil {
				s.fail(w, r, err)
				return
			}
			agentID = a.ID
		} else if !uuidPattern.MatchString(agentID) {
			again("Nothing was approved: choose one of your agents, or name a new one.")
			return
		}
		to, err := s.approvals.OAuth.Approve(ctx, ws.UserID, id, agentID)
		if errors.Is(err, auth.ErrAgentNotFound) {
			again("Nothing was approved: choose one of your agents, or name a new one.")
			return
		}
		s.consentAnswered(w, r, to, err)
	}
}

func (s *Server) consentAnswered(w http.ResponseWriter, r *http.Request, to string, err error) {
	switch {
	case errors.Is(err, oauth.ErrRequestNotFound):
		s.consentGone(w, r)
	case err != nil:
		s.fail(w, r, err)
	default:
		http.Redirect(w, r, to, http.StatusSeeOther)
	}
}
