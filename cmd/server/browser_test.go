package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// browserOutput is where the browser test leaves its screenshots (var/ is ignored).
var browserOutput = filepath.Join("..", "..", "var", "test-output", "browser")

// TestBrowserWalksFromTheHomePageToAMethodAndSearches drives headless Chromium
// through the pages the live service generated, as a person would: home, a category,
// a method, a search. Any console error fails it; screenshots are saved.
func TestBrowserWalksFromTheHomePageToAMethodAndSearches(t *testing.T) {
	t.Parallel()
	chromium := tool(t, "chromium", "/usr/bin/chromium", "/usr/bin/chromium-browser")
	srv := startServer(t, map[string]string{})
	if err := os.MkdirAll(browserOutput, 0o755); err != nil {
		t.Fatal(err)
	}

	ctx, problems := startBrowser(t, chromium)

	shot := func(name string) { t.Helper(); screenshot(t, ctx, name) }
	text := func(sel string) string { t.Helper(); return textOf(t, ctx, sel) }
	// waitPath waits for the page a click or a submit leads to: polling from Go, since
	// the page's JavaScript context is replaced while it navigates.
	waitPath := func(prefix string) {
		t.Helper()
		for deadline := time.Now().Add(15 * time.Second); ; {
			loc, err := chromedp.Run(ctx, chromedp.Location())
			if err == nil && strings.HasPrefix(strings.TrimPrefix(loc, srv.base), prefix) {
				state, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.readyState`))
				if err == nil && state == "complete" {
					return
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("waiting for %s: at %s (%v)", prefix, loc, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	// Home: the search box, the categories with counts, the best methods.
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.base+"/"), chromedp.WaitVisible(chromedp.CSS("h1"))); err != nil {
		t.Fatal(err)
	}
	if h1 := text("h1"); h1 != "Sellers for AI agents" {
		t.Fatalf("home h1 %q", h1)
	}
	if title, _ := chromedp.Run(ctx, chromedp.Title()); !strings.Contains(title, "Waystation") {
		t.Errorf("home title %q", title)
	}
	category := text(`nav[aria-label="Categories"] li:first-child a`)
	if !strings.Contains(category, "(") {
		t.Errorf("category link %q shows no count", category)
	}
	shot("1-home")

	// A category: its heading is the link's label, its methods are listed.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`nav[aria-label="Categories"] li:first-child a`))); err != nil {
		t.Fatal(err)
	}
	waitPath("/categories/")
	if h1 := text("h1"); !strings.HasPrefix(category, h1+" (") {
		t.Errorf("category page h1 %q after following %q", h1, category)
	}
	method := text("ol.methods li:first-child h3 a")
	shot("2-category")

	// A method: its name, the trust block in words, how to call it.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("ol.methods li:first-child h3 a"))); err != nil {
		t.Fatal(err)
	}
	waitPath("/methods/")
	if h1 := text("h1"); h1 != method {
		t.Errorf("method page h1 %q after following %q", h1, method)
	}
	trust := text("section.trust")
	for _, want := range []string{"Trust", "Score", "Operator override", "never authorises a payment"} {
		if !strings.Contains(trust, want) {
			t.Errorf("trust block lacks %q: %s", want, trust)
		}
	}
	if h := text("#guidance"); h != "How to call it" {
		t.Errorf("guidance heading %q", h)
	}
	shot("3-method")

	// A search from the header's box.
	if err := chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS("#q"), "ethereum block height"),
		chromedp.Submit(chromedp.CSS("form.search")),
	); err != nil {
		t.Fatal(err)
	}
	waitPath("/search")
	if h1 := text("h1"); h1 != "Results for “ethereum block height”" {
		t.Errorf("search h1 %q", h1)
	}
	if status := text(`[role="status"]`); !strings.Contains(status, "found") {
		t.Errorf("search status %q", status)
	}
	if first := text("ol.methods li:first-child h3 a"); first != "Latest block number" {
		t.Errorf("first search result %q", first)
	}
	if v, _ := chromedp.Run(ctx, chromedp.Value(chromedp.CSS("#q"))); v != "ethereum block height" {
		t.Errorf("search box holds %q", v)
	}
	shot("4-search")

	// A merchant's page: the probes as a chart, and, on a phone, nothing wider than the screen.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`ol.methods li:first-child a[href^="/merchants/"]`))); err != nil {
		t.Fatal(err)
	}
	waitPath("/merchants/")
	if trust := text("section.trust"); !strings.Contains(trust, "band") && !strings.Contains(trust, "operator") && !strings.Contains(trust, "probe") {
		t.Errorf("the merchant's trust block does not say what decided its verdict: %s", trust)
	}
	shot("4b-merchant")
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844)); err != nil {
		t.Fatal(err)
	}
	if wide, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.documentElement.scrollWidth > window.innerWidth`)); err != nil || wide {
		t.Errorf("the merchant page is wider than a phone's screen (%v)", err)
	}
	shot("4c-merchant-phone")
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 900)); err != nil {
		t.Fatal(err)
	}

	for _, p := range problems() {
		t.Errorf("console: %s", p)
	}
}

