package main

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/waystation/waystation/internal/catalog"
	"github.com/waystation/waystation/internal/postgres"
	"github.com/waystation/waystation/internal/seller"
)

// signatureHex is what a 65-byte signature looks like in hex.
var signatureHex = regexp.MustCompile(`(?i)0x[0-9a-f]{130}`)

// TestBrowserAgentPaysASellerThePersonApproved walks a payment end to end on the
// real server and a local seller: the agent finds the seller in the directory, quotes
// it and asks to pay; the person approves in a browser; the service pays; the agent
// claims the seller's answer; the seller's stats move; the seller's ledger holds
// exactly one transfer of the approved amount to the approved payee; and no answer,
// log line, stored span or table holds the payer's key or a signature.
func TestBrowserAgentPaysASellerThePersonApproved(t *testing.T) {
	t.Parallel()
	chromium := tool(t, "chromium", "/usr/bin/chromium", "/usr/bin/chromium-browser")
	if err := os.MkdirAll(browserOutput, 0o755); err != nil {
		t.Fatal(err)
	}
	stack := startPayStack(t)
	srv, sel, dbURL, userKey, agentKey := stack.srv, stack.sel, stack.dbURL, stack.userKey, stack.agentKey

	var mu sync.Mutex
	var answers []string
	call := agentCall(t, srv.base, agentKey, func(method, path string, raw []byte) {
		mu.Lock()
		answers = append(answers, method+" "+path+": "+string(raw))
		mu.Unlock()
	})

	// The agent finds the seller in the directory.
	var list struct {
		Items []struct {
			Slug     string
			Endpoint struct{ URL string }
		}
	}
	if code := call("GET", "/api/public/v1/services?hostname=localhost", "", &list); code != 200 || len(list.Items) == 0 {
		t.Fatalf("the directory does not list the seller: %d %+v", code, list)
	}
	var endpoint string
	for _, it := range list.Items {
		if strings.HasSuffix(it.Endpoint.URL, "/v2/report") {
			endpoint = it.Endpoint.URL
		}
	}
	if endpoint == "" {
		t.Fatalf("no /v2/report among %+v", list.Items)
	}
	endpoint += "?topic=tides"
	// It quotes the seller, then asks to pay within what it allows.
	var q struct {
		Offer struct{ PayTo, Amount string }
		Debit struct{ Value *string }
	}
	if code := call("POST", "/tools/x402/quote", `{"url":"`+endpoint+`"}`, &q); code != 200 || q.Offer.Amount != "10000" || q.Debit.Value == nil || *q.Debit.Value != "0.01" {
		t.Fatalf("quote: %d %+v", code, q)
	}
	var s struct{ ID string }
	call("POST", "/sessions", `{"type":"purchase","description":"Buy a report on tides","clientSessionId":"pay-e2e"}`, &s)
	var asked struct {
		Request struct{ ID, ApprovalURL string }
		Payment struct{ ID string }
	}
	if code := call("POST", "/sessions/"+s.ID+"/x402/payments", `{"clientRequestId":"p1","maximumDebit":"0.02",
		"httpRequest":{"url":"`+endpoint+`"},"reason":"The report on tides you asked for"}`, &asked); code != 201 {
		t.Fatalf("ask: %d", code)
	}
	// The agent traces what it does, as an exporter would.
	span := `{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"4bf92f3577b34da6a3ce929d0e0e4736","spanId":"00f067aa0ba902b7",
		"name":"pay","startTimeUnixNano":"1","endTimeUnixNano":"2","attributes":[{"key":"workflow.session.id","value":{"stringValue":"` + s.ID + `"}},
		{"key":"http.url","value":{"stringValue":"` + endpoint + `"}}]}]}]}]}`
	if code := call("POST", "/traces", span, nil); code != 200 {
		t.Fatalf("traces: %d", code)
	}

	// The person approves in a browser.
	ctx, problems := startBrowser(t, chromium)
	do := func(actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, actions...); err != nil {
			t.Fatal(err)
		}
	}
	do(chromedp.Navigate(srv.base + asked.Request.ApprovalURL))
	do(chromedp.WaitVisible(chromedp.CSS("#key")), chromedp.SendKeys(chromedp.CSS("#key"), userKey), chromedp.Submit(chromedp.CSS("#key")))
	do(chromedp.WaitVisible(chromedp.CSS("#payment-amount")))
	if got := textOf(t, ctx, "#payment-amount"); got != "0.01 USDC" {
		t.Errorf("the page shows the amount %q", got)
	}
	if got := textOf(t, ctx, "#payment-payto"); !strings.EqualFold(got, seller.DefaultPayTo) {
		t.Errorf("the page shows the payee %q", got)
	}
	screenshot(t, ctx, "10-authorize-payment")
	do(chromedp.Click(chromedp.CSS(`button[value="approve"]`)), chromedp.WaitVisible(chromedp.CSS(`#status`)))

	// The service pays; the agent waits for the request and claims the answer.
	var r struct{ Status string }
	for deadline := time.Now().Add(30 * time.Second); r.Status != "fulfilled" && time.Now().Before(deadline); {
		call("GET", "/sessions/"+s.ID+"/requests/"+asked.Request.ID+"?wait=5", "", &r)
		if r.Status == "failed" {
			t.Fatalf("the payment failed:\n%s", srv.logs)
		}
	}
	if r.Status != "fulfilled" {
		t.Fatalf("request %s after 30 s", r.Status)
	}
	var art struct {
		Type    string
		Payment struct {
			Status, Amount, PayTo string
			Response              struct {
				Status int
				Body   string
			}
		}
	}
	if code := call("POST", "/sessions/"+s.ID+"/requests/"+asked.Request.ID+"/claim", "", &art); code != 200 ||
		art.Payment.Status != "settled" || art.Payment.Response.Status != 200 || !strings.Contains(art.Payment.Response.Body, "On tides") {
		t.Fatalf("claim: %d %+v", code, art)
	}
	do(chromedp.Navigate(srv.base+asked.Request.ApprovalURL), chromedp.WaitVisible(chromedp.CSS(`#payment-status[data-status="settled"]`)))
	screenshot(t, ctx, "11-payment-settled")
	// The console: the spend ledger with the receipt, and the agents' limits.
	do(chromedp.Navigate(srv.base+"/app/spend"), chromedp.WaitVisible(chromedp.CSS("#ledger")))
	if ledger := textOf(t, ctx, "#ledger"); !strings.Contains(ledger, "0.01 USDC") || !strings.Contains(ledger, "Paid") {
		t.Errorf("the ledger: %s", ledger)
	}
	screenshot(t, ctx, "12-console-spend")
	do(chromedp.Navigate(srv.base+"/app/agents"), chromedp.WaitVisible(chromedp.CSS("section.agent")))
	screenshot(t, ctx, "13-console-agents")
	do(chromedp.Navigate(srv.base+"/app/webhooks"), chromedp.WaitVisible(chromedp.CSS("#webhook-url")))
	screenshot(t, ctx, "14-console-webhooks")
	do(chromedp.Navigate(srv.base+"/app/memory"), chromedp.WaitVisible(chromedp.CSS("#memory-label")))
	screenshot(t, ctx, "16-console-memory")
	do(chromedp.Navigate(srv.base+"/app/requests"), chromedp.WaitVisible(chromedp.CSS("#session-list")))
	screenshot(t, ctx, "15-console-home")

	// Exactly one transfer of the approved amount to the approved payee.
	ledger := sel.Ledger()
	if len(ledger) != 1 || ledger[0].Value != "10000" || !strings.EqualFold(ledger[0].To, q.Offer.PayTo) {
		t.Fatalf("ledger %+v", ledger)
	}
	// The seller's stats move.
	store, err := postgres.Open(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	var settled int
	store.Pool().QueryRow(context.Background(), `SELECT count(*) FROM settled_payments WHERE hostname = 'localhost' AND delivered`).Scan(&settled)
	if settled != 1 {
		t.Errorf("%d settled payments recorded for the seller, want 1", settled)
	}

	// No key or signature material anywhere: answers, the log, spans, any table.
	key := testPayerKey[:24]
	for _, a := range answers {
		if strings.Contains(strings.ToLower(a), key) || signatureHex.MatchString(a) {
			t.Errorf("an answer holds key or signature material: %.200s", a)
		}
	}
	if l := srv.logs.String(); strings.Contains(strings.ToLower(l), key) || signatureHex.MatchString(l) || strings.Contains(l, "PAYMENT-SIGNATURE:") {
		t.Error("the log holds key or signature material")
	}
	if dump := dumpTables(t, store); strings.Contains(strings.ToLower(dump), key) || signatureHex.MatchString(dump) {
		t.Error("the database holds key or signature material")
	}
	for _, p := range problems() {
		t.Errorf("console: %s", p)
	}
}

