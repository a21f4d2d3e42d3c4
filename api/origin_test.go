package api_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waystation/waystation/api"
	"github.com/waystation/waystation/api/openapitest"
	"github.com/waystation/waystation/internal/catalog"
	"github.com/waystation/waystation/internal/origin"
	"github.com/waystation/waystation/internal/outbound"
	"github.com/waystation/waystation/internal/seller"
	"github.com/waystation/waystation/internal/trust"
)

// sellerKey is a throwaway payee key for the local seller's signed manifest.
const sellerKey = "4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318"

// originEnv serves h as http://localhost:port and an API whose origins are fetched
// and probed on loopback.
func originEnv(t *testing.T, h http.Handler, opts ...func(*origin.Config)) (*authEnv, string) {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	client := outbound.New(outbound.Config{AllowLoopback: true, LookupHost: func(context.Context, string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}})
	prober := trust.NewProber(trust.ProberConfig{Client: client}, nil)
	e := newAuthEnv(t, func(a *api.Authenticated) {
		var cfg origin.Config
		for _, o := range opts {
			o(&cfg)
		}
		a.Origins = origin.NewService(a.Requests.Store.(origin.Store), client, prober, cfg)
	})
	return e, "http://localhost:" + port
}

// A user submits the local seller's origin: both its routes are listed, owner-
// verified, and at the next snapshot the directory lists them with source origin and
// the owner fact, in place of a Bazaar copy of one of them; every answer is the one
// the OpenAPI document describes.
func TestSubmittingAnOriginListsItsItemsOwnerVerified(t *testing.T) {
	t.Parallel()
	doc := openapitest.Load(t, "openapi.json")
	e, o := originEnv(t, seller.New(seller.Config{PayeeKey: sellerKey}))
	ctx := context.Background()
	// The mirror lists one of the seller's routes, and another that the manifest lacks.
	mirrored := catalog.Catalog{Providers: []catalog.Provider{{Name: "Mirror", Methods: []catalog.Method{
		{Slug: "mirrored-report", Name: "Report", Category: "data", Kind: "x402", Source: catalog.SourceBazaar,
			SourceKey: o + "/v2/report", Endpoint: catalog.Endpoint{Method: "GET", URL: o + "/v2/report"}},
		{Slug: "mirrored-stale", Name: "Stale", Category: "data", Kind: "x402", Source: catalog.SourceBazaar,
			SourceKey: o + "/old", Endpoint: catalog.Endpoint{Method: "GET", URL: o + "/old"}},
	}}}}
	if _, err := e.store.SyncCatalog(ctx, mirrored, catalog.SourceBazaar, time.Now()); err != nil {
		t.Fatal(err)
	}
	uid, userKey := e.user("ada")
	_, agentKey := e.agent(uid, "scout")
	body := `{"origin":"` + o + `"}`

	e.call("POST", "/origins", agentKey, body).want(t, 403, "wrong_key_scope")
	r := e.call("POST", "/origins", userKey, body).want(t, 200)
	doc.CheckResponse(t, e.request("POST", "/origins", userKey, body), r.Response, r.body)
	var sub origin.Submission
	r.into(t, &sub)
	if sub.Listed != 2 || sub.Refused != 0 || sub.Owner == "" {
		t.Fatalf("submission %+v", sub)
	}
	slugs := map[string]string{}
	for _, it := range sub.Items {
		if !it.OwnerVerified {
			t.Errorf("not owner-verified: %+v", it)
		}
		slugs[it.URL] = it.Slug
	}
	if slugs[o+"/v2/report"] != "mirrored-report" {
		t.Fatalf("the origin's item did not take the mirrored copy's place: %v", slugs)
	}

	if err := e.snaps.Refresh(ctx, e.store, nil); err != nil {
		t.Fatal(err)
	}
	path := "/api/public/v1/services?hostname=localhost"
	r = e.call("GET", path, "", "").want(t, 200)
	doc.CheckResponse(t, e.request("GET", path, "", ""), r.Response, r.body)
	var list struct {
		Items []struct {
			Slug          string
			SourceListing struct{ Source string } `json:"source_listing"`
			Trust         struct {
				Owner *struct {
					Verified bool
					PayTo    string `json:"pay_to"`
					Points   int
				}
			}
		}
	}
	r.into(t, &list)
	if len(list.Items) != 2 {
		t.Fatalf("listed %s", r.body)
	}
	for _, it := range list.Items {
		// The submission's own probe got a valid offer: the scorer counted the proof.
		if it.SourceListing.Source != "origin" || it.Trust.Owner == nil || !it.Trust.Owner.Verified || it.Trust.Owner.PayTo != sub.Owner ||
			it.Trust.Owner.Points != trust.OwnerPoints {
			t.Errorf("item %s: %+v", it.Slug, it)
		}
	}
	r = e.call("GET", "/api/public/v1/merchants/localhost", "", "").want(t, 200)
	doc.CheckResponse(t, e.request("GET", "/api/public/v1/merchants/localhost", "", ""), r.Response, r.body)
	var mr struct {
		Origin *struct{ Origin, Status string }
	}
	r.into(t, &mr)
	if mr.Origin == nil || mr.Origin.Origin != o || mr.Origin.Status != "listed" {
		t.Fatalf("merchant record %s", r.body)
	}

	q := "/origins?origin=" + url.QueryEscape(o)
	r = e.call("GET", q, userKey, "").want(t, 200)
	doc.CheckResponse(t, e.request("GET", q, userKey, ""), r.Response, r.body)
	r = e.call("GET", "/origins?origin=nope", userKey, "").want(t, 400, "invalid_parameter")
	doc.CheckResponse(t, e.request("GET", "/origins?origin=nope", userKey, ""), r.Response, r.body)
	e.call("GET", "/origins", userKey, "").want(t, 400, "invalid_parameter")
	r = e.call("GET", "/origins?origin=https://nowhere.example", userKey, "").want(t, 404, "not_found")
	doc.CheckResponse(t, e.request("GET", "/origins?origin=https://nowhere.example", userKey, ""), r.Response, r.body)
}

