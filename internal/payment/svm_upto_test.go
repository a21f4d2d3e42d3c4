package payment

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gagliardetto/solana-go"

	"github.com/waystation/waystation/internal/x402"
)

const (
	svmUptoMainnet    = "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp"
	svmUptoUSDC       = "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v"
	svmUptoPayTo      = "2wKupLR9q6wXYppw8Gr2NvWxKBUqm4PPJKkQfoxHDBg4"
	svmUptoFeePayer   = "EwWqGE4ZFKLofuestmU4LDdK7XM1N4ALgdZccwYugwGd"
	svmUptoAuthorizer = "9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM"
)

// svmUptoOffer is a reference upto seller's offer on Solana, of a 250000-unit
// ceiling, its extra extra.
func svmUptoOffer(extra string) x402.Offer {
	raw := fmt.Sprintf(`{"scheme":"upto","network":%q,"amount":"250000","asset":%q,"payTo":%q,"maxTimeoutSeconds":300,"extra":%s}`,
		svmUptoMainnet, svmUptoUSDC, svmUptoPayTo, extra)
	return x402.Offer{Version: 2, FromHeader: true, Scheme: x402.SchemeUpto, Network: svmUptoMainnet, Asset: svmUptoUSDC, PayTo: svmUptoPayTo,
		Ceiling: "250000", MaxTimeoutSeconds: 300, Extra: json.RawMessage(extra), Raw: json.RawMessage(raw),
		Resource: testURL, ResourceRaw: json.RawMessage(`{"url":"` + testURL + `"}`)}
}

func svmUptoExtra(feePayer, grace, slot string) string {
	e := `{"feePayer":"` + feePayer + `","receiverAuthorizer":"` + svmUptoAuthorizer + `","withdrawDelay":` + grace
	if slot != "" {
		e += `,"recentSlot":"` + slot + `"`
	}
	return e + "}"
}

func svmUptoFamily(t *testing.T) (svmUpto, *x402.SolanaSigner) {
	t.Helper()
	signer, err := x402.ParseSolanaSigner(solana.PrivateKey(ed25519.NewKeyFromSeed(bytes.Repeat([]byte{3}, 32))).String())
	if err != nil {
		t.Fatal(err)
	}
	return svmUpto{svm{payer: &Payer{Solana: signer, SolanaNetworks: Networks{svmUptoMainnet}, Blockhashes: hashes{svmUptoMainnet: true},
		Landings: fixedLanding{x402.Landing{Landed: true, Transaction: "sig"}}}}}, signer
}

// TestAnUptoOfferOnSolanaIsQuotedAtItsDeposit: the quote is the ceiling, as a
// maximum, naming the fee payer and the voucher key beside the payee; an offer that
// would hold the deposit past an hour's grace, or names no slot to open at, is
// refused before the person is asked.
func TestAnUptoOfferOnSolanaIsQuotedAtItsDeposit(t *testing.T) {
	f, _ := svmUptoFamily(t)
	q, err := f.Quote(context.Background(), svmUptoOffer(svmUptoExtra(svmUptoFeePayer, "900", "345678901")))
	if err != nil || q.Value != 250_000 || !q.UpTo || q.Symbol != "USDC" || len(q.Named) != 2 || q.Named[0] != svmUptoFeePayer || q.Named[1] != svmUptoAuthorizer {
		t.Fatalf("quote %+v %v", q, err)
	}
	if _, err := f.Quote(context.Background(), svmUptoOffer(svmUptoExtra(svmUptoFeePayer, "31536000", "345678901"))); !errors.Is(err, x402.ErrNotUptoSVM) {
		t.Errorf("a grace period of a year: %v", err)
	}
	if _, err := f.Quote(context.Background(), svmUptoOffer(svmUptoExtra(svmUptoFeePayer, "900", ""))); !errors.Is(err, errNoRecentSlot) {
		t.Errorf("no slot: %v", err)
	}
	if f.Scheme() != x402.SchemeUpto || f.Namespace() != "solana" || !f.Pays(svmUptoMainnet, svmUptoUSDC) {
		t.Error("scheme, namespace or pays")
	}
}

