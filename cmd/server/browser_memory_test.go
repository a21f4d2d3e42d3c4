package main

import (
	"os"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestBrowserSavesAValueAndALaterSessionUsesItWithoutAsking walks memory end to end
// on the real server: an agent asks for a missing email; the person provides it on
// the page, saves it for next time and lets agents use it without asking. A later
// session resolves the site's email field to a handle that needs no approval, its
// ask_before_use is approved at once, and materialize returns the value to the agent,
// which no other answer ever held.
func TestBrowserSavesAValueAndALaterSessionUsesItWithoutAsking(t *testing.T) {
	t.Parallel()
	chromium := tool(t, "chromium", "/usr/bin/chromium", "/usr/bin/chromium-browser")
	dbURL := demoDatabase(t)
	userKey, agentKey := apiKeys(t, dbURL)
	srv := startServer(t, map[string]string{"DATABASE_URL": dbURL})
	if err := os.MkdirAll(browserOutput, 0o755); err != nil {
		t.Fatal(err)
	}
	const email = "canary.saved@example.org"

	call := agentCall(t, srv.base, agentKey, func(method, path string, raw []byte) {
		if strings.Contains(string(raw), email) && !strings.HasSuffix(path, "/materialize") {
			t.Errorf("%s %s answered the value", method, path)
		}
	})
	type idStatus struct {
		ID             string `json:"id"`
		Status         string `json:"status"`
		ResolutionPath string `json:"resolutionPath"`
		ApprovalURL    string `json:"approvalUrl"`
	}

	// First session: the agent lacks the email.
	var s1 idStatus
	if code := call("POST", "/sessions", `{"type":"checkout","description":"Order a rain forecast","clientSessionId":"m1"}`, &s1); code != 201 {
		t.Fatalf("session: %d", code)
	}
	var req idStatus
	if code := call("POST", "/sessions/"+s1.ID+"/requests", `{"clientRequestId":"r1","kind":"provide_missing",
		"context":{"url":"https://rain.example/checkout","merchantName":"Rain","reason":"The receipt goes by email"},
		"fields":[{"key":"email","label":"Email","type":"email"}]}`, &req); code != 201 {
		t.Fatalf("request: %d", code)
	}

	ctx, problems := startBrowser(t, chromium)
	do := func(actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, actions...); err != nil {
			t.Fatal(err)
		}
	}
	do(chromedp.Navigate(srv.base + req.ApprovalURL))
	do(chromedp.WaitVisible(chromedp.CSS("#key")), chromedp.SendKeys(chromedp.CSS("#key"), userKey), chromedp.Submit(chromedp.CSS("#key")))
	do(chromedp.WaitVisible(chromedp.CSS("#field-email")), chromedp.SendKeys(chromedp.CSS("#field-email"), email))
	do(chromedp.Click(chromedp.CSS("#save")), chromedp.Click(chromedp.CSS("#ask-before-use")))
	screenshot(t, ctx, "9-save-for-next-time")
	do(chromedp.Click(chromedp.CSS(`button[value="approve"]`)), chromedp.WaitVisible(chromedp.CSS(`#status[data-status="fulfilled"]`)))
	html, err := chromedp.Run(ctx, chromedp.OuterHTML(chromedp.CSS("html")))
	if err != nil || strings.Contains(html, email) {
		t.Errorf("the page after approval shows the value (%v)", err)
	}

	// A later session: the saved email is a handle that needs no approval.
	var s2 idStatus
	call("POST", "/sessions", `{"type":"checkout","description":"Order another forecast","clientSessionId":"m2"}`, &s2)
	var res struct {
		Fields []struct {
			Key        string
			Candidates []struct {
				Handle           string
				RequiresApproval bool
			}
		}
		Missing    []string
		NextAction string
	}
	if code := call("POST", "/sessions/"+s2.ID+"/resolve", `{"targetUrl":"https://rain.example/checkout","fields":[{"key":"email","type":"email"}]}`, &res); code != 200 ||
		len(res.Fields) != 1 || len(res.Fields[0].Candidates) != 1 || res.Fields[0].Candidates[0].RequiresApproval || res.NextAction != "ask_before_use" {
		t.Fatalf("resolve: %d %+v", code, res)
	}
	handle := res.Fields[0].Candidates[0].Handle
	var use idStatus
	call("POST", "/sessions/"+s2.ID+"/requests", `{"clientRequestId":"u1","kind":"ask_before_use","fields":[{"key":"email","label":"Email","handle":"`+handle+`"}],"params":{"purpose":"the receipt"}}`, &use)
	if use.Status != "fulfilled" || use.ResolutionPath != "auto" {
		t.Fatalf("ask_before_use: %+v", use)
	}
	var mat struct {
		Values []struct {
			Handle, Status string
			Value          *string
		}
	}
	if code := call("POST", "/sessions/"+s2.ID+"/materialize", `{"handles":["`+handle+`"],"purpose":"fill the receipt email"}`, &mat); code != 200 ||
		len(mat.Values) != 1 || mat.Values[0].Value == nil || *mat.Values[0].Value != email {
		t.Fatalf("materialize: %d %+v", code, mat)
	}
	for _, p := range problems() {
		t.Errorf("console: %s", p)
	}
}
