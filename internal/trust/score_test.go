package trust

import (
	"go/ast"
	"go/parser"
	"go/token"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/waystation/waystation/internal/directory"
)

var now = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

func offer(age time.Duration, payTo, amount string) Observation {
	return Observation{ProbedAt: now.Add(-age), Outcome: OutcomePaymentRequired, Network: "base",
		Asset: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913", PayTo: payTo, Amount: &amount}
}

func failed(age time.Duration, outcome string) Observation {
	return Observation{ProbedAt: now.Add(-age), Outcome: outcome}
}

func TestScoreVerdicts(t *testing.T) {
	cases := []struct {
		name    string
		in      Input
		verdict string
		score   *int
	}{
		{"never probed", Input{Kind: "x402"}, directory.VerdictUnknown, nil},
		{"consistent fresh offers", Input{Kind: "x402", Probes: []Observation{offer(time.Hour, "0xa", "1000"), offer(7*time.Hour, "0xa", "1000"), offer(30*time.Hour, "0xa", "1000")}}, directory.VerdictProceed, ptr(100)},
		{"stale offers", Input{Kind: "x402", Probes: []Observation{offer(80*time.Hour, "0xa", "1000")}}, directory.VerdictUnknown, nil},
		{"errors only", Input{Kind: "x402", Probes: []Observation{failed(time.Hour, OutcomeTimeout), failed(5*time.Hour, OutcomeHTTPError)}}, directory.VerdictAvoid, ptr(0)},
		{"mixed", Input{Kind: "x402", Probes: []Observation{failed(time.Hour, OutcomeHTTPError), offer(3*time.Hour, "0xa", "1000"), offer(20*time.Hour, "0xb", "2000")}}, directory.VerdictCaution, nil},
		{"checkout answering 200", Input{Kind: "checkout", Probes: []Observation{failed(2*time.Hour, OutcomeNoPaymentRequired)}}, directory.VerdictProceed, ptr(100)},
		{"x402 answering 200 without an offer", Input{Kind: "x402", Probes: []Observation{failed(2*time.Hour, OutcomeNoPaymentRequired)}}, directory.VerdictAvoid, ptr(0)},
		{"poor delivery pulls a good seller down", Input{Kind: "x402", Settled: 12, Delivered: 3, Probes: []Observation{offer(time.Hour, "0xa", "1000")}}, directory.VerdictCaution, ptr(63)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.in.Now = now
			got := Score(c.in)
			if got.Verdict != c.verdict || !got.Advisory {
				t.Errorf("verdict %s, want %s (score %v)", got.Verdict, c.verdict, scoreText(got.Score))
			}
			if c.score != nil && (got.Score == nil || *got.Score != *c.score) {
				t.Errorf("score %v, want %d", scoreText(got.Score), *c.score)
			}
			if len(c.in.Probes) == 0 && (got.Score != nil || got.Probe != nil) {
				t.Error("never probed must have no score and no probe")
			}
		})
	}
}

func TestOverrideDecidesWhileItLasts(t *testing.T) {
	later := now.Add(time.Hour)
	earlier := now.Add(-time.Hour)
	in := Input{Kind: "x402", Now: now, Probes: []Observation{offer(time.Hour, "0xa", "1000")}}
	in.Override = &directory.Override{Verdict: directory.VerdictAvoid, Reason: "under review", SetAt: earlier, ExpiresAt: &later}
	if got := Score(in); got.Verdict != directory.VerdictAvoid || got.Override == nil || got.Score == nil || *got.Score < 70 {
		t.Fatalf("active override: %+v", got)
	}
	in.Override.ExpiresAt = &earlier
	if got := Score(in); got.Verdict != directory.VerdictProceed || got.Override != nil {
		t.Fatalf("expired override: %+v", got)
	}
}

func TestDescribeNormalisesWhatWasAdvertised(t *testing.T) {
	p := Describe(offer(time.Hour, "0xa", "1000"), now)
	if *p.Network != "eip155:8453" || *p.AssetSymbol != "USDC" || *p.Price.Value != "0.001" || *p.Price.Decimals != 6 || p.AgeSeconds != 3600 {
		t.Fatalf("%+v %+v", p, p.Price)
	}
	unknown := Observation{ProbedAt: now, Outcome: OutcomePaymentRequired, Network: "algorand:abc", Asset: "31566704", Amount: ptrS("5")}
	p = Describe(unknown, now)
	if p.AssetSymbol != nil || p.Price == nil || *p.Price.Amount != "5" || p.Price.Value != nil || p.Price.Decimals != nil {
		t.Fatalf("unknown asset: %+v", p.Price)
	}
}

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

