package web

import (
	"context"
	"encoding/csv"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/waystation/waystation/internal/payment"
	"github.com/waystation/waystation/internal/request"
	"github.com/waystation/waystation/internal/session"
	"github.com/waystation/waystation/internal/x402"
)

// The console's spend ledger lists the agents' payments with their receipts, as a
// page and as CSV; the agents page changes an agent's limits through a CSRF-checked
// form, and refuses what is not an amount.
func TestConsoleShowsTheSpendLedgerAndSetsAgentLimits(t *testing.T) {
	e := newAppEnv(t, func(a *Approvals) { a.Payments = &payment.Service{Store: a.Requests.Store.(payment.Store)} })
	ctx := context.Background()
	ada, adaKey := e.user("ada")
	scout, _ := e.agent(ada, "scout")
	s, err := e.store.CreateSession(ctx, scout, session.New{Type: "purchase", Description: "A report", ClientSessionID: "s"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	ttl := int64(900)
	pay, req, err := e.store.CreatePayment(ctx, scout, s.ID, payment.Payment{Host: "seller.example",
		HTTPRequest: payment.Envelope{Method: "GET", URL: "https://seller.example/report"},
		Offer: payment.Offer{Version: 2, Scheme: "exact", Network: "eip155:84532", Asset: "0x036CbD53842c5426634e7929541eC2318f3dCF7e", Symbol: "USDC",
			PayTo: "0x209693Bc6afc0C5328bA36FaF03C514EF312287C", Amount: "10000", Value: 10000}, MaximumDebit: 50000,
		Payer: "0x2c7536E3605D9C16a7a3D7b1898e529396a65c23", Nonce: make([]byte, 32), Raw: x402.Offer{Version: 2}},
		request.New{ClientRequestID: "p1", Kind: request.KindAuthorizePayment, TTLSeconds: &ttl, Params: request.Params{Summary: "Pay"}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	// The person approves and the service settles it, as the executor would.
	if _, err := (request.Decider{Store: e.store}).Decide(ctx, ada, "", req.ID, request.Decision{Decision: request.Approve}); err != nil {
		t.Fatal(err)
	}
	taken, err := e.store.Take(ctx, time.Minute)
	if err != nil || taken == nil {
		t.Fatalf("take %v %v", taken, err)
	}
	sum := strings.Repeat("ab", 32)
	if err := e.store.Finish(ctx, *taken, payment.Outcome{Status: payment.StatusSettled, Transaction: "0x" + strings.Repeat("1", 64), Delivered: true,
		Receipt: request.Receipt{PaymentID: pay.ID, Status: payment.StatusSettled, Response: &request.SellerResponse{Status: 200, SHA256: sum}}}); err != nil {
		t.Fatal(err)
	}

	b := e.browser()
	b.mustSignIn(adaKey, "")
	// The session's timeline tells of the payment, linked to its request.
	timeline := b.get(sessionURL(s.ID))
	if !strings.Contains(timeline.body, `data-kind="payment"`) || !strings.Contains(timeline.body, "Payment settled") ||
		!strings.Contains(timeline.body, "(transaction 0x"+strings.Repeat("1", 64)+")") || !strings.Contains(timeline.body, `href="`+requestURL(req.ID)+`">Payment settled on Base Sepolia`) {
		t.Errorf("the timeline lacks the payment: %.3000s", timeline.body)
	}
	page := b.get("/app/spend")
	for _, want := range []string{"0.01 USD settled", "seller.example", "0.01 USDC", "Base Sepolia", sum, "0x" + strings.Repeat("1", 64), `href="/app/spend.csv"`} {
		if !strings.Contains(page.body, want) {
			t.Errorf("the spend page lacks %q", want)
		}
	}
	// The agent's spend per day is drawn against its limits, with the same in words.
	for _, want := range []string{`<figure class="chart spend-chart">`, `<line class="limit"`,
		"scout spent 0.01 USD in the last 14 days, on 1 of them; the most, 0.01 USD on", "within the daily limit of 5 USD. This month: 0.01 of 50 USD."} {
		if !strings.Contains(page.body, want) {
			t.Errorf("the spend page lacks %q", want)
		}
	}
	// Long identifiers are shortened, whole in their title; statuses are in words.
	for _, want := range []string{`title="0x209693Bc6afc0C5328bA36FaF03C514EF312287C">0x2096…287C</code>`, `data-status="settled">Paid</td>`} {
		if !strings.Contains(page.body, want) {
			t.Errorf("the spend page lacks %q", want)
		}
	}
	if cc := page.header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("Cache-Control %q", cc)
	}
	c := b.get("/app/spend.csv")
	rows, err := csv.NewReader(strings.NewReader(c.body)).ReadAll()
	if err != nil || len(rows) != 2 || rows[0][0] != "created_at" || rows[1][5] != "0.01" || rows[1][9] != "settled" || rows[1][12] != sum {
		t.Fatalf("csv %q %v", c.body, err)
	}
	if !strings.HasPrefix(c.header.Get("Content-Type"), "text/csv") {
		t.Errorf("csv type %q", c.header.Get("Content-Type"))
	}

	agents := b.get("/app/agents")
	if !strings.Contains(agents.body, "scout") || !strings.Contains(agents.body, "Spent today 0.01 of 5 USD") {
		t.Fatalf("agents page: %.1500s", agents.body)
	}
	action := "/app/agents/" + scout.AgentID + "/limits"
	form := url.Values{"perPayment": {"0.5"}, "daily": {"2"}, "monthly": {"20"}, "hostsMode": {"allow"}, "hosts": {"Seller.Example\nother.example"}, "paused": {"true"}}
	if p := b.post(action, form); p.status != http.StatusForbidden {
		t.Errorf("without the CSRF token: %d", p.status)
	}
	form.Set("csrf", csrfOf(t, agents))
	if p := b.post(action, form); p.status != http.StatusSeeOther {
		t.Fatalf("save: %d %.300s", p.status, p.body)
	}
	l, err := e.store.Limits(ctx, scout.AgentID, time.Now())
	if err != nil || l.PerPayment != 500_000 || l.Daily != 2_000_000 || !l.Paused || l.HostsMode != payment.HostsAllow ||
		strings.Join(l.Hosts, ",") != "seller.example,other.example" {
		t.Errorf("limits %+v %v", l, err)
	}
	form.Set("daily", "lots")
	if p := b.post(action, form); p.status != http.StatusUnprocessableEntity || !strings.Contains(p.body, "Nothing was changed") {
		t.Errorf("a bad amount: %d", p.status)
	}
	if l2, _ := e.store.Limits(ctx, scout.AgentID, time.Now()); l2.Daily != 2_000_000 {
		t.Error("a bad amount changed the limits")
	}
	// Another person's agent is not found.
	bo, boKey := e.user("bo")
	_ = bo
	b2 := e.browser()
	b2.mustSignIn(boKey, "")
	other := b2.get("/app/agents")
	form.Set("csrf", csrfOf(t, other))
	form.Set("daily", "2")
	if p := b2.post(action, form); p.status != http.StatusNotFound {
		t.Errorf("another person's agent: %d", p.status)
	}
	if rows := b2.get("/app/spend.csv"); strings.Count(rows.body, "\n") != 1 {
		t.Errorf("another person's ledger: %q", rows.body)
	}
}

// An agent's spend chart draws a bar a day of the last two weeks against its daily
// limit, marks a day over it, leaves out days before the window, and says the same in
// words with the month against the monthly limit.
func TestTheSpendChartDrawsSpendPerDayAgainstTheLimits(t *testing.T) {
	today := time.Date(2026, 11, 21, 15, 4, 0, 0, time.UTC)
	day := func(back int) time.Time { return time.Date(2026, 11, 21-back, 0, 0, 0, 0, time.UTC) }
	l := payment.LimitsAndSpend{Limits: payment.Limits{Daily: 5_000_000, Monthly: 50_000_000}, Spent: payment.Spend{Today: 10_000, ThisMonth: 6_010_000}}
	c := spendChart("scout", l, []payment.DaySpend{
		{Day: day(0), Spent: 10_000}, {Day: day(3), Spent: 6_000_000}, {Day: day(20), Spent: 1_000_000}}, today)
	if len(c.Bars) != spendDays || c.FirstDay != "8 Nov" {
		t.Fatalf("bars %d from %q", len(c.Bars), c.FirstDay)
	}
	over, last := c.Bars[spendDays-4], c.Bars[spendDays-1]
	if !over.Over || over.Y != 8 || over.H != 80 || over.Title != "Wed 18 Nov: 6 of 5 USD, over the daily limit" {
		t.Errorf("the day over the limit: %+v", over)
	}
	if last.Over || last.H != 2 || last.Title != "Sat 21 Nov: 0.01 of 5 USD" {
		t.Errorf("today: %+v", last)
	}
	for i, b := range c.Bars {
		if i != spendDays-4 && i != spendDays-1 && b.H != 0 {
			t.Errorf("day %d drawn %d high with no spend", i, b.H)
		}
	}
	// The limit line sits at 5/6 of the tallest bar.
	if want := 8 + 80 - 5*80/6; c.LimitY != want {
		t.Errorf("limit line at %d, want %d", c.LimitY, want)
	}
	want := "scout spent 6.01 USD in the last 14 days, on 2 of them; the most, 6 USD on 18 Nov; 1 over the daily limit of 5 USD. This month: 6.01 of 50 USD."
	if c.Summary != want {
		t.Errorf("summary %q\nwant    %q", c.Summary, want)
	}
	idle := spendChart("idle", payment.LimitsAndSpend{Limits: payment.DefaultLimits}, nil, today)
	if idle.Summary != "idle spent 0 USD in the last 14 days, nothing on any day. This month: 0 of 50 USD." || idle.LimitY != 8 {
		t.Errorf("an idle agent: %q, limit at %d", idle.Summary, idle.LimitY)
	}
}
