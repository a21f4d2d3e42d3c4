package payment

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"strings"
	"testing"

	"github.com/gagliardetto/solana-go"

	"github.com/waystation/waystation/internal/auth"
	"github.com/waystation/waystation/internal/problem"
	"github.com/waystation/waystation/internal/x402"
)

func TestMicrosReadAndWriteDollars(t *testing.T) {
	for _, c := range []struct {
		in   string
		m    Micros
		text string
	}{{"0", 0, "0"}, {"0.05", 50_000, "0.05"}, {"0.050", 50_000, "0.05"}, {"12", 12_000_000, "12"}, {"1.000001", 1_000_001, "1.000001"}, {"1000000", MaxMicros, "1000000"}} {
		got, ok := ParseMicros(c.in)
		if !ok || got != c.m || got.String() != c.text {
			t.Errorf("ParseMicros(%q) = %d (%q), %v; want %d (%q)", c.in, got, got.String(), ok, c.m, c.text)
		}
	}
	for _, bad := range []string{"", ".5", "5.", "0.0000001", "-1", "01", "1e3", "1,5", "1000001", " 1", "0x10"} {
		if _, ok := ParseMicros(bad); ok {
			t.Errorf("ParseMicros(%q) accepted", bad)
		}
	}
	var m Micros
	if err := m.UnmarshalJSON([]byte(`"0.01"`)); err != nil || m != 10_000 {
		t.Errorf("UnmarshalJSON: %d %v", m, err)
	}
}

func TestValueCountsUSDCInDollarsRoundingUp(t *testing.T) {
	const base, sepolia = "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913", "0x036CbD53842c5426634e7929541eC2318f3dCF7e"
	if v, ok := Value("eip155:8453", base, "10000"); !ok || v != 10_000 {
		t.Errorf("Base USDC: %d %v", v, ok)
	}
	if v, ok := Value("eip155:84532", sepolia, "1"); !ok || v != 1 {
		t.Errorf("Sepolia USDC: %d %v", v, ok)
	}
	if _, ok := Value("eip155:8453", "0x0000000000000000000000000000000000000001", "1"); ok {
		t.Error("an unknown asset has a dollar value")
	}
	if _, ok := Value("eip155:8453", base, "1000000000000000000000"); ok {
		t.Error("an amount past MaxMicros has a value")
	}
}

func TestNetworksPayUSDCOnTheirNetworksOnly(t *testing.T) {
	n, err := ParseNetworks("eip155:84532, base")
	if err != nil || len(n) != 2 {
		t.Fatalf("%v %v", n, err)
	}
	if !n.Pays("base-sepolia", "0x036CbD53842c5426634e7929541eC2318f3dCF7e") || !n.Pays("eip155:8453", "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913") {
		t.Error("does not pay USDC on its networks")
	}
	if n.Pays("eip155:1", "0xa0b86991c6218b36c1d19d4a2e9eb0ce3606eb48") || n.Pays("eip155:8453", "0x0000000000000000000000000000000000000001") {
		t.Error("pays another network or asset")
	}
	if _, err := ParseNetworks("solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp"); err == nil {
		t.Error("a Solana network was taken")
	}
	var none *Payer
	if none.Pays("eip155:8453", "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913") {
		t.Error("no payer pays")
	}
}

func TestEnvelopeTakesOnlyWhatTheServiceMaySend(t *testing.T) {
	good := Envelope{URL: "https://Seller.Example/x?a=1", Headers: map[string]string{"content-type": "application/json", "X-Api-Key": "k"}}
	if err := good.Validate(); err != nil || good.Method != "GET" || good.Headers["Content-Type"] != "application/json" || good.Host() != "seller.example" {
		t.Fatalf("%+v %v", good, err)
	}
	for _, bad := range []Envelope{
		{URL: "ftp://seller.example/x"}, {URL: "https://u:p@seller.example/x"}, {URL: "https://127.0.0.1/x"},
		{Method: "TRACE", URL: "https://seller.example/x"},
		{URL: "https://seller.example/x", Headers: map[string]string{"X-Payment": "x"}},
		{URL: "https://seller.example/x", Headers: map[string]string{"payment-signature": "x"}},
		{URL: "https://seller.example/x", Headers: map[string]string{"Host": "other.example"}},
		{URL: "https://seller.example/x", Headers: map[string]string{"X-A": "a\r\nX-B: b"}},
		{URL: "https://seller.example/x", Headers: map[string]string{"bad name": "a"}},
		{URL: "https://seller.example/x", Headers: map[string]string{"x-a": "1", "X-A": "2"}},
		{URL: "https://seller.example/x", Body: "{}"},
		{Method: "POST", URL: "https://seller.example/x", Body: "a\x00b"},
		{Method: "POST", URL: "https://seller.example/x", Body: strings.Repeat("a", MaxBody+1)},
	} {
		if err := bad.Validate(); problem.CodeOf(err) != problem.ValidationFailed {
			t.Errorf("%+v: %v", bad, err)
		}
	}
}