// TestBrowserApprovesAnAgentsRequestForAValueTheAgentNeverSees walks the approval
// flow end to end on the real server: an agent raises a provide_missing request and
// long-polls it; a person opens the approval link in Chromium, is refused with the
// agent's key, signs in with their user key, types the value and approves. The
// agent's poll wakes with the request fulfilled, and its claim yields a handle, never
// the value. Any console error other than the refused sign-in's 403 fails it.
func TestBrowserApprovesAnAgentsRequestForAValueTheAgentNeverSees(t *testing.T) {
	t.Parallel()
	chromium := tool(t, "chromium", "/usr/bin/chromium", "/usr/bin/chromium-browser")
	dbURL := demoDatabase(t)
	userKey, agentKey := apiKeys(t, dbURL)
	srv := startServer(t, map[string]string{"DATABASE_URL": dbURL})
	if err := os.MkdirAll(browserOutput, 0o755); err != nil {
		t.Fatal(err)
	}
	const email = "canary.person@example.org"

	// The agent opens a session and asks for the missing email.
	call := agentCall(t, srv.base, agentKey, func(method, path string, raw []byte) {
		if strings.Contains(string(raw), email) {
			t.Errorf("%s %s answered the provided value", method, path)
		}
	})
	var sess struct{ ID string }
	if code := call("POST", "/sessions", `{"type":"checkout","description":"Order a rain forecast","clientSessionId":"b1"}`, &sess); code != 201 {
		t.Fatalf("create session: %d", code)
	}
	var req struct {
		ID          string `json:"id"`
		Status      string `json:"status"`
		ApprovalURL string `json:"approvalUrl"`
	}
	if code := call("POST", "/sessions/"+sess.ID+"/requests", `{"clientRequestId":"r1","kind":"provide_missing",
		"context":{"url":"https://rain.example/checkout","pageTitle":"Checkout","merchantName":"Rain","reason":"The checkout needs an email for the receipt"},
		"fields":[{"key":"email","label":"Email","type":"email"}]}`, &req); code != 201 || req.Status != "waiting_user" {
		t.Fatalf("create request: %d %+v", code, req)
	}
	approval := req.ApprovalURL
	if !strings.HasPrefix(approval, "http") {
		approval = srv.base + approval
	}
	ctx, problems := startBrowser(t, chromium)
	shot := func(name string) { t.Helper(); screenshot(t, ctx, name) }
	text := func(sel string) string { t.Helper(); return textOf(t, ctx, sel) }
	// waitFor waits for the page a submit leads to, by a selector only it has.
	waitFor := func(sel string) {
		t.Helper()
		if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(sel))); err != nil {
			t.Fatalf("waiting for %s: %v", sel, err)
		}
	}

	// The link alone shows nothing but the sign-in form.
	if err := chromedp.Do(ctx, chromedp.Navigate(approval)); err != nil {
		t.Fatal(err)
	}
	waitFor("#key")
	if h1 := text("h1"); h1 != "Sign in to decide" {
		t.Fatalf("approval link h1 %q", h1)
	}
	shot("5-sign-in")

	// The agent's own key is refused.
	if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS("#key"), agentKey), chromedp.Submit(chromedp.CSS("#key"))); err != nil {
		t.Fatal(err)
	}
	waitFor(`[role="alert"]`)
	if msg := text(`[role="alert"]`); !strings.Contains(msg, "Agent keys cannot sign in") {
		t.Fatalf("agent key: %q", msg)
	}
	shot("6-agent-key-refused")

	// The user's key leads back to the request.
	if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS("#key"), userKey), chromedp.Submit(chromedp.CSS("#key"))); err != nil {
		t.Fatal(err)
	}
	waitFor("#field-email")
	page := text("main")
	for _, want := range []string{"Provide missing details", "scout", "Order a rain forecast", "The checkout needs an email for the receipt", "Rain", "Expires"} {
		if !strings.Contains(page, want) {
			t.Errorf("request page lacks %q", want)
		}
	}
	if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS("#field-email"), email)); err != nil {
		t.Fatal(err)
	}
	shot("7-request")
	// The agent long-polls the request while the person decides; started here, not
	// before the sign-in, so that a slow browser cannot outlast its wait.
	polled := make(chan string, 1)
	go func() {
		var out struct{ Status string }
		call("GET", "/sessions/"+sess.ID+"/requests/"+req.ID+"?wait=30", "", &out)
		polled <- out.Status
	}()
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`button[value="approve"]`))); err != nil {
		t.Fatal(err)
	}
	waitFor(`#status[data-status="fulfilled"]`)
	if loc, _ := chromedp.Run(ctx, chromedp.Location()); loc != approval || strings.Contains(loc, "canary") {
		t.Errorf("after approval at %s", loc)
	}
	html, err := chromedp.Run(ctx, chromedp.OuterHTML(chromedp.CSS("html")))
	if err != nil || strings.Contains(html, email) {
		t.Errorf("the page after approval shows the value (%v)", err)
	}
	shot("8-approved")

	// The agent's poll wakes; its claim holds a handle and no value.
	select {
	case status := <-polled:
		if status != "fulfilled" {
			t.Errorf("long poll answered %q", status)
		}
	case <-time.After(35 * time.Second):
		t.Fatal("the long poll did not answer")
	}
	var claim struct {
		Type      string `json:"type"`
		Reference struct {
			Handles []struct {
				FieldKey string `json:"fieldKey"`
				Handle   string `json:"handle"`
			} `json:"handles"`
		} `json:"reference"`
	}
	if code := call("POST", "/sessions/"+sess.ID+"/requests/"+req.ID+"/claim", "", &claim); code != 200 || claim.Type != "reference" ||
		len(claim.Reference.Handles) != 1 || claim.Reference.Handles[0].FieldKey != "email" || !strings.HasPrefix(claim.Reference.Handles[0].Handle, "wh_") {
		t.Errorf("claim: %d %+v", code, claim)
	}

	for _, p := range problems() {
		// The refused sign-in answers 403, which the browser reports.
		if strings.Contains(p, "status of 403") && strings.Contains(p, "/app/sign-in") {
			continue
		}
		t.Errorf("console: %s", p)
	}
}

