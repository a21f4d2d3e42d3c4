package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/waystation/waystation/internal/oauth"
	"github.com/waystation/waystation/internal/postgres/pgtest"
)

// hostClient is an MCP host's HTTP client and the person's browser at once: it keeps
// cookies and follows no redirect, so that each step is seen.
type hostClient struct {
	t *testing.T
	c *http.Client
}

func (h hostClient) do(method, u, contentType, body string, hdr ...string) (*http.Response, string) {
	h.t.Helper()
	req, err := http.NewRequest(method, u, strings.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := h.c.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

func (h hostClient) json(method, u, contentType, body string, status int, v any) {
	h.t.Helper()
	res, b := h.do(method, u, contentType, body)
	if res.StatusCode != status || json.Unmarshal([]byte(b), v) != nil {
		h.t.Fatalf("%s %s: %d %s, want %d", method, u, res.StatusCode, b, status)
	}
}

var (
	resourceMetadata = regexp.MustCompile(`resource_metadata="([^"]+)"`)
	csrfInput        = regexp.MustCompile(`name="csrf" value="([^"]+)"`)
)

// consent is the person at the authorization URL: they sign in with key on the
// consent page it leads to, check that it names host and redirectHost, and approve
// the host as a new agent; it answers where the browser is sent back.
func (h hostClient) consent(base, authorize, key, redirectHost, host string) *url.URL {
	h.t.Helper()
	res, _ := h.do("GET", authorize, "", "")
	consent := res.Header.Get("Location")
	if res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(consent, base+"/app/oauth/") {
		h.t.Fatalf("authorize: %d to %q", res.StatusCode, consent)
	}
	id := strings.TrimPrefix(consent, base+"/app/oauth/")
	_, page := h.do("GET", consent, "", "")
	csrf := csrfInput.FindStringSubmatch(page)
	if csrf == nil {
		h.t.Fatalf("no sign-in form: %.300s", page)
	}
	form := url.Values{"csrf": {csrf[1]}, "key": {key}, "request": {"oauth-" + id}}
	if res, _ = h.do("POST", base+"/app/sign-in", "application/x-www-form-urlencoded", form.Encode()); res.Header.Get("Location") != "/app/oauth/"+id {
		h.t.Fatalf("sign-in leads to %d %q", res.StatusCode, res.Header.Get("Location"))
	}
	_, page = h.do("GET", consent, "", "")
	if csrf = csrfInput.FindStringSubmatch(page); csrf == nil || !strings.Contains(page, host) || !strings.Contains(page, redirectHost) {
		h.t.Fatalf("consent page: %.400s", page)
	}
	form = url.Values{"csrf": {csrf[1]}, "decision": {"approve"}, "agent": {"new"}, "name": {host}}
	res, _ = h.do("POST", consent, "application/x-www-form-urlencoded", form.Encode())
	back, _ := url.Parse(res.Header.Get("Location"))
	if res.StatusCode != http.StatusSeeOther || back.Query().Get("code") == "" {
		h.t.Fatalf("approval: %d to %v", res.StatusCode, back)
	}
	return back
}

// TestAnMCPHostConnectsFromNothingWithOAuth runs the whole served stack as a host
// meets it: a 401 names the resource's metadata, which names the authorization
// server; the host registers, the person signs in on the consent page and approves
// the host as a new agent, the host exchanges the code and the MCP SDK's client
// lists the agent's tools with the token; a refreshed token works, and once revoked
// it is refused at once.
func TestAnMCPHostConnectsFromNothingWithOAuth(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.URL(t)
	srv := serveLogged(t, map[string]string{"DATABASE_URL": dbURL, "LOOPBACK_HTTP": "true"})
	var key strings.Builder
	if err := run(context.Background(), []string{"server", "key", "-user", "ada"}, func(k string) string {
		return map[string]string{"DATABASE_URL": dbURL, "AUTH_PEPPER": testPepper}[k]
	}, &key, io.Discard); err != nil {
		t.Fatal(err)
	}
	jar, _ := cookiejar.New(nil)
	h := hostClient{t, &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	mcpURL := srv.base + "/functions/v1/api/mcp"

	// Discovery, from the 401 alone.
	res, _ := h.do("POST", mcpURL, "application/json", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, "Authorization", "Bearer wsat_expired", "Accept", "application/json, text/event-stream")
	m := resourceMetadata.FindStringSubmatch(res.Header.Get("WWW-Authenticate"))
	if res.StatusCode != 401 || m == nil {
		t.Fatalf("401 challenge %q (%d)", res.Header.Get("WWW-Authenticate"), res.StatusCode)
	}
	var prm struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
	}
	h.json("GET", m[1], "", "", 200, &prm)
	if prm.Resource != mcpURL || len(prm.AuthorizationServers) != 1 {
		t.Fatalf("resource metadata %+v", prm)
	}
	var as struct {
		AuthorizationEndpoint string `json:"authorization_endpoint"`
		TokenEndpoint         string `json:"token_endpoint"`
		RegistrationEndpoint  string `json:"registration_endpoint"`
		RevocationEndpoint    string `json:"revocation_endpoint"`
	}
	h.json("GET", prm.AuthorizationServers[0]+"/.well-known/oauth-authorization-server", "", "", 200, &as)

	// Registration.
	const redirect = "http://127.0.0.1:1/callback"
	var client struct {
		ClientID string `json:"client_id"`
	}
	h.json("POST", as.RegistrationEndpoint, "application/json", `{"client_name":"Desk Assistant","redirect_uris":["`+redirect+`"]}`, 201, &client)

	// Authorization: the person signs in on the consent page and approves.
	verifier := strings.Repeat("v", 50)
	q := url.Values{"response_type": {"code"}, "client_id": {client.ClientID}, "redirect_uri": {redirect}, "state": {"s1"}, "scope": {"agent"},
		"code_challenge": {oauth.S256(verifier)}, "code_challenge_method": {"S256"}, "resource": {prm.Resource}}
	back := h.consent(srv.base, as.AuthorizationEndpoint+"?"+q.Encode(), strings.TrimSpace(key.String()), "127.0.0.1:1", "Desk Assistant")
	if back.Query().Get("state") != "s1" {
		t.Fatalf("approval sends the browser to %v", back)
	}

	// The code becomes tokens, which act as the new agent on the MCP server.
	var tok oauth.Tokens
	exchange := url.Values{"grant_type": {"authorization_code"}, "code": {back.Query().Get("code")}, "client_id": {client.ClientID},
		"redirect_uri": {redirect}, "code_verifier": {verifier}, "resource": {prm.Resource}}
	h.json("POST", as.TokenEndpoint, "application/x-www-form-urlencoded", exchange.Encode(), 200, &tok)
	c, err := connectMCP(t, srv.base, tok.AccessToken)
	if err != nil {
		t.Fatal(err)
	}
	if names := toolNames(t, c); !slices.Contains(names, "open_session") || !slices.Contains(names, "pay_seller") {
		t.Fatalf("tools with the token: %v", names)
	}

	var next oauth.Tokens
	refresh := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok.RefreshToken}, "client_id": {client.ClientID}}
	h.json("POST", as.TokenEndpoint, "application/x-www-form-urlencoded", refresh.Encode(), 200, &next)
	if c, err = connectMCP(t, srv.base, next.AccessToken); err != nil {
		t.Fatalf("the refreshed token: %v", err)
	}
	toolNames(t, c)

	revoke := url.Values{"token": {next.RefreshToken}, "client_id": {client.ClientID}}
	if res, b := h.do("POST", as.RevocationEndpoint, "application/x-www-form-urlencoded", revoke.Encode()); res.StatusCode != 200 {
		t.Fatalf("revoke: %d %s", res.StatusCode, b)
	}
	if _, err := c.session.ListTools(context.Background(), nil); err == nil {
		t.Fatal("a session whose token was revoked still lists tools")
	}
	if _, err := connectMCP(t, srv.base, next.AccessToken); err == nil {
		t.Fatal("a revoked token still connects")
	}
}

