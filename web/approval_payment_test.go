package web

import (
	"context"
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/waystation/waystation/internal/captcha"
	"github.com/waystation/waystation/internal/payment"
	"github.com/waystation/waystation/internal/request"
	"github.com/waystation/waystation/internal/session"
	"github.com/waystation/waystation/internal/x402"
)

// The page of a payment to a seller the directory says to avoid shows what is paid
// to whom and the agent's spend, and approves only with the override ticked.
func TestPaymentPageShowsThePaymentAndNeedsTheOverrideToPayAnAvoidSeller(t *testing.T) {
	var approved []string
	e := newAppEnv(t, func(a *Approvals) {
		a.Payments = &payment.Service{Store: a.Requests.Store.(payment.Store)}
		a.Requests.Approved = func(r request.Request) { approved = append(approved, r.ID) }
	})
	ctx := context.Background()
	ada, adaKey := e.user("ada")
	scout, _ := e.agent(ada, "scout")
	s, err := e.store.CreateSession(ctx, scout, session.New{Type: "purchase", Description: "A report", ClientSessionID: "s"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	offer := payment.Offer{Version: 2, Scheme: "exact", Network: "eip155:84532", Asset: "0x036CbD53842c5426634e7929541eC2318f3dCF7e",
		Symbol: "USDC", PayTo: "0x209693Bc6afc0C5328bA36FaF03C514EF312287C", Amount: "10000", Value: 10000, MaxTimeoutSeconds: 60}
	ttl := int64(900)
	pay, req, err := e.store.CreatePayment(ctx, scout, s.ID, payment.Payment{Host: "seller.example",
		HTTPRequest: payment.Envelope{Method: "GET", URL: "https://seller.example/report"}, Offer: offer, MaximumDebit: 50000,
		Verdict: payment.Verdict{Verdict: payment.Avoid, Score: ptr(12), Listed: true}, Payer: "0x2c7536E3605D9C16a7a3D7b1898e529396a65c23",
		Nonce: make([]byte, 32), Raw: x402.Offer{Version: 2}}, request.New{ClientRequestID: "p1", Kind: request.KindAuthorizePayment, TTLSeconds: &ttl,
		Params: request.Params{Summary: "Pay 0.01 USDC", Amount: "0.01", Currency: "USDC", Verdict: payment.Avoid}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	b := e.browser()
	b.mustSignIn(adaKey, "")
	page := b.get(requestURL(req.ID))
	for _, want := range []string{"Authorize a payment", `id="payment-amount">0.01 USDC`, offer.PayTo, "Base Sepolia", "avoid · 12 of 100",
		"0 of 5 USD", `name="overrideVerdict"`, "https://seller.example/report"} {
		if !strings.Contains(page.body, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	form := url.Values{"csrf": {csrfOf(t, page)}, "decision": {"approve"}}
	if p := b.post(requestURL(req.ID)+"/decision", form); p.status != http.StatusUnprocessableEntity || !strings.Contains(p.body, "tick the override") {
		t.Fatalf("approve without the override: %d %.300s", p.status, p.body)
	}
	if len(approved) != 0 || e.status(ada, req.ID) != request.StatusWaitingUser {
		t.Fatal("an approval without the override went through")
	}
	form.Set("overrideVerdict", "true")
	if p := b.post(requestURL(req.ID)+"/decision", form); p.status != http.StatusSeeOther {
		t.Fatalf("approve with the override: %d %.300s", p.status, p.body)
	}
	got, err := e.store.Payment(ctx, ada, s.ID, pay.ID)
	if err != nil || !got.Override || got.Status != "approved" || len(approved) != 1 {
		t.Errorf("after the override: %+v %v, approved %v", got, err, approved)
	}
}

// A captcha request's page shows the image and takes the characters, which become
// the task's solution.
func TestCaptchaPageShowsTheImageAndTakesTheAnswer(t *testing.T) {
	e := newAppEnv(t, func(a *Approvals) { a.Captchas = &captcha.Service{Store: a.Requests.Store.(captcha.Store)} })
	ctx := context.Background()
	ada, adaKey := e.user("ada")
	scout, _ := e.agent(ada, "scout")
	s, err := e.store.CreateSession(ctx, scout, session.New{Type: "login", Description: "Sign in", ClientSessionID: "c"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
	task, _, err := e.store.CreateTask(ctx, scout, s.ID, captcha.New{ClientTaskID: "c1", Type: captcha.TypeImage, PageURL: "https://shop.example/login"},
		png, captcha.ViaPerson, time.Minute, 0)
	if err != nil {
		t.Fatal(err)
	}
	b := e.browser()
	b.mustSignIn(adaKey, "")
	page := b.get(requestURL(*task.RequestID))
	if !strings.Contains(page.body, `src="data:image/png;base64,`+base64.StdEncoding.EncodeToString(png)+`"`) || !strings.Contains(page.body, `name="value.solution"`) {
		t.Fatalf("the page: %.2000s", page.body)
	}
	form := url.Values{"csrf": {csrfOf(t, page)}, "decision": {"approve"}, "value.solution": {"W7XK"}}
	if p := b.post(requestURL(*task.RequestID)+"/decision", form); p.status != http.StatusSeeOther {
		t.Fatalf("answer: %d %.300s", p.status, p.body)
	}
	got, err := e.store.Task(ctx, scout, s.ID, task.ID)
	if err != nil || got.Status != captcha.StatusSolved || got.Solution == nil || *got.Solution != "W7XK" {
		t.Errorf("task %+v %v", got, err)
	}
}
