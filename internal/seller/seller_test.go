package seller

import (
	"crypto/rand"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/waystation/waystation/internal/x402"
)

const payerKey = "4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318"

// quote reads the offer of one of the seller's routes, as a client would.
func quote(t *testing.T, url string) x402.Offer {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusPaymentRequired {
		t.Fatalf("%s: %s", url, resp.Status)
	}
	o, err := x402.ParseOffer(resp.Header, body)
	if err != nil {
		t.Fatalf("%s: the seller's offer does not parse: %v", url, err)
	}
	return o
}

func nonce() string {
	b := make([]byte, 32)
	rand.Read(b)
	return "0x" + hex.EncodeToString(b)
}

// pay signs a for o and sends it, returning the answer.
func pay(t *testing.T, url string, o x402.Offer, s *x402.Signer, a x402.Authorization) (*http.Response, string) {
	t.Helper()
	d, err := x402.DomainOf(o)
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Sign(d, a)
	if err != nil {
		t.Fatal(err)
	}
	return send(t, url, o, p)
}

func send(t *testing.T, url string, o x402.Offer, p x402.ExactPayload) (*http.Response, string) {
	t.Helper()
	name, value, err := o.PaymentHeader(p)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set(name, value)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(body)
}

func authorization(s *x402.Signer, o x402.Offer) x402.Authorization {
	now := time.Now().Unix()
	return x402.Authorization{From: s.Address(), To: o.PayTo, Value: o.Amount,
		ValidAfter: strconv.FormatInt(now-600, 10), ValidBefore: strconv.FormatInt(now+60, 10), Nonce: nonce()}
}

