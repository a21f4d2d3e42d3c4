package api_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/idna"

	"github.com/andybalholm/brotli"
	"github.com/waystation/waystation/api"
	"github.com/waystation/waystation/generator"
	"github.com/waystation/waystation/internal/directory"
	"github.com/waystation/waystation/internal/postgres"
	"github.com/waystation/waystation/internal/postgres/pgtest"
	"github.com/waystation/waystation/internal/resource"
)

const base = "/functions/v1/api"

type env struct {
	t     *testing.T
	store *postgres.Store
	snaps *generator.Holder
	srv   http.Handler
}

// newEnv loads the demo catalog into a fresh database and serves it through the
// real router.
func newEnv(t *testing.T) *env {
	t.Helper()
	ctx := context.Background()
	store, _ := pgtest.LoadDemo(t, time.Now())
	snaps := generator.NewHolder()
	if err := snaps.Refresh(ctx, store, nil); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	return &env{t: t, store: store, snaps: snaps, srv: api.NewServer(api.Config{}, log, snaps, store)}
}

type response struct {
	*http.Response
	body []byte
}

func (e *env) do(method, target string, header ...string) response {
	e.t.Helper()
	req := httptest.NewRequest(method, target, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Add(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	e.srv.ServeHTTP(rec, req)
	res := rec.Result()
	body, _ := io.ReadAll(res.Body)
	return response{res, body}
}

func (e *env) get(target string, header ...string) response {
	return e.do(http.MethodGet, target, header...)
}

func (r response) json(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("body is not JSON: %v\n%s", err, r.body)
	}
}

type listBody struct {
	Object string             `json:"object"`
	Items  []directory.Method `json:"items"`
	Count  int                `json:"count"`
	Total  int                `json:"total"`
	Offset int                `json:"offset"`
	Facets directory.Facets   `json:"facets"`
	Snap   directory.Info     `json:"snapshot"`
}

type problemBody struct {
	Type      string `json:"type"`
	Title     string `json:"title"`
	Status    int    `json:"status"`
	Code      string `json:"code"`
	Detail    string `json:"detail"`
	Instance  string `json:"instance"`
	Parameter string `json:"parameter"`
}

func (r response) problem(t *testing.T, status int, code string) problemBody {
	t.Helper()
	if r.StatusCode != status {
		t.Fatalf("status %d, want %d: %s", r.StatusCode, status, r.body)
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("Content-Type %q, want application/problem+json", ct)
	}
	var p problemBody
	r.json(t, &p)
	if p.Code != code || p.Status != status || p.Title == "" || !strings.HasPrefix(p.Type, "/problems/") || p.Instance == "" {
		t.Fatalf("problem %+v, want code %s status %d with title, type and instance", p, code, status)
	}
	return p
}

const services = base + "/api/public/v1/services"

func TestDirectoryContract(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	snap := e.snaps.Current()
	if snap.Len() < 50 {
		t.Fatalf("demo snapshot has %d methods", snap.Len())
	}
	slug := snap.Methods()[0].Slug
	host := snap.Methods()[0].Hostname
	routes := []string{services, services + "?category=blockchain", services + "/" + slug, base + "/api/public/v1/merchants/" + host}

	t.Run("every response is JSON", func(t *testing.T) {
		for _, target := range append(routes, services+"?limit=nope", services+"/no-such-slug") {
			r := e.get(target)
			ct := r.Header.Get("Content-Type")
			if ct != "application/json; charset=utf-8" && ct != "application/problem+json" {
				t.Errorf("%s: Content-Type %q", target, ct)
			}
			if !json.Valid(r.body) {
				t.Errorf("%s: body is not JSON", target)
			}
		}
	})

	t.Run("every origin is answered and the preflight succeeds", func(t *testing.T) {
		for _, target := range append(routes, services+"?verified=1", services+"/nope") {
			if got := e.get(target, "Origin", "https://agent.example").Header.Get("Access-Control-Allow-Origin"); got != "*" {
				t.Errorf("%s: Access-Control-Allow-Origin %q", target, got)
			}
			r := e.do(http.MethodOptions, target, "Origin", "https://agent.example", "Access-Control-Request-Method", "GET")
			if r.StatusCode != http.StatusNoContent || r.Header.Get("Access-Control-Allow-Methods") != "GET, HEAD, OPTIONS" ||
				r.Header.Get("Access-Control-Max-Age") == "" || r.Header.Get("Access-Control-Allow-Headers") == "" {
				t.Errorf("%s: preflight %d %v", target, r.StatusCode, r.Header)
			}
		}
	})

	t.Run("responses are cacheable for five minutes, refusals that depend on the moment are not", func(t *testing.T) {
		cases := map[string]int{
			services:                     200,
			services + "?kind=x402":      200,
			services + "/" + slug:        200,
			services + "?verified":       400,
			services + "?limit=0":        400,
			services + "/missing-slug":   404,
			base + "/api/public/v1/none": 404,
		}
		for target, status := range cases {
			r := e.get(target)
			if r.StatusCode != status || r.Header.Get("Cache-Control") != "public, max-age=300" {
				t.Errorf("%s: %d Cache-Control %q", target, r.StatusCode, r.Header.Get("Cache-Control"))
			}
		}
		r := e.get(services+"/"+slug, "If-None-Match", e.get(services+"/"+slug).Header.Get("ETag"))
		if r.StatusCode != 304 || r.Header.Get("Cache-Control") != "public, max-age=300" {
			t.Errorf("304: %d %q", r.StatusCode, r.Header.Get("Cache-Control"))
		}
		r = e.get(services + "?q=weather")
		if r.StatusCode != 503 || r.Header.Get("Cache-Control") != "no-store" || r.Header.Get("Retry-After") == "" {
			t.Errorf("search refusal: %d Cache-Control %q Retry-After %q", r.StatusCode, r.Header.Get("Cache-Control"), r.Header.Get("Retry-After"))
		}
	})

	t.Run("strong ETags, 304 on a match, gzip on request", func(t *testing.T) {
		for _, target := range routes {
			r := e.get(target)
			etag := r.Header.Get("ETag")
			if r.StatusCode != 200 || !strings.HasPrefix(etag, `"`) || r.Header.Get("Vary") != "Accept-Encoding" {
				t.Fatalf("%s: %d ETag %q Vary %q", target, r.StatusCode, etag, r.Header.Get("Vary"))
			}
			for _, inm := range []string{etag, "W/" + etag, `"other", ` + etag, "*"} {
				nm := e.get(target, "If-None-Match", inm)
				if nm.StatusCode != 304 || len(nm.body) != 0 || nm.Header.Get("ETag") != etag {
					t.Errorf("%s If-None-Match %s: %d, %d bytes", target, inm, nm.StatusCode, len(nm.body))
				}
			}
			if e.get(target, "If-None-Match", `"stale"`).StatusCode != 200 {
				t.Errorf("%s: a stale tag must get the body", target)
			}
			br := e.get(target, "Accept-Encoding", "br, gzip;q=0.8")
			if br.Header.Get("Content-Encoding") != "br" || br.Header.Get("ETag") == etag {
				t.Fatalf("%s: brotli %q ETag %q", target, br.Header.Get("Content-Encoding"), br.Header.Get("ETag"))
			}
			if plain, err := io.ReadAll(brotli.NewReader(bytes.NewReader(br.body))); err != nil || !bytes.Equal(plain, r.body) {
				t.Errorf("%s: brotli body differs from identity body (%v)", target, err)
			}
			gz := e.get(target, "Accept-Encoding", "deflate, br;q=0.5, gzip;q=0.8")
			if gz.Header.Get("Content-Encoding") != "gzip" || gz.Header.Get("ETag") == etag {
				t.Fatalf("%s: gzip %q ETag %q", target, gz.Header.Get("Content-Encoding"), gz.Header.Get("ETag"))
			}
			zr, err := gzip.NewReader(bytes.NewReader(gz.body))
			if err != nil {
				t.Fatal(err)
			}
			plain, _ := io.ReadAll(zr)
			if !bytes.Equal(plain, r.body) {
				t.Errorf("%s: gzip body differs from identity body", target)
			}
			if e.get(target, "Accept-Encoding", "gzip;q=0").Header.Get("Content-Encoding") != "" {
				t.Errorf("%s: gzip;q=0 must refuse gzip", target)
			}
			if e.get(target, "If-None-Match", gz.Header.Get("ETag")).StatusCode != 304 {
				t.Errorf("%s: the gzip tag must revalidate too", target)
			}
		}
	})

	t.Run("HEAD answers the headers without a body", func(t *testing.T) {
		for _, target := range routes {
			get, head := e.get(target), e.do(http.MethodHead, target)
			if head.StatusCode != 200 || len(head.body) != 0 || head.Header.Get("ETag") != get.Header.Get("ETag") ||
				head.Header.Get("Content-Length") != get.Header.Get("Content-Length") {
				t.Errorf("%s: HEAD %d, %d bytes, headers %v", target, head.StatusCode, len(head.body), head.Header)
			}
		}
	})

	t.Run("read-only: other methods get 405 with Allow", func(t *testing.T) {
		for _, target := range routes {
			for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
				r := e.do(m, target)
				r.problem(t, 405, "method_not_allowed")
				if r.Header.Get("Allow") != "GET, HEAD, OPTIONS" {
					t.Errorf("%s %s: Allow %q", m, target, r.Header.Get("Allow"))
				}
			}
		}
	})

	t.Run("verified is refused in any form, on every directory route", func(t *testing.T) {
		for _, q := range []string{"verified", "verified=", "verified=true", "Verified=1", "VERIFIED=false", "%76erified=1", "category=blockchain&verified=0", "q=weather&verified", "verified&nope=1", "nope=1&verified"} {
			for _, target := range routes {
				sep := "?"
				if strings.Contains(target, "?") {
					sep = "&"
				}
				p := e.get(target+sep+q).problem(t, 400, "verified_reserved")
				if p.Type != "/problems/verified-reserved" {
					t.Errorf("type %q", p.Type)
				}
			}
		}
	})

	t.Run("unknown, repeated and malformed parameters are refused", func(t *testing.T) {
		cases := map[string]string{
			"?sort=name":                          "unknown_parameter",
			"?Category=blockchain":                "unknown_parameter",
			"?category=ai&category=data":          "unknown_parameter",
			"?limit=5&limit=5":                    "unknown_parameter",
			"?category=nonsense":                  "invalid_parameter",
			"?category=":                          "invalid_parameter",
			"?category=ai,,data":                  "invalid_parameter",
			"?verdict=verified":                   "invalid_parameter",
			"?kind=x402,barter":                   "invalid_parameter",
			"?payable=maybe":                      "invalid_parameter",
			"?payable=":                           "invalid_parameter",
			"?hostname=not_a_host!":               "invalid_parameter",
			"?hostname=api.example:443":           "invalid_parameter",
			"?limit=0":                            "invalid_parameter",
			"?limit=-1":                           "invalid_parameter",
			"?limit=ten":                          "invalid_parameter",
			"?limit=99999999999999999999":         "invalid_parameter",
			"?offset=-1":                          "invalid_parameter",
			"?offset=1.5":                         "invalid_parameter",
			"?category=%zz":                       "invalid_parameter",
			"?q=":                                 "invalid_parameter",
			"?q=%20%20":                           "invalid_parameter",
			"?q=%ff%fe":                           "invalid_parameter",
			"?q=" + strings.Repeat("a", 1025):     "query_too_long",
			"?q=" + strings.Repeat("%C3%A9", 513): "query_too_long",
			"?q=weather&offset=3":                 "invalid_parameter",
		}
		for q, code := range cases {
			p := e.get(services+q).problem(t, 400, code)
			if code != "query_too_long" && p.Parameter == "" {
				t.Errorf("%s: the problem must name the parameter", q)
			}
		}
		e.get(services+"/"+slug+"?x=1").problem(t, 400, "unknown_parameter")
		e.get(base+"/api/public/v1/merchants/"+host+"?limit=1").problem(t, 400, "unknown_parameter")
		// 1024 bytes exactly, of two-byte characters, is within bounds.
		if r := e.get(services + "?q=" + strings.Repeat("%C3%A9", 512)); r.StatusCode == 400 {
			t.Errorf("a 1024-byte query was refused: %s", r.body)
		}
	})

	t.Run("the unfiltered list is the snapshot's bytes", func(t *testing.T) {
		r := e.get(services)
		if !bytes.Equal(r.body, snap.List().Body) || r.Header.Get("ETag") != snap.List().ETag {
			t.Fatal("the unfiltered list differs from the snapshot")
		}
		var l listBody
		r.json(t, &l)
		if l.Object != "list" || l.Count != snap.Len() || l.Total != snap.Len() || l.Offset != 0 || l.Snap.ID != snap.Info().ID {
			t.Fatalf("list header %+v", l)
		}
		for _, s := range snap.Methods() {
			res, _ := snap.Method(s.Slug)
			if !bytes.Equal(e.get(services+"/"+s.Slug).body, res.Body) {
				t.Fatalf("%s: slug bytes differ from the snapshot", s.Slug)
			}
		}
	})

	t.Run("order is score descending, nulls last, then slug", func(t *testing.T) {
		var l listBody
		e.get(services).json(t, &l)
		sawNull := false
		for i, m := range l.Items {
			if m.Trust.Score == nil {
				sawNull = true
			} else if sawNull {
				t.Fatalf("%s: a scored item after an unscored one", m.Slug)
			}
			if i == 0 {
				continue
			}
			p := l.Items[i-1]
			if p.Trust.Score != nil && m.Trust.Score != nil && *p.Trust.Score < *m.Trust.Score {
				t.Fatalf("%s before %s: scores out of order", p.Slug, m.Slug)
			}
			if (p.Trust.Score == nil) == (m.Trust.Score == nil) && (p.Trust.Score == nil || *p.Trust.Score == *m.Trust.Score) && p.Slug > m.Slug {
				t.Fatalf("%s before %s: slugs out of order among equal scores", p.Slug, m.Slug)
			}
		}
	})

	t.Run("filters AND together, values within one OR", func(t *testing.T) {
		var all listBody
		e.get(services).json(t, &all)
		check := func(q string, keep func(directory.Method) bool) {
			t.Helper()
			var l listBody
			e.get(services+"?"+q).json(t, &l)
			var want []string
			for _, m := range all.Items {
				if keep(m) {
					want = append(want, m.Slug)
				}
			}
			var got []string
			for _, m := range l.Items {
				got = append(got, m.Slug)
			}
			if !slices.Equal(got, want) || l.Total != len(want) || l.Count != len(want) {
				t.Errorf("%s: got %d items (total %d), want %d", q, len(got), l.Total, len(want))
			}
		}
		check("category=blockchain", func(m directory.Method) bool { return m.Category == "blockchain" })
		check("category=blockchain,finance", func(m directory.Method) bool { return m.Category == "blockchain" || m.Category == "finance" })
		check("verdict=proceed", func(m directory.Method) bool { return m.Trust.Verdict == "proceed" })
		check("verdict=caution,avoid&kind=x402", func(m directory.Method) bool {
			return (m.Trust.Verdict == "caution" || m.Trust.Verdict == "avoid") && m.Kind == "x402"
		})
		check("kind=checkout,subscription,account", func(m directory.Method) bool { return m.Kind != "x402" })
		check("payable=YES", func(m directory.Method) bool { return m.Payable })
		check("payable=0&category=weather", func(m directory.Method) bool { return !m.Payable && m.Category == "weather" })
		check("hostname="+host, func(m directory.Method) bool { return m.Hostname == host })
		check("hostname="+strings.ToUpper(host)+".", func(m directory.Method) bool { return m.Hostname == host })
		check("category=+Blockchain+", func(m directory.Method) bool { return m.Category == "blockchain" })
	})

	t.Run("offset and limit page the list; total counts all matches", func(t *testing.T) {
		var all, page listBody
		e.get(services).json(t, &all)
		e.get(services+"?offset=3&limit=4").json(t, &page)
		if page.Count != 4 || page.Total != len(all.Items) || page.Offset != 3 {
			t.Fatalf("page header count %d total %d offset %d", page.Count, page.Total, page.Offset)
		}
		for i, m := range page.Items {
			if m.Slug != all.Items[3+i].Slug {
				t.Fatalf("page item %d is %s, want %s", i, m.Slug, all.Items[3+i].Slug)
			}
		}
		var past listBody
		e.get(services+"?offset=100000").json(t, &past)
		if past.Count != 0 || len(past.Items) != 0 || past.Total != len(all.Items) {
			t.Fatalf("past the end: %+v", past)
		}
	})

	t.Run("category facets count every other filter, sorted by count then value", func(t *testing.T) {
		var all, l listBody
		e.get(services).json(t, &all)
		e.get(services+"?category=blockchain&kind=x402").json(t, &l)
		want := map[string]int{}
		for _, m := range all.Items {
			if m.Kind == "x402" {
				want[m.Category]++
			}
		}
		if len(l.Facets.Category) != len(want) {
			t.Fatalf("facets %v, want %v", l.Facets.Category, want)
		}
		for i, f := range l.Facets.Category {
			if want[f.Value] != f.Count {
				t.Errorf("facet %s = %d, want %d", f.Value, f.Count, want[f.Value])
			}
			if i > 0 {
				p := l.Facets.Category[i-1]
				if p.Count < f.Count || (p.Count == f.Count && p.Value > f.Value) {
					t.Errorf("facets out of order: %v before %v", p, f)
				}
			}
		}
		if len(all.Facets.Category) < 12 || len(all.Facets.Verdict) != 4 || len(all.Facets.Kind) != 4 {
			t.Errorf("unfiltered facets %+v", all.Facets)
		}
	})

	t.Run("nothing is payable while no payer is configured", func(t *testing.T) {
		var l listBody
		e.get(services+"?payable=true").json(t, &l)
		if l.Total != 0 || len(l.Items) != 0 {
			t.Fatalf("%d payable methods without a payer", l.Total)
		}
		var all listBody
		e.get(services).json(t, &all)
		if len(all.Facets.Payable) != 1 || all.Facets.Payable[0].Value != "false" || all.Facets.Payable[0].Count != len(all.Items) {
			t.Fatalf("payable facet %+v", all.Facets.Payable)
		}
	})

	t.Run("guidance only on the slug route", func(t *testing.T) {
		var raw map[string]json.RawMessage
		e.get(services+"/"+slug).json(t, &raw)
		if len(raw["guidance"]) < 10 {
			t.Fatalf("slug route guidance %s", raw["guidance"])
		}
		var list struct{ Items []map[string]json.RawMessage }
		e.get(services).json(t, &list)
		for _, it := range list.Items {
			if _, ok := it["guidance"]; ok {
				t.Fatal("a list item carries guidance")
			}
		}
	})

	t.Run("stats are null under five settled payments", func(t *testing.T) {
		var l listBody
		e.get(services).json(t, &l)
		withStats, without := 0, 0
		for _, m := range l.Items {
			if m.Stats == nil {
				without++
				continue
			}
			withStats++
			if m.Stats.SettledPayments < 5 {
				t.Errorf("%s: stats shown for %d payments", m.Slug, m.Stats.SettledPayments)
			}
		}
		if withStats == 0 || without == 0 {
			t.Errorf("demo should have items with and without stats: %d, %d", withStats, without)
		}
		var pays int
		e.store.Pool().QueryRow(context.Background(), `SELECT count(DISTINCT hostname) FROM settled_payments
			GROUP BY hostname HAVING count(*) BETWEEN 1 AND 4 LIMIT 1`).Scan(&pays)
		if pays == 0 {
			t.Error("demo should have a hostname with 1 to 4 settled payments")
		}
	})

	t.Run("hostnames are normalised on the merchant route", func(t *testing.T) {
		want := e.get(base + "/api/public/v1/merchants/" + host)
		for _, h := range []string{strings.ToUpper(host), host + "."} {
			r := e.get(base + "/api/public/v1/merchants/" + h)
			if r.StatusCode != 200 || !bytes.Equal(r.body, want.body) {
				t.Errorf("%s: %d", h, r.StatusCode)
			}
		}
		var idn string
		for _, h := range snap.Hostnames() {
			if strings.HasPrefix(h, "xn--") || strings.Contains(h, ".xn--") {
				idn = h
			}
		}
		if idn == "" {
			t.Fatal("the demo has no internationalised hostname")
		}
		unicode, err := idna.ToUnicode(idn)
		if err != nil {
			t.Fatal(err)
		}
		r := e.get(base + "/api/public/v1/merchants/" + url.PathEscape(unicode))
		if r.StatusCode != 200 {
			t.Errorf("%s (%s): %d %s", unicode, idn, r.StatusCode, r.body)
		}
		e.get(base+"/api/public/v1/merchants/bad_host!").problem(t, 400, "invalid_parameter")
		e.get(base+"/api/public/v1/merchants/unknown.example").problem(t, 404, "not_found")
	})

	t.Run("unknown slugs, disabled methods and paths are 404", func(t *testing.T) {
		e.get(services+"/no-such-method").problem(t, 404, "not_found")
		e.get(base+"/api/public/v2/services").problem(t, 404, "not_found")
		var disabled string
		e.store.Pool().QueryRow(context.Background(), `SELECT slug FROM provider_methods WHERE NOT enabled LIMIT 1`).Scan(&disabled)
		if disabled == "" {
			t.Fatal("the demo has no disabled method")
		}
		e.get(services+"/"+disabled).problem(t, 404, "not_found")
		var l listBody
		e.get(services).json(t, &l)
		for _, m := range l.Items {
			if m.Slug == disabled {
				t.Fatal("a disabled method is listed")
			}
		}
	})

	t.Run("search answers 503 until it is built, and the list still works", func(t *testing.T) {
		r := e.get(services + "?q=ethereum+block+height")
		r.problem(t, 503, "search_unavailable")
		if r.Header.Get("Retry-After") == "" {
			t.Error("no Retry-After")
		}
		if e.get(services).StatusCode != 200 {
			t.Error("the list stopped working")
		}
	})
}

