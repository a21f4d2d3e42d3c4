package x402

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/big"
	"net/http"
	"strings"
	"testing"
)

// A payment an x402 client signed for USDC on Base, as it sent it in X-PAYMENT.
var realPayment = ExactPayload{
	Signature: "0xd4f551adbf9b3ffd6549b92b03fc8bcb8cb09e6909f4265590b246f4a6441ec6500df5bb5be3aab4332b1695e65b16f0bc13f33b7db90a5ca956be5fcb58ba281c",
	Authorization: Authorization{From: "0xdc41d6DA6Bb2D02b19316B2bfFF0CBb42606484d", To: "0xFdF53De20f46bAE2Fa6414e6F25EF1654E68Acd0",
		Value: "1000000", ValidAfter: "0", ValidBefore: "1762655009", Nonce: "0x0b87a87514c60c2332d08122be1be90339700fa864e24b02865e1550ccd00239"},
}

// TestRecoverReadsTheSignerOfARealClientsPayment checks the EIP-712 digest against a
// signature made by another implementation: only the right domain gives back its
// signer, so the service's digest is the one tokens verify.
func TestRecoverReadsTheSignerOfARealClientsPayment(t *testing.T) {
	offers, err := ParseOffers(nil, []byte(v1Body))
	if err != nil {
		t.Fatal(err)
	}
	d, err := DomainOf(offers[0])
	if err != nil {
		t.Fatal(err)
	}
	if d.Name != "USD Coin" || d.Version != "2" || d.ChainID.Int64() != 8453 || d.Contract != usdcBase {
		t.Fatalf("domain %+v", d)
	}
	if got, err := Recover(d, realPayment); err != nil || got != realPayment.Authorization.From {
		t.Fatalf("Recover = %s, %v; want %s", got, err, realPayment.Authorization.From)
	}
	for _, wrong := range []Domain{
		{Name: "USDC", Version: "2", ChainID: big.NewInt(8453), Contract: usdcBase},
		{Name: "USD Coin", Version: "2", ChainID: big.NewInt(84532), Contract: usdcBase},
		{Name: "USD Coin", Version: "2", ChainID: big.NewInt(8453), Contract: usdcSepolia},
	} {
		if got, _ := Recover(wrong, realPayment); got == realPayment.Authorization.From {
			t.Errorf("domain %+v recovers the signer too", wrong)
		}
	}
	changed := realPayment
	changed.Authorization.Value = "1000001"
	if got, _ := Recover(d, changed); got == realPayment.Authorization.From {
		t.Error("a changed value recovers the signer")
	}
}

const testKey = "4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318"

func testAuthorization(s *Signer) Authorization {
	return Authorization{From: s.Address(), To: payee, Value: "10000", ValidAfter: "1700000000", ValidBefore: "1700000600",
		Nonce: "0x" + strings.Repeat("ab", 32)}
}

func TestSignerSignsWhatRecoverReadsAndAlwaysTheSame(t *testing.T) {
	s, err := ParseSigner("0x" + testKey + "\n")
	if err != nil {
		t.Fatal(err)
	}
	offers, err := ParseOffers(b64(v2Doc), nil)
	if err != nil {
		t.Fatal(err)
	}
	d, err := DomainOf(offers[0])
	if err != nil {
		t.Fatal(err)
	}
	a := testAuthorization(s)
	p, err := s.Sign(d, a)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := Recover(d, p); err != nil || got != s.Address() {
		t.Fatalf("Recover = %s, %v; want %s", got, err, s.Address())
	}
	again, _ := s.Sign(d, a)
	if again.Signature != p.Signature {
		t.Error("signing one authorization twice gave two signatures")
	}
	other := a
	other.From = payee
	if _, err := s.Sign(d, other); err == nil {
		t.Error("signed an authorization from another address")
	}
	for _, bad := range []Authorization{
		{From: a.From, To: "0x12", Value: "1", ValidAfter: "0", ValidBefore: "1", Nonce: a.Nonce},
		{From: a.From, To: payee, Value: "-1", ValidAfter: "0", ValidBefore: "1", Nonce: a.Nonce},
		{From: a.From, To: payee, Value: "1", ValidAfter: "0", ValidBefore: "1", Nonce: "0x01"},
		{From: a.From, To: payee, Value: "1", ValidAfter: "", ValidBefore: "1", Nonce: a.Nonce},
	} {
		if _, err := s.Sign(d, bad); err == nil {
			t.Errorf("signed %+v", bad)
		}
	}
	if _, err := ParseSigner("not a key"); err == nil || strings.Contains(err.Error(), "not a key") {
		t.Errorf("ParseSigner of junk: %v", err)
	}
}

