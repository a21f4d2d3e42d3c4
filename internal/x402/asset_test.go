package x402

import "testing"

func TestDecimalValue(t *testing.T) {
	for _, c := range []struct {
		amount string
		dec    int
		want   string
		ok     bool
	}{{"1000", 6, "0.001", true}, {"1", 6, "0.000001", true}, {"1500000", 6, "1.5", true}, {"0", 6, "0", true},
		{"12", 0, "12", true}, {"-1", 6, "", false}, {"1e3", 6, "", false}, {"", 6, "", false}} {
		got, ok := DecimalValue(c.amount, c.dec)
		if got != c.want || ok != c.ok {
			t.Errorf("DecimalValue(%q, %d) = %q, %v", c.amount, c.dec, got, ok)
		}
	}
}

func TestKnownAssets(t *testing.T) {
	for _, c := range []struct {
		network, asset string
		testnet        bool
	}{
		{"base", "0x833589FCD6EDB6E08F4C7C32D4F71B54BDA02913", false},
		{"ethereum", "0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48", false},
		{"polygon", "0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359", false},
		{"eip155:42161", "0xaf88d065e77c8cC2239327C5EDb3A432268e5831", false},
		{"solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp", "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v", false},
		{"base-sepolia", "0x036CbD53842c5426634e7929541eC2318f3dCF7e", true},
		{"polygon-amoy", "0x41E94Eb019C0762f9Bfcf9Fb1E58725BfB0e7582", true},
	} {
		a, ok := LookupAsset(c.network, c.asset)
		if !ok || a.Symbol != "USDC" || a.Decimals != 6 || a.Testnet != c.testnet {
			t.Errorf("%s %s: %+v %v", c.network, c.asset, a, ok)
		}
	}
	// Solana mints are case-sensitive.
	if _, ok := LookupAsset("solana", "epjfwdd5aufqssqem2qn1xzybapc8g4wegGkZwyTDt1v"); ok {
		t.Error("a Solana mint matched in the wrong case")
	}
}
