package payment

import (
	"context"
	"errors"
	"math/big"
	"net/http"

	"github.com/waystation/waystation/internal/problem"
	"github.com/waystation/waystation/internal/x402"
)

// Permit2 reads what the upto scheme on EVM networks pays through: the payer's
// one-time approval of Permit2 on a token, and whether Permit2 used one of its
// nonces. x402.Chains implements it.
type Permit2 interface {
	// Permit2Allowance is how much of the token at asset owner lets Permit2 move;
	// x402.ErrNoChain when there is no endpoint for network.
	Permit2Allowance(ctx context.Context, network, asset, owner string) (*big.Int, error)
	// Permit2NonceUsed reports whether Permit2 used owner's nonce; x402.ErrNoChain
	// when there is no endpoint for network.
	Permit2NonceUsed(ctx context.Context, network, owner string, nonce []byte) (bool, error)
}

// evmUpto pays by the upto scheme on EVM networks: a Permit2
// PermitWitnessTransferFrom for at most the offer's ceiling, that only x402's upto
// proxy may spend, only to the payee and only when sent by the facilitator the offer
// names, signed with the payer's Signer. The seller settles what the call used, up
// to the ceiling: the proxy and Permit2 refuse more, whatever the seller says, so a
// payment never moves more than the person approved.
//
// Permit2 moves the payer's tokens only once the payer approved it on the token: a
// transaction of the payer's own that costs gas, made once per token and chain. The
// service never sends it: the operator makes it (README, "Paying upto sellers"),
// and an upto offer is payable only while the payer's allowance covers its ceiling,
// read from the chain before the person is asked. The chain is needed besides to
// settle a payment whose outcome is unknown: an upto authorization is money that
// may move until its deadline passes or its nonce is used.
type evmUpto struct {
	evm
	permit2 Permit2
}

var _ Family = evmUpto{}

func (evmUpto) Scheme() string { return x402.SchemeUpto }

// Pays also needs a chain to read Permit2 from.
func (u evmUpto) Pays(network, asset string) bool {
	return u.permit2 != nil && u.evm.Pays(network, asset)
}

// Quote needs the proxy's terms (the facilitator the offer names, which is named
// beside the payee) and the payer's Permit2 allowance covering the ceiling.
func (u evmUpto) Quote(ctx context.Context, o x402.Offer) (Quote, error) {
	t, err := x402.UptoTermsOf(o)
	if err != nil {
		return Quote{}, err
	}
	if u.permit2 == nil {
		return Quote{}, x402.ErrNoChain
	}
	have, err := u.permit2.Permit2Allowance(ctx, o.Network, o.Asset, u.Address())
	if err != nil {
		return Quote{}, err
	}
	if want, _ := new(big.Int).SetString(t.Ceiling, 10); have.Cmp(want) < 0 {
		return Quote{}, problem.New(problem.Permit2ApprovalRequired, "The seller's offer is upto (it charges what the call uses, up to "+
			o.Ceiling+" atomic units) and pays through Permit2, which this server's payer "+u.Address()+" has not approved on "+
			o.Asset+" on "+o.Network+" for that much. The operator approves it once per token and chain (a transaction that costs gas); then ask again.")
	}
	q, err := quote(o, t.Facilitator)
	q.UpTo = true
	return q, err
}

// Sign is deterministic, as exact's is: a payment sent again is the same one.
func (u evmUpto) Sign(p Payment) (http.Header, error) {
	if u.payer == nil || u.payer.Signer == nil {
		return nil, refusal{FailNoOffer, x402.ErrNotUptoEVM}
	}
	t, err := x402.UptoTermsOf(p.Raw)
	if errors.Is(err, x402.ErrNotUptoEVM) {
		return nil, refusal{FailNoOffer, err}
	}
	if err != nil {
		return nil, err
	}
	sig, err := u.payer.Signer.SignUpto(t, p.ValidAfter, p.ValidBefore, p.Nonce)
	if err != nil {
		return nil, err
	}
	return paymentHeader(p, sig), nil
}

// Moved is the amount the seller's settlement names when it is one the
// authorization could move; else (none named, more than signed, or the chain's
// word, which says that it moved, not how much) the whole maximum, which is the
// most it could have.
func (evmUpto) Moved(p Payment, st *x402.Settlement) string { return uptoMoved(p, st) }

// uptoMoved is what an upto payment p moved, given the seller's settlement st: its
// amount when one the payment could move, else the whole maximum.
func uptoMoved(p Payment, st *x402.Settlement) string {
	max, _ := new(big.Int).SetString(p.Offer.Amount, 10)
	if st == nil || max == nil {
		return p.Offer.Amount
	}
	n, ok := new(big.Int).SetString(st.Amount, 10)
	if !ok || n.Sign() < 0 || n.Cmp(max) > 0 || n.String() != st.Amount {
		return p.Offer.Amount
	}
	return st.Amount
}

func (u evmUpto) Reads() bool { return u.permit2 != nil }

// Settled reads Permit2's bitmap of the payer's nonces: used means a settlement
// moved something, whoever sent it, though the bitmap does not say how much. An
// authorization never closes before its deadline does.
func (u evmUpto) Settled(ctx context.Context, p Payment) (Evidence, error) {
	if u.permit2 == nil {
		return Evidence{}, x402.ErrNoChain
	}
	used, err := u.permit2.Permit2NonceUsed(ctx, p.Offer.Network, p.Payer, p.Nonce)
	return Evidence{Used: used}, err
}
