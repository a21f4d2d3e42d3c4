package x402

import "testing"

func TestParseChainsReadsNetworkURLPairs(t *testing.T) {
	c, err := ParseChains(" base=https://mainnet.base.org , eip155:84532=http://localhost:4021/rpc,", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.urls["eip155:8453"]; got != "https://mainnet.base.org" {
		t.Errorf("base: %q", got)
	}
	if got := c.urls["eip155:84532"]; got != "http://localhost:4021/rpc" {
		t.Errorf("base sepolia: %q", got)
	}
	if c, err := ParseChains("", nil); err != nil || len(c.Networks()) != 0 {
		t.Errorf("empty: %v %v", c.Networks(), err)
	}
	for _, bad := range []string{"eip155:8453", "eip155:8453=ftp://x", "solana:mainnet=https://x", "eip155:8453=https://"} {
		if _, err := ParseChains(bad, nil); err == nil {
			t.Errorf("%q: accepted", bad)
		}
	}
}
