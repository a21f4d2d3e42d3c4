package payment

import (
	"context"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/waystation/waystation/internal/x402"
)

// ParseNetworks reads a comma-separated list of EVM networks in CAIP-2 form (or
// x402 v1 names).
func ParseNetworks(v string) (Networks, error) { return parseNetworks(v, "eip155", "eip155:8453") }

// Address is the payer's EVM address; "" without an EVM key.
func (p *Payer) Address() string {
	if p == nil || p.Signer == nil {
		return ""
	}
	return p.Signer.Address()
}

// Chain tells whether a payer's EIP-3009 authorization was used: the evidence that
// settles a payment whose outcome is unknown. x402.Chains implements it.
type Chain interface {
	// AuthorizationUsed reports whether the token asset on network used from's
	// nonce; x402.ErrNoChain when it has no endpoint for network.
	AuthorizationUsed(ctx context.Context, network, asset, from string, nonce []byte) (bool, error)
}

// evm pays by the exact scheme on EVM networks: an EIP-3009 transferWithAuthorization
// signed with the payer's Signer, settled from chain's authorizationState.
type evm struct {
	payer *Payer
	chain Chain
}

var _ Family = evm{}

func (evm) Namespace() string { return "eip155" }
func (evm) Scheme() string    { return x402.SchemeExact }

func (e evm) Networks() Networks {
	if e.payer == nil || e.payer.Signer == nil {
		return nil
	}
	return e.payer.Networks
}

func (e evm) Address() string { return e.payer.Address() }

// Owns takes the payer's address in either case: EVM addresses are the same in any.
func (e evm) Owns(address string) bool {
	return address != "" && e.payer != nil && e.payer.Signer != nil && strings.EqualFold(address, e.payer.Signer.Address())
}

func (e evm) Pays(network, asset string) bool {
	return e.payer != nil && e.payer.Signer != nil && e.payer.Networks.Pays(network, asset)
}

// Quote needs the token's EIP-712 domain, which the signature is made over.
func (evm) Quote(_ context.Context, o x402.Offer) (Quote, error) {
	if _, err := x402.DomainOf(o); err != nil {
		return Quote{}, err
	}
	return quote(o)
}

// Window opens ten minutes early, for clocks behind the payer's.
func (evm) Window(_ context.Context, _ string, now time.Time, life time.Duration) (Window, error) {
	return Window{ValidAfter: now.Unix() - 600, ValidBefore: now.Add(life).Unix()}, nil
}

// Sign is deterministic (ECDSA by RFC 6979).
func (e evm) Sign(p Payment) (http.Header, error) {
	sig, err := e.sign(p)
	switch {
	case errors.Is(err, x402.ErrNotExactEVM):
		return nil, refusal{FailNoOffer, err}
	case err != nil:
		return nil, err
	}
	return paymentHeader(p, sig)
}

func (e evm) sign(p Payment) (x402.ExactPayload, error) {
	if e.payer == nil || e.payer.Signer == nil {
		return x402.ExactPayload{}, x402.ErrNotExactEVM
	}
	d, err := x402.DomainOf(p.Raw)
	if err != nil {
		return x402.ExactPayload{}, err
	}
	return e.payer.Signer.Sign(d, x402.Authorization{From: e.payer.Address(), To: p.Offer.PayTo, Value: p.Offer.Amount,
		ValidAfter: strconv.FormatInt(p.ValidAfter, 10), ValidBefore: strconv.FormatInt(p.ValidBefore, 10),
		Nonce: "0x" + hex.EncodeToString(p.Nonce)})
}

func (evm) Moved(context.Context, Payment, *x402.Settlement) (Moved, error) { return Moved{}, nil }

// SettlesUntil is the authorization's validBefore (upto's, its Permit2 deadline)
// and settleGrace after it.
func (evm) SettlesUntil(p Payment) time.Time { return windowEnd(p) }

func (e evm) Reads() bool { return e.chain != nil }

// Settled reads the token's authorizationState of p's nonce: used means it settled,
// whoever sent it. An authorization never closes before its window does.
func (e evm) Settled(ctx context.Context, p Payment) (Evidence, error) {
	if e.chain == nil {
		return Evidence{}, x402.ErrNoChain
	}
	used, err := e.chain.AuthorizationUsed(ctx, p.Offer.Network, p.Offer.Asset, p.Payer, p.Nonce)
	return Evidence{Used: used}, err
}