func TestAPayerPaysBothVersionsOnceEach(t *testing.T) {
	sel := New(Config{})
	srv := httptest.NewServer(sel)
	defer srv.Close()
	signer, _ := x402.ParseSigner(payerKey)
	for i, path := range []string{"/v1/weather?city=Lyon", "/v2/report?topic=tides"} {
		o := quote(t, srv.URL+path)
		if o.Version != i+1 || o.Network != DefaultNetwork || o.Amount != DefaultPrice {
			t.Fatalf("%s: offer %+v", path, o)
		}
		a := authorization(signer, o)
		resp, body := pay(t, srv.URL+path, o, signer, a)
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"answer"`) {
			t.Fatalf("%s: paid answer %s %s", path, resp.Status, body)
		}
		st := x402.ReadSettlement(resp.Header)
		if st == nil || !st.Success || st.Payer != signer.Address() {
			t.Fatalf("%s: settlement %+v", path, st)
		}
		// The same payment again is delivered again, and never settles twice.
		again, body2 := pay(t, srv.URL+path, o, signer, a)
		if again.StatusCode != http.StatusOK || body2 != body {
			t.Errorf("%s: the same payment again: %s %s", path, again.Status, body2)
		}
		if n := len(sel.Ledger()); n != i+1 {
			t.Fatalf("%s: ledger holds %d transfers, want %d", path, n, i+1)
		}
	}
	l := sel.Ledger()
	if l[0].To != DefaultPayTo || l[0].Value != DefaultPrice || l[0].From != signer.Address() ||
		l[0].Resource != srv.URL+"/v1/weather" || l[1].Resource != srv.URL+"/v2/report" {
		t.Errorf("ledger %+v", l)
	}
}

func TestTheFacilitatorRefusesWhatIsNotThePayment(t *testing.T) {
	sel := New(Config{})
	srv := httptest.NewServer(sel)
	defer srv.Close()
	signer, _ := x402.ParseSigner(payerKey)
	other, _ := x402.ParseSigner(strings.Repeat("1", 64))
	url := srv.URL + "/v2/report"
	o := quote(t, url)
	used := authorization(signer, o)
	if resp, _ := pay(t, url, o, signer, used); resp.StatusCode != http.StatusOK {
		t.Fatalf("a good payment: %s", resp.Status)
	}
	cases := map[string]func() (*http.Response, string){
		"value": func() (*http.Response, string) {
			a := authorization(signer, o)
			a.Value = "9999"
			return pay(t, url, o, signer, a)
		},
		"payee": func() (*http.Response, string) {
			a := authorization(signer, o)
			a.To = otherPayTo
			return pay(t, url, o, signer, a)
		},
		"expired": func() (*http.Response, string) {
			a := authorization(signer, o)
			a.ValidBefore = strconv.FormatInt(time.Now().Unix()-1, 10)
			return pay(t, url, o, signer, a)
		},
		"another signer": func() (*http.Response, string) {
			a := authorization(signer, o)
			d, _ := x402.DomainOf(o)
			p, _ := other.Sign(d, x402.Authorization{From: other.Address(), To: a.To, Value: a.Value, ValidAfter: a.ValidAfter, ValidBefore: a.ValidBefore, Nonce: a.Nonce})
			p.Authorization.From = signer.Address()
			return send(t, url, o, p)
		},
		"reused nonce": func() (*http.Response, string) {
			a := authorization(signer, o)
			a.Nonce = used.Nonce
			a.ValidBefore = strconv.FormatInt(time.Now().Unix()+90, 10)
			return pay(t, url, o, signer, a)
		},
	}
	for name, try := range cases {
		resp, _ := try()
		if resp.StatusCode != http.StatusPaymentRequired {
			t.Errorf("%s: %s, want 402", name, resp.Status)
		}
	}
	if n := len(sel.Ledger()); n != 1 {
		t.Errorf("ledger holds %d transfers, want 1", n)
	}
}

func TestMisbehaviourDoesWhatItSays(t *testing.T) {
	sel := New(Config{})
	srv := httptest.NewServer(sel)
	defer srv.Close()
	signer, _ := x402.ParseSigner(payerKey)
	url := srv.URL + "/v2/report"
	quoted := quote(t, url)

	sel.SetMode(ModeWrongPayee)
	if o := quote(t, url); strings.EqualFold(o.PayTo, quoted.PayTo) {
		t.Error("wrong_payee: the offer names the same payee")
	}
	if resp, _ := pay(t, url, quoted, signer, authorization(signer, quoted)); resp.StatusCode != http.StatusPaymentRequired {
		t.Errorf("wrong_payee: a payment to the quoted payee: %s", resp.Status)
	}
	sel.SetMode(ModeChangedPrice)
	if o := quote(t, url); o.Amount != "20000" {
		t.Errorf("changed_price: amount %s", o.Amount)
	}
	sel.SetMode(ModeNoDelivery)
	resp, body := pay(t, url, quoted, signer, authorization(signer, quoted))
	if resp.StatusCode != http.StatusInternalServerError || body != "" || x402.ReadSettlement(resp.Header) == nil {
		t.Errorf("no_delivery: %s %q", resp.Status, body)
	}
	if n := len(sel.Ledger()); n != 1 {
		t.Errorf("no_delivery: ledger holds %d transfers, want the 1 that was not delivered", n)
	}
	if err := sel.SetMode("lie"); err == nil {
		t.Error("an unknown mode was taken")
	}
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/misbehave", strings.NewReader(`{"mode":"lie"}`))
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusBadRequest {
		t.Errorf("POST /misbehave with an unknown mode: %v %v", resp.Status, err)
	}
}

func TestDiscoveryListsBothRoutes(t *testing.T) {
	srv := httptest.NewServer(New(Config{}))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/discovery/resources")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), srv.URL+"/v1/weather") || !strings.Contains(string(body), srv.URL+"/v2/report") {
		t.Errorf("discovery %s", body)
	}
}

// TestTheChainTellsWhichAuthorizationsWereUsed reads the ledger through /rpc as the
// service reads a chain: an authorization settled is used, another is not; and with
// replay_refused, the used one sent again is refused with 402.
func TestTheChainTellsWhichAuthorizationsWereUsed(t *testing.T) {
	sel := New(Config{})
	srv := httptest.NewServer(sel)
	defer srv.Close()
	signer, _ := x402.ParseSigner(payerKey)
	o := quote(t, srv.URL+"/v2/report")
	a := authorization(signer, o)
	if resp, body := pay(t, srv.URL+"/v2/report", o, signer, a); resp.StatusCode != http.StatusOK {
		t.Fatalf("payment: %s %s", resp.Status, body)
	}
	chain, err := x402.ParseChains("base-sepolia="+srv.URL+"/rpc", nil)
	if err != nil {
		t.Fatal(err)
	}
	used := func(nonce string) bool {
		t.Helper()
		n, _ := hex.DecodeString(strings.TrimPrefix(nonce, "0x"))
		ok, err := chain.AuthorizationUsed(t.Context(), DefaultNetwork, DefaultAsset, signer.Address(), n)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if !used(a.Nonce) {
		t.Error("the settled authorization reads as unused")
	}
	if used(nonce()) {
		t.Error("a fresh nonce reads as used")
	}
	n, _ := hex.DecodeString(strings.TrimPrefix(a.Nonce, "0x"))
	if _, err := chain.AuthorizationUsed(t.Context(), DefaultNetwork, "0x0000000000000000000000000000000000000001", signer.Address(), n); err == nil {
		t.Error("a call of another contract answered")
	}
	if _, err := chain.AuthorizationUsed(t.Context(), "eip155:8453", DefaultAsset, signer.Address(), n); err != x402.ErrNoChain {
		t.Errorf("a network without an endpoint: %v, want ErrNoChain", err)
	}
	if err := sel.SetMode(ModeReplayRefused); err != nil {
		t.Fatal(err)
	}
	if resp, _ := pay(t, srv.URL+"/v2/report", o, signer, a); resp.StatusCode != http.StatusPaymentRequired {
		t.Errorf("the used authorization sent again under replay_refused: %s, want 402", resp.Status)
	}
	if n := len(sel.Ledger()); n != 1 {
		t.Errorf("ledger holds %d transfers, want 1", n)
	}
}
