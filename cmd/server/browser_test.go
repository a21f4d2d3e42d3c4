package main

import (
	"context"
	"os"
	"path/filepath"
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
	chromium := tool(t, "chromium", "/usr/bin/chromium", "/usr/bin/chromium-browser")
	srv := startServer(t, map[string]string{})
	if err := os.MkdirAll(browserOutput, 0o755); err != nil {
		t.Fatal(err)
	}

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
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(412, 915),
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	ctx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelAlloc()
	ctx, cancelTab := chromedp.NewContext(ctx)
	defer cancelTab()

	// Start the browser, then listen to its console before the first page loads.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var problems []string
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.IsException() {
				mu.Lock()
				problems = append(problems, m.String()+" at "+m.URL)
				mu.Unlock()
			}
		}
	}()

	shot := func(name string) {
		t.Helper()
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(browserOutput, name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("text of %s: %v", sel, err)
		}
		return strings.TrimSpace(s)
	}
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

	mu.Lock()
	defer mu.Unlock()
	for _, p := range problems {
		t.Errorf("console: %s", p)
	}
}