// A manifest refused as a whole is a 422 manifest_refused naming the reason, and
// lists nothing; a body that is no origin is validation_failed.
func TestARefusedManifestIsAProblemAndListsNothing(t *testing.T) {
	t.Parallel()
	doc := openapitest.Load(t, "openapi.json")
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"x402Version": 1, "items": []any{}})
	})
	e, o := originEnv(t, h)
	_, userKey := e.user("ada")
	body := `{"origin":"` + o + `"}`
	r := e.call("POST", "/origins", userKey, body).want(t, 422, "manifest_refused")
	doc.CheckResponse(t, e.request("POST", "/origins", userKey, body), r.Response, r.body)
	if !strings.Contains(string(r.body), `"detail":"bad_version: `) {
		t.Errorf("the reason is not named: %s", r.body)
	}
	for _, bad := range []string{`{"origin":"ftp://x.example"}`, `{"origin":""}`, `{"origin":7}`, `{}`} {
		r := e.call("POST", "/origins", userKey, bad).want(t, 422, "validation_failed")
		doc.CheckResponse(t, e.request("POST", "/origins", userKey, bad), r.Response, r.body)
	}
	if err := e.snaps.Refresh(context.Background(), e.store, nil); err != nil {
		t.Fatal(err)
	}
	e.call("GET", "/api/public/v1/merchants/localhost", "", "").want(t, 404, "not_found")
}

// fewTakes lets n takes through, then refuses each with wait; it keeps the callers
// it was asked about.
type fewTakes struct {
	mu      sync.Mutex
	n       int
	wait    time.Duration
	callers []string
}

func (f *fewTakes) Take(_ context.Context, caller string) (time.Duration, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.callers = append(f.callers, caller)
	if f.n == 0 {
		return f.wait, false
	}
	f.n--
	return 0, true
}

// A user past its rate of submissions gets 429 submission_rate_limited with the
// Retry-After the limiter says (rounded up to whole seconds), as the OpenAPI document
// describes it, before anything is fetched, through the route and the MCP tool
// alike; a body that is no origin costs no submission.
func TestSubmissionsPastTheUsersRateAreRefusedBeforeAnyFetch(t *testing.T) {
	t.Parallel()
	doc := openapitest.Load(t, "openapi.json")
	var fetches atomic.Int32
	sell := seller.New(seller.Config{PayeeKey: sellerKey})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == origin.WellKnownPath {
			fetches.Add(1)
		}
		sell.ServeHTTP(w, r)
	})
	lim := &fewTakes{n: 1, wait: 150*time.Second + 500*time.Millisecond}
	e, o := originEnv(t, h, func(c *origin.Config) { c.Limiter = lim })
	uid, userKey := e.user("ada")
	body := `{"origin":"` + o + `"}`

	e.call("POST", "/origins", userKey, `{"origin":"ftp://x.example"}`).want(t, 422, "validation_failed")
	e.call("POST", "/origins", userKey, body).want(t, 200)
	before := fetches.Load()
	r := e.call("POST", "/origins", userKey, body).want(t, 429, "submission_rate_limited")
	doc.CheckResponse(t, e.request("POST", "/origins", userKey, body), r.Response, r.body)
	if r.Header.Get("Retry-After") != "151" || r.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("Retry-After %q, Cache-Control %q", r.Header.Get("Retry-After"), r.Header.Get("Cache-Control"))
	}
	if _, failure := e.toolCall(t, userKey, "submit_origin", `{"origin":"`+o+`"}`); !strings.HasPrefix(failure, "submission_rate_limited (429)") {
		t.Errorf("the tool past the rate: %q", failure)
	}
	if fetches.Load() != before {
		t.Errorf("a refused submission fetched the manifest")
	}
	want := []string{"origin:user:" + uid, "origin:user:" + uid, "origin:user:" + uid}
	if lim.mu.Lock(); !slices.Equal(lim.callers, want) {
		t.Errorf("takes by %v, want %v", lim.callers, want)
	}
	lim.mu.Unlock()
}
