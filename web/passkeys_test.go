package web

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/waystation/waystation/internal/auth"
	"github.com/waystation/waystation/internal/auth/passkeytest"
	"github.com/waystation/waystation/internal/problem"
	"github.com/waystation/waystation/internal/request"
)

// call posts a ceremony call as the console's script does: a body of the given
// type, the page's token in X-CSRF-Token.
func (b *browser) call(path, csrf, ctype, body string) page {
	b.e.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, b.e.base+path, strings.NewReader(body))
	req.Header.Set("Content-Type", ctype)
	req.Header.Set("X-CSRF-Token", csrf)
	res, err := b.c.Do(req)
	if err != nil {
		b.e.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	return page{res.StatusCode, res.Header, string(raw)}
}

func nextOf(t *testing.T, p page) string {
	t.Helper()
	var v struct {
		Next string `json:"next"`
	}
	if err := json.Unmarshal([]byte(p.body), &v); err != nil || v.Next == "" {
		t.Fatalf("no next in %d %s", p.status, p.body)
	}
	return v.Next
}

// A person signed in with their user key registers a passkey, then signs in with it
// alone and decides a request; an answer counts once, every call needs its page's
// token, and deleting the passkey ends the sign-ins it made.
func TestPasskeyRegistrationAndSignIn(t *testing.T) {
	e := newAppEnv(t, func(a *Approvals) {
		withAuth(a, func(c *auth.Config) { c.Passkeys = a.Requests.Store.(auth.PasskeyStore) })
	})
	e.base = strings.Replace(e.base, "127.0.0.1", "localhost", 1) // WebAuthn refuses IP addresses
	ada, adaKey := e.user("ada")
	scout, _ := e.agent(ada, "scout")
	r := e.raise(scout, request.New{ClientRequestID: "c1", Kind: request.KindConfirm, Params: request.Params{Summary: "Pay Rain"}})
	authn := passkeytest.New(e.base)

	b := e.browser()
	b.mustSignIn(adaKey, "")
	p := b.get("/app/passkeys")
	if p.status != 200 || !strings.Contains(p.body, `data-passkey="register"`) || !regexp.MustCompile(`<script src="/static/passkey\.[0-9a-f]+\.js" defer>`).MatchString(p.body) {
		t.Fatalf("passkeys page: %d %.600s", p.status, p.body)
	}
	csrf := csrfOf(t, p)
	form := "application/x-www-form-urlencoded"
	if got := b.call("/app/passkeys/options", "", form, "name=Laptop"); got.status != http.StatusForbidden {
		t.Errorf("options without the token: %d", got.status)
	}
	if got := b.call("/app/passkeys/options", csrf, form, "name=%20"); got.status != http.StatusUnprocessableEntity || !strings.Contains(got.body, "name") {
		t.Errorf("options without a name: %d %s", got.status, got.body)
	}
	if got := e.browser().call("/app/passkeys/options", csrf, form, "name=Laptop"); got.status != http.StatusUnauthorized {
		t.Errorf("options signed out: %d", got.status)
	}
	opts := b.call("/app/passkeys/options", csrf, form, "name=Laptop")
	if opts.status != 200 || !strings.Contains(opts.body, `"rp":{"name":"Waystation","id":"localhost"}`) || !strings.Contains(opts.body, `"residentKey":"required"`) {
		t.Fatalf("options: %d %s", opts.status, opts.body)
	}
	answer, err := authn.Create([]byte(opts.body))
	if err != nil {
		t.Fatal(err)
	}
	if got := b.call("/app/passkeys", "x", "application/json", string(answer)); got.status != http.StatusForbidden {
		t.Errorf("answer with a wrong token: %d", got.status)
	}
	added := b.call("/app/passkeys", csrf, "application/json", string(answer))
	if added.status != http.StatusCreated || !strings.HasPrefix(nextOf(t, added), "/app/passkeys?added=") {
		t.Fatalf("register: %d %s", added.status, added.body)
	}
	// The ceremony was taken: the same answer again finds none.
	if got := b.call("/app/passkeys", csrf, "application/json", string(answer)); got.status != http.StatusBadRequest || !strings.Contains(got.body, "start again") {
		t.Errorf("the answer again: %d %s", got.status, got.body)
	}
	if p := b.get(nextOf(t, added)); !strings.Contains(p.body, "Added the passkey “Laptop”") || strings.Contains(p.body, "You have no passkeys") {
		t.Errorf("the passkey is not listed: %.800s", p.body)
	}

	// Another browser signs in with the passkey alone, from the page of the request.
	b2 := e.browser()
	signInPage := b2.get(requestURL(r.ID))
	if !strings.Contains(signInPage.body, `data-passkey="sign-in"`) || !strings.Contains(signInPage.body, `action="/app/sign-in/passkey?request=`+r.ID+`"`) {
		t.Fatalf("the sign-in page offers no passkey: %.800s", signInPage.body)
	}
	formToken := csrfOf(t, signInPage)
	if got := b2.call("/app/sign-in/passkey/options", "x", form, ""); got.status != http.StatusForbidden {
		t.Errorf("sign-in options with a wrong token: %d", got.status)
	}
	opts = b2.call("/app/sign-in/passkey/options", formToken, form, "")
	if opts.status != 200 || !strings.Contains(opts.body, `"rpId":"localhost"`) || strings.Contains(opts.body, "allowCredentials") {
		t.Fatalf("sign-in options: %d %s", opts.status, opts.body)
	}
	assertion, err := authn.Get([]byte(opts.body))
	if err != nil {
		t.Fatal(err)
	}
	done := b2.call("/app/sign-in/passkey?request="+r.ID, formToken, "application/json", string(assertion))
	if done.status != 200 || nextOf(t, done) != requestURL(r.ID) {
		t.Fatalf("passkey sign-in: %d %s", done.status, done.body)
	}
	home := b2.get("/app/requests")
	if !strings.Contains(home.body, "Signed in with the passkey “Laptop”") {
		t.Fatalf("signed in with the passkey? %.800s", home.body)
	}
	// The person decides with the passkey's sign-in.
	rp := b2.get(requestURL(r.ID))
	if d := b2.post(requestURL(r.ID)+"/decision", url.Values{"decision": {"approve"}, "csrf": {csrfOf(t, rp)}}); d.status != http.StatusSeeOther {
		t.Fatalf("decision: %d %.300s", d.status, d.body)
	}
	if got := e.status(ada, r.ID); got != request.StatusFulfilled {
		t.Errorf("request is %s", got)
	}
	if p := b2.get("/app/passkeys"); !strings.Contains(p.body, "(this sign-in)") || strings.Contains(p.body, `data-label="Last used">never`) {
		t.Errorf("the passkey of this sign-in is not marked: %.1200s", p.body)
	}

	// A second sign-in with the same assertion (a replay) is refused.
	b3 := e.browser()
	t3 := csrfOf(t, b3.get("/app/requests"))
	b3.call("/app/sign-in/passkey/options", t3, form, "")
	if got := b3.call("/app/sign-in/passkey", t3, "application/json", string(assertion)); got.status != http.StatusUnauthorized {
		t.Errorf("replayed assertion: %d %s", got.status, got.body)
	}
	// An assertion without its ceremony's cookie finds none.
	if got := e.browser().call("/app/sign-in/passkey", t3, "application/json", string(assertion)); got.status != http.StatusForbidden && got.status != http.StatusBadRequest {
		t.Errorf("assertion from a fresh browser: %d", got.status)
	}

	// Deleting the passkey ends the sign-in it made.
	id := strings.TrimPrefix(nextOf(t, added), "/app/passkeys?added=")
	if d := b2.post("/app/passkeys/"+id+"/delete", url.Values{"csrf": {csrfOf(t, b2.get("/app/passkeys"))}}); d.status != http.StatusSeeOther {
		t.Fatalf("delete: %d %.300s", d.status, d.body)
	}
	if p := b2.get("/app/requests"); !strings.Contains(p.body, `action="/app/sign-in"`) {
		t.Errorf("still signed in after the passkey was deleted: %.400s", p.body)
	}
	if p := b.get("/app/passkeys"); !strings.Contains(p.body, "You have no passkeys") {
		t.Errorf("the deleted passkey is listed: %.600s", p.body)
	}
	if d := b.post("/app/passkeys/"+id+"/delete", url.Values{"csrf": {csrf}}); d.status != http.StatusNotFound {
		t.Errorf("deleting it again: %d", d.status)
	}
}

