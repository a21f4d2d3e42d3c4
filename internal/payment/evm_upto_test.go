package payment

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/crypto"

	"github.com/waystation/waystation/internal/problem"
	"github.com/waystation/waystation/internal/x402"
)

const testFacilitator = "0x1111111111111111111111111111111111111111"

func uptoDoc(ceiling string) string {
	return `{"x402Version":2,"error":"PAYMENT-SIGNATURE header is required",
		"resource":{"url":"` + testURL + `","description":"a thing","mimeType":"application/json"},
		"accepts":[{"scheme":"upto","network":"eip155:8453","amount":"` + ceiling + `","asset":"` + testUSDC +
		`","payTo":"` + testPayTo + `","maxTimeoutSeconds":300,"extra":{"name":"USD Coin","version":"2",` +
		`"assetTransferMethod":"permit2","facilitatorAddress":"` + testFacilitator + `"}}]}`
}

// fakePermit2 is a chain's Permit2 with one allowance for every owner.
type fakePermit2 struct {
	allowance *big.Int
	used      bool
	owner     string
	nonce     []byte
	// moved is what the chain shows the settlement moved, settleErr its error
	// instead; asked is the last query.
	moved     x402.Transfer
	settleErr error
	asked     x402.UptoQuery
}

func (p *fakePermit2) UptoSettlement(_ context.Context, q x402.UptoQuery) (x402.Transfer, error) {
	p.asked = q
	return p.moved, p.settleErr
}

func (p *fakePermit2) Permit2Allowance(context.Context, string, string, string) (*big.Int, error) {
	return p.allowance, nil
}

func (p *fakePermit2) Permit2NonceUsed(_ context.Context, _, owner string, nonce []byte) (bool, error) {
	p.owner, p.nonce = owner, nonce
	return p.used, nil
}

// TestAnUptoOfferIsQuotedAtItsMaximumOnlyOncePermit2IsApproved: the payer's Permit2
// allowance must cover the ceiling, or the offer is refused before the person is
// asked, saying why; covered, it is worth its ceiling, as a maximum, and names the
// facilitator beside the payee.
func TestAnUptoOfferIsQuotedAtItsMaximumOnlyOncePermit2IsApproved(t *testing.T) {
	signer, _ := x402.ParseSigner(strings.Repeat("11", 32))
	chain := &fakePermit2{allowance: big.NewInt(49_999)}
	f := evmUpto{evm: evm{payer: &Payer{Signer: signer, Networks: Networks{"eip155:8453"}}}, permit2: chain}
	o := parsedOffer(t, uptoDoc("50000"))
	if _, err := f.Quote(context.Background(), o); problem.CodeOf(err) != problem.Permit2ApprovalRequired {
		t.Fatalf("an allowance short of the ceiling: %v", err)
	}
	chain.allowance = big.NewInt(50_000)
	q, err := f.Quote(context.Background(), o)
	if err != nil || q.Value != 50_000 || !q.UpTo || len(q.Named) != 1 || q.Named[0] != testFacilitator {
		t.Fatalf("quote %+v %v", q, err)
	}
	if (evmUpto{evm: f.evm}).Pays("eip155:8453", testUSDC) {
		t.Error("an upto offer is payable without a chain to read Permit2 from")
	}
}

