package web

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/waystation/waystation/internal/directory"
)

// TestTheMerchantPageShowsWhomALookalikeResembles renders a look-alike's merchant
// and method pages: both name the established seller it resembles, with a link to
// its record and how it resembles it, and say the verdict is held at caution; once
// cleared, the page says what cleared it and no longer holds it.
func TestTheMerchantPageShowsWhomALookalikeResembles(t *testing.T) {
	score := 60
	flag := &directory.Lookalike{Resembles: []directory.Resemblance{{Hostname: "xn--tdewatch-thh.example",
		Signal: directory.SignalNearDomain, Mine: "tidewatcb", Theirs: "tіdewatch"}}}
	page := func(l *directory.Lookalike) (merchant, method string) {
		tr := directory.Trust{Verdict: directory.VerdictCaution, Score: &score, Advisory: true, Lookalike: l}
		methods := []directory.Method{{Slug: "block-number", Name: "Block number", Provider: "Chain data",
			Hostname: "api.tidewatcb.example", Category: "blockchain", Kind: "x402", Trust: tr,
			Endpoint: directory.Endpoint{Method: "GET", URL: "https://api.tidewatcb.example/v1/block"}}}
		merchants := []directory.Merchant{{Hostname: "api.tidewatcb.example", Providers: []string{"Chain data"}, Trust: tr,
			Methods: []directory.MerchantEntry{{Slug: "block-number", Name: "Block number", Category: "blockchain"}}}}
		snap, err := directory.NewSnapshot(time.Unix(1, 0), methods, merchants)
		if err != nil {
			t.Fatal(err)
		}
		srv := NewServer(slog.New(slog.DiscardHandler), fixed{snap}, testViews, nil)
		return body(t, get(t, srv, "/merchants/api.tidewatcb.example")), body(t, get(t, srv, "/methods/block-number"))
	}
	merchant, method := page(flag)
	for name, b := range map[string]string{"merchant": merchant, "method": method} {
		for _, want := range []string{
			`<dt>Look-alike</dt>`,
			`<a href="/merchants/xn--tdewatch-thh.example">tіdewatch.example (xn--tdewatch-thh.example)</a>`,
			`“tidewatcb” is a letter or two from its registrable name: “tіdewatch”`,
			`<strong>Held at caution</strong>`,
		} {
			if !strings.Contains(b, want) {
				t.Errorf("the %s page lacks %q", name, want)
			}
		}
	}
	cleared := *flag
	cleared.Cleared = new(string)
	*cleared.Cleared = directory.ClearedByOwnerProof
	merchant, _ = page(&cleared)
	if !strings.Contains(merchant, "Cleared: one payee signed both sellers&#39; origins") || strings.Contains(merchant, "Held at caution") {
		t.Error("the cleared look-alike's page does not say what cleared it")
	}
	if merchant, _ = page(nil); strings.Contains(merchant, "Look-alike") {
		t.Error("a page without the flag shows one")
	}
}