func TestLimitsSayWhichLimitAPaymentWouldPass(t *testing.T) {
	l := Limits{PerPayment: 100, Daily: 300, Monthly: 500, HostsMode: HostsDeny, Hosts: []string{"bad.example"}}
	cases := []struct {
		host  string
		value Micros
		spent Spend
		code  string
	}{
		{"ok.example", 100, Spend{200, 400}, ""},
		{"ok.example", 101, Spend{}, problem.SpendingLimitExceeded},
		{"ok.example", 100, Spend{201, 201}, problem.SpendingLimitExceeded},
		{"ok.example", 100, Spend{0, 401}, problem.SpendingLimitExceeded},
		{"bad.example", 1, Spend{}, problem.HostNotAllowed},
	}
	for _, c := range cases {
		if got := problem.CodeOf(l.Allows(c.host, c.value, c.spent)); got != c.code {
			t.Errorf("%+v: %q", c, got)
		}
	}
	l.HostsMode, l.Hosts = HostsAllow, []string{"ok.example"}
	if problem.CodeOf(l.Allows("other.example", 1, Spend{})) != problem.HostNotAllowed || l.Allows("ok.example", 1, Spend{}) != nil {
		t.Error("allow list")
	}
	l.Paused = true
	if problem.CodeOf(l.Allows("ok.example", 0, Spend{})) != problem.AgentPaused {
		t.Error("paused")
	}
	if _, err := (LimitsInput{PerPayment: "1", Daily: "5", Monthly: "x"}).Limits(); err == nil {
		t.Error("a bad monthly budget was taken")
	}
	in, err := (LimitsInput{PerPayment: "1", Daily: "5", Monthly: "50", Hosts: []string{"A.Example", "a.example"}}).Limits()
	if err != nil || len(in.Hosts) != 1 || in.Hosts[0] != "a.example" || in.HostsMode != HostsDeny {
		t.Errorf("%+v %v", in, err)
	}
}

type hashes map[string]bool

func (h hashes) Has(network string) bool { return h[network] }
func (h hashes) LatestBlockhash(context.Context, string) (string, error) {
	return "EkSnNWid2cvwEVnVx9aBqawnmiCNiDgp3gUdkDPTKN1N", nil
}

// TestASolanaPayerPaysExactlyWhereItCan: a Solana method is payable exactly when the
// payer has a Solana key, names the network, has an RPC for it, and the asset is that
// network's USDC; the EVM key pays EVM networks alone.
func TestASolanaPayerPaysExactlyWhereItCan(t *testing.T) {
	const (
		mainnet, devnet  = "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp", "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1"
		usdc, usdcDevnet = "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v", "4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU"
	)
	n, err := ParseSolanaNetworks("solana, solana-devnet")
	if err != nil || len(n) != 2 || n[0] != mainnet || n[1] != devnet {
		t.Fatalf("%v %v", n, err)
	}
	for _, bad := range []string{"eip155:8453", "base", "solana:", "nonsense"} {
		if _, err := ParseSolanaNetworks(bad); err == nil {
			t.Errorf("ParseSolanaNetworks(%q) took it", bad)
		}
	}
	key := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{3}, 32))
	signer, err := x402.ParseSolanaSigner(solana.PrivateKey(key).String())
	if err != nil {
		t.Fatal(err)
	}
	p := &Payer{Solana: signer, SolanaNetworks: n, Blockhashes: hashes{mainnet: true}}
	for _, c := range []struct {
		network, asset string
		pays           bool
	}{
		{mainnet, usdc, true},
		{"solana", usdc, true},
		{devnet, usdcDevnet, false}, // no RPC for devnet
		{mainnet, usdcDevnet, false},
		{mainnet, "So11111111111111111111111111111111111111112", false},
		{"eip155:8453", "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913", false}, // no EVM key
	} {
		if got := p.Pays(c.network, c.asset); got != c.pays {
			t.Errorf("Pays(%s, %s) = %v", c.network, c.asset, got)
		}
	}
	if p.AddressOn(mainnet) != signer.Address() || p.Address() != "" {
		t.Errorf("addresses %q %q", p.AddressOn(mainnet), p.Address())
	}
	// A Solana payee in another case is another key: the offer changed.
	a := Offer{Version: 2, Scheme: "exact", Network: mainnet, Asset: usdc, PayTo: "2wKupLR9q6wXYppw8Gr2NvWxKBUqm4PPJKkQfoxHDBg4", Amount: "1"}
	b := a
	b.PayTo = strings.ToLower(a.PayTo)
	if !a.Same(a) || a.Same(b) {
		t.Error("Same is wrong on Solana keys")
	}
	e := Offer{Version: 2, Scheme: "exact", Network: "eip155:8453", Asset: "0xAbc", PayTo: "0xDEF", Amount: "1"}
	f := e
	f.PayTo, f.Asset = "0xdef", "0xabc"
	if !e.Same(f) {
		t.Error("EVM addresses differ by case")
	}
}

// TestAServiceWithoutAPayerSaysSo: built without a payer, the service answers
// payer_not_configured itself, to its check and to an ask, before it reads any
// store (it has none here).
func TestAServiceWithoutAPayerSaysSo(t *testing.T) {
	s := &Service{}
	if err := s.CheckPayer(); problem.CodeOf(err) != problem.PayerNotConfigured {
		t.Errorf("CheckPayer without a payer: %v", err)
	}
	if _, _, err := s.Ask(context.Background(), auth.Principal{}, "", Ask{}, Verdict{}, 0); problem.CodeOf(err) != problem.PayerNotConfigured {
		t.Errorf("Ask without a payer: %v", err)
	}
	if err := (&Service{Payer: &Payer{}}).CheckPayer(); err != nil {
		t.Errorf("CheckPayer with a payer: %v", err)
	}
}
