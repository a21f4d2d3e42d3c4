package seller

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gagliardetto/solana-go"

	"github.com/waystation/waystation/internal/x402"
)

func solanaPayer(t *testing.T, seed byte) *x402.SolanaSigner {
	t.Helper()
	s, err := x402.ParseSolanaSigner(solana.PrivateKey(ed25519.NewKeyFromSeed(bytes.Repeat([]byte{seed}, 32))).String())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func sendSVM(t *testing.T, url string, o x402.Offer, p x402.ExactSVMPayload) (*http.Response, string) {
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

func TestAPayerPaysTheSolanaRouteOnce(t *testing.T) {
	sel := New(Config{})
	srv := httptest.NewServer(sel)
	defer srv.Close()
	payer := solanaPayer(t, 1)
	url := srv.URL + "/v2/solana?topic=tides"
	o := quote(t, url)
	if o.Version != 2 || o.Network != DefaultSolanaNetwork || o.Asset != DefaultSolanaAsset || o.Amount != DefaultPrice {
		t.Fatalf("offer %+v", o)
	}
	terms, err := x402.SVMTermsOf(o)
	if err != nil {
		t.Fatal(err)
	}
	// The blockhash comes from the seller's /rpc, as from a Solana node.
	rpc, _ := x402.ParseSolanaRPC(srv.URL+"/rpc", []string{DefaultSolanaNetwork}, nil)
	hash, err := rpc.LatestBlockhash(t.Context(), DefaultSolanaNetwork)
	if err != nil || hash != DefaultSolanaBlockhash {
		t.Fatalf("blockhash %q, %v", hash, err)
	}
	nonce := bytes.Repeat([]byte{4}, 32)
	p, err := payer.Sign(terms, hash, nonce)
	if err != nil {
		t.Fatal(err)
	}
	resp, body := sendSVM(t, url, o, p)
	st := x402.ReadSettlement(resp.Header)
	if resp.StatusCode != http.StatusOK || st == nil || !st.Success || st.Payer != payer.Address() || st.Network != DefaultSolanaNetwork {
		t.Fatalf("paid answer %s %s %+v", resp.Status, body, st)
	}
	// The very same transaction again: delivered again, settled once.
	again, body2 := sendSVM(t, url, o, p)
	if again.StatusCode != http.StatusOK || body2 != body || len(sel.Ledger()) != 1 {
		t.Fatalf("the same transaction again: %s %s, %d transfers", again.Status, body2, len(sel.Ledger()))
	}
	l := sel.Ledger()[0]
	if l.From != payer.Address() || l.To != DefaultSolanaPayTo || l.Value != DefaultPrice || l.Transaction != st.Transaction ||
		l.Nonce != strings.Repeat("04", 16) || l.Network != DefaultSolanaNetwork {
		t.Fatalf("ledger %+v", l)
	}
	// Another payment of the same terms (another nonce) is another transfer.
	p2, _ := payer.Sign(terms, hash, bytes.Repeat([]byte{5}, 32))
	if resp, body := sendSVM(t, url, o, p2); resp.StatusCode != http.StatusOK || len(sel.Ledger()) != 2 {
		t.Fatalf("a second payment: %s %s", resp.Status, body)
	}
	// Replays refused when the seller refuses them.
	sel.SetMode(ModeReplayRefused)
	if resp, _ := sendSVM(t, url, o, p); resp.StatusCode != http.StatusPaymentRequired || len(sel.Ledger()) != 2 {
		t.Fatalf("a refused replay: %s", resp.Status)
	}
	sel.SetMode(ModeNone)

	// What the facilitator refuses: another amount, another payee, another fee payer,
	// a payment the payer did not sign.
	for name, mutate := range map[string]func(*x402.SVMTerms){
		"amount":    func(t *x402.SVMTerms) { t.Amount++ },
		"payee":     func(t *x402.SVMTerms) { t.PayTo = solana.MustPublicKeyFromBase58(FeePayer()) },
		"fee payer": func(t *x402.SVMTerms) { t.FeePayer = solana.MustPublicKeyFromBase58(DefaultSolanaPayTo) },
		"mint": func(t *x402.SVMTerms) {
			t.Mint = solana.MustPublicKeyFromBase58("EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v")
		},
	} {
		bad := terms
		mutate(&bad)
		p, err := payer.Sign(bad, hash, bytes.Repeat([]byte{6}, 32))
		if err != nil {
			t.Fatal(err)
		}
		if resp, _ := sendSVM(t, url, o, p); resp.StatusCode != http.StatusPaymentRequired {
			t.Errorf("%s: %s", name, resp.Status)
		}
	}
	// The chain moves on: the next blockhash is another, and good; one it never
	// handed out is refused.
	next, err := rpc.LatestBlockhash(t.Context(), DefaultSolanaNetwork)
	if err != nil || next == hash {
		t.Fatalf("the next blockhash %q, %v", next, err)
	}
	later, _ := payer.Sign(terms, next, bytes.Repeat([]byte{8}, 32))
	if resp, body := sendSVM(t, url, o, later); resp.StatusCode != http.StatusOK {
		t.Fatalf("a payment over the next blockhash: %s %s", resp.Status, body)
	}
	stale, _ := payer.Sign(terms, "11111111111111111111111111111111", bytes.Repeat([]byte{9}, 32))
	if resp, _ := sendSVM(t, url, o, stale); resp.StatusCode != http.StatusPaymentRequired {
		t.Errorf("an unknown blockhash: %s", resp.Status)
	}
	forged, _ := solanaPayer(t, 2).Sign(terms, hash, bytes.Repeat([]byte{7}, 32))
	tx, _ := solana.TransactionFromBase64(forged.Transaction)
	tx.Signatures[1][0] ^= 1
	forged.Transaction, _ = tx.ToBase64()
	if resp, _ := sendSVM(t, url, o, forged); resp.StatusCode != http.StatusPaymentRequired {
		t.Errorf("a forged signature: %s", resp.Status)
	}
	if n := len(sel.Ledger()); n != 3 {
		t.Fatalf("%d transfers after refusals, want 3", n)
	}
	// The route is listed.
	var items []map[string]any
	b, _ := json.Marshal(sel.Listing(srv.URL))
	json.Unmarshal(b, &items)
	if len(items) != 3 || items[2]["resource"] != srv.URL+"/v2/solana" {
		t.Fatalf("listing %s", b)
	}
}
