package payment

import (
	"context"
	"errors"
	"math/big"
	"net/http"
	"strings"
	"time"

	"github.com/waystation/waystation/internal/problem"
	"github.com/waystation/waystation/internal/x402"
)

// Permit2 reads what the upto scheme on EVM networks pays through: the payer's
// one-time approval of Permit2 on a token, whether Permit2 used one of its nonces,
// and what the settlement that used it moved. x402.Chains implements it.
type Permit2 interface {
	// Permit2Allowance is how much of the token at asset owner lets Permit2 move;
	// x402.ErrNoChain when there is no endpoint for network.
	Permit2Allowance(ctx context.Context, network, asset, owner string) (*big.Int, error)
	// Permit2NonceUsed reports whether Permit2 used owner's nonce; x402.ErrNoChain
	// when there is no endpoint for network.
	Permit2NonceUsed(ctx context.Context, network, owner string, nonce []byte) (bool, error)
	// UptoSettlement finds the transaction that settled an upto authorization and
	// what it moved from the owner to the payee; x402.ErrNoSettlement when the
	// chain shows none, x402.ErrNoChain when there is no endpoint for the network.
	UptoSettlement(ctx context.Context, q x402.UptoQuery) (x402.Transfer, error)
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
	return paymentHeader(p, sig)
}

// sinceSigned is how long before a payment was signed its settlement is looked for
// on the chain: the chain's clock may run ahead of the service's.
const sinceSigned = 2 * time.Minute

// Moved is what the chain shows moved, never the seller's word: the payer's
// transfer to the payee in the transaction that used the authorization's nonce (the
// one the seller named, or else found among the token's Transfer logs in the
// authorization's window), never more than the maximum. A seller's answer naming
// another amount or another transaction misstated it. When the chain cannot tell,
// or shows no such transaction, it is the maximum: the most that could have moved.
func (u evmUpto) Moved(ctx context.Context, p Payment, st *x402.Settlement) (Moved, error) {
	max, ok := new(big.Int).SetString(p.Offer.Amount, 10)
	if !ok || u.permit2 == nil {
		return Moved{Amount: p.Offer.Amount}, x402.ErrNoChain
	}
	q := x402.UptoQuery{Network: p.Offer.Network, Asset: p.Offer.Asset, Owner: p.Payer, PayTo: p.Offer.PayTo, Nonce: p.Nonce,
		Since: p.ValidAfter, Deadline: p.ValidBefore}
	if p.SignedAt != nil {
		q.Since = (*p.SignedAt).Add(-sinceSigned).Unix()
	}
	if st != nil {
		q.Transaction = st.Transaction
	}
	t, err := u.permit2.UptoSettlement(ctx, q)
	if err != nil {
		return Moved{Amount: p.Offer.Amount}, err
	}
	if t.Amount.Cmp(max) > 0 {
		t.Amount = max // Permit2 and the proxy move no more than signed.
	}
	m := Moved{Amount: t.Amount.String(), Transaction: t.Transaction}
	m.Misstated = st != nil && (st.Amount != "" && st.Amount != m.Amount ||
		st.Transaction != "" && !strings.EqualFold(st.Transaction, t.Transaction))
	return m, nil
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
