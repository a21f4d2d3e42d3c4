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
	"log/slog"
	"math/big"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gagliardetto/solana-go"

	"github.com/waystation/waystation/internal/request"
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
		Slots: fixedSlot(345678901), Landings: fixedLanding{x402.Landing{Landed: true, Transaction: "sig"}}}}}, signer
}

// TestAnUptoOfferOnSolanaIsQuotedAtItsDeposit: the quote is the ceiling, as a
// maximum, naming the fee payer and the voucher key beside the payee; an offer that
// would hold the deposit past an hour's grace is refused before the person is
// asked; one that names no slot to open at is paid at the slot the service reads.
func TestAnUptoOfferOnSolanaIsQuotedAtItsDeposit(t *testing.T) {
	f, _ := svmUptoFamily(t)
	q, err := f.Quote(context.Background(), svmUptoOffer(svmUptoExtra(svmUptoFeePayer, "900", "345678901")))
	if err != nil || q.Value != 250_000 || !q.UpTo || q.Symbol != "USDC" || len(q.Named) != 2 || q.Named[0] != svmUptoFeePayer || q.Named[1] != svmUptoAuthorizer {
		t.Fatalf("quote %+v %v", q, err)
	}
	if _, err := f.Quote(context.Background(), svmUptoOffer(svmUptoExtra(svmUptoFeePayer, "31536000", "345678901"))); !errors.Is(err, x402.ErrNotUptoSVM) {
		t.Errorf("a grace period of a year: %v", err)
	}
	if q, err := f.Quote(context.Background(), svmUptoOffer(svmUptoExtra(svmUptoFeePayer, "900", ""))); err != nil || q.Value != 250_000 {
		t.Errorf("no slot: %+v %v", q, err)
	}
	if f.Scheme() != x402.SchemeUpto || f.Namespace() != "solana" || !f.Pays(svmUptoMainnet, svmUptoUSDC) {
		t.Error("scheme, namespace or pays")
	}
}

