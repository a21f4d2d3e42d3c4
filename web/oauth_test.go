package web

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/waystation/waystation/internal/auth"
	"github.com/waystation/waystation/internal/oauth"
)

const (
	consentRedirect = "http://127.0.0.1:7777/callback"
	consentVerifier = "a-verifier-of-more-than-forty-three-characters-0123456789"
	consentResource = "https://waystation.example/functions/v1/api/mcp"
)

// consentEnv is the console with the authorization server, and a host's request
// waiting for the person.
func consentEnv(t *testing.T) (*appEnv, *oauth.Service, oauth.Client) {
	t.Helper()
	var svc *oauth.Service
	e := newAppEnv(t, func(a *Approvals) {
		svc = oauth.NewService(a.Requests.Store.(oauth.Store), a.Auth, oauth.Config{Pepper: testPepper})
		a.OAuth = svc
	})
	c, err := svc.Register(context.Background(), oauth.ClientMetadata{ClientName: "Desk Assistant", RedirectURIs: []string{consentRedirect}}, "127.0.0.1:1", nil)
	if err != nil {
		t.Fatal(err)
	}
	return e, svc, c
}

func (e *appEnv) hostRequest(svc *oauth.Service, c oauth.Client) string {
	e.t.Helper()
	r, err := svc.Authorize(context.Background(), oauth.AuthorizeParams{ResponseType: "code", ClientID: c.ID, RedirectURI: consentRedirect, State: "st-9",
		CodeChallenge: oauth.S256(consentVerifier), CodeChallengeMethod: "S256"}, []string{consentResource})
	if err != nil {
		e.t.Fatal(err)
	}
	return r.ID
}

// The person signs in from the consent page, comes back to it, sees who asks, where
// the code goes and what it allows, and approves the host as a new agent: the
// browser goes back to the host with a code that becomes that agent's token.
func TestConsentSignsInShowsTheHostAndApprovesItAsANewAgent(t *testing.T) {
	e, svc, c := consentEnv(t)
	ada, adaKey := e.user("ada")
	id := e.hostRequest(svc, c)
	b := e.browser()

	form := b.get("/app/oauth/" + id)
	if !strings.Contains(form.body, `name="request" value="oauth-`+id+`"`) {
		t.Fatalf("the consent page asks a stranger to sign in and come back: %.400s", form.body)
	}
	p := b.post("/app/sign-in", url.Values{"csrf": {csrfOf(t, form)}, "key": {adaKey}, "request": {"oauth-" + id}})
	if p.status != http.StatusSeeOther || p.header.Get("Location") != "/app/oauth/"+id {
		t.Fatalf("sign-in leads to %d %q", p.status, p.header.Get("Location"))
	}
	page := b.get("/app/oauth/" + id)
	for _, want := range []string{"Desk Assistant", "127.0.0.1:7777", "<code>agent</code>", consentResource} {
		if !strings.Contains(page.body, want) {
			t.Errorf("the consent page does not show %q", want)
		}
	}
	if csp := page.header.Get("Content-Security-Policy"); !strings.Contains(csp, "form-action 'self' http://127.0.0.1:7777;") {
		t.Errorf("the page's policy would stop the answer's redirect: %s", csp)
	}

	answer := url.Values{"decision": {"approve"}, "agent": {"new"}, "name": {"Desk Assistant"}}
	if p := b.post("/app/oauth/"+id, answer); p.status != http.StatusForbidden {
		t.Fatalf("an answer without the CSRF token: %d", p.status)
	}
	answer.Set("csrf", csrfOf(t, page))
	p = b.post("/app/oauth/"+id, answer)
	to, _ := url.Parse(p.header.Get("Location"))
	if p.status != http.StatusSeeOther || to.Host != "127.0.0.1:7777" || to.Query().Get("state") != "st-9" || to.Query().Get("code") == "" {
		t.Fatalf("approval: %d to %v", p.status, to)
	}
	tok, err := svc.Token(context.Background(), oauth.TokenParams{GrantType: "authorization_code", Code: to.Query().Get("code"), ClientID: c.ID,
		RedirectURI: consentRedirect, CodeVerifier: consentVerifier}, []string{consentResource})
	if err != nil {
		t.Fatal(err)
	}
	pr, err := svc.Use(context.Background(), tok.AccessToken, consentResource)
	if err != nil {
		t.Fatal(err)
	}
	agents, _ := e.store.Agents(context.Background(), ada.UserID)
	if pr.Scope != auth.ScopeAgent || pr.UserID != ada.UserID || len(agents) != 1 || agents[0].Name != "Desk Assistant" || pr.AgentID != agents[0].ID {
		t.Fatalf("the token acts as %+v; the person's agents: %+v", pr, agents)
	}
	answer.Set("name", "Second desk")
	if p := b.post("/app/oauth/"+id, answer); p.status != http.StatusNotFound {
		t.Fatalf("a request answered twice: %d", p.status)
	}
	if agents, _ := e.store.Agents(context.Background(), ada.UserID); len(agents) != 1 {
		t.Errorf("an answer to a request that is over left an agent behind: %+v", agents)
	}
	// The person finds the grant on the Keys page under the host's name, to revoke it.
	if keys := b.get("/app/keys"); !strings.Contains(keys.body, "agent Desk Assistant, connected from the host Desk Assistant") {
		t.Errorf("the Keys page does not name the host of its grant: %.2000s", keys.body)
	}
}

// Denying sends the host access_denied; another person's agent cannot be chosen.
func TestConsentDeniesAndRefusesAnotherPersonsAgent(t *testing.T) {
	e, svc, c := consentEnv(t)
	_, adaKey := e.user("ada")
	bob, _ := e.user("bob")
	bobs, _ := e.agent(bob, "bobs")
	id := e.hostRequest(svc, c)
	b := e.browser()
	b.mustSignIn(adaKey, "")
	page := b.get("/app/oauth/" + id)
	if strings.Contains(page.body, bobs.AgentID) {
		t.Fatal("the consent page offers another person's agent")
	}
	p := b.post("/app/oauth/"+id, url.Values{"csrf": {csrfOf(t, page)}, "decision": {"approve"}, "agent": {bobs.AgentID}})
	if p.status != http.StatusUnprocessableEntity || p.header.Get("Location") != "" {
		t.Fatalf("approving as another person's agent: %d to %q", p.status, p.header.Get("Location"))
	}
	p = b.post("/app/oauth/"+id, url.Values{"csrf": {csrfOf(t, page)}, "decision": {"deny"}})
	to, _ := url.Parse(p.header.Get("Location"))
	if p.status != http.StatusSeeOther || to.Query().Get("error") != "access_denied" || to.Query().Get("state") != "st-9" || to.Query().Get("code") != "" {
		t.Fatalf("denial: %d to %v", p.status, to)
	}
}
