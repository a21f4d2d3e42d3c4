package web

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/waystation/waystation/internal/auth"
	"github.com/waystation/waystation/internal/payment"
	"github.com/waystation/waystation/internal/request"
	"github.com/waystation/waystation/internal/session"
	"github.com/waystation/waystation/internal/x402"
)

// payFor makes a payment of agent to host in a session of its own, approved by its
// person and, when settle is set, settled and delivered as the executor would.
func (e *appEnv) payFor(person, agent auth.Principal, host, client string, settle bool) payment.Payment {
	e.t.Helper()
	ctx := context.Background()
	s, err := e.store.CreateSession(ctx, agent, session.New{Type: "purchase", Description: "A report", ClientSessionID: client}, 0)
	if err != nil {
		e.t.Fatal(err)
	}
	ttl := int64(900)
	nonce := make([]byte, 32)
	copy(nonce, client)
	pay, req, err := e.store.CreatePayment(ctx, agent, s.ID, payment.Payment{Host: host,
		HTTPRequest: payment.Envelope{Method: "GET", URL: "https://" + host + "/report"},
		Offer: payment.Offer{Version: 2, Scheme: "exact", Network: "eip155:84532", Asset: "0x036CbD53842c5426634e7929541eC2318f3dCF7e", Symbol: "USDC",
			PayTo: "0x209693Bc6afc0C5328bA36FaF03C514EF312287C", Amount: "10000", Value: 10000}, MaximumDebit: 50000,
		Payer: "0x2c7536E3605D9C16a7a3D7b1898e529396a65c23", Nonce: nonce, Raw: x402.Offer{Version: 2}},
		request.New{ClientRequestID: client, Kind: request.KindAuthorizePayment, TTLSeconds: &ttl, Params: request.Params{Summary: "Pay"}}, 0)
	if err != nil {
		e.t.Fatal(err)
	}
	if !settle {
		return pay
	}
	if _, err := (request.Decider{Store: e.store}).Decide(ctx, person, "", req.ID, request.Decision{Decision: request.Approve}); err != nil {
		e.t.Fatal(err)
	}
	taken, err := e.store.Take(ctx, time.Minute)
	if err != nil || taken == nil || taken.ID != pay.ID {
		e.t.Fatalf("take %v %v", taken, err)
	}
	if err := e.store.Finish(ctx, *taken, payment.Outcome{Status: payment.StatusSettled, Transaction: "0x" + strings.Repeat("1", 64), Delivered: true,
		Receipt: request.Receipt{PaymentID: pay.ID, Status: payment.StatusSettled, Response: &request.SellerResponse{Status: 200, SHA256: strings.Repeat("ab", 32)}}}); err != nil {
		e.t.Fatal(err)
	}
	return pay
}

