package payment

import (
	"context"
	"errors"
	"math/big"
	"net/http"
	"strconv"
	"time"

	"github.com/waystation/waystation/internal/x402"
)

// svmUpto pays by the upto scheme on Solana (x402's payment channel, read from
// @x402/svm 2.27): an open of a channel that deposits the offer's ceiling, the
// whole of what the person approved, for payTo alone, signed with the payer's
// Solana key over a recent blockhash and a recent slot (the seller's, checked
// against the one the service reads beside the blockhash, else that one). The seller's
// facilitator sends the open, then settles what the call used with its
// authorizer's voucher and returns the rest of the deposit to the payer in the same
// transaction; a seller that never settles leaves the deposit in the channel until
// the payer closes it, after a grace period the service caps at an hour.
type svmUpto struct {
	svm
}

var _ Family = svmUpto{}

func (svmUpto) Scheme() string { return x402.SchemeUpto }

// Slots are Solana's recent slots, per network: an upto channel is derived from
// the slot it opens at. x402.SolanaRPC implements it.
type Slots interface {
	// Slot is network's latest finalized slot.
	Slot(ctx context.Context, network string) (uint64, error)
}

// Quote needs the channel's terms; the fee payer and the voucher key are named
// beside the payee. Its value is the deposit, a maximum.
func (svmUpto) Quote(_ context.Context, o x402.Offer) (Quote, error) {
	t, err := x402.SVMUptoTermsOf(o)
	if err != nil {
		return Quote{}, err
	}
	q, err := quote(o, t.FeePayer.String(), t.Authorizer.String())
	q.UpTo = true
	return q, err
}

// Window is the blockhash's, but the channel's vouchers may be settled until the
// payment's life ends: the payload's expiresAt. The slot is read beside the
// blockhash and kept with it, so that the payment signed again opens the same
// channel; without one, nothing is signed.
func (u svmUpto) Window(ctx context.Context, network string, now time.Time, life time.Duration) (Window, error) {
	w, err := u.svm.Window(ctx, network, now, life)
	if err != nil {
		return w, err
	}
	w.ValidBefore = now.Add(life).Unix()
	if u.payer.Slots == nil {
		return Window{}, refusal{FailNoBlockhash, errors.New("payment: no Solana RPC to read slots from")}
	}
	if w.Slot, err = u.payer.Slots.Slot(ctx, network); err != nil {
		return Window{}, refusal{FailNoBlockhash, err}
	}
	return w, nil
}

// Sign is deterministic: the same payment opens the same channel.
func (u svmUpto) Sign(p Payment) (http.Header, error) {
	sig, err := u.open(p)
	switch {
	case errors.Is(err, x402.ErrNotUptoSVM):
		return nil, refusal{FailNoOffer, err}
	case err != nil:
		return nil, err
	}
	return paymentHeader(p, sig)
}

func (u svmUpto) open(p Payment) (x402.UptoSVMPayload, error) {
	if u.payer == nil || u.payer.Solana == nil {
		return x402.UptoSVMPayload{}, x402.ErrNotUptoSVM
	}
	t, err := x402.SVMUptoTermsOf(p.Raw)
	if err != nil {
		return x402.UptoSVMPayload{}, err
	}
	slot, err := x402.OpenSlot(t, p.Slot)
	if err != nil {
		return x402.UptoSVMPayload{}, err
	}
	return u.payer.Solana.SignUptoOpen(t, p.Blockhash, slot, p.ValidAfter, p.ValidBefore, p.Nonce)
}

// Channels are Solana's word on what an upto channel moved: the transaction that
// settled it and what of the deposit it kept from the payer. x402.SolanaRPC
// implements it.
type Channels interface {
	// ChannelSettlement is x402.ErrNoSettlement when the chain shows no
	// settlement of the channel, x402.ErrNoChain without an endpoint for its
	// network.
	ChannelSettlement(ctx context.Context, q x402.SVMChannelQuery) (x402.Transfer, error)
}