// At an IP address WebAuthn cannot work, so the pages offer no passkey and the calls
// are refused; keys still sign in.
func TestNoPasskeysAtAnIPAddress(t *testing.T) {
	e := newAppEnv(t, func(a *Approvals) {
		withAuth(a, func(c *auth.Config) { c.Passkeys = a.Requests.Store.(auth.PasskeyStore) })
	})
	_, adaKey := e.user("ada")
	b := e.browser()
	signInPage := b.get("/app/requests")
	if strings.Contains(signInPage.body, "data-passkey") || strings.Contains(signInPage.body, "<script") {
		t.Errorf("the sign-in page offers a passkey at an IP address")
	}
	if got := b.call("/app/sign-in/passkey/options", csrfOf(t, signInPage), "application/x-www-form-urlencoded", ""); got.status != http.StatusConflict {
		t.Errorf("options at an IP address: %d %s", got.status, got.body)
	}
	b.mustSignIn(adaKey, "")
	if p := b.get("/app/passkeys"); !strings.Contains(p.body, "cannot be added at this address") || strings.Contains(p.body, "data-passkey") {
		t.Errorf("passkeys page at an IP address: %.600s", p.body)
	}
}

// The keys page issues a key once, for the person or one of their agents, and
// revokes keys; the agents page adds agents and pauses one, whose keys are refused
// until it is resumed.
func TestConsoleIssuesAndRevokesKeysAndPausesAgents(t *testing.T) {
	e := newAppEnv(t)
	ctx := context.Background()
	ada, adaKey := e.user("ada")
	scout, scoutKey := e.agent(ada, "scout")
	grace, _ := e.user("grace")
	graceAgent, _ := e.agent(grace, "other")
	check := func(token string) string {
		_, err := auth.Authenticate(ctx, e.store, testPepper, token)
		return problem.CodeOf(err)
	}

	b := e.browser()
	b.mustSignIn(adaKey, "")
	p := b.get("/app/keys")
	if p.status != 200 || !strings.Contains(p.body, "sk_user_"+ada.KID+"_…") || !strings.Contains(p.body, "(this sign-in)") || !strings.Contains(p.body, "agent scout") {
		t.Fatalf("keys page: %d %.1500s", p.status, p.body)
	}
	if strings.Contains(p.body, adaKey) || strings.Contains(p.body, scoutKey) || strings.Contains(p.body, graceAgent.KID) {
		t.Fatal("the keys page shows a secret or someone else's key")
	}
	csrf := csrfOf(t, p)
	issued := b.post("/app/keys", url.Values{"csrf": {csrf}, "for": {scout.AgentID}})
	token := regexp.MustCompile(`sk_agent_[0-9a-f]{16}_[0-9a-f]{64}`).FindString(issued.body)
	if issued.status != http.StatusCreated || token == "" || check(token) != "" {
		t.Fatalf("issue an agent key: %d %q %.600s", issued.status, token, issued.body)
	}
	if again := b.get("/app/keys"); strings.Contains(again.body, token) {
		t.Error("the new key is shown twice")
	}
	for name, form := range map[string]url.Values{
		"another's agent": {"csrf": {csrf}, "for": {graceAgent.AgentID}},
		"not an agent":    {"csrf": {csrf}, "for": {"scout"}},
	} {
		if got := b.post("/app/keys", form); got.status != http.StatusUnprocessableEntity || !strings.Contains(got.body, "Nothing was issued") {
			t.Errorf("%s: %d", name, got.status)
		}
	}
	if got := b.post("/app/keys", url.Values{"for": {"user"}}); got.status != http.StatusForbidden {
		t.Errorf("issue without the token: %d", got.status)
	}
	kid := token[len("sk_agent_") : len("sk_agent_")+16]
	if got := b.post("/app/keys/"+kid+"/revoke", url.Values{"csrf": {csrf}}); got.status != http.StatusSeeOther || check(token) != problem.KeyRevoked {
		t.Errorf("revoke: %d, then the key is %q", got.status, check(token))
	}
	if got := b.post("/app/keys/"+graceAgent.KID+"/revoke", url.Values{"csrf": {csrf}}); got.status != http.StatusNotFound {
		t.Errorf("revoking another's key: %d", got.status)
	}

	// Agents: add one, pause scout (its key is refused), resume it.
	if got := b.post("/app/agents", url.Values{"csrf": {csrf}, "name": {"courier"}}); got.status != http.StatusSeeOther {
		t.Errorf("add agent: %d %.300s", got.status, got.body)
	}
	if got := b.post("/app/agents", url.Values{"csrf": {csrf}, "name": {"courier"}}); got.status != http.StatusUnprocessableEntity || !strings.Contains(got.body, "No agent was added") {
		t.Errorf("add it again: %d", got.status)
	}
	page := b.get("/app/agents")
	if !strings.Contains(page.body, "courier") || !strings.Contains(page.body, "Pause scout") {
		t.Fatalf("agents page: %.1500s", page.body)
	}
	status := "/app/agents/" + scout.AgentID + "/status"
	if got := b.post(status, url.Values{"csrf": {csrf}, "status": {"disabled"}}); got.status != http.StatusSeeOther || check(scoutKey) != problem.KeyRevoked {
		t.Errorf("pause: %d, then its key is %q", got.status, check(scoutKey))
	}
	if page := b.get("/app/agents"); !strings.Contains(page.body, "Resume scout") || !strings.Contains(page.body, "Paused:") {
		t.Errorf("the paused agent is not shown paused")
	}
	if got := b.post(status, url.Values{"csrf": {csrf}, "status": {"gone"}}); got.status != http.StatusUnprocessableEntity {
		t.Errorf("a status that is not one: %d", got.status)
	}
	if got := b.post("/app/agents/"+graceAgent.AgentID+"/status", url.Values{"csrf": {csrf}, "status": {"disabled"}}); got.status != http.StatusNotFound {
		t.Errorf("pausing another's agent: %d", got.status)
	}
	if got := b.post(status, url.Values{"csrf": {csrf}, "status": {"active"}}); got.status != http.StatusSeeOther || check(scoutKey) != "" {
		t.Errorf("resume: %d, then its key is %q", got.status, check(scoutKey))
	}

	// Revoking the key of this sign-in signs the browser out.
	b.post("/app/keys/"+ada.KID+"/revoke", url.Values{"csrf": {csrf}})
	if p := b.get("/app/keys"); !strings.Contains(p.body, "was revoked") {
		t.Errorf("still signed in with a revoked key: %.400s", p.body)
	}
}
