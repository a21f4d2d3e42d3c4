// Package trust turns what sellers advertise and what probes saw into the directory's
// advisory trust block: networks and assets, prices, scores and verdicts.
package trust

import (
	"math/big"
	"strings"
)

// legacyNetworks maps the network names of x402 v1 to CAIP-2 identifiers.
var legacyNetworks = map[string]string{
	"base":           "eip155:8453",
	"base-sepolia":   "eip155:84532",
	"ethereum":       "eip155:1",
	"polygon":        "eip155:137",
	"polygon-amoy":   "eip155:80002",
	"arbitrum":       "eip155:42161",
	"optimism":       "eip155:10",
	"avalanche":      "eip155:43114",
	"avalanche-fuji": "eip155:43113",
	"x-layer":        "eip155:196",
	"sei":            "eip155:1329",
	"iotex":          "eip155:4689",
	"solana":         "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp",
	"solana-devnet":  "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1",
}

// NormalizeNetwork returns the CAIP-2 form of a network name: legacy v1 names are
// mapped, CAIP-2 identifiers pass through (EVM chain references lower-cased).
func NormalizeNetwork(n string) string {
	n = strings.TrimSpace(n)
	if c, ok := legacyNetworks[strings.ToLower(n)]; ok {
		return c
	}
	if strings.HasPrefix(strings.ToLower(n), "eip155:") {
		return strings.ToLower(n)
	}
	return n
}

// Asset is a token the service knows: its symbol and decimals on one network.
type Asset struct {
	Symbol   string
	Decimals int
	// Testnet assets are listed so prices read right, but the service never pays them.
	Testnet bool
}

type assetKey struct{ network, address string }

// knownAssets holds the tokens sellers price in. EVM addresses are kept lower-case.
var knownAssets = map[assetKey]Asset{
	{"eip155:8453", "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913"}:                               {"USDC", 6, false},
	{"eip155:84532", "0x036cbd53842c5426634e7929541ec2318f3dcf7e"}:                              {"USDC", 6, true},
	{"eip155:1", "0xa0b86991c6218b36c1d19d4a847a928b3e2a49f1"}:                                  {"USDC", 6, false},
	{"eip155:137", "0x3c499c542cef5e3811e1192ce70d8cc03d5c3359"}:                                {"USDC", 6, false},
	{"eip155:42161", "0xaf88d065e77c8cc2239327c5edb3a432268e5831"}:                              {"USDC", 6, false},
	{"eip155:10", "0x0b2c639c533813f4aa9d7837caf62653d097ff85"}:                                 {"USDC", 6, false},
	{"eip155:43114", "0xb97ef9ef8734c71904d8002f8b6bc66dd9c48a6e"}:                              {"USDC", 6, false},
	{"solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp", "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v"}: {"USDC", 6, false},
	{"solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1", "4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU"}: {"USDC", 6, true},
}

// LookupAsset finds a known asset by CAIP-2 network and address.
func LookupAsset(network, address string) (Asset, bool) {
	network = NormalizeNetwork(network)
	if strings.HasPrefix(network, "eip155:") {
		address = strings.ToLower(address)
	}
	a, ok := knownAssets[assetKey{network, address}]
	return a, ok
}

// DecimalValue renders an atomic amount as a decimal string with the given decimals,
// without trailing zeros ("1000", 6 gives "0.001"). It reports false for an amount
// that is not a non-negative integer.
func DecimalValue(amount string, decimals int) (string, bool) {
	n, ok := new(big.Int).SetString(amount, 10)
	if !ok || n.Sign() < 0 || decimals < 0 || decimals > 36 {
		return "", false
	}
	s := n.String()
	if decimals == 0 {
		return s, true
	}
	if len(s) <= decimals {
		s = strings.Repeat("0", decimals-len(s)+1) + s
	}
	whole, frac := s[:len(s)-decimals], strings.TrimRight(s[len(s)-decimals:], "0")
	if frac == "" {
		return whole, true
	}
	return whole + "." + frac, true
}