// screenshot saves the whole page as browserOutput/name.png.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(browserOutput, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// textOf is the trimmed text of the first element sel selects.
func textOf(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("text of %s: %v", sel, err)
	}
	return strings.TrimSpace(s)
}

// browserDirs makes the directories of one Chromium run under one directory, removed
// after the test once the browser is gone: its profile, and the temporary directory it
// is given (TMPDIR). Chromium makes the directory of its single-instance socket
// (org.chromium.Chromium.*) in the temporary directory and leaves it behind when the
// test ends it; left in the system's, one would gather there per run. Its helper
// processes may write to the profile for a moment after the browser exits, so removal
// is retried; a directory left behind is logged, not a failure of the test.
func browserDirs(t *testing.T) (profile, tmp string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "waystation-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for range 30 {
			if os.RemoveAll(dir) == nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Logf("the browser's directory %s was left behind", dir)
	})
	profile, tmp = filepath.Join(dir, "profile"), filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	return profile, tmp
}

// startBrowser starts headless Chromium with a phone-sized window, listening to its
// console before the first page loads; problems returns the errors seen so far.
func startBrowser(t *testing.T, chromium string) (ctx context.Context, problems func() []string) {
	t.Helper()
	profile, tmp := browserDirs(t)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(profile),
		chromedp.Env("TMPDIR=" + tmp),
		chromedp.WindowSize(412, 915),
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	ctx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(cancelAlloc)
	ctx, cancelTab := chromedp.NewContext(ctx)
	t.Cleanup(cancelTab)
	if err := chromedp.Do(ctx); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var seen []string
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.IsException() {
				mu.Lock()
				seen = append(seen, m.String()+" at "+m.URL)
				mu.Unlock()
			}
		}
	}()
	return ctx, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(seen)
	}
}
