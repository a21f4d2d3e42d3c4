package catalog

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/idna"

	"github.com/waystation/waystation/internal/x402"
)

func demo(t *testing.T) Catalog {
	t.Helper()
	cat, err := Demo()
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

// demoHost returns the hostname of a method's endpoint URL.
func demoHost(t *testing.T, m Method) string {
	t.Helper()
	u, err := url.Parse(m.Endpoint.URL)
	if err != nil {
		t.Fatalf("%s: endpoint URL: %v", m.Slug, err)
	}
	return u.Hostname()
}

func TestDemoDecodesWithUnknownFieldsDisallowed(t *testing.T) {
	if _, err := Demo(); err != nil {
		t.Fatal(err)
	}
	bad := map[string]string{
		"unknown top-level field": `{"providers": [], "extra": 1}`,
		"unknown method field": `{"providers": [{"name": "P", "methods": [{"slug": "a", "name": "A",
			"description": "d", "category": "ai", "kind": "x402",
			"endpoint": {"method": "GET", "url": "https://a.example/"}, "price": "1"}]}]}`,
		"unknown probe field": `{"providers": [], "merchants": [{"hostname": "a.example",
			"probes": [{"slug": "a", "age": "1h", "outcome": "timeout", "status": 504}],
			"payments": {"settled": 0, "delivered": 0}}]}`,
		"malformed duration": `{"providers": [], "merchants": [{"hostname": "a.example",
			"probes": [{"slug": "a", "age": "yesterday", "outcome": "timeout"}],
			"payments": {"settled": 0, "delivered": 0}}]}`,
		"trailing data": `{"providers": []} {"providers": []}`,
	}
	for name, doc := range bad {
		if _, err := decodeStrict([]byte(doc)); err == nil {
			t.Errorf("%s: decoded without error", name)
		}
	}
	if _, err := decodeStrict([]byte("{\"providers\": []}\n\n")); err != nil {
		t.Errorf("trailing whitespace: %v", err)
	}
}

func TestDemoCallsDecodeIndependently(t *testing.T) {
	a, b := demo(t), demo(t)
	a.Providers[0].Methods[0].Name = "changed"
	if b.Providers[0].Methods[0].Name == "changed" {
		t.Fatal("two calls of Demo share methods")
	}
}

func TestDemoMethods(t *testing.T) {
	cat := demo(t)
	methods := allMethods(cat)
	if len(methods) < 55 || len(methods) > 70 {
		t.Errorf("%d methods, want about 60", len(methods))
	}
	if len(cat.Providers) < 15 {
		t.Errorf("%d providers, want about 20", len(cat.Providers))
	}

	categories := map[string]int{}
	kinds := map[string]int{}
	slugs := map[string]bool{}
	disabled := 0
	for _, m := range methods {
		if !slugPattern.MatchString(m.Slug) {
			t.Errorf("malformed slug %q", m.Slug)
		}
		if slugs[m.Slug] {
			t.Errorf("slug %q used twice", m.Slug)
		}
		slugs[m.Slug] = true
		if m.Name == "" || m.Description == "" || m.Name != strings.TrimSpace(m.Name) {
			t.Errorf("%s: name %q, description %q", m.Slug, m.Name, m.Description)
		}
		if m.SourceKey != "" {
			t.Errorf("%s: demo methods are keyed by slug, not source key", m.Slug)
		}
		if !slices.Contains(Categories, m.Category) || m.Category == "other" {
			t.Errorf("%s: category %q", m.Slug, m.Category)
		}
		categories[m.Category]++
		if !slices.Contains(Kinds, m.Kind) {
			t.Errorf("%s: kind %q", m.Slug, m.Kind)
		}
		kinds[m.Kind]++
		if m.Disabled {
			disabled++
		}
		checkDemoEndpoint(t, m)
		checkDemoGuidance(t, m)
		checkDemoOffers(t, m)
	}
	if len(categories) < 12 {
		t.Errorf("%d categories, want at least 12: %v", len(categories), categories)
	}
	for _, k := range Kinds {
		if kinds[k] < 3 {
			t.Errorf("kind %s used by %d methods, want several", k, kinds[k])
		}
	}
	if kinds[KindX402] <= len(methods)/2 {
		t.Errorf("%d x402 methods of %d, want most", kinds[KindX402], len(methods))
	}
	if disabled < 1 || disabled > 2 {
		t.Errorf("%d disabled methods, want one or two", disabled)
	}
}

func checkDemoEndpoint(t *testing.T, m Method) {
	t.Helper()
	if m.Endpoint.Method != "GET" && m.Endpoint.Method != "POST" {
		t.Errorf("%s: HTTP method %q", m.Slug, m.Endpoint.Method)
	}
	u, err := url.Parse(m.Endpoint.URL)
	if err != nil || u.Scheme != "https" || u.Port() != "" || u.RawQuery != "" {
		t.Errorf("%s: endpoint URL %q (%v)", m.Slug, m.Endpoint.URL, err)
		return
	}
	h := u.Hostname()
	if norm, err := NormalizeHostname(h); err != nil || norm != h {
		t.Errorf("%s: hostname %q is not canonical (%q, %v)", m.Slug, h, norm, err)
	}
	for i := 0; i < len(h); i++ {
		if c := h[i]; c >= 0x80 || ('A' <= c && c <= 'Z') {
			t.Errorf("%s: hostname %q is not lower-case ASCII", m.Slug, h)
			break
		}
	}
	if !strings.HasSuffix(h, ".example") {
		t.Errorf("%s: hostname %q is not under the reserved .example TLD", m.Slug, h)
	}
}

// demoGuidance is the part of a method's guidance every demo method fills in.
type demoGuidance struct {
	Summary string `json:"summary"`
	Request struct {
		Method     string          `json:"method"`
		URL        string          `json:"url"`
		Example    string          `json:"example"`
		BodySchema json.RawMessage `json:"body_schema"`
	} `json:"request"`
	Response struct {
		MimeType string          `json:"mime_type"`
		Schema   json.RawMessage `json:"schema"`
	} `json:"response"`
	Payment string   `json:"payment"`
	Notes   []string `json:"notes"`
}

func checkDemoGuidance(t *testing.T, m Method) {
	t.Helper()
	if len(m.Guidance) == 0 || m.Guidance[0] != '{' {
		t.Errorf("%s: guidance is not a JSON object: %s", m.Slug, m.Guidance)
		return
	}
	var g demoGuidance
	if err := json.Unmarshal(m.Guidance, &g); err != nil {
		t.Errorf("%s: guidance: %v", m.Slug, err)
		return
	}
	if g.Summary == "" || g.Payment == "" || g.Request.Example == "" || len(g.Notes) == 0 {
		t.Errorf("%s: guidance lacks summary, payment, example or notes", m.Slug)
	}
	if g.Request.Method != m.Endpoint.Method || g.Request.URL != m.Endpoint.URL {
		t.Errorf("%s: guidance request %s %s, endpoint %s %s", m.Slug,
			g.Request.Method, g.Request.URL, m.Endpoint.Method, m.Endpoint.URL)
	}
	if (m.Endpoint.Method == "POST") != (string(g.Request.BodySchema) != "null") {
		t.Errorf("%s: a body schema belongs to POST methods only: %s", m.Slug, g.Request.BodySchema)
	}
	if g.Response.MimeType == "" || len(g.Response.Schema) == 0 || string(g.Response.Schema) == "null" {
		t.Errorf("%s: guidance response lacks a mime type or schema", m.Slug)
	}
}

func checkDemoOffers(t *testing.T, m Method) {
	t.Helper()
	if m.Kind != KindX402 {
		if len(m.Offers) != 0 {
			t.Errorf("%s: %s method with x402 offers", m.Slug, m.Kind)
		}
		return
	}
	if len(m.Offers) == 0 {
		t.Errorf("%s: x402 method without an offer", m.Slug)
	}
	for _, o := range m.Offers {
		if o.Scheme != "exact" || o.Network == "" || o.Asset == "" || o.PayTo == "" || o.MaxTimeoutSeconds <= 0 {
			t.Errorf("%s: incomplete offer %+v", m.Slug, o)
		}
		if o.Amount == nil {
			continue // a seller whose amount cannot be read, on purpose
		}
		if *o.Amount == "" || strings.Trim(*o.Amount, "0123456789") != "" {
			t.Errorf("%s: amount %q is not an atomic integer", m.Slug, *o.Amount)
		}
		if _, err := x402.ParseOffer(demoAnswer(m, o)); err != nil {
			t.Errorf("%s: the listed offer is not one an x402 client could pay: %v", m.Slug, err)
		}
	}
}

// demoAnswer is the 402 answer that would carry a listed offer: a v1 body for a v1
// network name, else a v2 header.
func demoAnswer(m Method, o Offer) (http.Header, []byte) {
	e := map[string]any{"scheme": o.Scheme, "network": o.Network, "asset": o.Asset, "payTo": o.PayTo,
		"maxTimeoutSeconds": o.MaxTimeoutSeconds, "mimeType": o.MimeType}
	if len(o.Extra) > 0 {
		e["extra"] = o.Extra
	}
	if !strings.Contains(o.Network, ":") {
		e["maxAmountRequired"], e["resource"], e["description"] = *o.Amount, m.Endpoint.URL, m.Description
		b, _ := json.Marshal(map[string]any{"x402Version": 1, "accepts": []any{e}})
		return http.Header{}, b
	}
	e["amount"] = *o.Amount
	b, _ := json.Marshal(map[string]any{"x402Version": 2, "resource": map[string]any{"url": m.Endpoint.URL}, "accepts": []any{e}})
	h := http.Header{}
	h.Set(x402.HeaderPaymentRequired, base64.StdEncoding.EncodeToString(b))
	return h, nil
}

func TestDemoHasAnInternationalisedHostname(t *testing.T) {
	for _, m := range allMethods(demo(t)) {
		h := demoHost(t, m)
		if !strings.HasPrefix(h, "xn--") && !strings.Contains(h, ".xn--") {
			continue
		}
		u, err := idna.Lookup.ToUnicode(h)
		if err != nil || u == h {
			t.Fatalf("%s: %q is not valid punycode (%q, %v)", m.Slug, h, u, err)
		}
		if back, err := NormalizeHostname(u); err != nil || back != h {
			t.Fatalf("%s: %q normalises to %q, want %q (%v)", m.Slug, u, back, h, err)
		}
		return
	}
	t.Fatal("no method hostname is an internationalised domain in punycode")
}

func TestDemoAtLeastOneProviderHasTwoHostnames(t *testing.T) {
	for _, p := range demo(t).Providers {
		hosts := map[string]bool{}
		for _, m := range p.Methods {
			hosts[demoHost(t, m)] = true
		}
		if len(hosts) >= 2 {
			return
		}
	}
	t.Fatal("every provider uses a single hostname")
}

var demoOutcomes = []string{
	"payment_required", "invalid_offer", "no_payment_required", "http_error", "timeout",
	"tls_error", "dns_error", "connection_refused",
}

func TestDemoMerchants(t *testing.T) {
	cat := demo(t)
	bySlug := map[string]Method{}
	methodHosts := map[string]bool{}
	for _, m := range allMethods(cat) {
		bySlug[m.Slug] = m
		methodHosts[demoHost(t, m)] = true
	}

	seen := map[string]bool{}
	overrides, paidOften, paidRarely, probed, neverProbed := 0, 0, 0, 0, 0
	for _, mc := range cat.Merchants {
		h := mc.Hostname
		if seen[h] {
			t.Errorf("merchant %s listed twice", h)
		}
		seen[h] = true
		if !methodHosts[h] {
			t.Errorf("merchant %s is the hostname of no method", h)
		}
		if norm, err := NormalizeHostname(h); err != nil || norm != h {
			t.Errorf("merchant hostname %q is not canonical (%q, %v)", h, norm, err)
		}
		if len(mc.Probes) == 0 {
			neverProbed++
		} else {
			probed++
		}
		newestOffer := map[string]Probe{}
		for _, p := range mc.Probes {
			m, ok := bySlug[p.Slug]
			if !ok {
				t.Errorf("%s: probe of unknown slug %q", h, p.Slug)
				continue
			}
			if mh := demoHost(t, m); mh != h {
				t.Errorf("%s: probe of %s, whose endpoint is on %s", h, p.Slug, mh)
			}
			if time.Duration(p.Age) <= 0 {
				t.Errorf("%s: probe of %s with age %v", h, p.Slug, time.Duration(p.Age))
			}
			if !slices.Contains(demoOutcomes, p.Outcome) {
				t.Errorf("%s: probe of %s with outcome %q", h, p.Slug, p.Outcome)
			}
			if (p.Outcome == "invalid_offer") != slices.Contains(x402.Reasons, p.Reason) {
				t.Errorf("%s: %s probe of %s with reason %q", h, p.Outcome, p.Slug, p.Reason)
			}
			if p.Outcome == "payment_required" {
				if p.HTTPStatus != 402 || p.Scheme != x402.SchemeExact || p.Network == "" || p.Asset == "" || p.PayTo == "" || p.Amount == nil {
					t.Errorf("%s: payment_required probe of %s without the offer seen: %+v", h, p.Slug, p)
				}
			} else if p.Scheme != "" || p.Network != "" || p.Amount != nil {
				t.Errorf("%s: %s probe of %s with an offer: %+v", h, p.Outcome, p.Slug, p)
			}
			if p.Outcome == "payment_required" {
				if q, ok := newestOffer[p.Slug]; !ok || p.Age < q.Age {
					newestOffer[p.Slug] = p
				}
			}
		}
		// What a method advertises now is what its newest probe saw; older probes may
		// show an earlier price or payee.
		for slug, p := range newestOffer {
			if !slices.ContainsFunc(bySlug[slug].Offers, func(o Offer) bool {
				return o.Network == p.Network && o.Asset == p.Asset && o.PayTo == p.PayTo &&
					o.Amount != nil && *o.Amount == *p.Amount
			}) {
				t.Errorf("%s: newest probe of %s saw an offer the method does not list: %+v", h, slug, p)
			}
		}

		pay := mc.Payments
		if pay.Settled < 0 || pay.Delivered < 0 || pay.Delivered > pay.Settled {
			t.Errorf("%s: payments %+v", h, pay)
		}
		switch {
		case pay.Settled >= 5:
			paidOften++
		case pay.Settled >= 1:
			paidRarely++
		}

		if o := mc.Override; o != nil {
			overrides++
			if !slices.Contains([]string{"proceed", "caution", "avoid", "unknown"}, o.Verdict) || o.Reason == "" {
				t.Errorf("%s: override %+v", h, o)
			}
			if o.ExpiresIn != nil && time.Duration(*o.ExpiresIn) <= 0 {
				t.Errorf("%s: override expires in %v", h, time.Duration(*o.ExpiresIn))
			}
		}
	}
	for h := range methodHosts {
		if !seen[h] {
			t.Errorf("hostname %s has no merchant entry", h)
		}
	}
	if overrides != 1 {
		t.Errorf("%d overrides, want exactly one", overrides)
	}
	if paidOften < 3 || paidRarely < 2 {
		t.Errorf("%d merchants with five or more settled payments (want >= 3), %d with one to four (want >= 2)",
			paidOften, paidRarely)
	}
	if probed == 0 || neverProbed == 0 {
		t.Errorf("%d merchants probed, %d never: want both", probed, neverProbed)
	}
}