// TestSignerNeverShowsItsKey prints and logs the signer every way Go can.
func TestSignerNeverShowsItsKey(t *testing.T) {
	s, err := ParseSigner(testKey)
	if err != nil {
		t.Fatal(err)
	}
	var logged bytes.Buffer
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("payer", "signer", s)
	js, _ := json.Marshal(map[string]any{"signer": s})
	for _, out := range []string{fmt.Sprint(s), fmt.Sprintf("%v %+v %#v %s", s, s, s, s), fmt.Sprintf("%v", *s), logged.String(), string(js)} {
		if strings.Contains(strings.ToLower(out), testKey[:16]) {
			t.Errorf("the key shows in %q", out)
		}
	}
	if !strings.Contains(logged.String(), s.Address()) {
		t.Errorf("the log does not name the payer: %s", logged.String())
	}
}

func TestPaymentHeadersCarryWhatEachVersionNeeds(t *testing.T) {
	s, _ := ParseSigner(testKey)
	for _, c := range []struct {
		name   string
		header http.Header
		body   string
		want   string
	}{{"v1", nil, v1Body, HeaderPaymentV1}, {"v2", b64(v2Doc), "", HeaderPaymentV2}} {
		offers, err := ParseOffers(c.header, []byte(c.body))
		if err != nil {
			t.Fatal(err)
		}
		o := offers[0]
		d, _ := DomainOf(o)
		p, err := s.Sign(d, testAuthorization(s))
		if err != nil {
			t.Fatal(err)
		}
		name, value, err := o.PaymentHeader(p)
		if err != nil {
			t.Fatal(err)
		}
		if name != c.want {
			t.Errorf("%s: header %s", c.name, name)
		}
		h := http.Header{}
		h.Set(name, value)
		got, ok, err := ReadPayment(h)
		if !ok || err != nil || got.Payload != p || got.Version != o.Version {
			t.Fatalf("%s: ReadPayment = %+v %v %v", c.name, got, ok, err)
		}
		if o.Version == 1 && (got.Network != "base" || got.Scheme != "exact") {
			t.Errorf("v1 payment names %q %q, want the seller's own network name", got.Scheme, got.Network)
		}
		if o.Version == 2 {
			var acc, res map[string]any
			if json.Unmarshal(got.Accepted, &acc) != nil || acc["network"] != o.Network || acc["amount"] != o.Amount {
				t.Errorf("v2 accepted %s", got.Accepted)
			}
			if json.Unmarshal(got.Resource, &res) != nil || res["url"] != o.Resource {
				t.Errorf("v2 resource %s", got.Resource)
			}
		}
	}
	if _, ok, _ := ReadPayment(http.Header{}); ok {
		t.Error("no header read as a payment")
	}
	bad := http.Header{}
	bad.Set(HeaderPaymentV2, "!!")
	if _, ok, err := ReadPayment(bad); !ok || err == nil {
		t.Error("junk read as a payment")
	}
}

func TestSettlementHeadersRoundTrip(t *testing.T) {
	st := Settlement{Success: true, Transaction: "0x" + strings.Repeat("1", 64), Network: "eip155:84532", Payer: payee}
	for v, want := range map[int]string{1: HeaderSettlementV1, 2: HeaderSettlementV2} {
		name, value := st.Header(v)
		if name != want {
			t.Errorf("v%d: %s", v, name)
		}
		h := http.Header{}
		h.Set(name, value)
		if got := ReadSettlement(h); got == nil || *got != st {
			t.Errorf("v%d: %+v", v, got)
		}
	}
	// A v1 seller that names the transaction txHash.
	h := http.Header{}
	h.Set(HeaderSettlementV1, base64.StdEncoding.EncodeToString([]byte(`{"success":true,"txHash":"`+st.Transaction+`","network":"base-sepolia"}`)))
	if got := ReadSettlement(h); got == nil || got.Transaction != st.Transaction || got.Network != "base-sepolia" {
		t.Errorf("txHash: %+v", got)
	}
	h = http.Header{}
	h.Set(HeaderSettlementV2, "e30") // {} unpadded
	if got := ReadSettlement(h); got == nil || got.Success {
		t.Errorf("an empty settlement: %+v", got)
	}
	if ReadSettlement(http.Header{}) != nil {
		t.Error("no header read as a settlement")
	}
}

func TestAPaymentHeaderOfAnUnknownOrMismatchedPayloadIsRefused(t *testing.T) {
	offers, err := ParseOffers(b64(v2Doc), nil)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := ParseSigner(testKey)
	d, _ := DomainOf(offers[0])
	p, _ := s.Sign(d, testAuthorization(s))
	// A payload the offer's header does not know (a pointer, a future scheme's, none),
	// or one of another scheme or family than the offer's, must not go out as a
	// payment: the first would carry an empty exact payload.
	for _, bad := range []any{&p, struct{ Scheme string }{"batch-settlement"}, nil,
		UptoPayload{Signature: "0x01"}, ExactSVMPayload{Transaction: "AQ=="}, UptoSVMPayload{}} {
		if name, value, err := offers[0].PaymentHeader(bad); err == nil || name != "" || value != "" {
			t.Errorf("%T: wrote %s: %s (%v)", bad, name, value, err)
		}
	}
	if _, _, err := offers[0].PaymentHeader(p); err != nil {
		t.Errorf("the exact payload it signed: %v", err)
	}
}
