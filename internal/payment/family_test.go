package payment

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gagliardetto/solana-go"

	"github.com/waystation/waystation/internal/x402"
)

// parsedOffer is the one offer of a seller's x402 v2 document.
func parsedOffer(t *testing.T, doc string) x402.Offer {
	t.Helper()
	h := http.Header{}
	h.Set(x402.HeaderPaymentRequired, base64.StdEncoding.EncodeToString([]byte(doc)))
	offers, err := x402.ParseOffers(h, nil)
	if err != nil || len(offers) != 1 {
		t.Fatalf("%v %v", offers, err)
	}
	return offers[0]
}

// signedPayment is p recorded as the service records it before signing.
func signedPayment(o x402.Offer, w Window, payer string) Payment {
	return Payment{ID: "pay_1", Raw: o, Nonce: bytes.Repeat([]byte{7}, 32), Payer: payer,
		ValidAfter: w.ValidAfter, ValidBefore: w.ValidBefore, Blockhash: w.Blockhash, Slot: w.Slot,
		Offer: Offer{Version: o.Version, Scheme: o.Scheme, Network: x402.NormalizeNetwork(o.Network), Asset: o.Asset, PayTo: o.PayTo, Amount: o.Amount}}
}

type usedChain struct {
	from  string
	nonce []byte
}

func (c *usedChain) AuthorizationUsed(_ context.Context, _, _, from string, nonce []byte) (bool, error) {
	c.from, c.nonce = from, nonce
	return true, nil
}

// TestTheEVMFamilySignsTheSamePaymentTheSameWay: an EIP-3009 authorization over the
// token's domain, within a window opened ten minutes early; the same payment gives
// the same header, and the chain is asked about the payer's nonce.
func TestTheEVMFamilySignsTheSamePaymentTheSameWay(t *testing.T) {
	signer, err := x402.ParseSigner(strings.Repeat("11", 32))
	if err != nil {
		t.Fatal(err)
	}
	chain := &usedChain{}
	f := evm{payer: &Payer{Signer: signer, Networks: Networks{"eip155:8453"}}, chain: chain}
	o := parsedOffer(t, offerDoc("25000", testPayTo))
	if !f.Pays("eip155:8453", testUSDC) || !f.Owns(strings.ToUpper(signer.Address())) || !f.Owns(strings.ToLower(signer.Address())) || f.Owns("") {
		t.Error("Pays or Owns")
	}
	if q, err := f.Quote(context.Background(), o); err != nil || q.Value != 25_000 || q.Symbol != "USDC" || len(q.Named) != 0 {
		t.Errorf("Quote: %+v %v", q, err)
	}
	w, _ := f.Window(context.Background(), "eip155:8453", testNow, time.Minute)
	if w.ValidAfter != testNow.Unix()-600 || w.ValidBefore != testNow.Add(time.Minute).Unix() || w.Blockhash != "" {
		t.Errorf("window %+v", w)
	}
	p := signedPayment(o, w, signer.Address())
	h1, err := f.Sign(p)
	h2, _ := f.Sign(p)
	if err != nil || h1.Get(x402.HeaderPaymentV2) == "" || h1.Get(x402.HeaderPaymentV2) != h2.Get(x402.HeaderPaymentV2) {
		t.Errorf("Sign: %v %v", h1, err)
	}
	if ev, err := f.Settled(context.Background(), p); err != nil || !ev.Used || chain.from != signer.Address() || !bytes.Equal(chain.nonce, p.Nonce) {
		t.Errorf("Settled: %+v %v, asked about %s", ev, err, chain.from)
	}
}

type fixedLanding struct{ l x402.Landing }

func (f fixedLanding) Landing(context.Context, string, x402.ExactSVMPayload) (x402.Landing, error) {
	return f.l, nil
}

type noHashes struct{}

func (noHashes) Has(string) bool { return true }
func (noHashes) LatestBlockhash(context.Context, string) (string, error) {
	return "", errors.New("rpc down")
}

