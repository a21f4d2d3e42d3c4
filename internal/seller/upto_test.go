package seller

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/waystation/waystation/internal/x402"
)

// TestTheLocalSellerSettlesWhatAnUptoCallUsedAndItsChainShowsIt: the metered route
// offers upto up to UptoMaximum through Permit2; a payment is refused until its payer
// approved Permit2, then settles what the call used, once, never above the maximum;
// and its /rpc answers, as a node would, the reads the service settles upto payments
// from: the allowance, the nonce bitmap, and the settlement's transaction found by
// its hash or by the token's Transfer logs.
func TestTheLocalSellerSettlesWhatAnUptoCallUsedAndItsChainShowsIt(t *testing.T) {
	sel := New(Config{})
	srv := httptest.NewServer(sel)
	defer srv.Close()
	signer, _ := x402.ParseSigner(payerKey)
	o := quote(t, srv.URL+"/v2/metered")
	terms, err := x402.UptoTermsOf(o)
	if err != nil || o.Ceiling != UptoMaximum {
		t.Fatalf("the metered offer %+v: %v", o, err)
	}
	now := time.Now().Unix()
	send := func(query string, nonce []byte) (*http.Response, string) {
		t.Helper()
		p, err := signer.SignUpto(terms, now-600, now+60, nonce)
		if err != nil {
			t.Fatal(err)
		}
		name, value, err := o.PaymentHeader(p)
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest("GET", srv.URL+"/v2/metered"+query, nil)
		req.Header.Set(name, value)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		return res, string(body)
	}
	nonce := make([]byte, 32)
	rand.Read(nonce)
	chains, _ := x402.ParseChains(x402.NormalizeNetwork(DefaultNetwork)+"="+srv.URL+"/rpc", nil)
	ctx := context.Background()
	if have, err := chains.Permit2Allowance(ctx, DefaultNetwork, DefaultAsset, signer.Address()); err != nil || have.Sign() != 0 {
		t.Fatalf("the allowance before the approval: %v %v", have, err)
	}
	if res, _ := send("?use=4000", nonce); res.StatusCode != 402 || !strings.Contains(headerDoc(t, res), "permit2_allowance_required") {
		t.Fatalf("before the approval: %d", res.StatusCode)
	}
	if res, err := http.Post(srv.URL+"/approve?owner="+signer.Address(), "", nil); err != nil || res.StatusCode != 204 {
		t.Fatalf("approve: %v %v", res, err)
	}
	res, body := send("?use=4000", nonce)
	st := x402.ReadSettlement(res.Header)
	if res.StatusCode != 200 || st == nil || st.Amount != "4000" || !strings.Contains(body, `"paid":"4000"`) {
		t.Fatalf("paid: %d %+v %s", res.StatusCode, st, body)
	}
	if again, _ := send("?use=4000", nonce); again.StatusCode != 402 {
		t.Errorf("a replay answered %d", again.StatusCode)
	}
	over := make([]byte, 32)
	rand.Read(over)
	if res, _ := send("?use=50001", over); res.StatusCode != 402 {
		t.Errorf("a call above the maximum answered %d", res.StatusCode)
	}
	if l := sel.Ledger(); len(l) != 1 || l[0].Value != "4000" || !strings.EqualFold(l[0].From, signer.Address()) {
		t.Errorf("the ledger %+v, want one transfer of 4000 from the payer", l)
	}
	used, err := chains.Permit2NonceUsed(ctx, DefaultNetwork, signer.Address(), nonce)
	if err != nil || !used {
		t.Errorf("the nonce used: %v %v", used, err)
	}
	if used, _ := chains.Permit2NonceUsed(ctx, DefaultNetwork, signer.Address(), over); used {
		t.Error("the refused payment's nonce is used")
	}
	q := x402.UptoQuery{Network: DefaultNetwork, Asset: DefaultAsset, Owner: signer.Address(), PayTo: DefaultPayTo, Nonce: nonce,
		Since: now - 60, Deadline: now + 60}
	for _, named := range []string{st.Transaction, ""} {
		q.Transaction = named
		got, err := chains.UptoSettlement(ctx, q)
		if err != nil || got.Amount.Cmp(big.NewInt(4000)) != 0 || !strings.EqualFold(got.Transaction, st.Transaction) {
			t.Errorf("the settlement, the seller naming %q: %+v %v", named, got, err)
		}
	}
}

// headerDoc is the decoded PAYMENT-REQUIRED document of a 402 answer.
func headerDoc(t *testing.T, res *http.Response) string {
	t.Helper()
	doc, err := base64.StdEncoding.DecodeString(res.Header.Get(x402.HeaderPaymentRequired))
	if err != nil {
		t.Fatalf("the 402's document: %v", err)
	}
	return string(doc)
}