// TestAnUptoAuthorizationMovesAtMostItsMaximumOnlyToThePayee: what the service signs
// is a Permit2 witness transfer of the offer's ceiling, that only x402's upto proxy
// may spend, to the payee, by the offer's facilitator, within the payment's window,
// signed by the payer over Permit2's domain; the same payment signs the same way;
// its nonce is what the chain is asked about.
func TestAnUptoAuthorizationMovesAtMostItsMaximumOnlyToThePayee(t *testing.T) {
	signer, _ := x402.ParseSigner(strings.Repeat("11", 32))
	chain := &fakePermit2{allowance: big.NewInt(1 << 40), used: true}
	f := evmUpto{evm: evm{payer: &Payer{Signer: signer, Networks: Networks{"eip155:8453"}}}, permit2: chain}
	o := parsedOffer(t, uptoDoc("50000"))
	p := signedPayment(o, Window{ValidAfter: 1000, ValidBefore: 2000}, signer.Address())
	p.Offer.Amount = o.Ceiling
	h, err := f.Sign(p)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := f.Sign(p)
	if h.Get(x402.HeaderPaymentV2) != again.Get(x402.HeaderPaymentV2) {
		t.Error("the same payment signed twice differs")
	}
	raw, _ := base64.StdEncoding.DecodeString(h.Get(x402.HeaderPaymentV2))
	var doc struct {
		Accepted json.RawMessage
		Payload  x402.UptoPayload
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	a := doc.Payload.Permit2Authorization
	if a.Permitted.Amount != "50000" || !strings.EqualFold(a.Spender, x402.UptoProxyAddress) || !strings.EqualFold(a.Witness.To, testPayTo) ||
		!strings.EqualFold(a.Witness.Facilitator, testFacilitator) || a.Deadline != "2000" || a.Witness.ValidAfter != "1000" ||
		!strings.EqualFold(a.Permitted.Token, testUSDC) || a.From != signer.Address() || a.Nonce != x402.UptoNonce(p.Nonce) || len(doc.Accepted) == 0 {
		t.Fatalf("the authorization %+v", a)
	}
	digest, err := x402.UptoDigest(big.NewInt(8453), a)
	if err != nil {
		t.Fatal(err)
	}
	sig := common2Bytes(t, doc.Payload.Signature)
	sig[64] -= 27
	pub, err := crypto.SigToPub(digest, sig)
	if err != nil || crypto.PubkeyToAddress(*pub).Hex() != signer.Address() {
		t.Fatalf("the signature recovers %v %v", pub, err)
	}
	ev, err := f.Settled(context.Background(), p)
	if err != nil || !ev.Used || chain.owner != signer.Address() || string(chain.nonce) != string(p.Nonce) {
		t.Errorf("settled %+v %v, asked %s", ev, err, chain.owner)
	}
}

func common2Bytes(t *testing.T, h string) []byte {
	t.Helper()
	b, ok := new(big.Int).SetString(strings.TrimPrefix(h, "0x"), 16)
	if !ok || len(h) != 132 {
		t.Fatalf("signature %q", h)
	}
	return b.FillBytes(make([]byte, 65))
}

// TestWhatAnUptoPaymentMovedIsTheChainsWordNotTheSellers: what a settled upto
// payment moved is what the chain shows its settlement transaction moved, whatever
// the seller claims: a claim below it (settled 40000, answered 4000) or above it is
// a misstatement, and so is a transaction named that is not the settlement's; the
// seller's transaction is what the chain is asked first. Never more than the
// maximum; the maximum when the chain shows no transaction or cannot tell.
func TestWhatAnUptoPaymentMovedIsTheChainsWordNotTheSellers(t *testing.T) {
	const tx, other = "0xaaaa", "0xbbbb"
	signed := time.Unix(10_000, 0)
	p := Payment{Offer: Offer{Scheme: x402.SchemeUpto, Network: "eip155:8453", Asset: testUSDC, PayTo: testPayTo, Amount: "50000"},
		Payer: "0x2c7536E3605D9C16a7a3D7b1898e529396a65c23", Nonce: make([]byte, 32), ValidAfter: 9_400, ValidBefore: 10_300, SignedAt: &signed}
	for _, c := range []struct {
		name           string
		chain          int64
		claim, claimTx string
		want           string
		wantMisstated  bool
	}{
		{"honest", 3000, "3000", tx, "3000", false},
		{"understated", 40000, "4000", tx, "40000", true},
		{"overstated", 3000, "40000", tx, "3000", true},
		{"another transaction named", 3000, "3000", other, "3000", true},
		{"no amount named", 3000, "", "", "3000", false},
		{"more than the maximum on the chain", 60000, "", tx, "50000", false},
	} {
		chain := &fakePermit2{moved: x402.Transfer{Transaction: tx, Amount: big.NewInt(c.chain)}}
		m, err := (evmUpto{permit2: chain}).Moved(context.Background(), p, &x402.Settlement{Success: true, Amount: c.claim, Transaction: c.claimTx})
		if err != nil || m.Amount != c.want || m.Misstated != c.wantMisstated || m.Transaction != tx {
			t.Errorf("%s: moved %+v %v, want %s misstated %v", c.name, m, err, c.want, c.wantMisstated)
		}
		if q := chain.asked; q.Transaction != c.claimTx || q.Owner != p.Payer || q.PayTo != testPayTo || q.Asset != testUSDC ||
			q.Since != signed.Add(-sinceSigned).Unix() || q.Deadline != 10_300 || len(q.Nonce) != 32 {
			t.Errorf("%s: the chain was asked %+v", c.name, q)
		}
	}
	for _, err := range []error{x402.ErrNoSettlement, errors.New("the node is down")} {
		chain := &fakePermit2{settleErr: err}
		m, got := (evmUpto{permit2: chain}).Moved(context.Background(), p, &x402.Settlement{Success: true, Amount: "3000"})
		if m.Amount != "50000" || m.Misstated || !errors.Is(got, err) {
			t.Errorf("the chain answers %v: moved %+v %v, want the maximum", err, m, got)
		}
	}
	if m, err := (evm{}).Moved(context.Background(), p, &x402.Settlement{Amount: "1"}); m != (Moved{}) || err != nil {
		t.Error("an exact payment moves its amount, whatever the seller says")
	}
}
