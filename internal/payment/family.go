package payment

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/waystation/waystation/internal/x402"
)

// Family is how the service pays by one x402 scheme on one family of chains (a
// CAIP-2 namespace): every rule of paying that differs from one chain to another,
// so that the service holds none. A new chain, or a new scheme on one, is a Family
// and a line in families, as x402's reference facilitators register a scheme per
// network.
type Family interface {
	// Namespace is the family's CAIP-2 namespace ("eip155"), Scheme the x402
	// scheme it pays by ("exact").
	Namespace() string
	Scheme() string
	// Networks are where the payer is funded on the family; none without its key.
	Networks() Networks
	// Address is the payer's address on the family; "" without its key.
	Address() string
	// Owns reports whether address is the payer's own on the family: a payment
	// naming it would pay the service itself, or leave a transaction only the
	// service could send.
	Owns(address string) bool
	// Pays reports whether the payer can pay asset on network: a network it is
	// funded on, and that network's USDC.
	Pays(network, asset string) bool
	// Quote checks that the payer can sign o as it stands, before the person is
	// asked, and says what it is worth; an error when it cannot be paid.
	Quote(ctx context.Context, o x402.Offer) (Quote, error)
	// Window is how long a payment on network signed at now for life may be
	// settled, and what it is signed with; a refusal when it cannot be signed now.
	Window(ctx context.Context, network string, now time.Time, life time.Duration) (Window, error)
	// Sign signs p as it was recorded and gives the header that carries it to the
	// seller: the same payment always gives the same header, so a payment sent
	// again is the one that may already have settled. A refusal when the family
	// cannot sign p.
	Sign(p Payment) (http.Header, error)
	// Moved is what p moved when it settled, given the seller's settlement answer
	// st (nil when none came, or the chain told), read from the chain when the
	// amount is not fixed. On an error, it is still an answer: the most p could
	// have moved.
	Moved(ctx context.Context, p Payment, st *x402.Settlement) (Moved, error)
	// SettlesUntil is when p, signed, can no longer settle, nor its settlement
	// still be unseen by a chain a little behind the seller's: until then a
	// chain that shows no settlement of p says only that none came yet.
	SettlesUntil(p Payment) time.Time
	// Reads reports whether the family reads its chains at all, so that payments
	// whose outcome is unknown can be settled.
	Reads() bool
	// Settled is the chain's word on p, whose outcome is unknown; x402.ErrNoChain
	// when nothing here reads p's network.
	Settled(ctx context.Context, p Payment) (Evidence, error)
}

// families is the registry of the chain families the service pays on, in the order
// the payer's networks are listed: one line each.
func (p *Payer) families(chain Chain) []Family {
	p2, _ := chain.(Permit2)
	return []Family{
		evm{payer: p, chain: chain},
		evmUpto{evm: evm{payer: p, chain: chain}, permit2: p2},
		svm{payer: p},
		svmUpto{svm{payer: p}},
	}
}

// familyOf is the family in fs that pays by scheme on network; nil when none does.
func familyOf(fs []Family, network, scheme string) Family {
	ns := x402.Namespace(network)
	for _, f := range fs {
		if f.Namespace() == ns && f.Scheme() == scheme {
			return f
		}
	}
	return nil
}

// Quote is what an offer a family can pay is worth: its value in dollars, the
// token's symbol, and the addresses beside the payee a payment of it names (on
// Solana, the fee payer).
type Quote struct {
	Value  Micros
	Symbol string
	Named  []string
	// UpTo says that Value is a maximum: the seller settles what the call used.
	UpTo bool
}

// errNoValue is an offer in a token the service does not count in dollars.
var errNoValue = errors.New("payment: the offer's asset has no dollar value")

// quote is o's worth for a family whose tokens are in x402's asset table.
func quote(o x402.Offer, named ...string) (Quote, error) {
	v, ok := Value(o.Network, o.Asset, o.Most())
	if !ok {
		return Quote{}, errNoValue
	}
	a, _ := x402.LookupAsset(o.Network, o.Asset)
	return Quote{Value: v, Symbol: a.Symbol, Named: named}, nil
}

// Moved is what a settled payment moved, as its family tells it.
type Moved struct {
	// Amount is in atomic units, never more than the amount signed; "" when it is
	// always the offer's amount (exact).
	Amount string
	// Transaction is the settlement's as the chain shows it; "" when not read.
	Transaction string
	// Misstated says that the seller's settlement answer named an amount or a
	// transaction the chain contradicts: a lie about money, recorded as one.
	Misstated bool
}

// Window is when a signed payment may be settled, in Unix seconds, and what beside
// the payment itself it is signed with (on Solana, a recent blockhash, and for an
// upto channel the slot read beside it).
type Window struct {
	ValidAfter  int64
	ValidBefore int64
	Blockhash   string
	Slot        uint64
}

// Evidence is a chain's word on a payment whose outcome is unknown: used (its
// authorization used, its transaction landed) in Transaction if known, or closed
// when it no longer can be (its blockhash expired).
type Evidence struct {
	Used        bool
	Closed      bool
	Transaction string
}

// refusal is a family's reason not to sign a payment: it fails with failure, and
// nothing is signed.
type refusal struct {
	failure string
	err     error
}

func (r refusal) Error() string { return r.err.Error() }
func (r refusal) Unwrap() error { return r.err }

// refused is the failure err carries if a family refused with it.
func refused(err error) (string, bool) {
	var r refusal
	if errors.As(err, &r) {
		return r.failure, true
	}
	return "", false
}

// windowEnd is when a payment whose authorization can be used until its
// ValidBefore can no longer settle unseen: settleGrace after it.
func windowEnd(p Payment) time.Time { return time.Unix(p.ValidBefore, 0).Add(settleGrace) }

// paymentHeader is the header carrying sig, p's signed payment, to the seller.
func paymentHeader(p Payment, sig any) (http.Header, error) {
	name, value, err := p.Raw.PaymentHeader(sig)
	if err != nil {
		return nil, err
	}
	return http.Header{http.CanonicalHeaderKey(name): {value}}, nil
}
