package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/waystation/waystation/api"
	"github.com/waystation/waystation/api/openapitest"
	"github.com/waystation/waystation/generator"
	"github.com/waystation/waystation/internal/postgres/pgtest"
)

// TestLiveResponsesMatchTheOpenAPIDocument sends every kind of directory request
// through the real router and validates status, headers and body against the
// document the service itself serves.
func TestLiveResponsesMatchTheOpenAPIDocument(t *testing.T) {
	t.Parallel()
	doc := openapitest.Load(t, "openapi.json")
	e := newEnv(t)
	snap := e.snaps.Current()
	slug, host := snap.Methods()[0].Slug, snap.Methods()[0].Hostname
	served := e.get(base + "/openapi.json")
	if served.StatusCode != 200 || !strings.Contains(string(served.body), `"openapi": "3.1.0"`) && !strings.Contains(string(served.body), `"openapi":"3.1.0"`) {
		t.Fatalf("openapi.json: %d", served.StatusCode)
	}
	if docs := e.get(base + "/docs/openapi.json"); string(docs.body) != string(served.body) {
		t.Fatal("/docs/openapi.json differs from /openapi.json")
	}
	// The root says where the service is described (RFC 8631).
	if link := e.get(base + "/").Header.Get("Link"); !strings.Contains(link, "<"+base+`/openapi.json>; rel="service-desc"`) ||
		!strings.Contains(link, `</docs/api>; rel="service-doc"`) {
		t.Errorf("the root's Link: %q", link)
	}

	targets := []string{
		base + "/",
		base + "/?x=1",
		base + "/health",
		base + "/openapi.json",
		services,
		services + "?category=blockchain,finance&verdict=proceed,caution&payable=true&limit=5&offset=1",
		services + "?kind=checkout",
		services + "?hostname=" + host,
		services + "?q=ethereum",
		services + "?verified=true",
		services + "?nope=1",
		services + "?limit=0",
		services + "?q=" + strings.Repeat("x", 1100),
		services + "/" + slug,
		services + "/missing",
		base + "/api/public/v1/merchants/" + host,
		base + "/api/public/v1/merchants/unknown.example",
		base + "/api/public/v1/merchants/bad_host!",
		base + "/no/such/route",
	}
	for _, m := range snap.Methods() {
		targets = append(targets, services+"/"+m.Slug)
	}
	for _, h := range snap.Hostnames() {
		targets = append(targets, base+"/api/public/v1/merchants/"+h)
	}
	check := func(method, target string, header ...string) {
		req := httptest.NewRequest(method, target, nil)
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		r := e.do(method, target, header...)
		doc.CheckResponse(t, req, r.Response, r.body)
	}
	for _, target := range targets {
		check(http.MethodGet, target)
	}
	check(http.MethodGet, services, "Accept-Encoding", "gzip")
	check(http.MethodGet, services, "Accept-Encoding", "gzip, deflate, br")
	check(http.MethodGet, services+"/"+slug, "Accept-Encoding", "br")
	check(http.MethodOptions, services)
	check(http.MethodPost, services)
	check(http.MethodHead, services+"/"+slug)
	check(http.MethodHead, base+"/")
	check(http.MethodOptions, base+"/")

	var d struct {
		APIVersion, OpenAPI string
		Scopes              []string
	}
	for _, root := range []string{base + "/", base} {
		r := e.get(root)
		r.json(t, &d)
		if r.StatusCode != 200 || d.APIVersion != "1.1.0" || d.OpenAPI != base+"/openapi.json" || len(d.Scopes) != 2 {
			t.Errorf("%s: %d %+v", root, r.StatusCode, d)
		}
	}
}

// TestImportedListingsMatchTheOpenAPIDocument validates the answers of a catalog
// imported from the real Bazaar snapshot, whose items carry what the demo's do not
// (the listing's own figures, guidance made from a listing).
func TestImportedListingsMatchTheOpenAPIDocument(t *testing.T) {
	t.Parallel()
	doc := openapitest.Load(t, "openapi.json")
	store, _ := pgtest.LoadRealCatalog(t)
	snaps := generator.NewHolder()
	if err := snaps.Refresh(context.Background(), store, nil); err != nil {
		t.Fatal(err)
	}
	srv := api.NewServer(api.Config{}, slog.New(slog.DiscardHandler), snaps, store)
	snap := snaps.Current()
	targets := []string{services, services + "?category=finance&limit=3"}
	for i, m := range snap.Methods() {
		if i%20 == 0 {
			targets = append(targets, services+"/"+m.Slug, base+"/api/public/v1/merchants/"+m.Hostname)
		}
	}
	listed := 0
	for _, target := range targets {
		req := httptest.NewRequest(http.MethodGet, target, nil)
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, req)
		res := rec.Result()
		doc.CheckResponse(t, req, res, rec.Body.Bytes())
		if strings.Contains(rec.Body.String(), `"source_listing":{`) {
			listed++
		}
	}
	if listed == 0 {
		t.Error("no imported item carried its listing's figures")
	}
}

// The delivery a webhook receives is described twice: as the document's webhook, and
// as the callback of POST /webhooks, which code generators walk from the paths (so
// that WebhookEvent is generated without flags of theirs); both say the same.
func TestTheWebhookCallbackIsTheWebhook(t *testing.T) {
	t.Parallel()
	var d struct {
		Webhooks map[string]map[string]map[string]json.RawMessage `json:"webhooks"`
		Paths    map[string]map[string]json.RawMessage            `json:"paths"`
	}
	if err := json.Unmarshal(api.Document(), &d); err != nil {
		t.Fatal(err)
	}
	var register struct {
		Callbacks map[string]map[string]map[string]map[string]json.RawMessage `json:"callbacks"`
	}
	if err := json.Unmarshal(d.Paths["/webhooks"]["post"], &register); err != nil {
		t.Fatal(err)
	}
	hook := d.Webhooks["event"]["post"]
	callback := register.Callbacks["event"]["{$request.body#/url}"]["post"]
	compact := func(raw json.RawMessage) string {
		var b bytes.Buffer
		json.Compact(&b, raw)
		return b.String()
	}
	for _, k := range []string{"parameters", "requestBody", "responses", "security"} {
		if compact(hook[k]) == "" || compact(hook[k]) != compact(callback[k]) {
			t.Errorf("%s: the webhook's %s, the callback's %s", k, compact(hook[k]), compact(callback[k]))
		}
	}
	if !strings.Contains(string(callback["requestBody"]), "#/components/schemas/WebhookEvent") {
		t.Errorf("the callback's body: %s", callback["requestBody"])
	}
}
