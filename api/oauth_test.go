package api_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/waystation/waystation/api"
	"github.com/waystation/waystation/api/openapitest"
	"github.com/waystation/waystation/internal/auth"
	"github.com/waystation/waystation/internal/clientip"
	"github.com/waystation/waystation/internal/oauth"
	"github.com/waystation/waystation/internal/postgres"
	"github.com/waystation/waystation/internal/ratelimit"
)

// The resources of the test server, which httptest's requests address as
// example.com.
const (
	mcpResource  = "http://example.com" + base + "/mcp"
	apiResource  = "http://example.com" + base
	hostRedirect = "http://127.0.0.1:7777/callback"
	verifier     = "a-verifier-of-more-than-forty-three-characters-0123456789"
)

// root answers a request of path at the origin's root (outside the API's base).
func (e *authEnv) root(method, path string) response {
	e.t.Helper()
	req := httptest.NewRequest(method, path, nil)
	rec := httptest.NewRecorder()
	e.srv.ServeHTTP(rec, req)
	res := rec.Result()
	res.Request = req
	b, _ := io.ReadAll(res.Body)
	return response{res, b}
}

// form posts values to an OAuth endpoint as a form.
func (e *authEnv) form(path string, v url.Values) response {
	e.t.Helper()
	return e.call("POST", path, "", v.Encode(), "Content-Type", "application/x-www-form-urlencoded")
}

// oauthError fails unless r is an RFC 6749 error of status and code.
func (r response) oauthError(t *testing.T, status int, code string) {
	t.Helper()
	var e struct{ Error string }
	json.Unmarshal(r.body, &e)
	if r.StatusCode != status || e.Error != code {
		t.Fatalf("%s %s: %d %s, want %d error %q", r.Request.Method, r.Request.URL.Path, r.StatusCode, r.body, status, code)
	}
}

// register registers a host with redirect URIs and answers its client_id.
func (e *authEnv) register(uris ...string) string {
	e.t.Helper()
	b, _ := json.Marshal(map[string]any{"client_name": "Test host", "redirect_uris": uris})
	return e.call("POST", "/oauth/register", "", string(b)).want(e.t, 201).decode(e.t)["client_id"].(string)
}

// authorizeQuery is a valid authorization request of client.
func authorizeQuery(client string) url.Values {
	return url.Values{"response_type": {"code"}, "client_id": {client}, "redirect_uri": {hostRedirect}, "state": {"st-1"},
		"code_challenge": {oauth.S256(verifier)}, "code_challenge_method": {"S256"}, "scope": {"agent"}}
}

// authorize sends q to the authorization endpoint and answers where it sends the
// browser.
func (e *authEnv) authorize(q url.Values) (int, *url.URL) {
	e.t.Helper()
	r := e.call("GET", "/oauth/authorize?"+q.Encode(), "", "")
	loc, _ := url.Parse(r.Header.Get("Location"))
	return r.StatusCode, loc
}

// consent runs an authorization request of client through the person's approval,
// as agentID of userID, and answers the code the host gets.
func (e *authEnv) consent(q url.Values, userID, agentID string) string {
	e.t.Helper()
	status, loc := e.authorize(q)
	if status != http.StatusSeeOther || !strings.HasPrefix(loc.Path, "/app/oauth/") {
		e.t.Fatalf("authorize: %d to %v, want 303 to the consent page", status, loc)
	}
	to, err := e.oauth.Approve(context.Background(), userID, strings.TrimPrefix(loc.Path, "/app/oauth/"), agentID)
	if err != nil {
		e.t.Fatal(err)
	}
	back, _ := url.Parse(to)
	if back.Scheme+"://"+back.Host+back.Path != hostRedirect || back.Query().Get("state") != "st-1" {
		e.t.Fatalf("approval sends the browser to %s", to)
	}
	return back.Query().Get("code")
}

// exchange is the token request of code.
func exchange(client, code string) url.Values {
	return url.Values{"grant_type": {"authorization_code"}, "code": {code}, "client_id": {client}, "redirect_uri": {hostRedirect}, "code_verifier": {verifier}}
}

// tokens answers the tokens of a successful token request.
func (e *authEnv) tokens(v url.Values) oauth.Tokens {
	e.t.Helper()
	var t oauth.Tokens
	r := e.form("/oauth/token", v).want(e.t, 200)
	if err := json.Unmarshal(r.body, &t); err != nil || t.AccessToken == "" || t.RefreshToken == "" || t.TokenType != "Bearer" {
		e.t.Fatalf("token answer %s", r.body)
	}
	return t
}

