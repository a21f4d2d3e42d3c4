package web

import (
	"context"
	"strings"
	"testing"

	"github.com/waystation/waystation/internal/payment"
	"github.com/waystation/waystation/internal/request"
	"github.com/waystation/waystation/internal/session"
	"github.com/waystation/waystation/internal/x402"
)

// The page of a payment on Solana shows the person what they approve: the payee's
// key, the amount in USDC and atomic units, the mint and the network.
func TestPaymentPageShowsASolanaPayment(t *testing.T) {
	e := newAppEnv(t, func(a *Approvals) { a.Payments = &payment.Service{Store: a.Requests.Store.(payment.Store)} })
	ctx := context.Background()
	ada, adaKey := e.user("ada")
	scout, _ := e.agent(ada, "scout")
	s, err := e.store.CreateSession(ctx, scout, session.New{Type: "purchase", Description: "A report", ClientSessionID: "s"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	offer := payment.Offer{Version: 2, Scheme: "exact", Network: "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1",
		Asset: "4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU", Symbol: "USDC", PayTo: "2wKupLR9q6wXYppw8Gr2NvWxKBUqm4PPJKkQfoxHDBg4",
		Amount: "10000", Value: 10000, MaxTimeoutSeconds: 60}
	ttl := int64(900)
	_, req, err := e.store.CreatePayment(ctx, scout, s.ID, payment.Payment{Host: "seller.example",
		HTTPRequest: payment.Envelope{Method: "GET", URL: "https://seller.example/report"}, Offer: offer, MaximumDebit: 50000,
		Verdict: payment.Verdict{Verdict: "unknown"}, Payer: "3F5qRPtKg8GhGNnbd3qCj6nVJxWsGxq7pvH84okYLAqf",
		Nonce: make([]byte, 32), Raw: x402.Offer{Version: 2}}, request.New{ClientRequestID: "p1", Kind: request.KindAuthorizePayment, TTLSeconds: &ttl,
		Params: request.Params{Summary: "Pay 0.01 USDC", Amount: "0.01", Currency: "USDC", Recipient: offer.PayTo}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	b := e.browser()
	b.mustSignIn(adaKey, "")
	page := b.get(requestURL(req.ID))
	for _, want := range []string{`id="payment-amount">0.01 USDC`, "10000 atomic units of " + offer.Asset,
		`id="payment-payto">` + offer.PayTo, "Solana Devnet (testnet) (" + offer.Network + ")"} {
		if !strings.Contains(page.body, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
}