// payStack is the real server with a payer, and a local seller it may pay, listed in
// its directory.
type payStack struct {
	srv                      loggedServer
	sel                      *seller.Seller
	sellerBase               string // http://localhost:port
	dbURL, userKey, agentKey string
}

func startPayStack(t *testing.T) payStack {
	t.Helper()
	// The local seller, on loopback, reached as localhost:port.
	ts := httptest.NewUnstartedServer(nil)
	sel := seller.New(seller.Config{FacilitatorURL: "http://" + ts.Listener.Addr().String() + "/facilitator"})
	ts.Config.Handler = sel
	ts.Start()
	t.Cleanup(ts.Close)
	base := "http://localhost" + ts.URL[strings.LastIndex(ts.URL, ":"):]
	// The seller is listed in the directory, as its discovery endpoint lists itself.
	dbURL := demoDatabase(t)
	listSeller(t, dbURL, base)
	userKey, agentKey := apiKeys(t, dbURL)
	srv := serveLogged(t, map[string]string{"DATABASE_URL": dbURL, "LOOPBACK_HTTP": "true", "LOG_FORMAT": "json",
		"X402_PAYER_KEY": testPayerKey, "X402_PAYER_NETWORKS": "eip155:84532",
		"PAYMENT_ALLOW_HOSTS": strings.TrimPrefix(base, "http://")})
	return payStack{srv: srv, sel: sel, sellerBase: base, dbURL: dbURL, userKey: userKey, agentKey: agentKey}
}