// TestAnUptoPaymentOnSolanaOpensOneChannelOfItsMaximum: signed, the payment is an
// open that deposits the ceiling, whose vouchers expire when the payment's life
// does; the same payment opens the same channel; the chain's word is the open's
// landing; what moved is the seller's settled amount, never above the maximum.
func TestAnUptoPaymentOnSolanaOpensOneChannelOfItsMaximum(t *testing.T) {
	f, signer := svmUptoFamily(t)
	o := svmUptoOffer(svmUptoExtra(svmUptoFeePayer, "900", "345678901"))
	w, err := f.Window(context.Background(), svmUptoMainnet, testNow, 5*time.Minute)
	if err != nil || w.ValidAfter != testNow.Unix() || w.ValidBefore != testNow.Add(5*time.Minute).Unix() || w.Blockhash == "" {
		t.Fatalf("window %+v %v", w, err)
	}
	p := signedPayment(o, w, signer.Address())
	p.Offer.Amount = o.Ceiling
	h, err := f.Sign(p)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := f.Sign(p)
	if h.Get(x402.HeaderPaymentV2) != again.Get(x402.HeaderPaymentV2) {
		t.Fatal("the same payment signed twice gave two opens")
	}
	doc, _ := base64.StdEncoding.DecodeString(h.Get(x402.HeaderPaymentV2))
	var sent struct {
		Payload x402.UptoSVMPayload `json:"payload"`
	}
	if err := json.Unmarshal(doc, &sent); err != nil {
		t.Fatal(err)
	}
	if s := sent.Payload; s.Deposit != "250000" || s.MaxAmount != "250000" || s.From != signer.Address() || s.ExpiresAt != w.ValidBefore ||
		s.ValidAfter != w.ValidAfter || s.OpenSlot != "345678901" || s.AuthorizedSigner != svmUptoAuthorizer {
		t.Fatalf("payload %+v", s)
	}
	if ev, err := f.Settled(context.Background(), p); err != nil || !ev.Used || ev.Transaction != "sig" {
		t.Errorf("Settled: %+v %v", ev, err)
	}
	for claimed, want := range map[string]string{"3000": "3000", "250000": "250000", "250001": "250000", "-1": "250000", "": "250000"} {
		if got, err := f.Moved(context.Background(), p, &x402.Settlement{Amount: claimed}); err != nil || got.Amount != want {
			t.Errorf("a settlement of %q moved %q, want %q", claimed, got.Amount, want)
		}
	}
	if got, err := f.Moved(context.Background(), p, nil); err != nil || got.Amount != "250000" {
		t.Errorf("the chain's word moved %q, want the maximum", got.Amount)
	}
	// A payment whose offer makes the payer its own fee payer is refused, not signed.
	p.Raw = svmUptoOffer(svmUptoExtra(signer.Address(), "900", "345678901"))
	if h, err := f.Sign(p); err == nil || h != nil {
		t.Errorf("signed an open the payer would pay the fees of: %v", h)
	}
	// Without the key, nothing.
	if _, err := (svmUpto{}).Sign(p); err == nil {
		t.Error("signed without a key")
	}
	if _, err := (svmUpto{}).Settled(context.Background(), p); !errors.Is(err, x402.ErrNoChain) {
		t.Error("settled without a chain")
	}
}

// TestAnUptoOfferOnSolanaIsParsedForItsFamily: the reference seller's upto offer on
// Solana parses, as a ceiling, and the registry has a family that pays it.
func TestAnUptoOfferOnSolanaIsParsedForItsFamily(t *testing.T) {
	o := svmUptoOffer(svmUptoExtra(svmUptoFeePayer, "900", "345678901"))
	doc := `{"x402Version":2,"error":"pay","resource":{"url":"` + testURL + `"},"accepts":[` + string(o.Raw) + `]}`
	parsed := parsedOffer(t, doc)
	if parsed.Ceiling != "250000" || familyOf((&Payer{}).families(nil), parsed.Network, parsed.Scheme) == nil {
		t.Fatalf("the offer %+v has no family", parsed)
	}
}

