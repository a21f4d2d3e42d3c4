package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/webauthn"
	"github.com/chromedp/chromedp"
)

// agentCall is an agent's client of the API at base with key: it sends JSON, decodes
// the answer into out (when not nil) and returns the status. inspect, when not nil,
// sees every answer's bytes first, for the tests that check what an agent was told.
func agentCall(t *testing.T, base, key string, inspect func(method, path string, raw []byte)) func(method, path, body string, out any) int {
	return func(method, path, body string, out any) int {
		t.Helper()
		req, _ := http.NewRequest(method, base+"/functions/v1/api"+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			return 0
		}
		defer res.Body.Close()
		raw, _ := io.ReadAll(res.Body)
		if inspect != nil {
			inspect(method, path, raw)
		}
		if out != nil {
			if err := json.Unmarshal(raw, out); err != nil {
				t.Errorf("%s %s: %v: %s", method, path, err, raw)
			}
		}
		return res.StatusCode
	}
}

// virtualAuthenticator gives the tab a platform authenticator that holds passkeys and
// verifies its user without asking, as Chromium's WebAuthn testing API makes one.
func virtualAuthenticator(t *testing.T, ctx context.Context) webauthn.AuthenticatorID {
	t.Helper()
	id, err := chromedp.Run(ctx, func(ctx context.Context, tg *chromedp.Target) (webauthn.AuthenticatorID, error) {
		if _, err := cdp.Call(ctx, tg, webauthn.Enable, webauthn.EnableParams{}); err != nil {
			return "", err
		}
		res, err := cdp.Call(ctx, tg, webauthn.AddVirtualAuthenticator, webauthn.AddVirtualAuthenticatorParams{Options: &webauthn.VirtualAuthenticatorOptions{
			Protocol: webauthn.AuthenticatorProtocolCtap2, Ctap2version: webauthn.Ctap2versionCtap21, Transport: webauthn.AuthenticatorTransportInternal,
			HasResidentKey: true, HasUserVerification: true, IsUserVerified: true, AutomaticPresenceSimulation: true,
		}})
		return res.AuthenticatorID, err
	})
	if err != nil {
		t.Fatalf("virtual authenticator: %v", err)
	}
	return id
}