// TestTheMCPTypeScriptSDKConnectsWithOAuth has the official TypeScript SDK's OAuth
// client (auth() with a client provider; pinned, installed by make test) connect
// from nothing, with the person in Chromium: the host discovers, registers and
// sends the person to the authorization URL; they sign in there with their passkey
// (a virtual authenticator's), see who asks, and approve the host as a new agent; the
// browser brings the code to the host's loopback redirect. The host exchanges it,
// lists the agent's tools and refreshes; the person finds the grant on the Keys page
// under the host's name and revokes it, and the host is refused at once.
func TestTheMCPTypeScriptSDKConnectsWithOAuth(t *testing.T) {
	t.Parallel()
	node, modules := os.Getenv("WAYSTATION_NODE"), os.Getenv("WAYSTATION_MCP_SDK")
	if node == "" || modules == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("WAYSTATION_NODE and WAYSTATION_MCP_SDK must be set under CI (make test sets them)")
		}
		t.Skip("WAYSTATION_NODE and WAYSTATION_MCP_SDK are not set: run make test")
	}
	chromium := tool(t, "chromium", "/usr/bin/chromium", "/usr/bin/chromium-browser")
	dbURL := pgtest.URL(t)
	userKey, _ := apiKeys(t, dbURL)
	srv := startServer(t, map[string]string{"DATABASE_URL": dbURL})
	if err := os.MkdirAll(browserOutput, 0o755); err != nil {
		t.Fatal(err)
	}
	// WebAuthn refuses IP addresses: the person and the host use http://localhost:PORT.
	base := strings.Replace(srv.base, "127.0.0.1", "localhost", 1)

	// The host's loopback redirect, where the person's browser brings the answer.
	answers := make(chan url.Values, 1)
	callback := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/callback" { // the browser's favicon.ico
			w.WriteHeader(http.StatusNoContent)
			return
		}
		select {
		case answers <- r.URL.Query():
		default:
		}
		io.WriteString(w, "<!doctype html><title>Connected</title><p>Connected. You may close this window.")
	}))
	defer callback.Close()

	ctx, problems := startBrowser(t, chromium)
	virtualAuthenticator(t, ctx)
	do := func(actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, actions...); err != nil {
			t.Fatalf("%v; console: %q", err, problems())
		}
	}
	// The person signed in with their key once and added a passkey, and is signed out.
	do(chromedp.Navigate(base+"/app/requests"), chromedp.WaitVisible(chromedp.CSS("#key")))
	do(chromedp.SendKeys(chromedp.CSS("#key"), userKey), chromedp.Submit(chromedp.CSS("#key")), chromedp.WaitVisible(chromedp.CSS("nav.app")))
	do(chromedp.Navigate(base+"/app/passkeys"), chromedp.WaitVisible(chromedp.CSS("#passkey-name")))
	do(chromedp.SendKeys(chromedp.CSS("#passkey-name"), "Laptop"), chromedp.Click(chromedp.CSS(`form[data-passkey="register"] button`)))
	do(chromedp.WaitVisible(chromedp.CSS(`tr[id^="passkey-"]`)))
	do(chromedp.Click(chromedp.CSS(`form[action="/app/sign-out"] button`)), chromedp.WaitVisible(chromedp.CSS(`form[data-passkey="sign-in"] button`)))

	hostCtx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(hostCtx, node, filepath.Join("testdata", "mcpsdk", "oauth-host.cjs"), base+"/functions/v1/api/mcp", callback.URL+"/callback")
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	lines := bufio.NewScanner(stdout)
	lines.Buffer(make([]byte, 1<<20), 1<<20)
	var step map[string]any
	next := func(want string) any {
		t.Helper()
		if !lines.Scan() {
			t.Fatalf("the host stopped before %s: %s", want, stderr.String())
		}
		step = map[string]any{}
		if json.Unmarshal(lines.Bytes(), &step) != nil || step[want] == nil {
			t.Fatalf("the host said %s, want %s\n%s", lines.Text(), want, stderr.String())
		}
		return step[want]
	}
	authorize := next("authorize").(string)
	if next("first") != "REDIRECT" {
		t.Fatalf("auth() from nothing: %v", step)
	}

	// The person follows the host's link, signs in with the passkey on the way, and
	// approves the host as a new agent.
	do(chromedp.Navigate(authorize), chromedp.WaitVisible(chromedp.CSS(`form[data-passkey="sign-in"] button`)))
	do(chromedp.Click(chromedp.CSS(`form[data-passkey="sign-in"] button`)), chromedp.WaitVisible(chromedp.CSS("#consent-agent")))
	page := textOf(t, ctx, "main")
	redirectHost := strings.TrimPrefix(callback.URL, "http://")
	for _, want := range []string{"Connect SDK host?", redirectHost, "agent", "/functions/v1/api/mcp"} {
		if !strings.Contains(page, want) {
			t.Errorf("the consent page does not show %q: %s", want, page)
		}
	}
	screenshot(t, ctx, "22-console-oauth-consent")
	do(chromedp.SetValue(chromedp.CSS("#consent-agent"), "new"), chromedp.Click(chromedp.CSS(`button[value="approve"]`)))
	var answer url.Values
	select {
	case answer = <-answers:
	case <-time.After(time.Minute):
		t.Fatalf("the browser never came back to the host; console: %q", problems())
	}
	if answer.Get("code") == "" || answer.Get("iss") != base {
		t.Fatalf("the host's redirect got %v", answer)
	}
	io.WriteString(stdin, answer.Get("code")+"\n")
	if next("exchanged") != "AUTHORIZED" {
		t.Fatalf("the code's exchange: %v", step)
	}
	if tools := fmt.Sprint(next("tools")); !strings.Contains(tools, "open_session") || !strings.Contains(tools, "pay_seller") {
		t.Fatalf("the agent's tools: %s", tools)
	}
	if next("refreshed") != "AUTHORIZED" || step["rotated"] != true {
		t.Fatalf("the refresh: %v", step)
	}
	if tools := fmt.Sprint(next("tools")); !strings.Contains(tools, "open_session") {
		t.Fatalf("the agent's tools after the refresh: %s", tools)
	}

	// The person revokes the grant from the Keys page, where the host's name says
	// which it is.
	row := `//tr[td[contains(., "connected from the host SDK host")]]`
	do(chromedp.Navigate(base+"/app/keys"), chromedp.WaitVisible(chromedp.Search(row+`//button`)))
	screenshot(t, ctx, "23-console-keys-oauth-grant")
	do(chromedp.Click(chromedp.Search(row+`//button`)), chromedp.WaitVisible(chromedp.Search(row+`/td[contains(., "revoked")]`)))
	io.WriteString(stdin, "revoked\n")
	// The MCP server's 401 sends the SDK to refresh, which the revoked grant refuses.
	if refused := fmt.Sprint(next("refused")); !strings.Contains(refused, "InvalidGrantError") && !strings.Contains(refused, "Unauthorized") {
		t.Fatalf("after revocation the host was told: %s", refused)
	}
	for _, p := range problems() {
		t.Errorf("console: %s", p)
	}
}