// hostEnv is a server with a person, their agent and a registered host.
func hostEnv(t *testing.T) (e *authEnv, userID, agentID, client string) {
	e = newAuthEnv(t)
	userID, _ = e.user("ada")
	agentID, _ = e.agent(userID, "scout")
	return e, userID, agentID, e.register(hostRedirect)
}

// mcpTools lists the MCP tools token sees; status is the answer's.
func (e *authEnv) mcpTools(token string) (int, string, string) {
	e.t.Helper()
	r := e.call("POST", "/mcp", token, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, "Accept", "application/json, text/event-stream")
	return r.StatusCode, string(r.body), r.Header.Get("WWW-Authenticate")
}

func TestOAuthMetadataNamesTheAuthorizationServerAndEachResource(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	var prm struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
		ScopesSupported      []string `json:"scopes_supported"`
	}
	for path, want := range map[string]string{"/.well-known/oauth-protected-resource" + base + "/mcp": mcpResource, "/.well-known/oauth-protected-resource" + base: apiResource} {
		r := e.root("GET", path).want(t, 200)
		json.Unmarshal(r.body, &prm)
		if prm.Resource != want || len(prm.AuthorizationServers) != 1 || prm.AuthorizationServers[0] != "http://example.com" || strings.Join(prm.ScopesSupported, " ") != "agent" {
			t.Errorf("%s: %s", path, r.body)
		}
		if r.Header.Get("Access-Control-Allow-Origin") != "*" {
			t.Errorf("%s: a browser host cannot read it", path)
		}
	}
	var as map[string]any
	json.Unmarshal(e.root("GET", "/.well-known/oauth-authorization-server").want(t, 200).body, &as)
	for k, v := range map[string]any{"issuer": "http://example.com", "authorization_endpoint": apiResource + "/oauth/authorize", "token_endpoint": apiResource + "/oauth/token",
		"registration_endpoint": apiResource + "/oauth/register", "revocation_endpoint": apiResource + "/oauth/revoke"} {
		if as[k] != v {
			t.Errorf("%s = %v, want %v", k, as[k], v)
		}
	}
	if m, _ := json.Marshal(as["code_challenge_methods_supported"]); string(m) != `["S256"]` {
		t.Errorf("code_challenge_methods_supported = %s, want S256 alone", m)
	}
}

// An MCP host that calls without a valid token learns where to sign in.
func TestMCP401sNameTheResourceMetadataAndTheScope(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	want := `Bearer realm="api", resource_metadata="http://example.com/.well-known/oauth-protected-resource` + base + `/mcp", scope="agent", error="invalid_token"`
	for _, token := range []string{"sk_agent_nonsense", "wsat_made-up"} {
		status, _, challenge := e.mcpTools(token)
		if status != 401 || challenge != want {
			t.Errorf("%s: %d %q, want 401 %q", token, status, challenge, want)
		}
	}
}

// A host registers, the person approves it as their agent, and its token acts as
// that agent on the MCP server; a refreshed token keeps working.
func TestAHostSignsInAndActsAsTheAgent(t *testing.T) {
	t.Parallel()
	e, uid, aid, client := hostEnv(t)
	tok := e.tokens(exchange(client, e.consent(authorizeQuery(client), uid, aid)))
	if tok.Scope != "agent" || tok.ExpiresIn <= 0 {
		t.Errorf("token answer %+v", tok)
	}
	status, body, _ := e.mcpTools(tok.AccessToken)
	if status != 200 || !strings.Contains(body, `"open_session"`) {
		t.Fatalf("tools/list with the access token: %d %s", status, body)
	}
	out, failure := e.toolCall(t, tok.AccessToken, "open_session", `{"type":"checkout","description":"buy a map","clientSessionId":"oauth-1"}`)
	if failure != "" {
		t.Fatalf("open_session: %s", failure)
	}
	_, agentKey := e.agent(uid, "scout") // the agent's own key sees the session its host opened
	e.call("GET", "/sessions/"+out["id"].(string), agentKey, "").want(t, 200)

	next := e.tokens(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok.RefreshToken}, "client_id": {client}})
	if status, body, _ := e.mcpTools(next.AccessToken); status != 200 || !strings.Contains(body, `"open_session"`) {
		t.Fatalf("tools/list with the refreshed token: %d %s", status, body)
	}
}