// TestBrowserSignsInWithAPasskeyAndApprovesFromTheConsole walks the person's side in
// Chromium with a virtual authenticator: sign in with the user key, issue a key on
// the console, register a passkey, sign out, sign in with the passkey alone, approve
// the agent's waiting request from the console's list, and see the approval on the
// session's timeline, while the agent's long poll wakes. Every console page it passes
// is saved as a screenshot; any console error fails it.
func TestBrowserSignsInWithAPasskeyAndApprovesFromTheConsole(t *testing.T) {
	t.Parallel()
	chromium := tool(t, "chromium", "/usr/bin/chromium", "/usr/bin/chromium-browser")
	dbURL := demoDatabase(t)
	userKey, agentKey := apiKeys(t, dbURL)
	srv := startServer(t, map[string]string{"DATABASE_URL": dbURL})
	if err := os.MkdirAll(browserOutput, 0o755); err != nil {
		t.Fatal(err)
	}
	// WebAuthn refuses IP addresses: the person browses http://localhost:PORT.
	base := strings.Replace(srv.base, "127.0.0.1", "localhost", 1)
	call := agentCall(t, srv.base, agentKey, nil)
	var sess, req struct{ ID, Status string }
	if code := call("POST", "/sessions", `{"type":"purchase","description":"Buy a tide table","clientSessionId":"p1"}`, &sess); code != 201 {
		t.Fatalf("session: %d", code)
	}
	if code := call("POST", "/sessions/"+sess.ID+"/requests", `{"clientRequestId":"c1","kind":"confirm",
		"context":{"url":"https://tide.example/buy","merchantName":"Tide","reason":"The table costs 2.50"},
		"params":{"summary":"Buy the tide table for 2.50 USDC","amount":"2.50","currency":"USDC","recipient":"tide.example"}}`, &req); code != 201 || req.Status != "waiting_user" {
		t.Fatalf("request: %d %+v", code, req)
	}
	polled := make(chan string, 1)
	go func() {
		var out struct{ Status string }
		call("GET", "/sessions/"+sess.ID+"/requests/"+req.ID+"?wait=30", "", &out)
		polled <- out.Status
	}()

	ctx, problems := startBrowser(t, chromium)
	authenticator := virtualAuthenticator(t, ctx)
	do := func(actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, actions...); err != nil {
			t.Fatalf("%v; console: %q", err, problems())
		}
	}
	shot := func(name string) { t.Helper(); screenshot(t, ctx, name) }
	text := func(sel string) string { t.Helper(); return textOf(t, ctx, sel) }

	// Sign in with the user key; the console's home lists the waiting request first.
	do(chromedp.Navigate(base+"/app/requests"), chromedp.WaitVisible(chromedp.CSS("#key")))
	do(chromedp.SendKeys(chromedp.CSS("#key"), userKey), chromedp.Submit(chromedp.CSS("#key")))
	do(chromedp.WaitVisible(chromedp.CSS(`a[href="/app/requests/` + req.ID + `"]`)))

	// Issue a user key for a script: shown once.
	do(chromedp.Navigate(base+"/app/keys"), chromedp.WaitVisible(chromedp.CSS("#key-for")))
	do(chromedp.Click(chromedp.CSS(`form[action="/app/keys"] button`)), chromedp.WaitVisible(chromedp.CSS("#new-key-token")))
	if token := text("#new-key-token"); !strings.HasPrefix(token, "sk_user_") || len(token) != len(userKey) {
		t.Errorf("the issued key: %q", token)
	}
	if wide, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.documentElement.scrollWidth > window.innerWidth`)); err != nil || wide {
		t.Errorf("the page with a new key is wider than the phone's screen (%v)", err)
	}
	shot("17-console-keys")

	// Register a passkey.
	do(chromedp.Navigate(base+"/app/passkeys"), chromedp.WaitVisible(chromedp.CSS("#passkey-name")))
	do(chromedp.SendKeys(chromedp.CSS("#passkey-name"), "Test laptop"), chromedp.Click(chromedp.CSS(`form[data-passkey="register"] button`)))
	do(chromedp.WaitVisible(chromedp.CSS(`tr[id^="passkey-"]`)))
	if row := text(`tr[id^="passkey-"]`); !strings.Contains(row, "Test laptop") {
		t.Errorf("the passkey row: %q", row)
	}
	creds, err := chromedp.Run(ctx, func(ctx context.Context, tg *chromedp.Target) (*webauthn.GetCredentialsResult, error) {
		res, err := cdp.Call(ctx, tg, webauthn.GetCredentials, webauthn.GetCredentialsParams{AuthenticatorID: authenticator})
		return &res, err
	})
	if err != nil || len(creds.Credentials) != 1 || creds.Credentials[0].RpID != "localhost" || !creds.Credentials[0].IsResidentCredential {
		t.Fatalf("the authenticator holds %+v (%v)", creds, err)
	}
	shot("18-console-passkeys")

	// Sign out, and back in with the passkey alone.
	do(chromedp.Click(chromedp.CSS(`form[action="/app/sign-out"] button`)), chromedp.WaitVisible(chromedp.CSS(`form[data-passkey="sign-in"] button`)))
	shot("19-sign-in-with-a-passkey")
	do(chromedp.Click(chromedp.CSS(`form[data-passkey="sign-in"] button`)), chromedp.WaitVisible(chromedp.CSS("#session-list")))
	if strip := text("nav.app"); !strings.Contains(strip, "Signed in with the passkey “Test laptop”") {
		t.Fatalf("after the passkey sign-in: %q", strip)
	}
	shot("20-console-home-waiting")

	// Approve the waiting request from the console's list.
	do(chromedp.Click(chromedp.CSS(`a[href="/app/requests/`+req.ID+`"]`)), chromedp.WaitVisible(chromedp.CSS(`button[value="approve"]`)))
	do(chromedp.Click(chromedp.CSS(`button[value="approve"]`)), chromedp.WaitVisible(chromedp.CSS(`#status[data-status="fulfilled"]`)))
	select {
	case status := <-polled:
		if status != "fulfilled" {
			t.Errorf("the agent's long poll answered %q", status)
		}
	case <-ctx.Done():
		t.Fatal("the long poll did not answer")
	}

	// The session's timeline shows the request approved and fulfilled.
	do(chromedp.Click(chromedp.CSS(`a[href="/app/sessions/`+sess.ID+`"]`)), chromedp.WaitVisible(chromedp.CSS("ol.timeline")))
	timeline := text("ol.timeline")
	for _, want := range []string{"waiting", "approved", "fulfilled"} {
		if !strings.Contains(timeline, want) {
			t.Errorf("the timeline lacks %q: %s", want, timeline)
		}
	}
	shot("21-console-session-timeline")

	for _, p := range problems() {
		t.Errorf("console: %s", p)
	}
}