// reports is the delivery reports kept on payment id, as outcome:reason:reported_by.
func (e *appEnv) reports(id string) []string {
	e.t.Helper()
	rows, err := e.db.Query(context.Background(), `SELECT outcome || ':' || reason || ':' || reported_by FROM delivery_reports WHERE payment_id = $1`, id)
	if err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			e.t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

// The person reports a settled payment of their agent from the spend page, in the
// codes the form offers and nothing else, once: a form without the sign-in's token,
// another person's payment, text or a reason of another outcome, a payment not
// settled and a second report all record nothing.
func TestThePersonReportsASettledPaymentFromTheSpendPageOnce(t *testing.T) {
	e := newAppEnv(t, func(a *Approvals) {
		store := a.Requests.Store.(payment.Store)
		a.Payments = &payment.Service{Store: store, Reports: store.(payment.ReportStore)}
	})
	ada, adaKey := e.user("ada")
	scout, _ := e.agent(ada, "scout")
	paid := e.payFor(ada, scout, "seller.example", "p1", true)
	waiting := e.payFor(ada, scout, "other.example", "p2", false)
	action := reportURL(paid.SessionID, paid.ID)

	b := e.browser()
	b.mustSignIn(adaKey, "")
	page := b.get("/app/spend")
	// The settled payment has the form, in codes alone; the waiting one has none.
	for _, want := range []string{`action="` + action + `"`, `name="report"`, `<optgroup label="Delivered, but wrong or useless">`,
		`value="not_delivered:asked_to_pay_again"`, `value="delivered:as_described"`, `id="payment-` + paid.ID + `"`} {
		if !strings.Contains(page.body, want) {
			t.Errorf("the spend page lacks %q", want)
		}
	}
	if strings.Contains(page.body, reportURL(waiting.SessionID, waiting.ID)) {
		t.Error("a payment not settled has a report form")
	}
	for _, no := range []string{"<textarea", `type="text"`} {
		if strings.Contains(page.body, no) {
			t.Errorf("the report form has a text field (%s)", no)
		}
	}
	csrf := csrfOf(t, page)

	// Without the sign-in's token, and signed out, nothing is recorded.
	if p := b.post(action, url.Values{"report": {"wrong:stale"}}); p.status != http.StatusForbidden {
		t.Errorf("without the CSRF token: %d", p.status)
	}
	if p := e.browser().post(action, url.Values{"csrf": {csrf}, "report": {"wrong:stale"}}); p.status != http.StatusForbidden {
		t.Errorf("signed out: %d", p.status)
	}
	// Another person cannot report ada's payment: it is not theirs to see.
	_, boKey := e.user("bo")
	other := e.browser()
	other.mustSignIn(boKey, "")
	otherCSRF := csrfOf(t, other.get("/app/spend"))
	if p := other.post(action, url.Values{"csrf": {otherCSRF}, "report": {"not_delivered:no_answer"}}); p.status != http.StatusNotFound {
		t.Errorf("another person's payment: %d", p.status)
	}
	// Text where a code goes, a reason of another outcome, nothing chosen: refused.
	for _, bad := range []string{"wrong:card 4111 1111 1111 1111", "delivered:stale", "", "wrong", "great:as_described"} {
		if p := b.post(action, url.Values{"csrf": {csrf}, "report": {bad}}); p.status != http.StatusUnprocessableEntity ||
			!strings.Contains(p.body, "Nothing was reported") {
			t.Errorf("report %q: %d", bad, p.status)
		}
	}
	if got := e.reports(paid.ID); len(got) != 0 {
		t.Fatalf("refused reports were recorded: %v", got)
	}
	// A payment not settled is refused by the route as by the API.
	if p := b.post(reportURL(waiting.SessionID, waiting.ID), url.Values{"csrf": {csrf}, "report": {"not_delivered:no_answer"}}); p.status != http.StatusConflict ||
		!strings.Contains(p.body, "not settled") {
		t.Errorf("a payment not settled: %d", p.status)
	}

	// The report, and the page showing it in place of the form; a field the form
	// does not have is not kept anywhere.
	p := b.post(action, url.Values{"csrf": {csrf}, "report": {"wrong:stale"}, "note": {"my card is 4111 1111 1111 1111"}})
	if p.status != http.StatusSeeOther || p.header.Get("Location") != "/app/spend#payment-"+paid.ID {
		t.Fatalf("report: %d to %q %.500s", p.status, p.header.Get("Location"), p.body)
	}
	if got := e.reports(paid.ID); len(got) != 1 || got[0] != "wrong:stale:user" {
		t.Fatalf("reports %v", got)
	}
	page = b.get("/app/spend")
	if !strings.Contains(page.body, "Delivered, but wrong or useless: out of date (reported by you)") || strings.Contains(page.body, `action="`+action+`"`) {
		t.Errorf("the spend page after the report: %.3000s", page.body)
	}
	// A second report, of the person or of the same form, is refused: the first stands.
	if p := b.post(action, url.Values{"csrf": {csrf}, "report": {"delivered:as_described"}}); p.status != http.StatusConflict ||
		!strings.Contains(p.body, "Nothing was reported") || !strings.Contains(p.body, "reported already") {
		t.Errorf("a second report: %d %.500s", p.status, p.body)
	}
	if got := e.reports(paid.ID); len(got) != 1 || got[0] != "wrong:stale:user" {
		t.Errorf("after a second report: %v", got)
	}

	// A payment settled more than 30 days ago has no form, and its report is refused.
	late := e.payFor(ada, scout, "late.example", "p3", true)
	if _, err := e.db.Exec(context.Background(), `UPDATE payments SET settled_at = now() - interval '31 days' WHERE id = $1`, late.ID); err != nil {
		t.Fatal(err)
	}
	page = b.get("/app/spend")
	if strings.Contains(page.body, reportURL(late.SessionID, late.ID)) || !strings.Contains(page.body, reportTooLate) {
		t.Errorf("a payment past its report window has a form: %.3000s", page.body)
	}
	if p := b.post(reportURL(late.SessionID, late.ID), url.Values{"csrf": {csrf}, "report": {"not_delivered:no_answer"}}); p.status != http.StatusConflict ||
		!strings.Contains(p.body, "within 30 days") {
		t.Errorf("a report past its window: %d", p.status)
	}
	if got := e.reports(late.ID); len(got) != 0 {
		t.Errorf("a report past its window was recorded: %v", got)
	}
	for _, body := range e.bodies {
		if strings.Contains(body, "4111") {
			t.Fatal("a value sent with a report came back on a page")
		}
	}
}