// TestAnUptoPaymentOnSolanaOpensOneChannelOfItsMaximum: signed, the payment is an
// open that deposits the ceiling, whose vouchers expire when the payment's life
// does; the same payment opens the same channel; the chain's word is the open's
// landing; what moved is the chain's word on the channel's settlement, never the
// seller's, never above the maximum.
func TestAnUptoPaymentOnSolanaOpensOneChannelOfItsMaximum(t *testing.T) {
	f, signer := svmUptoFamily(t)
	o := svmUptoOffer(svmUptoExtra(svmUptoFeePayer, "900", "345678901"))
	w, err := f.Window(context.Background(), svmUptoMainnet, testNow, 5*time.Minute)
	if err != nil || w.ValidAfter != testNow.Unix() || w.ValidBefore != testNow.Add(5*time.Minute).Unix() || w.Blockhash == "" || w.Slot != 345678901 {
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
	// What moved is the chain's word: the settlement of the payment's own channel.
	open, _ := f.open(p)
	chain := &fakeChannels{want: x402.SVMChannelQuery{Network: svmUptoMainnet, Channel: open.ChannelID, Payer: signer.Address(),
		Mint: svmUptoUSDC, Deposit: 250000}, moved: x402.Transfer{Transaction: "settle", Amount: big.NewInt(3000)}}
	f.payer.Channels = chain
	for _, c := range []struct {
		answer    *x402.Settlement
		misstated bool
	}{
		{nil, false},
		{&x402.Settlement{Amount: "3000", Transaction: "settle"}, false},
		{&x402.Settlement{Amount: "300", Transaction: "settle"}, true},
		{&x402.Settlement{Amount: "30000", Transaction: "settle"}, true},
		{&x402.Settlement{Amount: "3000", Transaction: "another channel's"}, true},
		{&x402.Settlement{Amount: "3000"}, false},
	} {
		got, err := f.Moved(context.Background(), p, c.answer)
		if err != nil || got.Amount != "3000" || got.Transaction != "settle" || got.Misstated != c.misstated {
			t.Errorf("answered %+v: moved %+v %v, want 3000 in the chain's transaction, misstated %v", c.answer, got, err, c.misstated)
		}
		if c.answer != nil && chain.asked.Transaction != c.answer.Transaction || chain.asked.Channel != chain.want.Channel {
			t.Errorf("the chain was asked %+v", chain.asked)
		}
	}
	// Never more than the deposit; the deposit when the chain cannot tell.
	chain.moved.Amount = big.NewInt(250001)
	if got, err := f.Moved(context.Background(), p, nil); err != nil || got.Amount != "250000" {
		t.Errorf("a settlement above the deposit moved %+v %v, want the deposit", got, err)
	}
	chain.err = errors.New("timeout")
	if got, err := f.Moved(context.Background(), p, &x402.Settlement{Amount: "3000"}); err == nil || got.Amount != "250000" {
		t.Errorf("the chain silent: moved %+v %v, want the deposit and the error", got, err)
	}
	f.payer.Channels = nil
	if got, err := f.Moved(context.Background(), p, &x402.Settlement{Amount: "3000"}); !errors.Is(err, x402.ErrNoChain) || got.Amount != "250000" {
		t.Errorf("no chain: moved %+v %v, want the deposit, never the seller's word", got, err)
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
	verify := func(header string, now int64, slot ...uint64) (valid bool, reason string) {
		t.Helper()
		doc := map[string]any{"feePayer": hex.EncodeToString(feePayer), "now": now, "header": header}
		if len(slot) > 0 {
			doc["slot"] = slot[0]
		}
		in, _ := json.Marshal(doc)
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
	// A seller that names no slot (the reference server without an rpcUrl): the
	// channel opens at the slot the service read, which the facilitator, reading its
	// own, accepts a little later, and refuses when the service's is ahead of its
	// own or too far behind.
	o = svmUptoOffer(strings.Replace(extra, `,"recentSlot":"345678901"`, "", 1))
	f.payer.Slots = fixedSlot(345679999)
	if w, err = f.Window(context.Background(), svmUptoMainnet, testNow, time.Duration(o.MaxTimeoutSeconds)*time.Second); err != nil {
		t.Fatal(err)
	}
	if h, err = f.Sign(signedPayment(o, w, signer.Address())); err != nil {
		t.Fatal(err)
	}
	header = h.Get(x402.HeaderPaymentV2)
	if ok, why := verify(header, testNow.Unix()+1, 345679999+40); !ok {
		t.Fatalf("the reference facilitator refused an open at the service's slot: %s", why)
	}
	if ok, _ := verify(header, testNow.Unix()+1, 345679998); ok {
		t.Error("verified an open at a slot ahead of the facilitator's")
	}
	if ok, _ := verify(header, testNow.Unix()+1, 345679999+1501); ok {
		t.Error("verified an open at a slot too far behind the facilitator's")
	}
}

type fixedSlot uint64

func (s fixedSlot) Slot(context.Context, string) (uint64, error) {
	if s == 0 {
		return 0, errors.New("getSlot: the node is behind")
	}
	return uint64(s), nil
}

// sentOpen is the open a header carries.
func sentOpen(t *testing.T, h http.Header) x402.UptoSVMPayload {
	t.Helper()
	doc, _ := base64.StdEncoding.DecodeString(h.Get(x402.HeaderPaymentV2))
	var sent struct {
		Payload x402.UptoSVMPayload `json:"payload"`
	}
	if err := json.Unmarshal(doc, &sent); err != nil {
		t.Fatal(err)
	}
	return sent.Payload
}

// TestAnUptoOfferOnSolanaWithoutASlotOpensAtTheSlotTheServiceRead: a seller that
// names no recentSlot (the reference server without an rpcUrl) is paid: the slot is
// read beside the blockhash when the payment is signed, kept with it, and the
// channel opens there, the same channel every time it is signed again; the chain's
// word is that open's landing. Without a slot to read, nothing is signed.
func TestAnUptoOfferOnSolanaWithoutASlotOpensAtTheSlotTheServiceRead(t *testing.T) {
	f, signer := svmUptoFamily(t)
	f.payer.Slots = fixedSlot(345679999)
	o := svmUptoOffer(svmUptoExtra(svmUptoFeePayer, "900", ""))
	w, err := f.Window(context.Background(), svmUptoMainnet, testNow, 5*time.Minute)
	if err != nil || w.Slot != 345679999 {
		t.Fatalf("window %+v %v", w, err)
	}
	p := signedPayment(o, w, signer.Address())
	h, err := f.Sign(p)
	if err != nil {
		t.Fatal(err)
	}
	f.payer.Slots = fixedSlot(345689999) // the chain moved on; the payment did not
	again, err := f.Sign(p)
	if err != nil || h.Get(x402.HeaderPaymentV2) != again.Get(x402.HeaderPaymentV2) {
		t.Fatalf("signed again, another open: %v", err)
	}
	if s := sentOpen(t, h); s.OpenSlot != "345679999" || s.Deposit != "250000" {
		t.Fatalf("payload %+v", s)
	}
	if ev, err := f.Settled(context.Background(), p); err != nil || !ev.Used {
		t.Errorf("Settled: %+v %v", ev, err)
	}
	f.payer.Slots = fixedSlot(0)
	if _, err := f.Window(context.Background(), svmUptoMainnet, testNow, 5*time.Minute); err == nil {
		t.Error("a window without a slot")
	} else if why, ok := refused(err); !ok || why != FailNoBlockhash {
		t.Errorf("no slot: %v", err)
	}
	f.payer.Slots = nil
	if _, err := f.Window(context.Background(), svmUptoMainnet, testNow, 5*time.Minute); err == nil {
		t.Error("a window without a slot reader")
	}
}

// TestASellersSlotFarFromTheChainsIsNotSigned: a seller's recentSlot is opened at
// when it is within the reference facilitator's window of the slot the service
// read, and refused, nothing signed, when it is further behind or ahead; a payment
// signed before the service read slots is signed again as it was, at the seller's.
func TestASellersSlotFarFromTheChainsIsNotSigned(t *testing.T) {
	f, signer := svmUptoFamily(t)
	const seller = 345678901
	for read, ok := range map[uint64]bool{seller: true, seller + 1500: true, seller - 1500: true, seller + 1501: false, seller - 1501: false, 0: true} {
		o := svmUptoOffer(svmUptoExtra(svmUptoFeePayer, "900", "345678901"))
		w, _ := f.Window(context.Background(), svmUptoMainnet, testNow, 5*time.Minute)
		w.Slot = read
		p := signedPayment(o, w, signer.Address())
		h, err := f.Sign(p)
		if !ok {
			if why, refusedIt := refused(err); !refusedIt || why != FailNoOffer || h != nil {
				t.Errorf("read %d: signed the seller's slot %d: %v", read, seller, err)
			}
			continue
		}
		if err != nil || sentOpen(t, h).OpenSlot != "345678901" {
			t.Errorf("read %d: %v", read, err)
		}
	}
}

// fakeChannels answers a channel's settlement for the query it wants.
type fakeChannels struct {
	want, asked x402.SVMChannelQuery
	moved       x402.Transfer
	err         error
}

func (c *fakeChannels) ChannelSettlement(_ context.Context, q x402.SVMChannelQuery) (x402.Transfer, error) {
	c.asked = q
	if c.err != nil {
		return x402.Transfer{}, c.err
	}
	if q.Channel != c.want.Channel || q.Payer != c.want.Payer || q.Mint != c.want.Mint || q.Deposit != c.want.Deposit || q.Network != c.want.Network {
		return x402.Transfer{}, x402.ErrNoSettlement
	}
	return x402.Transfer{Transaction: c.moved.Transaction, Amount: new(big.Int).Set(c.moved.Amount)}, nil
}

// TestASolanaUptoDepositThatComesBackIsNotSpent: the seller opened the channel and
// never settled it (it answered 402), so the payment is unknown, its deposit held
// in the channel. The reference facilitator's cleanup settles an abandoned channel
// after its expiresAt and distributes the whole deposit back to the payer. Until
// that may have happened (expiresAt, the cleanup's delay, the channel's
// withdrawDelay and settleGrace) a chain that shows no settlement says only that
// none came yet: the payment stays unknown. A distribute that returned everything
// is a payment that moved nothing: not settled, nothing spent; one that returned
// part is settled at what the payee kept; only a chain that shows nothing after the
// whole window has the maximum recorded.
func TestASolanaUptoDepositThatComesBackIsNotSpent(t *testing.T) {
	t.Parallel()
	f, signer := svmUptoFamily(t)
	o := svmUptoOffer(svmUptoExtra(svmUptoFeePayer, "900", "345678901"))
	w, err := f.Window(context.Background(), svmUptoMainnet, testNow, 5*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	p := signedPayment(o, w, signer.Address())
	p.Status, p.Offer.Amount, p.Offer.Value = StatusUnknown, o.Ceiling, 250_000
	p.Answer = &request.SellerResponse{Status: 402}
	open, _ := f.open(p)
	expires := time.Unix(open.ExpiresAt, 0)
	ends := expires.Add(svmUptoCleanupDelay + 900*time.Second + settleGrace)
	resolve := func(now time.Time, moved x402.Transfer, err error) []Outcome {
		t.Helper()
		f, _ := svmUptoFamily(t)
		f.payer.Channels = &fakeChannels{want: x402.SVMChannelQuery{Network: svmUptoMainnet, Channel: open.ChannelID, Payer: signer.Address(),
			Mint: svmUptoUSDC, Deposit: 250000}, moved: moved, err: err}
		store := newMemStore()
		store.unknowns = []Payment{p}
		s := &Service{Store: store, Payer: &Payer{}, Log: slog.New(slog.DiscardHandler), Now: func() time.Time { return now },
			chains: []Family{f}}
		if did, err := s.Resolve(context.Background()); !did || err != nil {
			t.Fatalf("Resolve: %v %v", did, err)
		}
		return store.finished
	}
	for _, now := range []time.Time{expires, expires.Add(settleGrace + time.Second), expires.Add(svmUptoCleanupDelay + settleGrace), ends} {
		if got := resolve(now, x402.Transfer{}, x402.ErrNoSettlement); len(got) != 0 {
			t.Errorf("%v after expiresAt, no settlement shown: recorded %+v, want it left unknown while the cleanup may still return the deposit",
				now.Sub(expires), got)
		}
	}
	if got := resolve(ends.Add(time.Second), x402.Transfer{}, x402.ErrNoSettlement); len(got) != 1 || got[0].Status != StatusSettled || got[0].Moved != "250000" {
		t.Errorf("past the whole window, no settlement shown: recorded %+v, want settled at the maximum", got)
	}
	for _, now := range []time.Time{expires.Add(svmUptoCleanupDelay + time.Second), ends.Add(time.Hour)} {
		got := resolve(now, x402.Transfer{Transaction: "cleanup", Amount: big.NewInt(0)}, nil)
		if len(got) != 1 || got[0].Status != StatusFailed || got[0].Failure != FailNotSettled || got[0].Moved != "" || got[0].Transaction != "cleanup" {
			t.Errorf("the whole deposit back to the payer: recorded %+v, want failed %s (nothing spent), in the cleanup's transaction", got, FailNotSettled)
		}
		p.Answer = &request.SellerResponse{Status: 200, Body: `{"report":1}`}
		got = resolve(now, x402.Transfer{Transaction: "cleanup", Amount: big.NewInt(0)}, nil)
		if len(got) != 1 || got[0].Status != StatusSettled || got[0].Moved != "0" || !got[0].Delivered {
			t.Errorf("the whole deposit back after the seller delivered: recorded %+v, want settled at 0, delivered, nothing spent", got)
		}
		p.Answer = &request.SellerResponse{Status: 402}
		got = resolve(now, x402.Transfer{Transaction: "settle", Amount: big.NewInt(100000)}, nil)
		if len(got) != 1 || got[0].Status != StatusSettled || got[0].Moved != "100000" || got[0].Delivered || got[0].Transaction != "settle" {
			t.Errorf("part of the deposit back: recorded %+v, want settled at 100000, what moved, not delivered", got)
		}
	}
}
