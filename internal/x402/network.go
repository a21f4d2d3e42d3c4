package x402

import "strings"

// v1Networks maps every network name of x402 v1 to its CAIP-2 identifier: the whole
// table the reference implementation's v1 clients know, EVM and Solana, mainnets and
// test networks. A v1 offer on any other name is one no v1 client can pay.
var v1Networks = map[string]string{
	// EVM mainnets.
	"ethereum":  "eip155:1",
	"base":      "eip155:8453",
	"avalanche": "eip155:43114",
	"polygon":   "eip155:137",
	"abstract":  "eip155:2741",
	"iotex":     "eip155:4689",
	"sei":       "eip155:1329",
	"peaq":      "eip155:3338",
	"story":     "eip155:1514",
	"educhain":  "eip155:41923",
	"megaeth":   "eip155:4326",
	"monad":     "eip155:143",
	"stable":    "eip155:988",
	// EVM test networks.
	"sepolia":            "eip155:11155111",
	"base-sepolia":       "eip155:84532",
	"avalanche-fuji":     "eip155:43113",
	"polygon-amoy":       "eip155:80002",
	"abstract-testnet":   "eip155:11124",
	"sei-testnet":        "eip155:1328",
	"skale-base-sepolia": "eip155:324705682",
	"stable-testnet":     "eip155:2201",
	// Solana.
	"solana":         "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp",
	"solana-devnet":  "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1",
	"solana-testnet": "solana:4uhcVJyU9pJkvQyS88uRDiswHXSCkY3z",
}

// outsideGrammar holds the network identifiers x402 itself defines that do not fit the
// CAIP-2 grammar: its Algorand bindings name the chain by the whole base64 genesis
// hash, padding included, where CAIP-2's Algorand namespace keeps 32 URL-safe
// characters. They are accepted as x402 writes them, and nothing else is.
var outsideGrammar = map[string]bool{
	"algorand:wGHE2Pwdvd7S12BL5FaOP20EGYesN73ktiC1qzkkit8=": true, // mainnet
	"algorand:SGO1GKSzyE7IEPItTxCByw9x8FmnrCDexi9/cOUJOiI=": true, // testnet
}

// IsCAIP2 reports whether n is a chain identifier in the CAIP-2 grammar: a namespace
// of 3 to 8 characters in [-a-z0-9], a colon, and a reference of 1 to 32 characters in
// [-_a-zA-Z0-9]. An eip155 reference must moreover be a decimal chain ID.
func IsCAIP2(n string) bool {
	if outsideGrammar[n] {
		return true
	}
	ns, ref, ok := strings.Cut(n, ":")
	if !ok || len(ns) < 3 || len(ns) > 8 || len(ref) < 1 || len(ref) > 32 {
		return false
	}
	for i := 0; i < len(ns); i++ {
		if c := ns[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	for i := 0; i < len(ref); i++ {
		if c := ref[i]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	if ns == "eip155" {
		for i := 0; i < len(ref); i++ {
			if ref[i] < '0' || ref[i] > '9' {
				return false
			}
		}
	}
	return true
}

// Namespace is the CAIP-2 namespace of a network ("eip155", "solana", ...), after
// normalising a v1 name; empty when there is none.
func Namespace(network string) string {
	ns, _, ok := strings.Cut(NormalizeNetwork(network), ":")
	if !ok {
		return ""
	}
	return ns
}

// NormalizeNetwork returns the CAIP-2 form of a network as the service stores and
// shows it: x402 v1 names are mapped (in any case), CAIP-2 identifiers pass through
// (EVM ones lower-cased), anything else is kept as given. It is lenient on purpose,
// for what was stored and listed; ParseOffer alone judges whether a network is valid.
func NormalizeNetwork(n string) string {
	n = strings.TrimSpace(n)
	if c, ok := v1Networks[strings.ToLower(n)]; ok {
		return c
	}
	if strings.HasPrefix(strings.ToLower(n), "eip155:") {
		return strings.ToLower(n)
	}
	return n
}

// networkNames are the display names of the networks sellers price on.
var networkNames = map[string]string{
	"eip155:8453":  "Base",
	"eip155:84532": "Base Sepolia (testnet)",
	"eip155:1":     "Ethereum",
	"eip155:137":   "Polygon",
	"eip155:42161": "Arbitrum",
	"eip155:10":    "Optimism",
	"eip155:43114": "Avalanche",
	"eip155:196":   "X Layer",
	"solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp": "Solana",
	"solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1": "Solana Devnet (testnet)",
}

// NetworkName is a network's display name, "" for one without.
func NetworkName(network string) string { return networkNames[NormalizeNetwork(network)] }
