package catalog

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"unicode/utf8"
)

// bazaarFile is the real Bazaar snapshot beside the repository. It is third-party
// data: tests read it in place and nothing from it is copied into the repository.
const bazaarFile = "../../../shared/data/bazaar-2026-08.jsonl"

var slugPattern = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

func readBazaarFile(t testing.TB) []byte {
	t.Helper()
	b, err := os.ReadFile(bazaarFile)
	if errors.Is(err, os.ErrNotExist) {
		t.Skip("the real Bazaar snapshot is not beside the repository")
	}
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func parseBazaarString(t *testing.T, s string) (Catalog, []LineError) {
	t.Helper()
	cat, skipped, err := ParseBazaar(strings.NewReader(s))
	if err != nil {
		t.Fatalf("ParseBazaar: %v", err)
	}
	return cat, skipped
}

func allMethods(cat Catalog) []Method {
	var out []Method
	for _, p := range cat.Providers {
		out = append(out, p.Methods...)
	}
	return out
}

// checkMethod checks what ParseBazaar promises about every method it returns.
func checkMethod(t *testing.T, m Method) {
	t.Helper()
	if !slugPattern.MatchString(m.Slug) || len(m.Slug) > maxSlugLen {
		t.Errorf("%s: malformed slug %q", m.SourceKey, m.Slug)
	}
	if m.Kind != KindX402 {
		t.Errorf("%s: kind %q", m.SourceKey, m.Kind)
	}
	if !slices.Contains(Categories, m.Category) {
		t.Errorf("%s: category %q not in Categories", m.SourceKey, m.Category)
	}
	if m.Endpoint.URL != m.SourceKey || m.SourceKey == "" {
		t.Errorf("%s: endpoint URL %q", m.SourceKey, m.Endpoint.URL)
	}
	if _, ok := validHTTPMethod(m.Endpoint.Method); !ok || m.Endpoint.Method != strings.ToUpper(m.Endpoint.Method) {
		t.Errorf("%s: HTTP method %q", m.SourceKey, m.Endpoint.Method)
	}
	if m.Name == "" || utf8.RuneCountInString(m.Name) > maxNameLen || m.Name != strings.TrimSpace(m.Name) || !utf8.ValidString(m.Name) {
		t.Errorf("%s: name %q", m.SourceKey, m.Name)
	}
	if m.Description != strings.Join(strings.Fields(m.Description), " ") || !utf8.ValidString(m.Description) {
		t.Errorf("%s: description not trimmed and collapsed: %q", m.SourceKey, m.Description)
	}
	if strings.ContainsRune(m.Name+m.Description+m.Tool, 0) || !utf8.ValidString(m.Tool) {
		t.Errorf("%s: NUL or invalid UTF-8 in name, description or tool", m.SourceKey)
	}
	if _, ok := storableJSON(m.Guidance, len(m.Guidance)); len(m.Guidance) > 0 && !ok {
		t.Errorf("%s: guidance PostgreSQL cannot keep: %q", m.SourceKey, m.Guidance)
	}
	if m.Source == SourceBazaar && len(m.Guidance) == 0 {
		t.Errorf("%s: no guidance", m.SourceKey)
	}
	for _, o := range m.Offers {
		if o.Amount != nil && (*o.Amount == "" || strings.Trim(*o.Amount, "0123456789") != "") {
			t.Errorf("%s: amount %q is not a decimal integer", m.SourceKey, *o.Amount)
		}
	}
}

func TestParseBazaarRealFile(t *testing.T) {
	data := readBazaarFile(t)
	cat, skipped, err := ParseBazaar(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if len(skipped) != 0 {
		t.Fatalf("skipped %d lines, first: %v", len(skipped), skipped[0])
	}
	methods := allMethods(cat)
	if len(methods) != 639 {
		t.Fatalf("%d methods, want 639", len(methods))
	}
	t.Logf("%d providers, %d methods", len(cat.Providers), len(methods))
	if len(cat.Providers) != 220 {
		t.Errorf("%d providers, want 220", len(cat.Providers))
	}

	hosts := map[string]bool{}
	slugs := map[string]bool{}
	var noOffers, nullAmounts int
	for _, m := range methods {
		checkMethod(t, m)
		if slugs[m.Slug] {
			t.Errorf("slug %q twice", m.Slug)
		}
		slugs[m.Slug] = true
		if m.Endpoint.Method != "GET" {
			t.Errorf("%s: method %s, the snapshot declares none", m.SourceKey, m.Endpoint.Method)
		}
		u, err := url.Parse(m.Endpoint.URL)
		if err != nil {
			t.Fatal(err)
		}
		host, err := NormalizeHostname(u.Hostname())
		if err != nil {
			t.Fatal(err)
		}
		hosts[host] = true
		if len(m.Offers) == 0 {
			noOffers++
		}
		for _, o := range m.Offers {
			if o.Amount == nil {
				nullAmounts++
			}
			if o.Scheme == "" || o.Network == "" {
				t.Errorf("%s: offer without scheme or network: %+v", m.SourceKey, o)
			}
		}
	}
	if len(hosts) != 261 {
		t.Errorf("%d hostnames, want 261", len(hosts))
	}
	if noOffers != 33 || nullAmounts != 16 {
		t.Errorf("%d methods without offers (want 33), %d offers with a nil amount (want 16)", noOffers, nullAmounts)
	}

	// Every method carries the listing's word and guidance; 606 items report quality.
	var withQuality int
	for _, m := range methods {
		if m.Source != SourceBazaar || m.Tool != "" || m.Listing == nil || m.Listing.UpdatedAt == nil {
			t.Errorf("%s: source %q, tool %q, listing %+v", m.SourceKey, m.Source, m.Tool, m.Listing)
		}
		if m.Listing != nil && m.Listing.Calls30d != nil && m.Listing.Payers30d != nil {
			withQuality++
		}
		if g := decodeGuidance(t, m); g.Request.URL != m.Endpoint.URL || g.Payment == "" || g.Summary == "" {
			t.Errorf("%s: guidance %+v", m.SourceKey, g)
		}
	}
	if withQuality != 606 {
		t.Errorf("%d methods with the listing's call counts, want 606", withQuality)
	}

	// Providers are registrable domains, in order of first appearance; methods keep
	// the file's order.
	var resources []string
	for line := range strings.SplitSeq(strings.TrimSpace(string(data)), "\n") {
		var it struct{ Resource string }
		if err := json.Unmarshal([]byte(line), &it); err != nil {
			t.Fatal(err)
		}
		resources = append(resources, it.Resource)
	}
	var firstHosts []string
	seen := map[string]bool{}
	for _, r := range resources {
		u, _ := url.Parse(r)
		host, _ := NormalizeHostname(u.Hostname())
		p := registrable(t, host)
		if !seen[p] {
			seen[p] = true
			firstHosts = append(firstHosts, p)
		}
	}
	var names []string
	for _, p := range cat.Providers {
		names = append(names, p.Name)
		last := -1
		for _, m := range p.Methods {
			u, _ := url.Parse(m.Endpoint.URL)
			host, _ := NormalizeHostname(u.Hostname())
			if registrable(t, host) != p.Name {
				t.Errorf("%s under provider %s", m.SourceKey, p.Name)
			}
			i := slices.Index(resources, m.SourceKey)
			if i <= last {
				t.Errorf("provider %s: %s out of file order", p.Name, m.SourceKey)
			}
			last = i
		}
	}
	if !slices.Equal(names, firstHosts) {
		t.Errorf("providers not in order of first appearance")
	}
	if cat.Providers[0].Name != "onesource.io" {
		t.Errorf("first provider %q, want onesource.io (from api.onesource.io)", cat.Providers[0].Name)
	}

	// Slugs depend only on the file.
	again, _, err := ParseBazaar(bytes.NewReader(data))
	if err != nil || !reflect.DeepEqual(cat, again) {
		t.Errorf("a second parse of the same file differs (err %v)", err)
	}
}

func registrable(t *testing.T, host string) string {
	t.Helper()
	it, err := parseBazaarItem([]byte(`{"resource":"https://` + host + `/"}`))
	if err != nil {
		t.Fatal(err)
	}
	return it.provider
}

// TestBazaarCategories logs how the keyword rules sort the real snapshot and keeps
// "other" small.
func TestBazaarCategories(t *testing.T) {
	data := readBazaarFile(t)
	cat, _, err := ParseBazaar(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	methods := allMethods(cat)
	for _, m := range methods {
		count[m.Category]++
	}
	cats := slices.Clone(Categories)
	sort.SliceStable(cats, func(i, j int) bool { return count[cats[i]] > count[cats[j]] })
	var b strings.Builder
	for _, c := range cats {
		fmt.Fprintf(&b, " %s=%d", c, count[c])
	}
	t.Logf("categories of %d methods:%s", len(methods), b.String())
	if share := float64(count["other"]) / float64(len(methods)); share >= 0.15 {
		t.Errorf("%.1f%% of methods fall into other", 100*share)
	}
	for _, c := range Categories {
		if c != "other" && count[c] == 0 {
			t.Errorf("no method in category %s", c)
		}
	}
}

func TestParseBazaarSkipsMalformedLines(t *testing.T) {
	lines := []string{
		`{"resource":"https://api.alpha.example/v1/quote","description":"First"}`, // 1
		`{"resource":"https://api.alpha.example/v1/`,                              // 2 truncated JSON
		``,                                               // 3 blank
		`   `,                                            // 4 blank
		`{"description":"no resource"}`,                  // 5
		`{"resource":"ftp://files.example/x"}`,           // 6 scheme
		`{"resource":"https://exa_mple.com/x"}`,          // 7 bad hostname
		`{"resource":"https://127.0.0.1/x"}`,             // 8 IP address
		`{"resource":"https://localhost/x"}`,             // 9 no registrable domain
		`{"resource":42}`,                                // 10 not a string
		`{"resource":"/relative/path"}`,                  // 11 relative
		`["resource"]`,                                   // 12 not an object
		`{"resource":"https://beta.example/ok"}`,         // 13
		`{"resource":"https://user:pw@gamma.example/x"}`, // 14 credentials
		`{"resource":""}`,                                // 15 empty
	}
	cat, skipped := parseBazaarString(t, strings.Join(lines, "\r\n")+"\n")
	var got []int
	for _, e := range skipped {
		got = append(got, e.Line)
		if !strings.HasPrefix(e.Error(), fmt.Sprintf("line %d: ", e.Line)) {
			t.Errorf("error text %q", e.Error())
		}
	}
	want := []int{2, 5, 6, 7, 8, 9, 10, 11, 12, 14, 15}
	if !slices.Equal(got, want) {
		t.Errorf("skipped lines %v, want %v (%v)", got, want, skipped)
	}
	methods := allMethods(cat)
	if len(methods) != 2 || methods[0].SourceKey != "https://api.alpha.example/v1/quote" || methods[1].SourceKey != "https://beta.example/ok" {
		t.Fatalf("methods %+v", methods)
	}
	for _, m := range methods {
		checkMethod(t, m)
	}
	var hostErr LineError
	for _, e := range skipped {
		if e.Line == 7 {
			hostErr = e
		}
	}
	if !errors.Is(hostErr, ErrInvalidHostname) {
		t.Errorf("line 7 error %v does not match ErrInvalidHostname", hostErr)
	}
}

func TestParseBazaarRealFileWithMalformedLine(t *testing.T) {
	data := readBazaarFile(t)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	mid := len(lines) / 2
	broken := slices.Concat(lines[:mid], []string{`{"resource": "https://broken.example/x", "accepts": [`}, lines[mid:])
	cat, skipped := parseBazaarString(t, strings.Join(broken, "\n"))
	if len(skipped) != 1 || skipped[0].Line != mid+1 {
		t.Fatalf("skipped %v, want line %d", skipped, mid+1)
	}
	if n := len(allMethods(cat)); n != len(lines) {
		t.Errorf("%d methods, want %d", n, len(lines))
	}
}

func TestParseBazaarOffers(t *testing.T) {
	in := strings.Join([]string{
		`{"resource":"https://v2.example/a","x402Version":2,"accepts":[{"scheme":"exact","network":"eip155:8453","amount":"1000","asset":"0xA","payTo":"0xB","maxTimeoutSeconds":60,"mimeType":"application/json","extra":{"name":"USD Coin", "version":"2"}}]}`,
		`{"resource":"https://v1.example/a","x402Version":1,"accepts":[{"scheme":"exact","network":"base","maxAmountRequired":"0050","payTo":null,"extra":null}]}`,
		`{"resource":"https://null.example/a","accepts":[{"scheme":"exact","network":"base","maxAmountRequired":null}]}`,
		`{"resource":"https://missing.example/a","accepts":[{"scheme":"exact","network":"solana"}]}`,
		`{"resource":"https://number.example/a","accepts":[{"scheme":"exact","network":"base","amount":250,"maxTimeoutSeconds":"soon"}]}`,
		`{"resource":"https://bad.example/a","accepts":[{"scheme":"exact","network":"base","amount":"1.5"},{"scheme":"exact","network":"base","amount":"-3"},"not an object",{"scheme":7,"network":"base","amount":"12"}]}`,
		`{"resource":"https://none.example/a","accepts":[]}`,
		`{"resource":"https://nullaccepts.example/a","accepts":null}`,
		`{"resource":"https://noaccepts.example/a"}`,
		`{"resource":"https://objaccepts.example/a","accepts":{"scheme":"exact"}}`,
	}, "\n")
	cat, skipped := parseBazaarString(t, in)
	if len(skipped) != 0 {
		t.Fatalf("skipped %v", skipped)
	}
	byKey := map[string]Method{}
	for _, m := range allMethods(cat) {
		checkMethod(t, m)
		byKey[m.SourceKey] = m
	}
	amount := func(key string, i int) string {
		m := byKey[key]
		if i >= len(m.Offers) {
			t.Fatalf("%s: %d offers", key, len(m.Offers))
		}
		if m.Offers[i].Amount == nil {
			return "<nil>"
		}
		return *m.Offers[i].Amount
	}
	v2 := byKey["https://v2.example/a"].Offers[0]
	if v2.Scheme != "exact" || v2.Network != "eip155:8453" || v2.Asset != "0xA" || v2.PayTo != "0xB" ||
		v2.MaxTimeoutSeconds != 60 || v2.MimeType != "application/json" || string(v2.Extra) != `{"name":"USD Coin","version":"2"}` {
		t.Errorf("v2 offer %+v (extra %s)", v2, v2.Extra)
	}
	if v1 := byKey["https://v1.example/a"].Offers[0]; v1.PayTo != "" || v1.Extra != nil || v1.Network != "base" {
		t.Errorf("v1 offer %+v", v1)
	}
	for key, want := range map[string]string{
		"https://v2.example/a":      "1000",
		"https://v1.example/a":      "50",
		"https://null.example/a":    "<nil>",
		"https://missing.example/a": "<nil>",
		"https://number.example/a":  "250",
	} {
		if got := amount(key, 0); got != want {
			t.Errorf("%s: amount %s, want %s", key, got, want)
		}
	}
	if got := byKey["https://number.example/a"].Offers[0].MaxTimeoutSeconds; got != 0 {
		t.Errorf("unreadable timeout read as %d", got)
	}
	bad := byKey["https://bad.example/a"]
	if len(bad.Offers) != 3 || amount(bad.SourceKey, 0) != "<nil>" || amount(bad.SourceKey, 1) != "<nil>" ||
		amount(bad.SourceKey, 2) != "12" || bad.Offers[2].Scheme != "" {
		t.Errorf("lenient offers %+v", bad.Offers)
	}
	for _, key := range []string{"https://none.example/a", "https://nullaccepts.example/a", "https://noaccepts.example/a", "https://objaccepts.example/a"} {
		if m, ok := byKey[key]; !ok || m.Offers != nil {
			t.Errorf("%s: loaded %v with offers %+v", key, ok, m.Offers)
		}
	}
}

func TestParseBazaarDuplicateResourceKeepsLater(t *testing.T) {
	in := strings.Join([]string{
		`{"resource":"https://api.one.example/quote","description":"old text"}`,
		`{"resource":"https://two.example/other","description":"other"}`,
		`{"resource":"https://api.one.example/quote","description":"new text","accepts":[{"scheme":"exact","network":"base","amount":"7"}]}`,
	}, "\n")
	cat, skipped := parseBazaarString(t, in)
	if len(skipped) != 0 {
		t.Fatalf("skipped %v", skipped)
	}
	if len(cat.Providers) != 2 || cat.Providers[0].Name != "one.example" {
		t.Fatalf("providers %+v", cat.Providers)
	}
	ms := cat.Providers[0].Methods
	if len(ms) != 1 || ms[0].Description != "new text" || len(ms[0].Offers) != 1 || ms[0].Slug != "one-quote" {
		t.Errorf("kept %+v", ms)
	}
}

func TestParseBazaarSlugs(t *testing.T) {
	long := "https://www.long.example/" + strings.Repeat("segment-", 12) + "end"
	in := strings.Join([]string{
		`{"resource":"https://api.onesource.io/api/chain/tx/:hash"}`,
		`{"resource":"https://api.shop.example/v1/items/{id}/price"}`,
		`{"resource":"https://shop.example/items/price"}`, // same slug as the line above
		`{"resource":"https://api.xn--mnzwerk-n2a.example/Grüße/Ärger"}`,
		`{"resource":"` + long + `"}`,
		`{"resource":"https://foo.vercel.app/"}`,
		`{"resource":"https://vercel.app/x"}`,
	}, "\n")
	cat, skipped := parseBazaarString(t, in)
	if len(skipped) != 0 {
		t.Fatalf("skipped %v", skipped)
	}
	var slugs []string
	for _, m := range allMethods(cat) {
		checkMethod(t, m)
		slugs = append(slugs, m.Slug)
	}
	sum := sha256.Sum256([]byte("https://shop.example/items/price"))
	want := []string{
		"onesource-chain-tx",
		"shop-items-price",
		"shop-items-price-" + hex.EncodeToString(sum[:])[:6],
		"munzwerk-grusse-arger",
		"long-segment-segment-segment-segment-segment-segment-segment",
		"foo",
		"vercel-app-x",
	}
	if !slices.Equal(slugs, want) {
		t.Errorf("slugs\n%q\nwant\n%q", slugs, want)
	}
	names := []string{}
	for _, p := range cat.Providers {
		names = append(names, p.Name)
	}
	if wantNames := []string{"onesource.io", "shop.example", "xn--mnzwerk-n2a.example", "long.example", "foo.vercel.app", "vercel.app"}; !slices.Equal(names, wantNames) {
		t.Errorf("providers %q, want %q", names, wantNames)
	}
}

func TestUniqueSlugNeverRepeats(t *testing.T) {
	taken := map[string]bool{}
	for i := range 200 {
		// Every key asks for the same slug; a few also squat the hashed forms.
		key := fmt.Sprintf("https://k%d.example/", i%50)
		s := uniqueSlug("same", key, taken)
		if taken[s] || !slugPattern.MatchString(s) || len(s) > maxSlugLen {
			t.Fatalf("uniqueSlug gave %q", s)
		}
		taken[s] = true
	}
}

func TestParseBazaarHTTPMethod(t *testing.T) {
	in := strings.Join([]string{
		`{"resource":"https://a.example/1","extensions":{"bazaar":{"info":{"input":{"type":"http","method":"POST"}}}}}`,
		`{"resource":"https://a.example/2","accepts":[{"scheme":"exact","network":"base","outputSchema":{"input":{"type":"http","method":"put"}}}]}`,
		`{"resource":"https://a.example/3","accepts":[{"scheme":"exact","network":"base","extra":{"method":"DELETE"}}]}`,
		`{"resource":"https://a.example/4","outputSchema":{"input":{"method":"TRACE"}}}`,
		`{"resource":"https://a.example/5","outputSchema":"nonsense","accepts":[{"extra":[1,2]}]}`,
	}, "\n")
	cat, skipped := parseBazaarString(t, in)
	if len(skipped) != 0 {
		t.Fatalf("skipped %v", skipped)
	}
	var got []string
	for _, m := range allMethods(cat) {
		got = append(got, m.Endpoint.Method)
	}
	if want := []string{"POST", "PUT", "DELETE", "GET", "GET"}; !slices.Equal(got, want) {
		t.Errorf("methods %v, want %v", got, want)
	}
}

func TestParseBazaarNamesAndCategories(t *testing.T) {
	for _, c := range []struct{ url, desc, name, category string }{
		{"https://wx.example/current", "  Current   weather for a city - temperature, wind and rain ", "Current weather for a city", "weather"},
		{"https://a.example/v1/chain/tx/:hash", "Transaction details by hash: sender, receiver, gas", "Transaction details by hash", "blockchain"},
		{"https://a.example/stock/quote", "Stock quote. Delayed 15 minutes.", "Stock quote", "finance"},
		{"https://a.example/headlines", "Latest headlines | world", "Latest headlines", "news"},
		{"https://a.example/serp", "Web search results e.g. for a keyword. Ranked.", "Web search results e.g. for a keyword", "search"},
		{"https://a.example/tts", "Text to speech in many voices", "Text to speech in many voices", "media"},
		{"https://a.example/chat/completions", "LLM chat completions", "LLM chat completions", "ai"},
		{"https://a.example/geocode", "Forward geocoding of a street address", "Forward geocoding of a street address", "geo"},
		{"https://a.example/send", "Send an SMS to a phone number", "Send an SMS to a phone number", "communication"},
		{"https://a.example/check", "Phishing and malware check for a link", "Phishing and malware check for a link", "security"},
		{"https://a.example/casts", "Farcaster casts by a user", "Farcaster casts by a user", "social"},
		{"https://a.example/hotels", "Hotel availability by city and date", "Hotel availability by city and date", "travel"},
		{"https://a.example/products", "Product catalog of an online shop", "Product catalog of an online shop", "commerce"},
		{"https://a.example/scrape", "Scrape a page into markdown", "Scrape a page into markdown", "data"},
		{"https://a.example/ping", "Ping", "Ping", "developer"},
		{"https://a.example/", "Something else entirely", "Something else entirely", "other"},
		{"https://a.example/v2/word-of-the-day/{lang}", "", "word of the day", "other"},
		{"https://a.example/", "", "Untitled", "other"},
		{"https://a.example/x", "🚀 Fast lane: a", "Fast lane", "other"},
		{"https://a.example/x", "One two three four five six seven eight nine ten eleven twelve thirteen", "One two three four five six seven eight nine ten eleven", "other"},
		{"https://a.example/x", strings.Repeat("x", 80), strings.Repeat("x", 60), "other"},
		{"https://a.example/x", "A tool (with a long aside that never closes before the cut at sixty", "A tool", "other"},
		{"https://a.example/x", "Nul\u0000 and\u0007 bell", "Nul and bell", "other"},
	} {
		line, _ := json.Marshal(map[string]string{"resource": c.url, "description": c.desc})
		it, err := parseBazaarItem(line)
		if err != nil {
			t.Errorf("%s: %v", line, err)
			continue
		}
		if it.method.Name != c.name || it.method.Category != c.category {
			t.Errorf("%q: name %q category %s, want %q %s", c.desc, it.method.Name, it.method.Category, c.name, c.category)
		}
	}
}

func TestParseBazaarLongLineAndLastLineWithoutNewline(t *testing.T) {
	in := `{"resource":"https://a.example/1"}` + "\n" +
		`{"resource":"https://a.example/2","description":"` + strings.Repeat("y", maxBazaarLine) + `"}` + "\n" +
		`{"resource":"https://a.example/3"}`
	cat, skipped := parseBazaarString(t, in)
	if len(skipped) != 1 || skipped[0].Line != 2 {
		t.Errorf("skipped %v", skipped)
	}
	if n := len(allMethods(cat)); n != 2 {
		t.Errorf("%d methods", n)
	}
	// A line of almost the maximum still loads.
	in = `{"resource":"https://a.example/1","description":"` + strings.Repeat("y", maxBazaarLine-100) + `"}`
	if cat, skipped := parseBazaarString(t, in); len(skipped) != 0 || len(allMethods(cat)) != 1 {
		t.Errorf("long line: skipped %v", skipped)
	}
}

type failingReader struct{ r io.Reader }

var errBroken = errors.New("disk on fire")

func (f *failingReader) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if err == io.EOF {
		return n, errBroken
	}
	return n, err
}

func TestParseBazaarReturnsReadErrors(t *testing.T) {
	r := &failingReader{strings.NewReader(`{"resource":"https://a.example/1"}` + "\n")}
	_, _, err := ParseBazaar(bufio.NewReader(r))
	if !errors.Is(err, errBroken) {
		t.Errorf("err %v", err)
	}
	cat, skipped, err := ParseBazaar(strings.NewReader(""))
	if err != nil || len(skipped) != 0 || len(cat.Providers) != 0 {
		t.Errorf("empty input: %+v %v %v", cat, skipped, err)
	}
}

func TestLineError(t *testing.T) {
	inner := errors.New("bad thing")
	var err error = LineError{Line: 12, Err: inner}
	if err.Error() != "line 12: bad thing" || !errors.Is(err, inner) {
		t.Errorf("%v", err)
	}
}

func TestSlugify(t *testing.T) {
	for in, want := range map[string]string{
		"":                       "",
		"Hello, World!":          "hello-world",
		"  --a--b--  ":           "a-b",
		"api/chain/block-number": "api-chain-block-number",
		"eth_getBalance":         "eth-getbalance",
		"Münzwerk Straße":        "munzwerk-strasse",
		"Ærøskøbing Œuvre":       "aeroskobing-oeuvre",
		"日本語 text":               "text",
		"emoji 🚀 rocket":         "emoji-rocket",
		"ÀÉÎÕÜ":                  "aeiou",
		"a\u0301b":               "ab",
		"x402 / v2":              "x402-v2",
	} {
		got := Slugify(in)
		if got != want {
			t.Errorf("Slugify(%q) = %q, want %q", in, got, want)
		}
		if got != "" && !slugPattern.MatchString(got) {
			t.Errorf("Slugify(%q) = %q is malformed", in, got)
		}
	}
}

func TestNormalizeHostname(t *testing.T) {
	long63 := strings.Repeat("a", 63)
	for _, c := range []struct {
		in, want string
		ok       bool
	}{
		{"example.com", "example.com", true},
		{"API.OneSource.IO", "api.onesource.io", true},
		{"example.com.", "example.com", true},
		// xn--mnzwerk-3ya would be the punycode of "mnzweìrk"; "münzwerk" is
		// xn--mnzwerk-n2a.
		{"Münzwerk.Example.", "xn--mnzwerk-n2a.example", true},
		{"xn--mnzwerk-n2a.example", "xn--mnzwerk-n2a.example", true},
		{"XN--MNZWERK-N2A.EXAMPLE", "xn--mnzwerk-n2a.example", true},
		{"xn--mnzwerk-3ya.example", "xn--mnzwerk-3ya.example", true},
		{"bücher。example", "xn--bcher-kva.example", true},
		{"localhost", "localhost", true},
		{"a-b.c-d.example", "a-b.c-d.example", true},
		{"r3---sn-abc.example", "r3---sn-abc.example", true},
		{"123.example", "123.example", true},
		{long63 + ".example", long63 + ".example", true},
		{strings.Repeat("a.", 126) + "a", strings.Repeat("a.", 126) + "a", true}, // 253
		{"", "", false},
		{".", "", false},
		{"example.com..", "", false},
		{".example.com", "", false},
		{"a..example", "", false},
		{"example.com:443", "", false},
		{"[::1]", "", false},
		{"::1", "", false},
		{"192.168.0.1", "", false},
		{"1.2.3.4.", "", false},
		{"12345", "", false},
		{long63 + "a.example", "", false},
		{strings.Repeat("a.", 127) + "a", "", false}, // 255
		{"exa mple.com", "", false},
		{"exa_mple.com", "", false},
		{"-example.com", "", false},
		{"example-.com", "", false},
		{"example.com/path", "", false},
		{"user@example.com", "", false},
		{"xn--zz.example", "", false},
		{"bad\u0000.example", "", false},
		{"ex\u00e4 mple.com", "", false},
		{"a\u200db.example", "", false},
		{strings.Repeat("ü", 600), "", false},
	} {
		got, err := NormalizeHostname(c.in)
		if c.ok && (err != nil || got != c.want) {
			t.Errorf("NormalizeHostname(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
		if !c.ok && (err == nil || !errors.Is(err, ErrInvalidHostname)) {
			t.Errorf("NormalizeHostname(%q) = %q, %v; want an ErrInvalidHostname", c.in, got, err)
		}
	}
}

func TestNormalizeHostnameAllocations(t *testing.T) {
	for in, want := range map[string]float64{
		"api.onesource.io":  0,
		"api.onesource.io.": 0,
		"API.OneSource.IO":  1,
		"bad host":          0,
		"example.com:8080":  0,
	} {
		if n := testing.AllocsPerRun(100, func() { NormalizeHostname(in) }); n > want {
			t.Errorf("NormalizeHostname(%q): %.0f allocations, want at most %.0f", in, n, want)
		}
	}
}

func BenchmarkNormalizeHostname(b *testing.B) {
	for _, in := range []string{"api.onesource.io", "API.OneSource.IO", "Münzwerk.Example."} {
		b.Run(in, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				NormalizeHostname(in)
			}
		})
	}
}

func BenchmarkParseBazaar(b *testing.B) {
	data := readBazaarFile(b)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := ParseBazaar(bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
	}
}

func FuzzNormalizeHostname(f *testing.F) {
	for _, s := range []string{
		"example.com", "API.Example.COM.", "Münzwerk.Example.", "xn--mnzwerk-n2a.example",
		"example.com:443", "[::1]", "1.2.3.4", "a..b", "", ".", "bücher。example", "ß.example",
		"r3---sn-abc.example", "xn--zz.example", strings.Repeat("a", 64) + ".example", "ＥＸＡＭＰＬＥ.com",
		"\xbc", // invalid UTF-8 once normalised to punycode NormalizeHostname rejected
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out, err := NormalizeHostname(s)
		if err != nil {
			if !errors.Is(err, ErrInvalidHostname) || out != "" {
				t.Fatalf("NormalizeHostname(%q) = %q, %v", s, out, err)
			}
			return
		}
		if out == "" || len(out) > 253 {
			t.Fatalf("NormalizeHostname(%q) = %q", s, out)
		}
		for i := 0; i < len(out); i++ {
			c := out[i]
			if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '.') {
				t.Fatalf("NormalizeHostname(%q) = %q has %q", s, out, c)
			}
		}
		again, err := NormalizeHostname(out)
		if err != nil || again != out {
			t.Fatalf("NormalizeHostname(%q) = %q, but NormalizeHostname(%q) = %q, %v", s, out, out, again, err)
		}
	})
}

