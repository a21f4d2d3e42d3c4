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
	// An upto offer names a ceiling, which is no price.
	upto := offer(time.Hour, "0xa", "")
	upto.Scheme, upto.Amount = "upto", nil
	if p = Describe(upto, now); p.Price != nil || *p.AssetSymbol != "USDC" || p.Reason != nil {
		t.Fatalf("upto: %+v", p)
	}
}

func TestDescribeNamesWhyAnOfferWasRefused(t *testing.T) {
	refused := Observation{ProbedAt: now, Outcome: OutcomeInvalidOffer, Reason: "bad_extra"}
	if p := Describe(refused, now); p.Reason == nil || *p.Reason != "bad_extra" || p.Network != nil || p.Price != nil {
		t.Fatalf("%+v", p)
	}
	if r := ProbeRecord(refused); r.Reason == nil || *r.Reason != "bad_extra" {
		t.Fatalf("%+v", r)
	}
	// Only an invalid offer carries a reason.
	if p := Describe(Observation{ProbedAt: now, Outcome: OutcomeTimeout, Reason: "bad_extra"}, now); p.Reason != nil {
		t.Fatalf("%+v", p)
	}
}

func TestPayableNeedsAValidExactOfferAndAPayerForIt(t *testing.T) {
	const usdc = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"
	usdcOnBase := PayerFunc(func(network, asset string) bool {
		return network == "eip155:8453" && strings.EqualFold(asset, usdc)
	})
	exact := offer(time.Hour, "0xa", "1000")
	exact.Scheme = "exact"
	upto := exact
	upto.Scheme, upto.Amount = "upto", nil
	sepolia := exact
	sepolia.Network, sepolia.Asset = "eip155:84532", "0x036CbD53842c5426634e7929541eC2318f3dCF7e"
	legacy := exact // stored before probes kept the scheme
	legacy.Scheme = ""
	refused := Observation{ProbedAt: now, Outcome: OutcomeInvalidOffer, Reason: "bad_extra"}
	free := Observation{ProbedAt: now, Outcome: OutcomeNoPaymentRequired}
	cases := []struct {
		name   string
		kind   string
		probes []Observation
		payer  Payer
		want   bool
	}{
		{"an exact USDC price on Base with a payer for it", "x402", []Observation{exact}, usdcOnBase, true},
		{"a timeout since leaves the offer in force", "x402", []Observation{failed(0, OutcomeTimeout), exact}, usdcOnBase, true},
		{"no payer at all", "x402", []Observation{exact}, nil, false},
		{"a payer for other assets", "x402", []Observation{sepolia}, usdcOnBase, false},
		{"a ceiling is no price", "x402", []Observation{upto}, usdcOnBase, false},
		{"a scheme never recorded", "x402", []Observation{legacy}, usdcOnBase, false},
		{"the newest offer refused", "x402", []Observation{refused, exact}, usdcOnBase, false},
		{"the endpoint now gives it away", "x402", []Observation{free, exact}, usdcOnBase, false},
		{"never probed", "x402", nil, usdcOnBase, false},
		{"another kind", "checkout", []Observation{exact}, usdcOnBase, false},
	}
	for _, c := range cases {
		if got := Payable(c.kind, c.probes, c.payer); got != c.want {
			t.Errorf("%s: payable %v, want %v", c.name, got, c.want)
		}
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

// TestOwnershipWeighsFivePointsOnlyWhileTheSellerAnswers: an owner-verified seller
// gains OwnerPoints while its newest probe gets a valid offer, which can tip a seller
// on the edge of a band; it gains nothing when its newest probe failed, nothing past
// 100, and the payee-change cap still holds, even when the new payee signed.
func TestOwnershipWeighsFivePointsOnlyWhileTheSellerAnswers(t *testing.T) {
	owner := &directory.Owner{Verified: true, PayTo: "0xa", Origin: "https://a.example"}
	cases := []struct {
		name          string
		probes        []Observation
		without, with int
		verdict       string // with the proof
		points        int
	}{
		{"on the edge of proceed", []Observation{offer(time.Hour, "0xa", "1000"), failed(2*time.Hour, OutcomeTimeout),
			offer(3*time.Hour, "0xa", "1000"), failed(4*time.Hour, OutcomeHTTPError), failed(5*time.Hour, OutcomeHTTPError)},
			65, 70, directory.VerdictProceed, OwnerPoints},
		{"newest probe timed out", []Observation{failed(time.Hour, OutcomeTimeout), offer(3*time.Hour, "0xa", "1000")},
			59, 59, directory.VerdictCaution, 0},
		{"unreachable", []Observation{failed(time.Hour, OutcomeConnectionRefused), failed(2*time.Hour, OutcomeConnectionRefused),
			failed(3*time.Hour, OutcomeConnectionRefused), offer(30*time.Hour, "0xa", "1000")},
			38, 38, directory.VerdictAvoid, 0},
		{"already at 100", []Observation{offer(time.Hour, "0xa", "1000")}, 100, 100, directory.VerdictProceed, OwnerPoints},
		{"payee changed, the new one signed", []Observation{offer(time.Hour, "0xa", "1000"), offer(7*time.Hour, "0xb", "1000")},
			CautionCap, CautionCap, directory.VerdictCaution, OwnerPoints},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			plain := Score(Input{Kind: "x402", Now: now, Probes: c.probes})
			owned := Score(Input{Kind: "x402", Now: now, Probes: c.probes, Owner: owner})
			if plain.Owner != nil {
				t.Error("an owner fact without a proof")
			}
			if *plain.Score != c.without {
				t.Errorf("score without the proof %d, want %d", *plain.Score, c.without)
			}
			if owned.Owner == nil || owned.Owner.PayTo != owner.PayTo || owned.Owner.Points != c.points {
				t.Errorf("owner fact %+v, want %d points", owned.Owner, c.points)
			}
			if *owned.Score != c.with || owned.Verdict != c.verdict {
				t.Errorf("with the proof: %d (%s), want %d (%s)", *owned.Score, owned.Verdict, c.with, c.verdict)
			}
		})
	}
	// Only an x402 seller's offer carries a payee that can sign.
	got := Score(Input{Kind: "checkout", Now: now, Probes: []Observation{failed(time.Hour, OutcomeNoPaymentRequired)}, Owner: owner})
	if got.Owner == nil || got.Owner.Points != 0 {
		t.Errorf("a checkout seller's owner fact %+v", got.Owner)
	}
}