// TestMerchantRecordsAnswerFromTheirFiles serves a snapshot whose merchants' records
// are left in their published files (resource.NewBodyStore), as a server's are: the
// merchant route answers the bytes in memory's, on the router's path and before it;
// once a record's files are gone (a damaged site), it answers a logged internal
// error as problem+json, not cached, and nothing of the record.
func TestMerchantRecordsAnswerFromTheirFiles(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	snap := e.snaps.Current()
	host := snap.Methods()[0].Hostname
	// The router's path: an escaped path the handler before it leaves to the router.
	routed := base + "/api/public/v1/merchants/" + "%" + strings.ToUpper(hex.EncodeToString([]byte{host[0]})) + host[1:]
	direct := base + "/api/public/v1/merchants/" + host
	want := e.get(direct, "Accept-Encoding", "br")
	if want.StatusCode != 200 || want.Header.Get("Content-Encoding") != "br" {
		t.Fatalf("%d %s", want.StatusCode, want.body)
	}
	dir := t.TempDir()
	st := resource.NewBodyStore(dir, resource.NewCache(16))
	stored, err := snap.WithStored(
		func(_ string, res *resource.Resource) *resource.Resource { return res },
		func(h string, res *resource.Resource) *resource.Resource {
			for i, b := range [...][]byte{res.Body, res.Gzip(), res.Brotli()} {
				if err := os.WriteFile(filepath.Join(dir, h+[...]string{"", ".gz", ".br"}[i]), b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			return res.Stored(st, h)
		})
	if err != nil {
		t.Fatal(err)
	}
	if res, _ := stored.Merchant(host); res.Body != nil {
		t.Fatal("the stored merchant holds its body")
	}
	e.snaps.Set(stored)
	for _, target := range []string{direct, routed} {
		r := e.get(target, "Accept-Encoding", "br")
		if r.StatusCode != 200 || !bytes.Equal(r.body, want.body) || r.Header.Get("Etag") != want.Header.Get("Etag") {
			t.Errorf("%s: %d, %d bytes, ETag %s", target, r.StatusCode, len(r.body), r.Header.Get("Etag"))
		}
	}
	for _, x := range []string{"", ".gz", ".br"} {
		if err := os.Remove(filepath.Join(dir, host+x)); err != nil {
			t.Fatal(err)
		}
	}
	// The body was not asked for before, so the cache does not hold it: only the
	// files had it.
	for _, target := range []string{direct, routed} {
		r := e.get(target)
		r.problem(t, 500, "internal")
		if cc := r.Header.Get("Cache-Control"); cc != "no-store" || r.Header.Get("Etag") != "" || r.Header.Get("Content-Encoding") != "" {
			t.Errorf("%s: Cache-Control %q, ETag %q, Content-Encoding %q", target, cc, r.Header.Get("Etag"), r.Header.Get("Content-Encoding"))
		}
	}
}
