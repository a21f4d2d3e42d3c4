package payment

import (
	"fmt"
	"slices"
	"strings"

	"github.com/waystation/waystation/internal/x402"
)

// Payer is what the service pays with: the keys' signers and the networks the
// operator funds each on (CAIP-2). It pays USDC there, by the exact scheme (and on
// EVM networks by upto too): on EVM networks with Signer, on Solana with Solana, whose transactions take a recent
// blockhash from Blockhashes. Each family of chains reads its own key here (see
// families).
type Payer struct {
	Signer   *x402.Signer
	Networks Networks
	// Solana is the Solana payer (nil without), SolanaNetworks where it is funded,
	// and Blockhashes the RPC it reads recent blockhashes from.
	Solana         *x402.SolanaSigner
	SolanaNetworks Networks
	Blockhashes    Blockhashes
	// Slots are where an upto channel on Solana opens when its seller names no
	// slot, and what a slot the seller names is checked against.
	Slots Slots
	// Landings tell whether a Solana payment whose outcome is unknown landed (nil:
	// such payments stay unknown).
	Landings Landings
	// Channels tell what an upto channel on Solana moved when it settled (nil:
	// its maximum is recorded, the most it could have moved).
	Channels Channels
}

// Pays reports whether the payer can pay asset on network: a network it is funded
// on, that network's USDC, and what its family needs besides (for Solana a
// blockhash to sign with).
func (p *Payer) Pays(network, asset string) bool {
	if p == nil {
		return false
	}
	network = x402.NormalizeNetwork(network)
	for _, f := range p.families(nil) {
		if f.Namespace() == x402.Namespace(network) && f.Pays(network, asset) {
			return true
		}
	}
	return false
}

// Owns reports whether address is one of the payer's own: its EVM address (in
// either case) or its Solana public key. A payment naming one as payee or fee payer
// would pay the service itself, or leave a transaction only the service could send.
func (p *Payer) Owns(address string) bool {
	return p != nil && owns(p.families(nil), address)
}

func owns(fs []Family, address string) bool {
	return address != "" && slices.ContainsFunc(fs, func(f Family) bool { return f.Owns(address) })
}

// AddressOn is the payer's address on network: its Solana public key on Solana,
// its EVM address on EVM networks.
func (p *Payer) AddressOn(network string) string {
	ns := x402.Namespace(network)
	for _, f := range p.families(nil) {
		if f.Namespace() == ns {
			return f.Address()
		}
	}
	return ""
}

// Networks are the networks a payer is funded on, in CAIP-2 form. They decide
// what is payable, also where the key itself is not at hand (the generator).
type Networks []string

func parseNetworks(v, namespace, example string) (Networks, error) {
	var out Networks
	for _, n := range strings.Split(v, ",") {
		if strings.TrimSpace(n) == "" {
			continue
		}
		n = x402.NormalizeNetwork(strings.TrimSpace(n))
		if !x402.IsCAIP2(n) || x402.Namespace(n) != namespace {
			return nil, fmt.Errorf("%q is not a network of %s in CAIP-2 form, such as %s", n, namespace, example)
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out, nil
}

// Pays reports whether a payer funded on n can pay asset on network: a network of
// n (test networks only when named) and that network's USDC.
func (n Networks) Pays(network, asset string) bool {
	network = x402.NormalizeNetwork(network)
	if !slices.Contains(n, network) {
		return false
	}
	a, ok := x402.LookupAsset(network, asset)
	return ok && a.Symbol == "USDC"
}

// networks lists where fs pay, for an offer none of them can.
func networks(fs []Family) string {
	var all []string
	for _, f := range fs {
		for _, n := range f.Networks() {
			if !slices.Contains(all, n) {
				all = append(all, n)
			}
		}
	}
	if len(all) == 0 {
		return "no network"
	}
	return strings.Join(all, ", ")
}