func TestMadeUpCodesAndWrongVerifiersAreInvalidGrants(t *testing.T) {
	t.Parallel()
	e, uid, aid, client := hostEnv(t)
	e.form("/oauth/token", exchange(client, "wsac_made-up")).oauthError(t, 400, "invalid_grant")

	code := e.consent(authorizeQuery(client), uid, aid)
	wrong := exchange(client, code)
	wrong.Set("code_verifier", strings.Repeat("x", 43))
	e.form("/oauth/token", wrong).oauthError(t, 400, "invalid_grant")
	// The code was spent by the wrong guess: a stolen code gets one.
	e.form("/oauth/token", exchange(client, code)).oauthError(t, 400, "invalid_grant")
}

// A code used twice is refused, and what its first use got is revoked: one of the
// two holders stole it.
func TestACodeUsedTwiceIsRefusedAndRevokesItsFirstTokens(t *testing.T) {
	t.Parallel()
	e, uid, aid, client := hostEnv(t)
	code := e.consent(authorizeQuery(client), uid, aid)
	first := e.tokens(exchange(client, code))
	e.form("/oauth/token", exchange(client, code)).oauthError(t, 400, "invalid_grant")
	if status, body, _ := e.mcpTools(first.AccessToken); status != 401 {
		t.Fatalf("the first use's token after a replay: %d %s", status, body)
	}
	e.form("/oauth/token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {first.RefreshToken}, "client_id": {client}}).oauthError(t, 400, "invalid_grant")
}

// A redirect URI the client did not register gets no redirect at all; at the token
// endpoint, one other than the code's is an invalid grant; another client's code is
// too.
func TestForeignRedirectURIsAreRefused(t *testing.T) {
	t.Parallel()
	e, uid, aid, client := hostEnv(t)
	q := authorizeQuery(client)
	q.Set("redirect_uri", "https://evil.example/callback")
	if status, loc := e.authorize(q); status != 400 || loc.String() != "" {
		t.Fatalf("a foreign redirect URI: %d to %v, want 400 and no redirect", status, loc)
	}
	q.Set("redirect_uri", hostRedirect+"/more") // a prefix is not a match
	if status, loc := e.authorize(q); status != 400 || loc.String() != "" {
		t.Fatalf("a longer redirect URI: %d to %v, want 400 and no redirect", status, loc)
	}

	code := e.consent(authorizeQuery(client), uid, aid)
	other := e.register("https://other.example/cb", hostRedirect)
	e.form("/oauth/token", exchange(other, code)).oauthError(t, 400, "invalid_grant")

	code = e.consent(authorizeQuery(client), uid, aid)
	v := exchange(client, code)
	v.Set("redirect_uri", "http://127.0.0.1:7777/elsewhere")
	e.form("/oauth/token", v).oauthError(t, 400, "invalid_grant")

	for _, uri := range []string{"http://evil.example/cb", "https://host.example/cb#frag", "javascript:alert(1)", "https://user@host.example/cb", "/relative"} {
		b, _ := json.Marshal(map[string]any{"client_name": "x", "redirect_uris": []string{uri}})
		e.call("POST", "/oauth/register", "", string(b)).oauthError(t, 400, "invalid_redirect_uri")
	}
	e.call("POST", "/oauth/register", "", `{"redirect_uris":["https://a.example/1","https://a.example/2","https://a.example/3","https://a.example/4","https://a.example/5","https://a.example/6"]}`).
		oauthError(t, 400, "invalid_redirect_uri")
	e.call("POST", "/oauth/register", "", `{"redirect_uris":["https://a.example/1"],"token_endpoint_auth_method":"client_secret_basic"}`).
		oauthError(t, 400, "invalid_client_metadata")
}

// PKCE is S256 or nothing: plain, or no challenge, goes back as invalid_request.
func TestAuthorizationWithoutS256IsRefused(t *testing.T) {
	t.Parallel()
	e, _, _, client := hostEnv(t)
	for _, change := range []func(url.Values){
		func(q url.Values) { q.Set("code_challenge_method", "plain") },
		func(q url.Values) { q.Del("code_challenge"); q.Del("code_challenge_method") },
	} {
		q := authorizeQuery(client)
		change(q)
		status, loc := e.authorize(q)
		if status != http.StatusFound || loc.Query().Get("error") != "invalid_request" || loc.Query().Get("state") != "st-1" {
			t.Errorf("%v: %d to %v", q, status, loc)
		}
	}
}

// A token is bound to the resource the person approved it for: the API's is refused
// on the MCP server and the MCP server's on the API; a resource not ours is refused
// at both endpoints.
func TestTokensForAnotherResourceAreRefused(t *testing.T) {
	t.Parallel()
	e, uid, aid, client := hostEnv(t)
	q := authorizeQuery(client)
	q.Set("resource", apiResource)
	api := e.tokens(exchange(client, e.consent(q, uid, aid)))
	e.call("GET", "/agent/me", api.AccessToken, "").want(t, 200)
	if status, body, _ := e.mcpTools(api.AccessToken); status != 401 {
		t.Fatalf("the API's token on the MCP server: %d %s", status, body)
	}
	mcp := e.tokens(exchange(client, e.consent(authorizeQuery(client), uid, aid)))
	e.call("GET", "/agent/me", mcp.AccessToken, "").want(t, 401, "invalid_api_key")

	q.Set("resource", "https://other.example/mcp")
	if status, loc := e.authorize(q); status != http.StatusFound || loc.Query().Get("error") != "invalid_target" {
		t.Fatalf("another server's resource: %d to %v", status, loc)
	}
	v := exchange(client, e.consent(authorizeQuery(client), uid, aid))
	v.Set("resource", apiResource) // the code is the MCP server's
	e.form("/oauth/token", v).oauthError(t, 400, "invalid_target")
	refresh := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {mcp.RefreshToken}, "client_id": {client}, "resource": {apiResource}}
	e.form("/oauth/token", refresh).oauthError(t, 400, "invalid_target")
}

