package trust

import (
	"testing"
	"time"

	"golang.org/x/net/idna"

	"github.com/waystation/waystation/internal/directory"
)

func punycode(t *testing.T, host string) string {
	t.Helper()
	a, err := idna.ToASCII(host)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestLookalikesFlagTheShapesOfAnImpostor seeds an established brand and, a month
// later, sellers that take its shape: a hostname with a Cyrillic letter (one
// confusable skeleton), a registrable name one letter off, the brand inside another
// hostname, and the brand's provider name spelt with a Cyrillic letter. Each is
// flagged as resembling the brand, by its signal; the brand itself, its own
// neighbours on its registrable domain and unrelated sellers are not.
func TestLookalikesFlagTheShapesOfAnImpostor(t *testing.T) {
	t0 := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	later := t0.AddDate(0, 1, 0)
	brand := Seller{Hostname: "api.tidewatch.example", Providers: []string{"Tidewatch"}, Listed: t0, Verdict: directory.VerdictProceed}
	sellers := []Seller{
		brand,
		{Hostname: punycode(t, "api.tіdewatch.example"), Providers: []string{"Chain data"}, Listed: later, Verdict: directory.VerdictProceed},
		{Hostname: "api.tidewatcb.example", Providers: []string{"TW"}, Listed: later, Verdict: directory.VerdictProceed},
		{Hostname: "tidewatch.pay-now.example", Providers: []string{"Pay now"}, Listed: later, Verdict: directory.VerdictCaution},
		{Hostname: "api.blockfacts.example", Providers: []string{"Tіde Watch"}, Listed: later, Verdict: directory.VerdictProceed},
		// Neighbours and strangers.
		{Hostname: "geo.tidewatch.example", Providers: []string{"Tidewatch Geo"}, Listed: later, Verdict: directory.VerdictProceed},
		{Hostname: punycode(t, "api.münzwerk.example"), Providers: []string{"Münzwerk"}, Listed: later, Verdict: directory.VerdictProceed},
		{Hostname: "api.quillrate.example", Providers: []string{"Quillrate"}, Listed: later, Verdict: directory.VerdictProceed},
		{Hostname: "localhost", Providers: []string{"Local"}, Listed: later, Verdict: directory.VerdictProceed},
	}
	got := Lookalikes(sellers)
	want := map[string]directory.Resemblance{
		sellers[1].Hostname:         {Hostname: brand.Hostname, Signal: directory.SignalConfusable, Mine: "tіdewatch", Theirs: "tidewatch"},
		"api.tidewatcb.example":     {Hostname: brand.Hostname, Signal: directory.SignalNearDomain, Mine: "tidewatcb", Theirs: "tidewatch"},
		"tidewatch.pay-now.example": {Hostname: brand.Hostname, Signal: directory.SignalBrandInHost, Mine: "tidewatch.pay-now.example", Theirs: "tidewatch"},
		"api.blockfacts.example":    {Hostname: brand.Hostname, Signal: directory.SignalConfusable, Mine: "Tіde Watch", Theirs: "Tidewatch"},
	}
	for host, r := range want {
		l := got[host]
		if l == nil || len(l.Resembles) != 1 || l.Resembles[0] != r || l.Cleared != nil {
			t.Errorf("%s: %+v, want it standing and resembling %+v", host, l, r)
		}
	}
	for host, l := range got {
		if _, ok := want[host]; !ok {
			t.Errorf("%s flagged: %+v", host, l)
		}
	}
}

// TestLookalikesLookOnlyBack checks that a seller guards its names only once it is
// established: proceed, and listed a week before the other. A brand listed two days
// before the other, or whose verdict is caution, flags nothing; nor is an older
// seller flagged for a younger one that resembles it.
func TestLookalikesLookOnlyBack(t *testing.T) {
	t0 := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	for name, c := range map[string]struct {
		brand, other Seller
	}{
		"too young": {
			Seller{Hostname: "api.tidewatch.example", Listed: t0, Verdict: directory.VerdictProceed},
			Seller{Hostname: "api.tidewatcb.example", Listed: t0.Add(2 * 24 * time.Hour), Verdict: directory.VerdictProceed}},
		"not proceed": {
			Seller{Hostname: "api.tidewatch.example", Listed: t0, Verdict: directory.VerdictCaution},
			Seller{Hostname: "api.tidewatcb.example", Listed: t0.AddDate(0, 1, 0), Verdict: directory.VerdictProceed}},
		"never known when listed": {
			Seller{Hostname: "api.tidewatch.example", Verdict: directory.VerdictProceed},
			Seller{Hostname: "api.tidewatcb.example", Listed: t0, Verdict: directory.VerdictProceed}},
	} {
		if got := Lookalikes([]Seller{c.brand, c.other}); len(got) != 0 {
			t.Errorf("%s: flagged %+v", name, got)
		}
	}
	old := Seller{Hostname: "api.tidewatch.example", Listed: t0, Verdict: directory.VerdictProceed}
	young := Seller{Hostname: "api.tidewatcb.example", Listed: t0.AddDate(0, 1, 0), Verdict: directory.VerdictProceed}
	got := Lookalikes([]Seller{young, old})
	if _, ok := got[old.Hostname]; ok || got[young.Hostname] == nil {
		t.Errorf("flags %+v: want the young one alone", got)
	}
}

// TestLookalikesAreClearedByOwnerProofOrOverride checks what clears a flag: one
// payee proven by both sellers' origins, or an override on the look-alike. A payee
// of its own proves nothing about the brand: the flag stands.
func TestLookalikesAreClearedByOwnerProofOrOverride(t *testing.T) {
	t0 := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	const payee = "0x2c7536E3605D9C16a7a3D7b1898e529396a65c23"
	brand := Seller{Hostname: "api.tidewatch.example", Listed: t0, Verdict: directory.VerdictProceed, Payees: []string{payee}}
	other := Seller{Hostname: "tidewatch-eu.example", Listed: t0.AddDate(0, 1, 0), Verdict: directory.VerdictProceed}

	other.Payees = []string{"0x209693Bc6afc0C5328bA36FaF03C514EF312287C"}
	if l := Lookalikes([]Seller{brand, other})[other.Hostname]; l == nil || l.Cleared != nil {
		t.Errorf("its own payee: %+v, want the flag standing", l)
	}
	other.Payees = []string{"0x2C7536E3605D9C16A7A3D7B1898E529396A65C23"}
	if l := Lookalikes([]Seller{brand, other})[other.Hostname]; l == nil || l.Cleared == nil || *l.Cleared != directory.ClearedByOwnerProof {
		t.Errorf("the brand's payee: %+v, want the flag cleared by owner_proof", l)
	}
	other.Payees, other.Overridden = nil, true
	if l := Lookalikes([]Seller{brand, other})[other.Hostname]; l == nil || l.Cleared == nil || *l.Cleared != directory.ClearedByOverride ||
		len(l.Resembles) != 1 || l.Resembles[0].Hostname != brand.Hostname {
		t.Errorf("an override: %+v, want the flag shown, cleared by override", l)
	}
}

// TestCapLookalikeHoldsTheVerdictAtCaution checks the cap: a standing flag takes a
// proceed to caution at 60, leaves lower scores and an unknown (stale) verdict as
// they are, and a cleared flag or an override caps nothing.
func TestCapLookalikeHoldsTheVerdictAtCaution(t *testing.T) {
	standing := &directory.Lookalike{Resembles: []directory.Resemblance{{Hostname: "api.tidewatch.example"}}}
	cleared := &directory.Lookalike{Cleared: cleared(directory.ClearedByOwnerProof)}
	trustOf := func(score int, verdict string) directory.Trust {
		return directory.Trust{Score: &score, Verdict: verdict, Advisory: true}
	}
	for _, c := range []struct {
		in        directory.Trust
		l         *directory.Lookalike
		score     int
		verdict   string
		overrides bool
	}{
		{trustOf(88, directory.VerdictProceed), standing, 60, directory.VerdictCaution, false},
		{trustOf(45, directory.VerdictCaution), standing, 45, directory.VerdictCaution, false},
		{trustOf(90, directory.VerdictUnknown), standing, 60, directory.VerdictUnknown, false},
		{trustOf(88, directory.VerdictProceed), cleared, 88, directory.VerdictProceed, false},
		{trustOf(88, directory.VerdictProceed), standing, 88, directory.VerdictProceed, true},
	} {
		in := c.in
		if c.overrides {
			in.Override = &directory.Override{Verdict: directory.VerdictProceed, Reason: "checked"}
		}
		got := CapLookalike(in, c.l)
		if *got.Score != c.score || got.Verdict != c.verdict || got.Lookalike != c.l {
			t.Errorf("%d %s (override %v): got %d %s", *c.in.Score, c.in.Verdict, c.overrides, *got.Score, got.Verdict)
		}
	}
}

// TestFoldReadsTheConfusablesTable checks the skeletons the rule compares against
// entries of Unicode's confusables.txt (UTS #39): Cyrillic а and і, Greek ο, the
// digits 0 and 1, m read as rn; case, spaces and punctuation set aside.
func TestFoldReadsTheConfusablesTable(t *testing.T) {
	for _, c := range [][2]string{
		{"pаypal", "paypal"},       // U+0430 CYRILLIC SMALL LETTER A
		{"tіdewatch", "tidewatch"}, // U+0456 CYRILLIC SMALL LETTER BYELORUSSIAN-UKRAINIAN I
		{"gοοgle", "google"},       // U+03BF GREEK SMALL LETTER OMICRON
		{"g00gle", "google"},       // 0 is confusable with O
		{"paypa1", "paypal"},       // 1 is confusable with l
		{"modern", "rnodern"},      // m is confusable with rn
		{"Tide-Watch", "tidewatch"},
	} {
		if a, b := fold(c[0]), fold(c[1]); a != b {
			t.Errorf("fold(%q) = %q, fold(%q) = %q: want one skeleton", c[0], a, c[1], b)
		}
	}
	if fold("tidewatch") == fold("tidewatcb") {
		t.Error("tidewatch and tidewatcb fold alike")
	}
}

// TestLookalikesLeaveTheTradesCommonWordsAndLabelsApart: names made of the trade's
// common words (x402, 402, agent, agents, agentic) are no one's brand, and a brand
// is found inside one label of a hostname, not across two: the false positives
// measured on the real Bazaar (TestLookalikesOnTheRealBazaar) take these shapes,
// here on made-up names. An impostor that adds those words to a brand is still
// flagged.
func TestLookalikesLeaveTheTradesCommonWordsAndLabelsApart(t *testing.T) {
	t0 := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	later := t0.AddDate(0, 1, 0)
	sellers := []Seller{
		{Hostname: "402agent.example", Listed: t0, Verdict: directory.VerdictProceed},
		{Hostname: "x402-agent-tools.example", Listed: later, Verdict: directory.VerdictProceed},
		{Hostname: "agent402.example", Listed: t0, Verdict: directory.VerdictProceed},
		{Hostname: "api.agentx402.example", Listed: later, Verdict: directory.VerdictProceed},
		{Hostname: "x402.example", Listed: t0, Verdict: directory.VerdictProceed},
		{Hostname: "api.x-402.test", Listed: later, Verdict: directory.VerdictProceed},
		{Hostname: "agenticfi.example", Listed: t0, Verdict: directory.VerdictProceed},
		{Hostname: "weather.agentic-jp.example", Listed: later, Verdict: directory.VerdictProceed},
		{Hostname: "agentready.example", Listed: t0, Verdict: directory.VerdictProceed},
		{Hostname: "agentreader.example", Listed: later, Verdict: directory.VerdictProceed},
		{Hostname: "10adwave.example", Listed: t0, Verdict: directory.VerdictProceed},
		{Hostname: "apollo.adwave.paymesh.example", Listed: later, Verdict: directory.VerdictProceed},
		// A brand with the trade's words around it is still the brand.
		{Hostname: "tidewatch.example", Listed: t0, Verdict: directory.VerdictProceed},
		{Hostname: "tidewatch-x402.test", Listed: later, Verdict: directory.VerdictProceed},
		{Hostname: "tidewatch-agent.x402.example", Listed: later, Verdict: directory.VerdictProceed},
	}
	got := Lookalikes(sellers)
	want := map[string]string{"tidewatch-x402.test": directory.SignalBrandInHost, "tidewatch-agent.x402.example": directory.SignalBrandInHost}
	for host, signal := range want {
		if l := got[host]; l == nil || len(l.Resembles) != 1 || l.Resembles[0].Hostname != "tidewatch.example" || l.Resembles[0].Signal != signal {
			t.Errorf("%s: %+v, want it resembling tidewatch.example by %s", host, l, signal)
		}
	}
	for host, l := range got {
		if _, ok := want[host]; !ok {
			t.Errorf("%s flagged: %+v", host, l.Resembles)
		}
	}
}