// FuzzParseBazaar feeds single lines to ParseBazaar. The seeds are made up here: a
// failing input is written to testdata, so real snapshot lines are not used as seeds.
func FuzzParseBazaar(f *testing.F) {
	for _, s := range []string{
		`{"resource":"https://api.example.com/v1/price/:id","type":"http","x402Version":2,"description":"Price of a thing - fast","accepts":[{"scheme":"exact","network":"eip155:8453","amount":"1000","payTo":"0x1","asset":"0x2","maxTimeoutSeconds":60,"mimeType":"application/json","extra":{"name":"USD Coin","version":"2"}}]}`,
		`{"resource":"https://Bücher.example./x","x402Version":1,"accepts":[{"scheme":"exact","network":"base","maxAmountRequired":null,"payTo":null}]}`,
		`{"resource":"http://a.example","description":"","accepts":null}`,
		`{"resource":"ftp://a.example/x"}`,
		`{"resource":"https://a.example/{id}/[x]/<y>/*","extensions":{"bazaar":{"info":{"input":{"method":"post"}}}}}`,
		`{"resource":"https://a.example:8443/x?q=1#f","description":"\u0000 \t"}`,
		`{"resource":"https://a.example/x","accepts":[{"amount":1e3},{"amount":"99999999999999999999999999999999999999999999999999999999999999999999999999999"}]}`,
		`{"x402Version":2,"items":[{"resource":"https://a.example/1","serviceName":"A Co","tags":["weather",3]},{"resource":7},{}],"pagination":{"limit":2,"offset":0,"total":9}}`,
		"{\n \"items\": [\n  {\"resource\": \"https://a.example/2\"}\n ]\n}",
		`{"resource":"https://m.example/mcp","type":"mcp","extensions":{"bazaar":{"info":{"input":{"type":"mcp","toolName":"t_1","inputSchema":{"type":"object"},"example":{"a":1}},"output":{"type":"json","example":[1]}},"schema":{"properties":{"output":{"properties":{"example":{"type":"array"}}}}}}}}`,
		`{"resource":"https://q.example/:id","quality":{"l30DaysTotalCalls":"12","l30DaysUniquePayers":-1,"lastCalledAt":"2026-01-01T00:00:00Z"},"lastUpdated":1766458335,"extensions":{"bazaar":{"info":{"input":{"type":"http","method":"GET","queryParams":{"a":"b"},"pathParams":{"id":"x y"},"headers":{"H":"v"}}}}}}`,
		`{"x402Version":1,"accepts":[{"resource":"https://v1.example/a","description":"v1","mimeType":"text/plain","outputSchema":{"input":{"type":"http","method":"POST","bodyFields":{"a":{"type":"string"}}},"output":{"type":"object","properties":{}}}}]}`,
		`not json`, ``, `{}`, `[]`, `null`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		cat, skipped, err := ParseBazaar(strings.NewReader(line))
		if err != nil {
			t.Fatalf("ParseBazaar returned %v for an in-memory reader", err)
		}
		// Each method comes of an object; each skip is a value of the stream (a
		// line, an element of a list response's items, or a stray value such as each
		// 0 of "0000"), so it takes at least one byte.
		methods := allMethods(cat)
		if len(methods) > strings.Count(line, "{") || len(skipped) > len(line)+1 {
			t.Fatalf("%d methods and %d skipped from %q", len(methods), len(skipped), line)
		}
		for _, e := range skipped {
			if e.Line < 1 || e.Err == nil {
				t.Fatalf("bad LineError %+v", e)
			}
		}
		for _, p := range cat.Providers {
			if p.Name == "" || len(p.Methods) == 0 {
				t.Fatalf("provider %+v", p)
			}
		}
		for _, m := range methods {
			checkMethod(t, m)
		}
		again, skippedAgain, _ := ParseBazaar(strings.NewReader(line))
		if !reflect.DeepEqual(cat, again) || len(skipped) != len(skippedAgain) {
			t.Fatalf("two parses of %q differ", line)
		}
	})
}