// A refresh token rotates; presenting a spent one revokes the whole grant, the
// tokens its rotation gave included.
func TestARefreshTokenReplayedAfterRotationRevokesTheGrant(t *testing.T) {
	t.Parallel()
	e, uid, aid, client := hostEnv(t)
	first := e.tokens(exchange(client, e.consent(authorizeQuery(client), uid, aid)))
	refresh := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {first.RefreshToken}, "client_id": {client}}
	second := e.tokens(refresh)
	e.form("/oauth/token", refresh).oauthError(t, 400, "invalid_grant")
	if status, body, _ := e.mcpTools(second.AccessToken); status != 401 {
		t.Fatalf("the rotated token after a replay: %d %s", status, body)
	}
	e.form("/oauth/token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {second.RefreshToken}, "client_id": {client}}).oauthError(t, 400, "invalid_grant")
	// Another client cannot use a host's refresh token.
	third := e.tokens(exchange(client, e.consent(authorizeQuery(client), uid, aid)))
	other := e.register(hostRedirect)
	e.form("/oauth/token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {third.RefreshToken}, "client_id": {other}}).oauthError(t, 400, "invalid_grant")
}

// Revoking a token (RFC 7009) ends its grant at once: the next call on the MCP
// server is refused, and so is a refresh.
func TestARevokedTokenIsRefusedAtOnce(t *testing.T) {
	t.Parallel()
	e, uid, aid, client := hostEnv(t)
	tok := e.tokens(exchange(client, e.consent(authorizeQuery(client), uid, aid)))
	if status, body, _ := e.mcpTools(tok.AccessToken); status != 200 {
		t.Fatalf("before revocation: %d %s", status, body)
	}
	e.form("/oauth/revoke", url.Values{"token": {tok.AccessToken}, "client_id": {client}}).want(t, 200)
	if status, body, challenge := e.mcpTools(tok.AccessToken); status != 401 || !strings.Contains(challenge, `error="invalid_token"`) {
		t.Fatalf("after revocation: %d %s %s", status, body, challenge)
	}
	e.form("/oauth/token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok.RefreshToken}, "client_id": {client}}).oauthError(t, 400, "invalid_grant")
	// An unknown token is no error (RFC 7009, section 2.2).
	e.form("/oauth/revoke", url.Values{"token": {"wsat_unknown"}, "client_id": {client}}).want(t, 200)
}

// The person who revokes the grant's key on the console ends the host's tokens as
// they would a key's.
func TestRevokingTheGrantsKeyEndsItsTokens(t *testing.T) {
	t.Parallel()
	e, uid, aid, client := hostEnv(t)
	tok := e.tokens(exchange(client, e.consent(authorizeQuery(client), uid, aid)))
	kid := e.grantKID(uid)
	if err := e.store.RevokeKey(context.Background(), uid, "", kid); err != nil {
		t.Fatal(err)
	}
	if status, body, _ := e.mcpTools(tok.AccessToken); status != 401 {
		t.Fatalf("after the key's revocation: %d %s", status, body)
	}
}

// Exchanges of one code, or refreshes of one token, at once: exactly one wins; the
// code's loser is told it was used, and since one of the two holders stole it, what
// the winner got is revoked too.
func TestConcurrentUsesOfOneCodeOrRefreshTokenGetOneAnswer(t *testing.T) {
	t.Parallel()
	e, uid, aid, client := hostEnv(t)
	race := func(v url.Values) (ok []string) {
		var mu sync.Mutex
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				r := e.form("/oauth/token", v)
				if r.StatusCode == 200 {
					var tok oauth.Tokens
					json.Unmarshal(r.body, &tok)
					mu.Lock()
					ok = append(ok, tok.AccessToken)
					mu.Unlock()
				} else {
					r.oauthError(t, 400, "invalid_grant")
				}
			})
		}
		wg.Wait()
		return ok
	}
	won := race(exchange(client, e.consent(authorizeQuery(client), uid, aid)))
	if len(won) > 1 {
		t.Fatalf("%d exchanges of one code got tokens", len(won))
	}
	for _, tok := range won {
		if status, _, _ := e.mcpTools(tok); status != 401 {
			t.Fatalf("the winner of a replayed code keeps its token: %d", status)
		}
	}
	tok := e.tokens(exchange(client, e.consent(authorizeQuery(client), uid, aid)))
	if won := race(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok.RefreshToken}, "client_id": {client}}); len(won) != 1 {
		t.Fatalf("%d refreshes of one token got tokens", len(won))
	}
}

