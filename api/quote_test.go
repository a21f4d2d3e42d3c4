package api_test

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/waystation/waystation/api"
	"github.com/waystation/waystation/internal/outbound"
	"github.com/waystation/waystation/internal/trust"
	"github.com/waystation/waystation/internal/x402"
)

const (
	quotePayee = "0x209693Bc6afc0C5328bA36FaF03C514EF312287C"
	quoteOffer = `{"x402Version":2,"resource":{"url":"https://seller/x"},"accepts":[{"scheme":"exact",
		"network":"eip155:8453","amount":"2500","asset":"0x833589fcd6edb6e08f4c7c32d4f71b54bda02913","payTo":"` + quotePayee + `","maxTimeoutSeconds":60,
		"extra":{"name":"USD Coin","version":"2"}}]}`
)

// A quote probes the seller, never paying, and answers its offer, the debit and
// until when it holds, with the directory's word on the seller; a seller at a
// private address is refused by the same dialer as the prober's.
func TestQuoteProbesTheSellerWithoutPaying(t *testing.T) {
	t.Parallel()
	var paid, calls int
	seller := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls++
		if r.Header.Get("X-PAYMENT") != "" || r.Header.Get("PAYMENT-SIGNATURE") != "" {
			paid++
		}
		w.Header().Set(x402.HeaderPaymentRequired, base64.StdEncoding.EncodeToString([]byte(quoteOffer)))
		w.WriteHeader(http.StatusPaymentRequired)
	}))
	defer seller.Close()
	port := seller.URL[strings.LastIndex(seller.URL, ":"):]
	probe := func(loopback bool) api.Prober {
		return trust.NewProber(trust.ProberConfig{HostSpacing: -1, Client: outbound.New(outbound.Config{Timeout: 2 * time.Second, AllowLoopback: loopback,
			LookupHost: func(_ context.Context, host string) ([]netip.Addr, error) {
				if host == "seller.test" {
					return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
				}
				return nil, errors.New("no such host")
			}})}, nil)
	}
	e := newAuthEnv(t, func(a *api.Authenticated) { a.Prober = probe(true) })
	uid, userKey := e.user("ada")
	_, agentKey := e.agent(uid, "scout")

	var q struct {
		Outcome    string
		HTTPStatus int
		Offer      struct{ PayTo, Amount, Network string }
		Debit      struct {
			Amount, Fee   string
			Value, Symbol *string
		}
		ExpiresAt, QuotedAt time.Time
		Merchant            struct {
			Verdict string
			Listed  bool
		}
	}
	e.call("POST", "/tools/x402/quote", agentKey, `{"url":"http://seller.test`+port+`/x"}`).want(t, 200).into(t, &q)
	if q.Outcome != "payment_required" || q.HTTPStatus != 402 || q.Offer.PayTo != quotePayee || q.Offer.Network != "eip155:8453" ||
		q.Debit.Amount != "2500" || q.Debit.Fee != "0" || q.Debit.Value == nil || *q.Debit.Value != "0.0025" || *q.Debit.Symbol != "USDC" ||
		q.ExpiresAt.Sub(q.QuotedAt) != time.Minute || q.Merchant.Verdict != "unknown" || q.Merchant.Listed {
		t.Errorf("quote %+v", q)
	}
	if calls != 1 || paid != 0 {
		t.Errorf("%d calls, %d with a payment", calls, paid)
	}
	e.call("POST", "/tools/x402/quote", agentKey, `{"url":"http://seller.test`+port+`/x","method":"DELETE"}`).want(t, 422)
	e.call("POST", "/tools/x402/quote", userKey, `{"url":"http://seller.test`+port+`/x"}`).want(t, 403)

	strict := newAuthEnv(t, func(a *api.Authenticated) { a.Prober = probe(false) })
	uid, _ = strict.user("ada")
	_, agentKey = strict.agent(uid, "scout")
	strict.call("POST", "/tools/x402/quote", agentKey, `{"url":"http://seller.test`+port+`/x"}`).want(t, 200).into(t, &q)
	if q.Outcome != trust.OutcomeBlockedAddress || calls != 1 {
		t.Errorf("a private address: %+v, %d calls", q, calls)
	}
}
