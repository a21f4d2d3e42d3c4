package x402

import (
	"math/big"
	"strings"
)

// Asset is a token the service knows: its symbol and decimals on one network.
type Asset struct {
	Symbol   string
	Decimals int
	// Testnet assets are listed so prices read right, but the service never pays them.
	Testnet bool
}

type assetKey struct{ network, address string }

// knownAssets holds the tokens sellers price in: Circle's USDC on the networks x402
// sellers use, mainnets and their test networks. EVM addresses are kept lower-case;
// Solana mint addresses are case-sensitive and kept as they are.
var knownAssets = map[assetKey]Asset{
	// Mainnets.
	{"eip155:8453", "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913"}:                               {"USDC", 6, false},
	{"eip155:1", "0xa0b86991c6218b36c1d19d4a2e9eb0ce3606eb48"}:                                  {"USDC", 6, false},
	{"eip155:137", "0x3c499c542cef5e3811e1192ce70d8cc03d5c3359"}:                                {"USDC", 6, false},
	{"eip155:42161", "0xaf88d065e77c8cc2239327c5edb3a432268e5831"}:                              {"USDC", 6, false},
	{"eip155:10", "0x0b2c639c533813f4aa9d7837caf62653d097ff85"}:                                 {"USDC", 6, false},
	{"eip155:43114", "0xb97ef9ef8734c71904d8002f8b6bc66dd9c48a6e"}:                              {"USDC", 6, false},
	{"eip155:1329", "0xe15fc38f6d8c56af07bbcbe3baf5708a2bf42392"}:                               {"USDC", 6, false},
	{"eip155:42220", "0xceba9300f2b948710d2653dd7b07f33a8b32118c"}:                              {"USDC", 6, false},
	{"eip155:130", "0x078d782b760474a361dda0af3839290b0ef57ad6"}:                                {"USDC", 6, false},
	{"eip155:59144", "0x176211869ca2b568f2a7d4ee941e073a821ee1ff"}:                              {"USDC", 6, false},
	{"eip155:480", "0x79a02482a880bce3f13e09da970dc34db4cd24d1"}:                                {"USDC", 6, false},
	{"eip155:324", "0x1d17cbcf0d6d143135ae902365d2e5e2a16538d4"}:                                {"USDC", 6, false},
	{"solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp", "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v"}: {"USDC", 6, false},
	// Test networks.
	{"eip155:84532", "0x036cbd53842c5426634e7929541ec2318f3dcf7e"}:                              {"USDC", 6, true},
	{"eip155:11155111", "0x1c7d4b196cb0c7b01d743fbc6116a902379c7238"}:                           {"USDC", 6, true},
	{"eip155:80002", "0x41e94eb019c0762f9bfcf9fb1e58725bfb0e7582"}:                              {"USDC", 6, true},
	{"eip155:421614", "0x75faf114eafb1bdbe2f0316df893fd58ce46aa4d"}:                             {"USDC", 6, true},
	{"eip155:11155420", "0x5fd84259d66cd46123540766be93dfe6d43130d7"}:                           {"USDC", 6, true},
	{"eip155:43113", "0x5425890298aed601595a70ab815c96711a31bc65"}:                              {"USDC", 6, true},
	{"eip155:1328", "0x4fcf1784b31630811181f670aea7a7bef803eaed"}:                               {"USDC", 6, true},
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
