package web

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waystation/waystation/api"
	"github.com/waystation/waystation/internal/directory"
	"github.com/waystation/waystation/internal/problem"
	"github.com/waystation/waystation/internal/resource"
	"github.com/waystation/waystation/internal/search"
	"github.com/waystation/waystation/internal/x402"
)

type fixed struct{ s *directory.Snapshot }

func (f fixed) Current() *directory.Snapshot { return f.s }

func testSnapshot(t *testing.T) *directory.Snapshot {
	t.Helper()
	at := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	score, low := 91, 12
	net, asset, sym, amount, dec, val := "eip155:8453", "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913", "USDC", "1000", 6, "0.001"
	exp := at.Add(24 * time.Hour)
	methods := []directory.Method{
		{
			Slug: "tide-block-number", Name: "Latest block number", Provider: "Tide", Hostname: "api.tide.example",
			Description: "Block height of a chain.", Category: "blockchain", Kind: "x402",
			Endpoint: directory.Endpoint{Method: "GET", URL: "https://api.tide.example/v1/block"},
			Trust: directory.Trust{Verdict: "proceed", Score: &score, Advisory: true, Probe: &directory.Probe{
				Outcome: "payment_required", ProbedAt: at.Add(-2 * time.Hour), AgeSeconds: 7200,
				Network: &net, Asset: &asset, AssetSymbol: &sym, Price: &directory.Price{Amount: &amount, Decimals: &dec, Value: &val},
			}},
			Stats:    directory.NewStats(42, 41),
			Guidance: json.RawMessage(`{"summary":"Returns the newest block.","request":{"method":"GET","url":"https://api.tide.example/v1/block","example":"curl https://api.tide.example/v1/block"},"response":{"mime_type":"application/json"},"payment":"Pay through Waystation.","notes":["Fast."]}`),
		},
		{
			Slug: "rain-forecast", Name: "Rain <forecast>", Provider: "Rain", Hostname: "rain.example",
			Description: "Will it rain?", Category: "weather", Kind: "checkout",
			Endpoint: directory.Endpoint{Method: "GET", URL: "https://rain.example/f"},
			Trust: directory.Trust{Verdict: "avoid", Score: &low, Advisory: true, Probe: &directory.Probe{
				Outcome: "timeout", ProbedAt: at.Add(-30 * time.Hour), AgeSeconds: 30 * 3600,
			}, Override: &directory.Override{Verdict: "avoid", Reason: "Charges twice.", SetAt: at.Add(-time.Hour), ExpiresAt: &exp}},
		},
		{
			Slug: "quiet-thing", Name: "Quiet thing", Provider: "Quiet", Hostname: "quiet.example", Category: "data", Kind: "account",
			Endpoint: directory.Endpoint{Method: "POST", URL: "https://quiet.example/x"},
			Trust:    directory.Trust{Verdict: "unknown", Advisory: true},
		},
	}
	status, latency := 402, 95
	merchants := []directory.Merchant{
		{Hostname: "api.tide.example", Providers: []string{"Tide"}, Trust: methods[0].Trust, Stats: methods[0].Stats,
			Methods: []directory.MerchantEntry{{Slug: "tide-block-number", Name: "Latest block number", Category: "blockchain"}},
			Probes:  []directory.ProbeRecord{{Outcome: "payment_required", ProbedAt: at.Add(-2 * time.Hour), HTTPStatus: &status, LatencyMS: &latency, Network: &net, Asset: &asset, Price: &directory.Price{Amount: &amount, Decimals: &dec, Value: &val}}}},
		{Hostname: "rain.example", Providers: []string{"Rain"}, Trust: methods[1].Trust, Methods: []directory.MerchantEntry{{Slug: "rain-forecast", Name: "Rain <forecast>", Category: "weather"}}, Probes: []directory.ProbeRecord{}},
		{Hostname: "quiet.example", Providers: []string{"Quiet"}, Trust: methods[2].Trust, Methods: []directory.MerchantEntry{{Slug: "quiet-thing", Name: "Quiet thing", Category: "data"}}, Probes: []directory.ProbeRecord{}},
	}
	snap, err := directory.NewSnapshot(at, methods, merchants)
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

func get(t *testing.T, h http.Handler, path string, hdr ...string) *http.Response {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Result()
}

func body(t *testing.T, res *http.Response) string {
	t.Helper()
	b, _ := io.ReadAll(res.Body)
	return string(b)
}

func TestLivePagesAreTheGeneratedPagesByteForByte(t *testing.T) {
	snap := testSnapshot(t)
	srv := NewServer(slog.New(slog.DiscardHandler), fixed{snap}, testViews, nil)
	var mu sync.Mutex
	pages := map[string]*resource.Resource{}
	if err := testViews.Pages(snap, func(url string, res *resource.Resource) error {
		mu.Lock()
		defer mu.Unlock()
		pages[url] = res
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// Home, 3 categories, 3 methods, 3 merchants, one page per problem code.
	if want := 1 + 3 + 3 + 3 + len(problem.Codes()); len(pages) != want {
		t.Fatalf("%d pages, want %d", len(pages), want)
	}
	for url, res := range pages {
		r := get(t, srv, url)
		b := body(t, r)
		if r.StatusCode != 200 || b != string(res.Body) || r.Header.Get("ETag") != res.ETag {
			t.Errorf("%s: live %d %s differs from generated %s", url, r.StatusCode, r.Header.Get("ETag"), res.ETag)
		}
		if ct := r.Header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
			t.Errorf("%s: Content-Type %q", url, ct)
		}
		if cc := r.Header.Get("Cache-Control"); cc != "public, max-age=300" {
			t.Errorf("%s: Cache-Control %q", url, cc)
		}
		if r := get(t, srv, url, "If-None-Match", res.ETag); r.StatusCode != http.StatusNotModified {
			t.Errorf("%s: revalidation gave %d", url, r.StatusCode)
		}
		if r := get(t, srv, url, "Accept-Encoding", "gzip"); r.Header.Get("Content-Encoding") != "gzip" || body(t, r) != string(res.Gzip()) {
			t.Errorf("%s: gzip differs", url)
		}
	}
}

func TestMethodPageExplainsTheTrustBlockInPlainWords(t *testing.T) {
	srv := NewServer(slog.New(slog.DiscardHandler), fixed{testSnapshot(t)}, testViews, nil)
	b := body(t, get(t, srv, "/methods/tide-block-number"))
	for _, want := range []string{
		"<title>Latest block number by Tide · Waystation</title>",
		"91 out of 100",
		"it looks fit to call",
		"valid x402 offer",
		"2 hours before this snapshot",
		"eip155:8453",
		"USDC (0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913)",
		"0.001 USDC per call",
		"42 payments settled through Waystation, 41 delivered: 97.6%",
		"Returns the newest block.",
		"curl https://api.tide.example/v1/block",
		"Pay through Waystation.",
		"How the score is computed",
		`href="/functions/v1/api/api/public/v1/services/tide-block-number"`,
	} {
		if !strings.Contains(b, want) {
			t.Errorf("method page lacks %q", want)
		}
	}
	b = body(t, get(t, srv, "/methods/rain-forecast"))
	for _, want := range []string{"Rain &lt;forecast&gt;", "An operator set the verdict to avoid", "Charges twice.", "did not answer in time", "Fewer than five payments"} {
		if !strings.Contains(b, want) {
			t.Errorf("rain page lacks %q", want)
		}
	}
	b = body(t, get(t, srv, "/merchants/API.Tide.Example."))
	for _, want := range []string{"Probe history", "402", "95 ms", "Latest block number"} {
		if !strings.Contains(b, want) {
			t.Errorf("merchant page lacks %q", want)
		}
	}
}

func TestTrustBlockNamesWhyAnOfferWasRefused(t *testing.T) {
	reason := "bad_extra"
	v := trustView(directory.Trust{Verdict: "avoid", Advisory: true, Probe: &directory.Probe{
		Outcome: "invalid_offer", ProbedAt: time.Now(), Reason: &reason}}, "x402")
	if !strings.Contains(v.OutcomeMeaning, "no offer an x402 client could pay") ||
		!strings.HasPrefix(v.Reason, "bad extra: ") || !strings.Contains(v.Reason, "EIP-712") {
		t.Fatalf("%+v", v)
	}
	for _, r := range x402.Reasons {
		if reasonMeanings[r] == "" {
			t.Errorf("no words for the reason %s", r)
		}
	}
	// An upto offer is a ceiling: the page says there is no fixed price.
	net := "eip155:8453"
	v = trustView(directory.Trust{Verdict: "proceed", Advisory: true, Probe: &directory.Probe{
		Outcome: "payment_required", ProbedAt: time.Now(), Network: &net}}, "x402")
	if v.Reason != "" || !strings.HasPrefix(v.Price, "no fixed price") {
		t.Fatalf("%+v", v)
	}
}

func TestHomeAndCategoryPagesLinkEveryCategoryWithItsCount(t *testing.T) {
	srv := NewServer(slog.New(slog.DiscardHandler), fixed{testSnapshot(t)}, testViews, nil)
	b := body(t, get(t, srv, "/"))
	for _, want := range []string{`action="/search"`, `href="/categories/weather"`, "Weather (1)", `href="/methods/quiet-thing"`} {
		if !strings.Contains(b, want) {
			t.Errorf("home lacks %q", want)
		}
	}
	b = body(t, get(t, srv, "/categories/weather"))
	if !strings.Contains(b, `aria-current="page"`) || !strings.Contains(b, "Rain &lt;forecast&gt;") || strings.Contains(b, "Quiet thing") {
		t.Errorf("weather page: %s", b)
	}
}

func TestProblemPagesExistForEveryProblemType(t *testing.T) {
	srv := NewServer(slog.New(slog.DiscardHandler), fixed{testSnapshot(t)}, testViews, nil)
	for _, code := range problem.Codes() {
		path := "/problems/" + strings.ReplaceAll(code, "_", "-")
		r := get(t, srv, path)
		if b := body(t, r); r.StatusCode != 200 || !strings.Contains(b, "<code>"+code+"</code>") {
			t.Errorf("%s: %d", path, r.StatusCode)
		}
	}
	if r := get(t, srv, "/problems/not_found"); r.StatusCode != 404 {
		t.Errorf("underscored code: %d", r.StatusCode)
	}
}

// testViews link the pages' JSON twins where the service serves them.
var testViews = Views{DirectoryAPI: "/functions/v1/api/api/public/v1"}

type failing struct{}

func (failing) Search(context.Context, search.Caller, *directory.Snapshot, string, directory.Filter) (search.Answer, error) {
	return search.Answer{}, errors.New("down")
}

// refused is a search that refuses the caller, as the search service's limits do.
type refused struct{ retryAfter int }

func (e refused) Search(context.Context, search.Caller, *directory.Snapshot, string, directory.Filter) (search.Answer, error) {
	p := problem.New(problem.RateLimited, "Too many searches from this caller.")
	p.RetryAfter = e.retryAfter
	return search.Answer{}, p
}

type exact struct{}

func (exact) Search(_ context.Context, _ search.Caller, snap *directory.Snapshot, q string, _ directory.Filter) (search.Answer, error) {
	pos, _ := snap.Position(q)
	return search.Answer{Result: search.Result{Match: "slug", Hits: []search.Hit{{Pos: pos, Similarity: 1}}}}, nil
}

// near is a search whose band keeps the method named keep, if any, and offers the
// others of the snapshot as nearest, not matches.
// Its band's confidence is confidence, or 0.3 when that is 0.
type near struct {
	keep       string
	confidence float64
}

func (n near) Search(_ context.Context, _ search.Caller, snap *directory.Snapshot, _ string, _ directory.Filter) (search.Answer, error) {
	res := search.Result{Match: search.MatchNone, Band: &search.BandReport{Confidence: cmp.Or(n.confidence, 0.3), Least: 0.41, Margin: 0.1}}
	reason := search.ReasonBelowConfidence
	if n.keep != "" {
		pos, _ := snap.Position(n.keep)
		res.Match, res.Hits, reason = search.MatchSemantic, []search.Hit{{Pos: pos, Similarity: 0.8}}, search.ReasonOutsideMargin
	}
	for pos, m := range snap.Methods() {
		if m.Slug != n.keep && len(res.Hits)+len(res.Nearest) < search.MaxResults {
			res.Nearest = append(res.Nearest, search.Near{Hit: search.Hit{Pos: pos, Similarity: 0.3}, Reason: reason})
		}
	}
	return search.Answer{Result: res}, nil
}

// TestSearchPageShowsTheNearestApartFromTheResults: the methods nearest a query that
// are not matches come under their own heading, after the results, in a section of
// their own; with no result the page says there is no close match.
func TestSearchPageShowsTheNearestApartFromTheResults(t *testing.T) {
	snap := testSnapshot(t)
	for _, tc := range []struct {
		search         near
		heading, other string
		results        int
	}{
		{near{}, "Nothing in the directory does this. Nearest, not a match:", "Also near", 0},
		{near{keep: "quiet-thing"}, "Also near, not a match:", "Nothing in the directory does this", 1},
	} {
		srv := NewServer(slog.New(slog.DiscardHandler), fixed{snap}, testViews, tc.search)
		b := body(t, get(t, srv, "/search?q=weather+on+mars"))
		results, nearest, ok := strings.Cut(b, `<section class="nearest"`)
		if !ok || !strings.Contains(nearest, tc.heading) || strings.Contains(b, tc.other) {
			t.Fatalf("%+v: no nearest section under %q:\n%s", tc.search, tc.heading, b)
		}
		if n := strings.Count(results, "<li>"); n != tc.results {
			t.Errorf("%+v: %d results before the nearest, want %d", tc.search, n, tc.results)
		}
		if n := strings.Count(nearest, "<li>"); n != 3-tc.results {
			t.Errorf("%+v: %d nearest, want %d", tc.search, n, 3-tc.results)
		}
		if tc.search.keep != "" && (!strings.Contains(results, "/methods/quiet-thing") || strings.Contains(nearest, "/methods/quiet-thing")) {
			t.Errorf("the result is not apart from the nearest:\n%s", b)
		}
		if strings.Contains(nearest, `class="verdict`) {
			t.Errorf("%+v: a nearest method wears a trust badge, as an answer does:\n%s", tc.search, nearest)
		}
	}
}

// TestOffTopicSearchPageShowsNoNearest: a query the band is far from answering ("a
// recipe for banana bread") gets a page that says nothing here does it, and no
// methods at all: nearest methods that are not plausibly near read as answers.
func TestOffTopicSearchPageShowsNoNearest(t *testing.T) {
	srv := NewServer(slog.New(slog.DiscardHandler), fixed{testSnapshot(t)}, testViews, near{confidence: 0.02})
	b := body(t, get(t, srv, "/search?q=recipe+for+banana+bread"))
	if !strings.Contains(b, "Nothing in the directory does this.") || strings.Contains(b, "<li>") || strings.Contains(b, `class="verdict`) {
		t.Errorf("an off-topic query's page shows methods:\n%s", b)
	}
}

func TestSearchPageSaysWhenSearchIsUnavailable(t *testing.T) {
	snap := testSnapshot(t)
	for _, tc := range []struct {
		search Searcher
		status int
		want   string
	}{
		{nil, 200, "the search engine is not running on this server."},
		{failing{}, 503, "Search is unavailable"},
		{refused{12}, 429, "searched a lot"},
		{exact{}, 200, "Quiet thing"},
	} {
		srv := NewServer(slog.New(slog.DiscardHandler), fixed{snap}, testViews, tc.search)
		r := get(t, srv, "/search?q=quiet-thing")
		b := body(t, r)
		if r.StatusCode != tc.status || !strings.Contains(b, tc.want) || !strings.Contains(b, `value="quiet-thing"`) {
			t.Errorf("%T: %d, want %d and %q", tc.search, r.StatusCode, tc.status, tc.want)
		}
		if _, ok := tc.search.(refused); ok && r.Header.Get("Retry-After") != "12" {
			t.Errorf("refused: Retry-After %q", r.Header.Get("Retry-After"))
		}
		if tc.search == nil && !strings.Contains(b, `href="/functions/v1/api/api/public/v1/services"`) {
			t.Error("the unavailable page does not link to the list")
		}
	}
	srv := NewServer(slog.New(slog.DiscardHandler), fixed{snap}, testViews, exact{})
	if r := get(t, srv, "/search?q="+strings.Repeat("a", 1025)); r.StatusCode != 400 {
		t.Errorf("long query: %d", r.StatusCode)
	}
}

func TestStaticFilesAreServedForAYearUnderVersionedURLs(t *testing.T) {
	srv := NewServer(slog.New(slog.DiscardHandler), fixed{testSnapshot(t)}, testViews, nil)
	home := body(t, get(t, srv, "/"))
	if !strings.Contains(home, `href="`+stylesheetURL+`"`) {
		t.Fatalf("home does not link %s", stylesheetURL)
	}
	r := get(t, srv, stylesheetURL)
	if r.StatusCode != 200 || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/css") ||
		r.Header.Get("Cache-Control") != "public, max-age=31536000, immutable" {
		t.Fatalf("stylesheet: %d %v", r.StatusCode, r.Header)
	}
	if r := get(t, srv, "/static/style.css"); r.StatusCode != 404 {
		t.Errorf("unversioned stylesheet: %d", r.StatusCode)
	}
}

func TestUnknownPagesAnswer404InHTML(t *testing.T) {
	srv := NewServer(slog.New(slog.DiscardHandler), fixed{testSnapshot(t)}, testViews, nil)
	for _, p := range []string{"/nope", "/methods/nope", "/merchants/nope.example", "/categories/nope", "/problems/nope"} {
		r := get(t, srv, p)
		if b := body(t, r); r.StatusCode != 404 || !strings.Contains(b, "Nothing here") {
			t.Errorf("%s: %d", p, r.StatusCode)
		}
	}
	req := httptest.NewRequest(http.MethodPost, "/", nil)
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, req)
	if rec.Code != 405 {
		t.Errorf("POST /: %d", rec.Code)
	}
	// A method is the caller's text: the answer names the methods the path takes,
	// never the one sent.
	req = httptest.NewRequest("X4111111111111111", "/", nil)
	rec = httptest.NewRecorder()
	srv.ServeHTTP(rec, req)
	if rec.Code != 405 || strings.Contains(rec.Body.String(), "4111") || !strings.Contains(rec.Body.String(), "GET") {
		t.Errorf("an invented method: %d %s", rec.Code, rec.Body.String())
	}
}

func TestPagesEscapeWhatSellersWrite(t *testing.T) {
	srv := NewServer(slog.New(slog.DiscardHandler), fixed{testSnapshot(t)}, testViews, nil)
	b := body(t, get(t, srv, "/categories/weather"))
	if strings.Contains(b, "<forecast>") {
		t.Error("a seller's text reached the page unescaped")
	}
}

// TestMerchantPageFindsAnInternationalisedHostnameAsTheAPIDoes checks that the page and
// the API read a merchant's hostname the same way: in Unicode, percent-encoded, in
// punycode, in upper case or with a trailing dot, both answer 200 with the same record.
func TestMerchantPageFindsAnInternationalisedHostnameAsTheAPIDoes(t *testing.T) {
	trust := directory.Trust{Verdict: directory.VerdictUnknown, Advisory: true}
	snap, err := directory.NewSnapshot(time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC),
		[]directory.Method{{Slug: "buch-suche", Name: "Buchsuche", Provider: "Bücher", Hostname: "xn--bcher-kva.example",
			Category: "data", Kind: "x402", Endpoint: directory.Endpoint{Method: "GET", URL: "https://xn--bcher-kva.example/suche"}, Trust: trust}},
		[]directory.Merchant{{Hostname: "xn--bcher-kva.example", Providers: []string{"Bücher"}, Trust: trust,
			Methods: []directory.MerchantEntry{{Slug: "buch-suche", Name: "Buchsuche", Category: "data"}}, Probes: []directory.ProbeRecord{}}})
	if err != nil {
		t.Fatal(err)
	}
	pages := NewServer(slog.New(slog.DiscardHandler), fixed{snap}, testViews, nil)
	apiSrv := api.NewServer(api.Config{}, slog.New(slog.DiscardHandler), fixed{snap}, nil)
	want := body(t, get(t, pages, "/merchants/xn--bcher-kva.example"))
	if !strings.Contains(want, "xn--bcher-kva.example") {
		t.Fatalf("the merchant page does not name its hostname:\n%s", want)
	}
	for _, host := range []string{"bücher.example", "b%C3%BCcher.example", "B%C3%9CCHER.Example.", "XN--BCHER-KVA.example"} {
		r := get(t, pages, "/merchants/"+host)
		if b := body(t, r); r.StatusCode != 200 || b != want {
			t.Errorf("page of %s: %d, same page %v", host, r.StatusCode, b == want)
		}
		if r := get(t, apiSrv, api.BasePath+"/api/public/v1/merchants/"+host); r.StatusCode != 200 {
			t.Errorf("API merchant %s: %d", host, r.StatusCode)
		}
	}
	for _, host := range []string{"b%C3%BCcher.other", "b%25cher.example", "bad_host"} {
		if r := get(t, pages, "/merchants/"+host); r.StatusCode != 404 {
			t.Errorf("page of %s: %d, want 404", host, r.StatusCode)
		}
	}
}