// The authorization server's answers, refusals included, are the document's.
func TestOAuthAnswersMatchTheOpenAPIDocument(t *testing.T) {
	t.Parallel()
	doc := openapitest.Load(t, "openapi.json")
	e, uid, aid, client := hostEnv(t)
	tok := e.tokens(exchange(client, e.consent(authorizeQuery(client), uid, aid)))
	check := func(r response) { t.Helper(); doc.CheckResponse(t, r.Request, r.Response, r.body) }
	check(e.call("POST", "/oauth/register", "", `{"client_name":"Doc host","redirect_uris":["https://host.example/cb"]}`))
	check(e.call("POST", "/oauth/register", "", `{"redirect_uris":["http://host.example/cb"]}`))
	check(e.call("POST", "/oauth/register", "", `not json`))
	check(e.form("/oauth/token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok.RefreshToken}, "client_id": {client}}))
	check(e.form("/oauth/token", exchange(client, "wsac_made-up")))
	check(e.form("/oauth/token", exchange("no-such-client", "wsac_made-up")))
	check(e.form("/oauth/token", url.Values{"grant_type": {"password"}, "client_id": {client}}))
	check(e.call("POST", "/oauth/token", "", `{"grant_type":"refresh_token"}`))
	check(e.form("/oauth/revoke", url.Values{"token": {tok.AccessToken}, "client_id": {client}}))
	check(e.form("/oauth/revoke", url.Values{"client_id": {client}}))
	check(e.call("GET", "/oauth/authorize?"+authorizeQuery(client).Encode(), "", ""))
	check(e.call("GET", "/oauth/authorize?client_id=nope", "", ""))
	check(e.call("GET", "/oauth/authorize?client_id=a&client_id=b", "", "").want(t, 400, "unknown_parameter"))
	// The grant is among the person's keys.
	keys := e.call("GET", "/keys", e.key(auth.ScopeUser, uid, ""), "").want(t, 200)
	check(keys)
	if !strings.Contains(string(keys.body), `"prefix":"oauth_`) {
		t.Errorf("the grant is not listed: %s", keys.body)
	}
}

// A grant is a key with no secret: its kid, sent as an agent key with any secret
// (all zeroes, whose hash nothing stores), is refused like any key that does not
// verify, on the API and on the MCP server.
func TestAGrantsKidIsNoKeyWhateverTheSecret(t *testing.T) {
	t.Parallel()
	e, uid, aid, client := hostEnv(t)
	e.tokens(exchange(client, e.consent(authorizeQuery(client), uid, aid)))
	kid := e.grantKID(uid)
	for _, secret := range []string{strings.Repeat("0", 64), strings.Repeat("f", 64)} {
		forged := "sk_agent_" + kid + "_" + secret
		if _, _, _, err := auth.Parse(forged); err != nil {
			t.Fatalf("the forged key is not even well formed: %v", err)
		}
		e.call("GET", "/agent/me", forged, "").want(t, 401)
		if status, body, _ := e.mcpTools(forged); status != 401 {
			t.Fatalf("tools/list with the grant's kid as a key: %d %s", status, body)
		}
	}
}

// grantKID is the kid of the grant a host got from the person userID, which their
// keys list as oauth_<kid>.
func (e *authEnv) grantKID(userID string) string {
	e.t.Helper()
	keys, err := e.store.Keys(context.Background(), userID)
	if err != nil {
		e.t.Fatal(err)
	}
	for _, k := range keys {
		if strings.HasPrefix(k.Prefix, "oauth_") {
			if k.Host != "Test host" {
				e.t.Errorf("the grant is listed for host %q, want the name it registered", k.Host)
			}
			return k.KID
		}
	}
	e.t.Fatalf("the grant is not among the person's keys: %+v", keys)
	return ""
}

// One address that registers hosts as fast as it can must not use up the day's
// registrations for everyone: past its own budget it is refused, and a host from
// another address still registers.
func TestOneAddressCannotUseUpTheDaysRegistrations(t *testing.T) {
	t.Parallel()
	proxies, _ := clientip.ParseProxies("192.0.2.1/32") // the test's peer, a proxy
	e := newAuthEnv(t, func(a *api.Authenticated) {
		a.OAuth = oauth.NewService(a.Idempotency.(*postgres.Store), a.Auth, oauth.Config{Pepper: []byte("test-pepper-of-at-least-32-bytes!!"),
			MaxClientsPerDay: 6, Registrations: ratelimit.NewLimiter(3.0/60, 3, 100, nil), TrustedProxies: proxies})
	})
	register := func(from string) response {
		return e.call("POST", "/oauth/register", "", `{"client_name":"Flood","redirect_uris":["`+hostRedirect+`"]}`, "X-Forwarded-For", from)
	}
	refused := 0
	for range 10 {
		if r := register("198.51.100.7"); r.StatusCode == http.StatusTooManyRequests {
			refused++
			if r.Header.Get("Retry-After") == "" {
				t.Fatalf("a refused registration without Retry-After: %s", r.body)
			}
		} else {
			r.want(t, 201)
		}
	}
	if refused != 7 {
		t.Errorf("the flooding address was refused %d times of 10, want 7 (a budget of 3)", refused)
	}
	register("203.0.113.9").want(t, 201)
}

// Every authorization response names its issuer (RFC 9207), as the metadata says it
// will, so that a host talking to several authorization servers cannot be sent a
// code from another one (a mix-up).
func TestAuthorizationResponsesNameTheirIssuer(t *testing.T) {
	t.Parallel()
	e, uid, aid, client := hostEnv(t)
	var as map[string]any
	json.Unmarshal(e.root("GET", "/.well-known/oauth-authorization-server").want(t, 200).body, &as)
	if as["authorization_response_iss_parameter_supported"] != true {
		t.Errorf("the metadata does not promise iss: %v", as)
	}
	status, loc := e.authorize(authorizeQuery(client))
	if status != http.StatusSeeOther {
		t.Fatalf("authorize: %d", status)
	}
	id := strings.TrimPrefix(loc.Path, "/app/oauth/")
	to, err := e.oauth.Approve(context.Background(), uid, id, aid)
	if err != nil {
		t.Fatal(err)
	}
	approved, _ := url.Parse(to)
	_, loc = e.authorize(authorizeQuery(client))
	to, err = e.oauth.Deny(context.Background(), strings.TrimPrefix(loc.Path, "/app/oauth/"))
	if err != nil {
		t.Fatal(err)
	}
	denied, _ := url.Parse(to)
	q := authorizeQuery(client)
	q.Set("code_challenge_method", "plain")
	_, refused := e.authorize(q)
	for name, u := range map[string]*url.URL{"approved": approved, "denied": denied, "refused": refused} {
		if u.Query().Get("iss") != as["issuer"] {
			t.Errorf("%s: %v, want iss=%v", name, u, as["issuer"])
		}
	}
}