// listSeller lists the local seller's paid routes in the directory from its own
// discovery document.
func listSeller(t *testing.T, dbURL, base string) {
	t.Helper()
	ctx := context.Background()
	store, err := postgres.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	var lines []string
	for _, it := range seller.New(seller.Config{}).Listing(base) {
		b, _ := json.Marshal(it)
		lines = append(lines, string(b))
	}
	cat, skipped, err := catalog.ParseBazaar(strings.NewReader(strings.Join(lines, "\n")))
	if err != nil || len(skipped) > 0 {
		t.Fatalf("the seller's listing: %v %v", err, skipped)
	}
	res, err := store.LoadCatalog(ctx, cat, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if res.Inserted != len(lines) {
		t.Fatalf("listed: %+v", res)
	}
}

// dumpTables is every row of every table of the database, as text: what a plain
// dump would hold.
func dumpTables(t *testing.T, store *postgres.Store) string {
	t.Helper()
	ctx := context.Background()
	rows, err := store.Pool().Query(ctx, `SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE'`)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var name string
		rows.Scan(&name)
		tables = append(tables, name)
	}
	rows.Close()
	var b strings.Builder
	for _, name := range tables {
		var text string
		if err := store.Pool().QueryRow(ctx, `SELECT coalesce(string_agg(t::text, E'\n'), '') FROM "`+name+`" t`).Scan(&text); err != nil {
			t.Fatal(err)
		}
		b.WriteString(text)
	}
	if b.Len() == 0 {
		t.Fatal("the dump is empty")
	}
	return b.String()
}