func TestPageURLsWithATrailingSlashRedirectToThePage(t *testing.T) {
	srv := NewServer(slog.New(slog.DiscardHandler), fixed{testSnapshot(t)}, testViews, nil)
	for path, want := range map[string]string{
		"/methods/tide-block-number/":     "/methods/tide-block-number",
		"/categories/weather//":           "/categories/weather",
		"/search/?q=tide":                 "/search?q=tide",
		"//evil.example/":                 "/evil.example",
		"/merchants/b%C3%BCcher.example/": "/merchants/b%C3%BCcher.example",
	} {
		r := get(t, srv, path)
		if r.StatusCode != http.StatusMovedPermanently || r.Header.Get("Location") != want {
			t.Errorf("%s: %d to %q, want 301 to %q", path, r.StatusCode, r.Header.Get("Location"), want)
		}
	}
	if r := get(t, srv, "/"); r.StatusCode != 200 {
		t.Errorf("/: %d", r.StatusCode)
	}
	if r := get(t, srv, "/methods/tide-block-number"); r.StatusCode != 200 {
		t.Errorf("the page itself: %d", r.StatusCode)
	}
}

func TestMethodPageShowsTheListingsFiguresApartFromPayments(t *testing.T) {
	at := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	calls, updated := int64(1200), at.Add(-48*time.Hour)
	methods := []directory.Method{
		{
			Slug: "tally-count", Name: "Count things", Provider: "Tally", Hostname: "tally.example", Category: "data", Kind: "x402",
			Endpoint:      directory.Endpoint{Method: "GET", URL: "https://tally.example/count"},
			Trust:         directory.Trust{Verdict: "unknown", Advisory: true},
			SourceListing: &directory.Listing{Source: "x402-bazaar", Calls30d: &calls, UpdatedAt: &updated},
		},
		{
			Slug: "plain-thing", Name: "Plain thing", Provider: "Plain", Hostname: "plain.example", Category: "data", Kind: "x402",
			Endpoint: directory.Endpoint{Method: "GET", URL: "https://plain.example/x"},
			Trust:    directory.Trust{Verdict: "unknown", Advisory: true},
		},
	}
	merchants := []directory.Merchant{
		{Hostname: "tally.example", Providers: []string{"Tally"}, Trust: methods[0].Trust, Methods: []directory.MerchantEntry{{Slug: "tally-count", Name: "Count things", Category: "data"}}, Probes: []directory.ProbeRecord{}},
		{Hostname: "plain.example", Providers: []string{"Plain"}, Trust: methods[1].Trust, Methods: []directory.MerchantEntry{{Slug: "plain-thing", Name: "Plain thing", Category: "data"}}, Probes: []directory.ProbeRecord{}},
	}
	snap, err := directory.NewSnapshot(at, methods, merchants)
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer(slog.New(slog.DiscardHandler), fixed{snap}, testViews, nil)
	b := body(t, get(t, srv, "/methods/tally-count"))
	for _, want := range []string{
		`<h2 id="listing">As listed</h2>`, "What the x402 Bazaar listing reports", "not payments Waystation saw",
		"<dd>1200</dd>", "<dd>not given</dd>", "19 Nov 2026 10:00 UTC",
		"Fewer than five payments settled through Waystation",
	} {
		if !strings.Contains(b, want) {
			t.Errorf("method page lacks %q", want)
		}
	}
	if b := body(t, get(t, srv, "/methods/plain-thing")); strings.Contains(b, "As listed") {
		t.Error("a method of no listing shows a listing section")
	}
}

// TestInternationalHostnamesReadInTheirScript: a punycode hostname is shown in its
// own script with its ASCII form beside it, never the look-alike alone; any other
// hostname as it is.
func TestInternationalHostnamesReadInTheirScript(t *testing.T) {
	for h, want := range map[string]string{
		"xn--bcher-kva.example": "bücher.example (xn--bcher-kva.example)",
		"api.onesource.io":      "api.onesource.io",
		"xn--pple-43d.com":      "аpple.com (xn--pple-43d.com)",
		"xn--invalid--.example": "xn--invalid--.example",
	} {
		if got := hostText(h); got != want {
			t.Errorf("hostText(%q) = %q, want %q", h, got, want)
		}
	}
}
