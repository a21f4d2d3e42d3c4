package payment

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/waystation/waystation/internal/x402"
)

// ParseSolanaNetworks reads a comma-separated list of Solana networks in CAIP-2 form
// (or x402 v1 names: solana, solana-devnet).
func ParseSolanaNetworks(v string) (Networks, error) {
	return parseNetworks(v, "solana", "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp")
}

// Landings are Solana's word on a signed payment: whether its transaction landed,
// or its blockhash expired so that it never can. x402.SolanaRPC implements it.
type Landings interface {
	// Landing looks tx up on network; x402.ErrNoChain when it has no endpoint there.
	Landing(ctx context.Context, network string, tx x402.ExactSVMPayload) (x402.Landing, error)
}

// Blockhashes are Solana's recent blockhashes, per network. x402.SolanaRPC
// implements it.
type Blockhashes interface {
	// Has reports whether network's blockhashes can be read.
	Has(network string) bool
	// LatestBlockhash is network's latest blockhash, in base58.
	LatestBlockhash(ctx context.Context, network string) (string, error)
}

// svmLifetime is how long a Solana payment may land after its blockhash was read: a
// blockhash is good for 150 blocks, a minute or so, and the reference facilitators
// forget a transaction after two.
const svmLifetime = 120 * time.Second

// svm pays by the exact scheme on Solana: a token transfer the seller's fee payer
// completes, signed with the payer's Solana key over a recent blockhash, settled
// from the payer's Landings.
type svm struct {
	payer *Payer
}

var _ Family = svm{}

func (svm) Namespace() string { return "solana" }
func (svm) Scheme() string    { return x402.SchemeExact }

func (s svm) Networks() Networks {
	if s.payer == nil || s.payer.Solana == nil {
		return nil
	}
	return s.payer.SolanaNetworks
}

func (s svm) Address() string {
	if s.payer == nil || s.payer.Solana == nil {
		return ""
	}
	return s.payer.Solana.Address()
}

// Owns compares base58 keys exactly: in another case a key is another key.
func (s svm) Owns(address string) bool { return address != "" && address == s.Address() }

// Pays also needs a blockhash to sign with on network.
func (s svm) Pays(network, asset string) bool {
	p := s.payer
	return p != nil && p.Solana != nil && p.Blockhashes != nil && p.Blockhashes.Has(network) && p.SolanaNetworks.Pays(network, asset)
}

// Quote needs a fee payer that is a public key, the network's USDC and an amount a
// token transfer holds; the fee payer is named.
func (svm) Quote(_ context.Context, o x402.Offer) (Quote, error) {
	t, err := x402.SVMTermsOf(o)
	if err != nil {
		return Quote{}, err
	}
	return quote(o, t.FeePayer.String())
}

// Window is the blockhash's lifetime from now: a transaction over it lands then or
// never.
func (s svm) Window(ctx context.Context, network string, now time.Time, life time.Duration) (Window, error) {
	if s.payer == nil || s.payer.Blockhashes == nil {
		return Window{}, refusal{FailNoBlockhash, errors.New("payment: no Solana RPC to read blockhashes from")}
	}
	bh, err := s.payer.Blockhashes.LatestBlockhash(ctx, network)
	if err != nil {
		return Window{}, refusal{FailNoBlockhash, err}
	}
	return Window{ValidAfter: now.Unix(), ValidBefore: now.Add(min(life, svmLifetime)).Unix(), Blockhash: bh}, nil
}

// Sign is deterministic (Ed25519).
func (s svm) Sign(p Payment) (http.Header, error) {
	sig, err := s.sign(p)
	switch {
	case errors.Is(err, x402.ErrNotExactSVM):
		return nil, refusal{FailNoOffer, err}
	case err != nil:
		return nil, err
	}
	return paymentHeader(p, sig)
}

func (s svm) sign(p Payment) (x402.ExactSVMPayload, error) {
	if s.payer == nil || s.payer.Solana == nil {
		return x402.ExactSVMPayload{}, x402.ErrNotExactSVM
	}
	t, err := x402.SVMTermsOf(p.Raw)
	if err != nil {
		return x402.ExactSVMPayload{}, err
	}
	return s.payer.Solana.Sign(t, p.Blockhash, p.Nonce)
}

func (svm) Moved(context.Context, Payment, *x402.Settlement) (Moved, error) { return Moved{}, nil }

// SettlesUntil is the blockhash's window and settleGrace after it.
func (svm) SettlesUntil(p Payment) time.Time { return windowEnd(p) }

func (s svm) Reads() bool { return s.payer != nil && s.payer.Landings != nil }

// Settled looks up whether p's transaction landed (the very one that left: signing
// is deterministic), or its blockhash expired so that it never can.
func (s svm) Settled(ctx context.Context, p Payment) (Evidence, error) {
	if s.payer == nil || s.payer.Landings == nil || s.payer.Solana == nil {
		return Evidence{}, x402.ErrNoChain
	}
	tx, err := s.sign(p)
	if err != nil {
		return Evidence{}, err
	}
	l, err := s.payer.Landings.Landing(ctx, p.Offer.Network, tx)
	return Evidence{Used: l.Landed, Closed: l.Expired, Transaction: l.Transaction}, err
}