// TestTheSolanaFamilySignsOverABlockhashForItsLifetime: the window is the blockhash's
// lifetime (two minutes at most), none without a blockhash; the fee payer is named;
// the same payment gives the same transaction, and its landing settles it.
func TestTheSolanaFamilySignsOverABlockhashForItsLifetime(t *testing.T) {
	const mainnet = "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp"
	key := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{3}, 32))
	signer, err := x402.ParseSolanaSigner(solana.PrivateKey(key).String())
	if err != nil {
		t.Fatal(err)
	}
	payer := &Payer{Solana: signer, SolanaNetworks: Networks{mainnet}, Blockhashes: hashes{mainnet: true},
		Landings: fixedLanding{x402.Landing{Landed: true, Transaction: "sig"}}}
	f := svm{payer: payer}
	o := parsedOffer(t, `{"x402Version":2,"error":"pay","resource":{"url":"`+testURL+`"},"accepts":[{"scheme":"exact","network":"`+mainnet+
		`","amount":"10000","asset":"EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v","payTo":"2wKupLR9q6wXYppw8Gr2NvWxKBUqm4PPJKkQfoxHDBg4",`+
		`"maxTimeoutSeconds":60,"extra":{"feePayer":"EwWqGE4ZFKLofuestmU4LDdK7XM1N4ALgdZccwYugwGd"}}]}`)
	if q, err := f.Quote(context.Background(), o); err != nil || q.Value != 10_000 || len(q.Named) != 1 || q.Named[0] != "EwWqGE4ZFKLofuestmU4LDdK7XM1N4ALgdZccwYugwGd" {
		t.Errorf("Quote: %+v %v", q, err)
	}
	if !f.Owns(signer.Address()) || f.Owns(strings.ToLower(signer.Address())) || len(f.Networks()) != 1 || !f.Reads() {
		t.Error("Owns, Networks or Reads")
	}
	w, err := f.Window(context.Background(), mainnet, testNow, time.Hour)
	if err != nil || w.ValidAfter != testNow.Unix() || w.ValidBefore != testNow.Add(svmLifetime).Unix() || w.Blockhash == "" {
		t.Errorf("window %+v %v", w, err)
	}
	p := signedPayment(o, w, signer.Address())
	h1, err := f.Sign(p)
	h2, _ := f.Sign(p)
	v := h1.Get(x402.HeaderPaymentV2)
	if doc, _ := base64.StdEncoding.DecodeString(v); err != nil || v == "" || v != h2.Get(x402.HeaderPaymentV2) || !strings.Contains(string(doc), "transaction") {
		t.Errorf("Sign: %v %v", h1, err)
	}
	if ev, err := f.Settled(context.Background(), p); err != nil || !ev.Used || ev.Transaction != "sig" {
		t.Errorf("Settled: %+v %v", ev, err)
	}
	payer.Blockhashes = noHashes{}
	if _, err := f.Window(context.Background(), mainnet, testNow, time.Hour); err == nil {
		t.Error("a window without a blockhash")
	} else if why, ok := refused(err); !ok || why != FailNoBlockhash || !strings.Contains(err.Error(), "rpc down") {
		t.Errorf("refusal %q %v: %v", why, ok, err)
	}
}

// TestAFamilyWithoutItsKeyRefusesToSignAndReadsNoChain: a payer without a family's
// key pays nothing there, signs nothing (the payment fails as offered no more) and
// settles nothing from a chain it does not read.
func TestAFamilyWithoutItsKeyRefusesToSignAndReadsNoChain(t *testing.T) {
	for _, f := range (&Payer{}).families(nil) {
		p := Payment{Offer: Offer{Network: "eip155:8453"}}
		if _, err := f.Sign(p); err == nil {
			t.Errorf("%s signed without a key", f.Namespace())
		} else if why, _ := refused(err); why != FailNoOffer || !errors.Is(err, x402.ErrNotExactEVM) && !errors.Is(err, x402.ErrNotExactSVM) && !errors.Is(err, x402.ErrNotUptoEVM) && !errors.Is(err, x402.ErrNotUptoSVM) {
			t.Errorf("%s: %q %v", f.Namespace(), why, err)
		}
		if _, err := f.Settled(context.Background(), p); !errors.Is(err, x402.ErrNoChain) || f.Reads() {
			t.Errorf("%s settles without a chain: %v", f.Namespace(), err)
		}
		if f.Address() != "" || f.Networks() != nil || f.Owns("x") || f.Scheme() == "" {
			t.Errorf("%s without a key", f.Namespace())
		}
	}
	if _, err := (svm{}).Window(context.Background(), "solana", testNow, time.Minute); err == nil {
		t.Error("a Solana window without an RPC")
	}
	var none *Payer
	if none.Owns("x") || none.AddressOn("eip155:8453") != "" || (&Payer{}).AddressOn("cosmos:hub") != "" {
		t.Error("no payer owns or has an address")
	}
}