func TestPayable(t *testing.T) {
	usdc := "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"
	if !Payable("x402", "base", usdc, ptrS("1000")) {
		t.Error("USDC on Base must be payable")
	}
	if Payable("x402", "base", usdc, nil) || Payable("checkout", "base", usdc, ptrS("1")) ||
		Payable("x402", "eip155:84532", "0x036CbD53842c5426634e7929541eC2318f3dCF7e", ptrS("1")) {
		t.Error("unreadable price, other kinds and testnets are not payable")
	}
}

func ptr(n int) *int        { return &n }
func ptrS(s string) *string { return &s }

func scoreText(n *int) string {
	if n == nil {
		return "null"
	}
	return strconv.Itoa(*n)
}

// TestRuleIsTheRuleWrittenOnScore keeps the text the pages show equal to the rule
// in Score's doc comment, paragraph by paragraph.
func TestRuleIsTheRuleWrittenOnScore(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "score.go", nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	var doc string
	for _, d := range f.Decls {
		if fn, ok := d.(*ast.FuncDecl); ok && fn.Name.Name == "Score" {
			doc = fn.Doc.Text()
		}
	}
	norm := func(s string) string {
		s = regexp.MustCompile(`(?m)^\s*\d+\.\s`).ReplaceAllString(s, " ")
		return strings.Join(strings.Fields(s), " ")
	}
	doc = norm(doc)
	paras := strings.Split(Rule, "\n")
	if len(paras) < 6 {
		t.Fatalf("Rule has %d paragraphs", len(paras))
	}
	for _, p := range paras {
		if p == "" || !strings.Contains(doc, norm(p)) {
			t.Errorf("Score's doc comment lacks the paragraph %q", p)
		}
	}
}

func TestRedirectsCountOnlyForSellersThatDoNotAskUpFront(t *testing.T) {
	for kind, want := range map[string]string{"checkout": directory.VerdictProceed, "x402": directory.VerdictAvoid} {
		got := Score(Input{Kind: kind, Now: now, Probes: []Observation{failed(time.Hour, OutcomeRedirect)}})
		if got.Verdict != want {
			t.Errorf("%s redirecting: %s", kind, got.Verdict)
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
		{"arbitrum", "0xaf88d065e77c8cC2239327C5EDb3A432268e5831", false},
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

func TestOffersTheServiceCannotPayAreCautionAtBest(t *testing.T) {
	testnet := Observation{ProbedAt: now.Add(-time.Hour), Outcome: OutcomePaymentRequired, Network: "base-sepolia",
		Asset: "0x036CbD53842c5426634e7929541eC2318f3dCF7e", PayTo: "0xa", Amount: ptrS("1000")}
	unknown := Observation{ProbedAt: now.Add(-time.Hour), Outcome: OutcomePaymentRequired, Network: "algorand:abc",
		Asset: "31566704", PayTo: "A", Amount: ptrS("5")}
	for _, o := range []Observation{testnet, unknown} {
		got := Score(Input{Kind: "x402", Now: now, Probes: []Observation{o}})
		if got.Verdict != directory.VerdictCaution || *got.Score != CautionCap {
			t.Errorf("%s: %s %d", o.Network, got.Verdict, *got.Score)
		}
	}
}

func TestAPayeeChangeIsCautionAtBest(t *testing.T) {
	in := Input{Kind: "x402", Now: now, Probes: []Observation{offer(time.Hour, "0xb", "1000"), offer(7*time.Hour, "0xa", "1000")}}
	if got := Score(in); got.Verdict != directory.VerdictCaution || *got.Score != CautionCap {
		t.Errorf("payee changed: %s %d", got.Verdict, *got.Score)
	}
	in.Probes[0].PayTo = "0xa"
	in.Probes[0].Amount = ptrS("2000")
	if got := Score(in); got.Verdict != directory.VerdictProceed {
		t.Errorf("price changed once: %s %d", got.Verdict, *got.Score)
	}
}