// TestTheNetworksPaidOnAreNamedOnce: a network paid by two schemes (exact and upto)
// is named once where the service says where it pays.
func TestTheNetworksPaidOnAreNamedOnce(t *testing.T) {
	f, _ := svmUptoFamily(t)
	evmSigner, _ := x402.ParseSigner(strings.Repeat("11", 32))
	p := f.payer
	p.Signer, p.Networks = evmSigner, Networks{"eip155:8453"}
	if got := networks(p.families(nil)); got != "eip155:8453, "+svmUptoMainnet {
		t.Errorf("networks %q", got)
	}
}

// TestTheReferenceFacilitatorVerifiesTheServicesUptoPaymentOnSolana: the header the
// family sends, for an offer of the reference server's form, is one the reference
// facilitator's verify accepts; the same header verified past its expiresAt, or
// against an offer whose payee another seller names, is refused.
func TestTheReferenceFacilitatorVerifiesTheServicesUptoPaymentOnSolana(t *testing.T) {
	node, dir := os.Getenv("WAYSTATION_NODE"), os.Getenv("WAYSTATION_X402_SVM_DIR")
	if node == "" || dir == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("WAYSTATION_NODE and WAYSTATION_X402_SVM_DIR must be set under CI (make test sets them)")
		}
		t.Skip("WAYSTATION_NODE and WAYSTATION_X402_SVM_DIR are not set: run make test")
	}
	f, signer := svmUptoFamily(t)
	feePayer := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{9}, 32))
	extra := `{"feePayer":"` + solana.PublicKeyFromBytes(feePayer.Public().(ed25519.PublicKey)).String() + `","receiverAuthorizer":"` +
		svmUptoAuthorizer + `","withdrawDelay":900,"tokenProgram":"` + solana.TokenProgramID.String() +
		`","recentBlockhash":"EkSnNWid2cvwEVnVx9aBqawnmiCNiDgp3gUdkDPTKN1N","lastValidBlockHeight":"300000000","recentSlot":"345678901"}`
	o := svmUptoOffer(extra)
	w, err := f.Window(context.Background(), svmUptoMainnet, testNow, time.Duration(o.MaxTimeoutSeconds)*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	p := signedPayment(o, w, signer.Address())
	h, err := f.Sign(p)
	if err != nil {
		t.Fatal(err)
	}
	verify := func(header string, now int64) (valid bool, reason string) {
		t.Helper()
		in, _ := json.Marshal(map[string]any{"feePayer": hex.EncodeToString(feePayer), "now": now, "header": header})
		cmd := exec.Command(node, filepath.Join("testdata", "upto-svm-verify.mjs"), dir)
		cmd.Stdin = bytes.NewReader(in)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%v: %s", err, stderr.String())
		}
		var r struct {
			IsValid       bool   `json:"isValid"`
			InvalidReason string `json:"invalidReason"`
			Message       string `json:"invalidMessage"`
		}
		if err := json.Unmarshal(out, &r); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		return r.IsValid, r.InvalidReason + " " + r.Message
	}
	header := h.Get(x402.HeaderPaymentV2)
	if ok, why := verify(header, testNow.Unix()+1); !ok {
		t.Fatalf("the reference facilitator refused the service's payment: %s", why)
	}
	if ok, _ := verify(header, w.ValidBefore); ok {
		t.Error("verified at its expiresAt")
	}
	// The same open presented for another payee.
	doc, _ := base64.StdEncoding.DecodeString(header)
	other := strings.Replace(string(doc), svmUptoPayTo, svmUptoAuthorizer, 1)
	if ok, _ := verify(base64.StdEncoding.EncodeToString([]byte(other)), testNow.Unix()+1); ok {
		t.Error("verified for another payee")
	}
}