// Moved is what the chain shows moved, never the seller's word: the deposit less
// what the distribute of p's channel returned to the payer, in the transaction the
// seller named when that is the channel's settlement, else in the one found among
// the channel's own transactions. A seller's answer naming another amount or
// another transaction misstated it. When the chain cannot tell, or shows no
// settlement (the deposit still in the channel, reclaimable only by a close after
// the grace period), it is the whole deposit: what left the payer's account when
// the channel opened.
func (u svmUpto) Moved(ctx context.Context, p Payment, st *x402.Settlement) (Moved, error) {
	all := Moved{Amount: p.Offer.Amount}
	if u.payer == nil || u.payer.Channels == nil {
		return all, x402.ErrNoChain
	}
	open, err := u.open(p)
	if err != nil {
		return all, err
	}
	q := x402.SVMChannelQuery{Network: p.Offer.Network, Channel: open.ChannelID, Payer: open.From, Mint: p.Offer.Asset}
	if q.Deposit, err = strconv.ParseUint(open.Deposit, 10, 64); err != nil {
		return all, err
	}
	if st != nil {
		q.Transaction = st.Transaction
	}
	t, err := u.payer.Channels.ChannelSettlement(ctx, q)
	if err != nil {
		return all, err
	}
	if t.Amount.Cmp(new(big.Int).SetUint64(q.Deposit)) > 0 {
		t.Amount.SetUint64(q.Deposit) // the channel pays no more than its deposit
	}
	m := Moved{Amount: t.Amount.String(), Transaction: t.Transaction}
	m.Misstated = st != nil && (st.Amount != "" && st.Amount != m.Amount || st.Transaction != "" && st.Transaction != m.Transaction)
	return m, nil
}

// svmUptoCleanupDelay is how long after a channel's expiresAt the reference
// facilitator leaves it open before it settles it without a voucher and returns the
// whole deposit to the payer: @x402/svm 2.27's UptoSvmRentCleanupManager takes an
// Open channel for an "abandon_close" (settle_and_seal with no voucher, then
// distribute) once its clock reaches expiresAt + abandonGraceSecs, whose default is
// DEFAULT_ABANDON_GRACE_SECS = 120.
const svmUptoCleanupDelay = 120 * time.Second

// SettlesUntil is when p's channel can no longer settle unseen. A voucher may be
// settled until its expiresAt (p's ValidBefore); after it, the seller's
// facilitator settles an abandoned channel on its next cleanup pass at
// svmUptoCleanupDelay past it, and distributes the whole deposit back to the
// payer. The pass runs at an interval its operator chooses: the channel's own
// grace period (its withdrawDelay, at most SVMUptoMaxGracePeriod) is what the
// service gives it, as the program gives the payee that long to settle once the
// payer asks to close. settleGrace after that, for the chain to show the
// distribute. Until then a chain that shows no settlement says only that none came
// yet; after it, the deposit is counted as gone.
func (u svmUpto) SettlesUntil(p Payment) time.Time {
	grace := time.Duration(x402.SVMUptoMaxGracePeriod) * time.Second
	if t, err := x402.SVMUptoTermsOf(p.Raw); err == nil {
		grace = time.Duration(t.GracePeriod) * time.Second
	}
	return time.Unix(p.ValidBefore, 0).Add(svmUptoCleanupDelay + grace + settleGrace)
}

// Settled looks up whether the open landed: then the deposit left the payer's
// account, and what came back is not known here, so it moved its maximum. An open
// whose blockhash expired never lands.
func (u svmUpto) Settled(ctx context.Context, p Payment) (Evidence, error) {
	if u.payer == nil || u.payer.Landings == nil || u.payer.Solana == nil {
		return Evidence{}, x402.ErrNoChain
	}
	open, err := u.open(p)
	if err != nil {
		return Evidence{}, err
	}
	l, err := u.payer.Landings.Landing(ctx, p.Offer.Network, x402.ExactSVMPayload{Transaction: open.OpenTransaction})
	return Evidence{Used: l.Landed, Closed: l.Expired, Transaction: l.Transaction}, err
}
