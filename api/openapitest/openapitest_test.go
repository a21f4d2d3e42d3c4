package openapitest

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

const docPath = "../openapi.json"

// ---------------------------------------------------------------- sample bodies
// Built by hand from the examples of CONTRACT.md.

const listingItem = `{
  "slug": "onesource-block-number",
  "name": "Latest block number",
  "provider": "OneSource",
  "hostname": "api.onesource.io",
  "description": "Latest Ethereum block height.",
  "category": "blockchain",
  "kind": "x402",
  "payable": true,
  "endpoint": {"method": "GET", "url": "https://api.onesource.io/api/chain/block-number"},
  "trust": {
    "verdict": "proceed",
    "score": 91,
    "advisory": true,
    "probe": {
      "outcome": "payment_required",
      "probed_at": "2026-11-21T10:00:00Z",
      "age_seconds": 3600,
      "network": "eip155:8453",
      "asset": "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
      "asset_symbol": "USDC",
      "price": {"amount": "1000", "decimals": 6, "value": "0.001"}
    },
    "override": null
  },
  "stats": {"settled_payments": 42, "delivered": 41, "delivery_rate": 0.9762}
}`

// neverProbed is a listing item of a method never probed: nulls everywhere allowed.
const neverProbed = `{
  "slug": "acme-weather-now",
  "name": "Current weather",
  "provider": "Acme",
  "hostname": "xn--mnchen-3ya.example",
  "description": "",
  "category": "weather",
  "kind": "checkout",
  "payable": false,
  "endpoint": {"method": "POST", "url": "https://xn--mnchen-3ya.example/v1/now"},
  "trust": {"verdict": "unknown", "score": null, "advisory": true, "probe": null,
            "override": {"verdict": "avoid", "reason": "Reported by operator.", "set_at": "2026-11-20T08:00:00Z", "expires_at": null}},
  "stats": null
}`

const guidance = `{
  "summary": "GET the latest block number; pay the 402 offer through the service.",
  "request": {"method": "GET", "url": "https://api.onesource.io/api/chain/block-number",
              "query": {}, "headers": {"Accept": "application/json"}, "body_schema": null, "example": null},
  "response": {"mime_type": "application/json", "schema": {"type": "object"}},
  "payment": {"via": "approval request"},
  "notes": ["Prices are per call."]
}`

const snapshotRef = `{"id": "s-2026-11-21T10", "generated_at": "2026-11-21T10:00:00Z"}`

var (
	listBody = `{"object": "list", "items": [` + listingItem + `, ` + neverProbed + `], "count": 2, "total": 134, "offset": 0,
  "facets": {"category": [{"value": "blockchain", "count": 12}, {"value": "weather", "count": 3}],
             "verdict": [{"value": "proceed", "count": 80}], "kind": [{"value": "x402", "count": 100}],
             "payable": [{"value": "true", "count": 90}, {"value": "false", "count": 44}]},
  "snapshot": ` + snapshotRef + `}`
	listMinimalBody = `{"object": "list", "items": [], "count": 0, "total": 0, "offset": 40,
  "facets": {"category": []}, "snapshot": ` + snapshotRef + `}`
	searchBody = `{"object": "search", "query": "ethereum block height", "match": "semantic",
  "model": "builtin:lexhash-v1", "degraded": false,
  "items": [` + withMember(withMember(listingItem, "similarity", 0.8123), "rank_score", 0.8123) + `], "count": 1}`
	searchNoneBody = `{"object": "search", "query": "knitting patterns", "match": "none",
  "model": "builtin:lexhash-v1", "degraded": true, "items": [], "count": 0}`
	nearestItem       = withMember(withMember(listingItem, "similarity", 0.41), "not_a_match", map[string]any{"reason": "below_confidence", "confidence": 0.18, "least": 0.35, "margin": 0.1})
	searchNearestBody = `{"object": "search", "query": "knitting patterns", "match": "none",
  "model": "builtin:hybrid-v1", "degraded": false, "items": [], "count": 0,
  "band": {"confidence": 0.18, "least": 0.35, "margin": 0.1, "semantic": 0.52, "lexical": 0.1, "gap": 0.02},
  "nearest": [` + nearestItem + `]}`
	searchExactBody = `{"object": "search", "query": "OneSource", "match": "provider",
  "model": null, "degraded": false, "items": [` + withMember(withMember(listingItem, "similarity", nil), "rank_score", 1) + `], "count": 1}`
	searchPhrasedBody = `{"object": "search", "query": "usdt held by a wallet", "match": "semantic",
  "model": "builtin:hybrid-v1", "degraded": false,
  "band": {"confidence": 0.71, "least": 0.55, "margin": 0.15, "semantic": 0.5, "lexical": 0.3, "gap": 0.02, "phrasings": 4, "agreed": 3, "needed": 2},
  "items": [` + withMember(withMember(withMember(listingItem, "similarity", 0.62), "rank_score", 1.1667), "similar", map[string]any{"count": 2, "slugs": []string{"onesource-erc20-balance-b", "onesource-erc20-balance-c"}}) + `], "count": 1}`
	detailBody   = withMember(listingItem, "guidance", json.RawMessage(guidance))
	merchantBody = `{
  "hostname": "api.onesource.io",
  "providers": ["OneSource"],
  "trust": ` + member(listingItem, "trust") + `,
  "stats": null,
  "methods": [{"slug": "onesource-block-number", "name": "Latest block number", "category": "blockchain", "payable": true}],
  "probes": [
    {"outcome": "payment_required", "probed_at": "2026-11-21T10:00:00Z", "http_status": 402, "latency_ms": 120,
     "network": "eip155:8453", "asset": "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
     "price": {"amount": "1000", "decimals": 6, "value": "0.001"}},
    {"outcome": "timeout", "probed_at": "2026-11-20T10:00:00Z", "http_status": null, "latency_ms": null,
     "network": null, "asset": null, "price": null},
    {"outcome": "some_future_outcome", "probed_at": "2026-11-19T10:00:00Z", "http_status": 200, "latency_ms": 80,
     "network": null, "asset": null, "price": {"amount": "5", "decimals": null, "value": null}}
  ]
}`
	healthBody = `{"status": "degraded", "version": "1.1.0",
  "snapshot": {"id": "s-2026-11-21T10", "generated_at": "2026-11-21T10:00:00Z", "age_seconds": 120, "methods": 134},
  "database": "ok", "search": "unavailable"}`
)

func problem(status int, code, param string) string {
	p := map[string]any{
		"type": "/problems/" + strings.ReplaceAll(code, "_", "-"), "title": "Some title",
		"status": status, "code": code, "detail": "Some detail.", "instance": "/functions/v1/api/x",
	}
	if param != "" {
		p["parameter"] = param
	}
	b, _ := json.Marshal(p)
	return string(b)
}

// member returns the JSON of one top-level member of obj.
func member(obj, name string) string {
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(obj), &m); err != nil {
		panic(err)
	}
	return string(m[name])
}

// elem returns the JSON of element i of a JSON array.
func elem(arr string, i int) string {
	var a []json.RawMessage
	if err := json.Unmarshal([]byte(arr), &a); err != nil {
		panic(err)
	}
	return string(a[i])
}

// withMember returns obj with a member set.
func withMember(obj, name string, v any) string {
	return mutate(obj, func(m map[string]any) { m[name] = v })
}

// mutate decodes a JSON object, lets f change it, and encodes it again.
func mutate(body string, f func(m map[string]any)) string {
	var m map[string]any
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		panic(fmt.Sprintf("%v in %s", err, body))
	}
	f(m)
	b, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func obj(m map[string]any, path ...string) map[string]any {
	for _, p := range path {
		switch v := m[p].(type) {
		case map[string]any:
			m = v
		case []any:
			m = v[0].(map[string]any)
		default:
			panic("no object at " + p)
		}
	}
	return m
}

// ---------------------------------------------------------------- sample responses

type sample struct {
	name   string
	method string
	target string // below the base path
	status int
	header http.Header
	body   string
}

func hdr(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}

const (
	jsonCT    = "application/json; charset=utf-8"
	problemCT = "application/problem+json"
)

// ok200 are the headers of a directory 200.
func ok200() http.Header {
	return hdr("Content-Type", jsonCT, "ETag", `"3f9a1c0e5b7d2a48"`, "Cache-Control", "public, max-age=300",
		"Vary", "Accept-Encoding", "Access-Control-Allow-Origin", "*",
		"Access-Control-Expose-Headers", "ETag, Retry-After, RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset")
}

func cacheableProblem() http.Header {
	return hdr("Content-Type", problemCT, "Cache-Control", "public, max-age=300", "Access-Control-Allow-Origin", "*")
}

func noStoreProblem() http.Header {
	return hdr("Content-Type", problemCT, "Cache-Control", "no-store", "Access-Control-Allow-Origin", "*",
		"Retry-After", "30")
}

func notModified() http.Header {
	return hdr("ETag", `"3f9a1c0e5b7d2a48"`, "Cache-Control", "public, max-age=300", "Vary", "Accept-Encoding",
		"Access-Control-Allow-Origin", "*")
}

func preflight() http.Header {
	return hdr("Access-Control-Allow-Origin", "*", "Access-Control-Allow-Methods", "GET, HEAD, OPTIONS",
		"Access-Control-Allow-Headers", "Accept, Accept-Encoding, Authorization, Content-Type, If-None-Match",
		"Access-Control-Max-Age", "86400", "Allow", "GET, HEAD, OPTIONS", "Cache-Control", "public, max-age=300")
}

func with(h http.Header, kv ...string) http.Header {
	h = h.Clone()
	for i := 0; i < len(kv); i += 2 {
		if kv[i+1] == "" {
			h.Del(kv[i])
		} else {
			h.Set(kv[i], kv[i+1])
		}
	}
	return h
}

func goodSamples(t *testing.T) []sample {
	openapi, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	return []sample{
		{"health", "GET", "/health", 200, hdr("Content-Type", jsonCT, "Cache-Control", "no-store", "Access-Control-Allow-Origin", "*"), healthBody},
		{"health head", "HEAD", "/health", 200, hdr("Content-Type", jsonCT, "Access-Control-Allow-Origin", "*"), ""},
		{"health preflight", "OPTIONS", "/health", 204, preflight(), ""},
		{"openapi", "GET", "/openapi.json", 200, ok200(), string(openapi)},
		{"openapi docs", "GET", "/docs/openapi.json", 200, ok200(), string(openapi)},
		{"openapi 304", "GET", "/openapi.json", 304, notModified(), ""},
		{"openapi unknown parameter", "GET", "/openapi.json?x=1", 400, cacheableProblem(), problem(400, "unknown_parameter", "x")},
		{"list", "GET", "/api/public/v1/services", 200, ok200(), listBody},
		{"list filtered", "GET", "/api/public/v1/services?category=weather&offset=40", 200, ok200(), listMinimalBody},
		{"list head", "HEAD", "/api/public/v1/services", 200, ok200(), ""},
		{"list 304", "GET", "/api/public/v1/services", 304, notModified(), ""},
		{"list preflight", "OPTIONS", "/api/public/v1/services", 204, preflight(), ""},
		{"search", "GET", "/api/public/v1/services?q=ethereum+block+height", 200,
			with(ok200(), "RateLimit-Limit", "60", "RateLimit-Remaining", "59", "RateLimit-Reset", "60"), searchBody},
		{"search none", "GET", "/api/public/v1/services?q=knitting+patterns", 200, ok200(), searchNoneBody},
		{"search exact", "GET", "/api/public/v1/services?q=OneSource", 200, ok200(), searchExactBody},
		{"verified", "GET", "/api/public/v1/services?verified", 400, cacheableProblem(), problem(400, "verified_reserved", "verified")},
		{"query too long", "GET", "/api/public/v1/services?q=" + strings.Repeat("a", 1025), 400, cacheableProblem(), problem(400, "query_too_long", "q")},
		{"invalid parameter", "GET", "/api/public/v1/services?limit=0", 400, cacheableProblem(), problem(400, "invalid_parameter", "limit")},
		{"unknown parameter head", "HEAD", "/api/public/v1/services?x=1", 400, cacheableProblem(), ""},
		{"rate limited", "GET", "/api/public/v1/services?q=x", 429,
			with(noStoreProblem(), "RateLimit-Limit", "60", "RateLimit-Remaining", "0", "RateLimit-Reset", "30"), problem(429, "rate_limited", "")},
		{"allowance exhausted", "GET", "/api/public/v1/services?q=x", 503, noStoreProblem(), problem(503, "search_allowance_exhausted", "")},
		{"search unavailable", "GET", "/api/public/v1/services?q=x", 503, noStoreProblem(), problem(503, "search_unavailable", "")},
		{"slug", "GET", "/api/public/v1/services/onesource-block-number", 200, ok200(), detailBody},
		{"slug head", "HEAD", "/api/public/v1/services/onesource-block-number", 200, ok200(), ""},
		{"slug 304", "GET", "/api/public/v1/services/onesource-block-number", 304, notModified(), ""},
		{"slug preflight", "OPTIONS", "/api/public/v1/services/onesource-block-number", 204, preflight(), ""},
		{"slug not found", "GET", "/api/public/v1/services/nope", 404, cacheableProblem(), problem(404, "not_found", "")},
		{"slug not found head", "HEAD", "/api/public/v1/services/nope", 404, cacheableProblem(), ""},
		{"slug parameter", "GET", "/api/public/v1/services/onesource-block-number?verified=1", 400, cacheableProblem(), problem(400, "verified_reserved", "verified")},
		{"merchant", "GET", "/api/public/v1/merchants/api.onesource.io", 200, ok200(), merchantBody},
		{"merchant idn", "GET", "/api/public/v1/merchants/M%C3%BCnchen.example.", 200, ok200(),
			mutate(merchantBody, func(m map[string]any) { m["hostname"] = "xn--mnchen-3ya.example" })},
		{"merchant preflight", "OPTIONS", "/api/public/v1/merchants/api.onesource.io", 204, preflight(), ""},
		{"merchant invalid", "GET", "/api/public/v1/merchants/not_a_host!", 400, cacheableProblem(), problem(400, "invalid_parameter", "hostname")},
		{"merchant not found", "GET", "/api/public/v1/merchants/unknown.example", 404, cacheableProblem(), problem(404, "not_found", "")},
		{"unknown path", "GET", "/api/public/v1/nothing", 404, cacheableProblem(), problem(404, "not_found", "")},
		{"unknown path outside directory", "GET", "/nothing", 404, hdr("Content-Type", problemCT), problem(404, "not_found", "")},
		{"trailing slash", "GET", "/api/public/v1/services/", 404, cacheableProblem(), problem(404, "not_found", "")},
		{"post", "POST", "/api/public/v1/services", 405,
			hdr("Content-Type", problemCT, "Allow", "GET, HEAD, OPTIONS", "Access-Control-Allow-Origin", "*"), problem(405, "method_not_allowed", "")},
		{"delete head-less", "DELETE", "/api/public/v1/merchants/api.onesource.io", 405,
			hdr("Content-Type", problemCT, "Allow", "GET, HEAD, OPTIONS"), problem(405, "method_not_allowed", "")},
		{"root", "GET", "/", 200, ok200(), discoveryBody},
		{"root head", "HEAD", "/", 200, ok200(), ""},
		{"root preflight", "OPTIONS", "/", 204, preflight(), ""},
		{"agent", "GET", "/agent/me", 200, noStoreJSON(), agentMeBody},
		{"agent head", "HEAD", "/agent/me", 200, noStoreJSON(), ""},
		{"agent head without a key", "HEAD", "/agent/me", 401, unauthorized(), ""},
		{"events stream head", "HEAD", "/sessions/" + uuid1 + "/events", 200,
			hdr("Content-Type", "text/event-stream", "Cache-Control", "no-store"), ""},
		{"authenticated route, another method", "PUT", "/agent/me", 405,
			hdr("Content-Type", problemCT, "Allow", "GET, HEAD"), problem(405, "method_not_allowed", "")},
		{"authenticated route, another method, Allow in any order", "DELETE", "/agents", 405,
			hdr("Content-Type", problemCT, "Allow", "POST, GET, HEAD"), problem(405, "method_not_allowed", "")},
	}
}

const discoveryBody = `{"apiVersion": "1.1.0", "openapi": "/functions/v1/api/openapi.json", "scopes": ["agent", "user"]}`

const (
	memoryField = `{"fieldRef": "addr", "label": "Address", "valueType": "address", "secret": false, "hasValue": true}`
	memoryItem  = `{"id": "` + uuid1 + `", "label": "Home", "hosts": [], "askBeforeUse": true, "readOnly": false, "revision": 2, "fields": [` + memoryField + `], "createdAt": "2026-11-20T08:00:00Z", "updatedAt": "2026-11-20T08:00:00Z"}`
)

var agentMeBody = `{"id": "` + uuid1 + `", "name": "scout", "status": "active", "userId": "` + uuid2 + `", "limits": ` + limitsBody + `}`

// noStoreJSON are the headers of an authenticated 200.
func noStoreJSON() http.Header {
	return hdr("Content-Type", jsonCT, "Cache-Control", "no-store")
}

// unauthorized are the headers of a 401.
func unauthorized() http.Header {
	return hdr("Content-Type", problemCT, "Cache-Control", "no-store", "WWW-Authenticate", `Bearer realm="api"`, "X-Request-Id", "ab12cd34-1")
}

func request(s sample) *http.Request {
	return httptest.NewRequest(s.method, "http://waystation.test"+BasePath+s.target, nil)
}

func response(s sample) *http.Response {
	return &http.Response{StatusCode: s.status, Status: fmt.Sprintf("%d %s", s.status, http.StatusText(s.status)),
		Header: s.header, Body: http.NoBody}
}

func check(d *Doc, s sample) []error {
	return d.ResponseErrors(request(s), response(s), []byte(s.body))
}

// ---------------------------------------------------------------- tests

func TestDocument(t *testing.T) {
	d := Load(t, docPath)
	m := d.Model()
	if m.Version != "3.1.0" || m.Info.Title != "Waystation API" || m.Info.Version != "1.1.0" {
		t.Errorf("openapi %q, info %q %q", m.Version, m.Info.Title, m.Info.Version)
	}
	if len(m.Servers) != 1 || m.Servers[0].URL != BasePath {
		t.Errorf("servers: %v", m.Servers)
	}
	// One base URL for a generated client, and every operation saying what it needs:
	// nothing on a public route (those with a CORS preflight), a key on the others.
	for p, item := range m.Paths.PathItems.FromOldest() {
		// The OAuth metadata alone is at the origin's root, where hosts look for it.
		rooted := strings.HasPrefix(p, "/.well-known/oauth-")
		if len(item.Servers) > 0 && (!rooted || len(item.Servers) != 1 || item.Servers[0].URL != "/") {
			t.Errorf("%s: servers of its own", p)
		}
		if rooted && len(item.Servers) == 0 {
			t.Errorf("%s: served at the origin's root, and the document does not say so", p)
		}
		// A host calls the authorization server before it holds any token.
		public := item.Options != nil || strings.HasPrefix(p, "/oauth/")
		for method, op := range item.GetOperations().FromOldest() {
			where := strings.ToUpper(method) + " " + p
			if len(op.Servers) > 0 {
				t.Errorf("%s: servers of its own", where)
			}
			sec, ok := dig(d.raw, "paths", p, method, "security").([]any)
			switch {
			case !ok:
				t.Errorf("%s: no security of its own", where)
			case public && len(sec) != 0:
				t.Errorf("%s: security %v on a public route", where, sec)
			case p == "/mcp" && (len(sec) != 2 || len(sec[0].(map[string]any)) != 0 || dig(sec[1], "bearer") == nil):
				// The MCP server takes a key, or none for the directory's tools alone.
				t.Errorf("%s: security %v, want none or the bearer scheme", where, sec)
			case p == "/llm/v1/messages" && (len(sec) != 2 || dig(sec[0], "bearer") == nil || dig(sec[1], "anthropicKey") == nil):
				// Anthropic's clients send the key as x-api-key.
				t.Errorf("%s: security %v, want the bearer scheme or x-api-key", where, sec)
			case p != "/mcp" && p != "/llm/v1/messages" && !public && (len(sec) != 1 || dig(sec[0], "bearer") == nil):
				t.Errorf("%s: security %v, want the bearer scheme", where, sec)
			}
		}
	}
	for _, p := range []string{"/health", "/openapi.json", "/docs/openapi.json", "/api/public/v1/services",
		"/api/public/v1/services/{slug}", "/api/public/v1/merchants/{hostname}"} {
		item := m.Paths.PathItems.GetOrZero(p)
		if item == nil {
			t.Errorf("path %s missing", p)
			continue
		}
		if item.Get == nil || item.Head == nil || item.Options == nil {
			t.Errorf("%s: want GET, HEAD and OPTIONS", p)
		}
		if item.Options != nil && item.Options.Responses.Codes.GetOrZero("204") == nil {
			t.Errorf("%s: OPTIONS has no 204", p)
		}
		if item.Post != nil || item.Put != nil || item.Patch != nil || item.Delete != nil {
			t.Errorf("%s: the public routes are read-only", p)
		}
	}
	var params []string
	for _, p := range m.Paths.PathItems.GetOrZero("/api/public/v1/services").Get.Parameters {
		if p.In == "query" {
			params = append(params, p.Name)
		}
	}
	if want := []string{"q", "rewrite", "category", "verdict", "kind", "payable", "hostname", "limit", "offset", "verified"}; !slices.Equal(params, want) {
		t.Errorf("services parameters %v, want %v", params, want)
	}
	if s := m.Components.SecuritySchemes.GetOrZero("bearer"); s == nil || s.Type != "http" || s.Scheme != "bearer" {
		t.Errorf("securitySchemes.bearer: %+v", s)
	}
	enum := func(name string) []string {
		var out []string
		for _, n := range m.Components.Schemas.GetOrZero(name).Schema().Enum {
			out = append(out, n.Value)
		}
		return out
	}
	wantCodes := []string{"verified_reserved", "query_too_long", "invalid_parameter", "unknown_parameter", "not_found",
		"method_not_allowed", "rate_limited", "search_allowance_exhausted", "search_unavailable", "database_unavailable",
		"unauthenticated", "invalid_api_key", "key_revoked", "wrong_key_scope", "validation_failed",
		"idempotency_conflict", "idempotency_in_progress", "session_closed", "payload_too_large",
		"invalid_state_transition", "request_expired", "artifact_already_claimed", "quota_exceeded",
		"precondition_failed", "precondition_required", "approval_required",
		"protected_value_detected", "redaction_unavailable", "llm_not_configured", "upstream_error", "unsupported_media_type",
		"payer_not_configured", "spending_limit_exceeded", "agent_paused", "host_not_allowed", "offer_not_payable",
		"offer_names_payer", "permit2_approval_required", "price_above_maximum", "override_required", "origin_not_allowed", "manifest_refused",
		"submission_rate_limited", "payment_not_settled", "already_reported", "report_window_closed"}
	if got := enum("ProblemCode"); !slices.Equal(got, wantCodes) {
		t.Errorf("problem codes %v", got)
	}
	if got := enum("Kind"); !slices.Equal(got, []string{"x402", "checkout", "subscription", "account"}) {
		t.Errorf("kinds %v", got)
	}
	if got := enum("Verdict"); !slices.Equal(got, []string{"proceed", "caution", "avoid", "unknown"}) {
		t.Errorf("verdicts %v", got)
	}
	if got := enum("Category"); len(got) != 16 || !slices.Contains(got, "weather") || !slices.Contains(got, "other") {
		t.Errorf("categories %v", got)
	}
	for _, name := range []string{"ListingItem", "Trust", "Probe", "Price", "Override", "Stats", "Guidance",
		"MethodDetail", "List", "Search", "Merchant", "Health", "Problem"} {
		if m.Components.Schemas.GetOrZero(name) == nil {
			t.Errorf("components.schemas.%s missing", name)
		}
	}
	var listing []string
	for k := range m.Components.Schemas.GetOrZero("ListingItem").Schema().Properties.KeysFromOldest() {
		listing = append(listing, k)
	}
	if want := []string{"slug", "name", "provider", "hostname", "description", "category", "kind", "payable",
		"endpoint", "trust", "stats", "source_listing"}; !slices.Equal(listing, want) {
		t.Errorf("ListingItem properties %v", listing)
	}
}

// TestBrokenDocuments proves the document validation bites: each change makes an
// otherwise valid document invalid.
func TestBrokenDocuments(t *testing.T) {
	data, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	schemas := func(m map[string]any) map[string]any { return obj(m, "components", "schemas") }
	cases := map[string]func(m map[string]any){
		"unchanged":          nil,
		"not 3.1":            func(m map[string]any) { m["openapi"] = "3.0.3" },
		"no info.title":      func(m map[string]any) { delete(obj(m, "info"), "title") },
		"unknown root field": func(m map[string]any) { m["extra"] = true },
		"no paths object":    func(m map[string]any) { m["paths"] = []any{} },
		"bad status key": func(m map[string]any) {
			r := obj(m, "paths", "/health", "get", "responses")
			r["2000"] = r["200"]
		},
		"parameter without in": func(m map[string]any) { delete(obj(m, "components", "parameters", "q"), "in") },
		"bad schema type": func(m map[string]any) {
			obj(schemas(m), "Stats", "properties", "delivered")["type"] = "integr"
		},
		"bad inline schema": func(m map[string]any) {
			obj(m, "components", "headers", "RetryAfter", "schema")["minimum"] = "zero"
		},
		"dangling $ref": func(m map[string]any) {
			obj(schemas(m), "List", "properties", "facets")["$ref"] = "#/components/schemas/Nope"
		},
		"undeclared path parameter": func(m map[string]any) {
			delete(obj(m, "paths", "/api/public/v1/services/{slug}"), "parameters")
		},
		"duplicate operationId": func(m map[string]any) {
			obj(m, "paths", "/health", "get")["operationId"] = "getMerchant"
		},
	}
	for name, f := range cases {
		t.Run(name, func(t *testing.T) {
			var m map[string]any
			if err := json.Unmarshal(data, &m); err != nil {
				t.Fatal(err)
			}
			if f != nil {
				f(m)
			}
			b, _ := json.Marshal(m)
			_, err := Parse(b)
			switch {
			case f == nil && err != nil:
				t.Fatalf("the unchanged document is rejected: %v", err)
			case f != nil && err == nil:
				t.Fatal("the broken document is accepted")
			case err != nil:
				t.Logf("rejected: %.300s", err)
			}
		})
	}
	if _, err := Parse([]byte(`{"openapi": "3.1.0", `)); err == nil {
		t.Error("truncated JSON accepted")
	}

	// Load fails the test on a broken file.
	path := filepath.Join(t.TempDir(), "openapi.json")
	if err := os.WriteFile(path, []byte(`{"openapi": "3.1.0", "info": {"version": "1"}, "paths": {}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	ft := runTB(func(tb testing.TB) { Load(tb, path) })
	if !ft.fatal || len(ft.msgs) == 0 {
		t.Errorf("Load of a broken document did not fail the test: %+v", ft)
	}
}

func TestGoodResponses(t *testing.T) {
	d := Load(t, docPath)
	for _, s := range goodSamples(t) {
		t.Run(s.name, func(t *testing.T) {
			if errs := check(d, s); len(errs) > 0 {
				for _, err := range errs {
					t.Error(err)
				}
			}
			d.CheckResponse(t, request(s), response(s), []byte(s.body))
		})
	}
}

func TestGzipResponse(t *testing.T) {
	d := Load(t, docPath)
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write([]byte(listBody))
	zw.Close()
	s := sample{"gzip", "GET", "/api/public/v1/services", 200, with(ok200(), "Content-Encoding", "gzip"), buf.String()}
	if errs := check(d, s); len(errs) > 0 {
		t.Errorf("gzip list rejected: %v", errs)
	}
	s.body = strings.Replace(listBody, `"count": 2`, `"count": "2"`, 1)
	var bad bytes.Buffer
	zw = gzip.NewWriter(&bad)
	zw.Write([]byte(s.body))
	zw.Close()
	s.body = bad.String()
	if errs := check(d, s); len(errs) == 0 {
		t.Error("gzip list with a wrong type accepted")
	}
}

// TestBadResponses proves the response checks bite: each response breaks the
// contract in one way and must be reported.
func TestBadResponses(t *testing.T) {
	d := Load(t, docPath)
	list := func(f func(m map[string]any)) string { return mutate(listBody, f) }
	item := func(f func(m map[string]any)) string {
		return list(func(m map[string]any) { f(obj(m, "items")) })
	}
	svc := "/api/public/v1/services"
	slug := svc + "/onesource-block-number"
	merchant := "/api/public/v1/merchants/api.onesource.io"
	cases := []sample{
		// Stray fields.
		{"list item with guidance", "GET", svc, 200, ok200(), item(func(m map[string]any) { m["guidance"] = map[string]any{} })},
		{"list item with stray field", "GET", svc, 200, ok200(), item(func(m map[string]any) { m["rank"] = 1 })},
		{"list item with similarity", "GET", svc, 200, ok200(), item(func(m map[string]any) { m["similarity"] = 0.5 })},
		{"stray trust field", "GET", svc, 200, ok200(), item(func(m map[string]any) { obj(m, "trust")["verified"] = true })},
		{"stray probe field", "GET", svc, 200, ok200(), item(func(m map[string]any) { obj(m, "trust", "probe")["raw"] = "x" })},
		{"stray list field", "GET", svc, 200, ok200(), list(func(m map[string]any) { m["next"] = "x" })},
		{"stray facet", "GET", svc, 200, ok200(), list(func(m map[string]any) { obj(m, "facets")["provider"] = []any{} })},
		{"stray merchant probe field", "GET", merchant, 200, ok200(),
			mutate(merchantBody, func(m map[string]any) { obj(m, "probes")["body"] = "x" })},
		{"stray health field", "GET", "/health", 200, hdr("Content-Type", jsonCT, "Access-Control-Allow-Origin", "*"),
			mutate(healthBody, func(m map[string]any) { m["uptime"] = 3 })},
		{"stray problem field", "GET", svc + "?verified", 400, cacheableProblem(),
			mutate(problem(400, "verified_reserved", "verified"), func(m map[string]any) { m["debug"] = "r1" })},
		// Wrong types and values.
		{"score as string", "GET", svc, 200, ok200(), item(func(m map[string]any) { obj(m, "trust")["score"] = "91" })},
		{"score over 100", "GET", svc, 200, ok200(), item(func(m map[string]any) { obj(m, "trust")["score"] = 101 })},
		{"advisory false", "GET", svc, 200, ok200(), item(func(m map[string]any) { obj(m, "trust")["advisory"] = false })},
		{"unknown verdict", "GET", svc, 200, ok200(), item(func(m map[string]any) { obj(m, "trust")["verdict"] = "verified" })},
		{"unknown category", "GET", svc, 200, ok200(), item(func(m map[string]any) { m["category"] = "crypto" })},
		{"unknown kind", "GET", svc, 200, ok200(), item(func(m map[string]any) { m["kind"] = "invoice" })},
		{"payable as string", "GET", svc, 200, ok200(), item(func(m map[string]any) { m["payable"] = "true" })},
		{"bad slug", "GET", svc, 200, ok200(), item(func(m map[string]any) { m["slug"] = "OneSource Block" })},
		{"hostname with port", "GET", svc, 200, ok200(), item(func(m map[string]any) { m["hostname"] = "api.onesource.io:443" })},
		{"stats under the floor", "GET", svc, 200, ok200(), item(func(m map[string]any) { obj(m, "stats")["settled_payments"] = 4 })},
		{"stats incomplete", "GET", svc, 200, ok200(), item(func(m map[string]any) { delete(obj(m, "stats"), "delivered") })},
		{"decimals as string", "GET", svc, 200, ok200(), item(func(m map[string]any) { obj(m, "trust", "probe", "price")["decimals"] = "6" })},
		{"price missing value", "GET", svc, 200, ok200(), item(func(m map[string]any) { delete(obj(m, "trust", "probe", "price"), "value") })},
		{"bad probed_at", "GET", svc, 200, ok200(), item(func(m map[string]any) { obj(m, "trust", "probe")["probed_at"] = "yesterday" })},
		{"missing stats", "GET", svc, 200, ok200(), item(func(m map[string]any) { delete(m, "stats") })},
		{"missing facets.category", "GET", svc, 200, ok200(), list(func(m map[string]any) { delete(obj(m, "facets"), "category") })},
		{"wrong object", "GET", svc, 200, ok200(), list(func(m map[string]any) { m["object"] = "page" })},
		{"count as string", "GET", svc, 200, ok200(), list(func(m map[string]any) { m["count"] = "2" })},
		{"search item without similarity", "GET", svc + "?q=x", 200, ok200(), mutate(searchBody, func(m map[string]any) {
			delete(obj(m, "items"), "similarity")
		})},
		{"search item without its rank score", "GET", svc + "?q=x", 200, ok200(), mutate(searchBody, func(m map[string]any) {
			delete(obj(m, "items"), "rank_score")
		})},
		{"unknown match", "GET", svc + "?q=x", 200, ok200(), mutate(searchBody, func(m map[string]any) { m["match"] = "fuzzy" })},
		{"detail without guidance", "GET", slug, 200, ok200(), listingItem},
		{"detail with null guidance", "GET", slug, 200, ok200(), withMember(listingItem, "guidance", nil)},
		{"merchant method stray field", "GET", merchant, 200, ok200(),
			mutate(merchantBody, func(m map[string]any) { obj(m, "methods")["kind"] = "x402" })},
		{"health status", "GET", "/health", 200, hdr("Content-Type", jsonCT, "Access-Control-Allow-Origin", "*"),
			mutate(healthBody, func(m map[string]any) { m["status"] = "fine" })},
		{"problem code unknown", "GET", svc + "?x=1", 400, cacheableProblem(), problem(400, "bad_request", "")},
		{"problem code of another status", "GET", svc + "?x=1", 400, cacheableProblem(), problem(400, "not_found", "")},
		{"problem status mismatch", "GET", svc + "?x=1", 400, cacheableProblem(), problem(404, "unknown_parameter", "x")},
		{"problem without title", "GET", slug + "x", 404, cacheableProblem(),
			mutate(problem(404, "not_found", ""), func(m map[string]any) { delete(m, "title") })},
		{"not JSON", "GET", svc, 200, ok200(), `{"object": "list",`},
		{"empty 200", "GET", svc, 200, ok200(), ""},
		{"null 200", "GET", svc, 200, ok200(), "null"},
		{"null merchant", "GET", merchant, 200, ok200(), "null"},
		{"array 200", "GET", svc, 200, ok200(), "[]"},
		{"null problem", "GET", svc + "?x=1", 400, cacheableProblem(), "null"},
		// Status, media type and headers.
		{"undocumented status", "GET", svc, 500, hdr("Content-Type", problemCT), problem(500, "internal", "")},
		{"text/plain", "GET", svc, 200, with(ok200(), "Content-Type", "text/plain; charset=utf-8"), listBody},
		{"json without charset", "GET", svc, 200, with(ok200(), "Content-Type", "application/json"), listBody},
		{"problem as application/json", "GET", svc + "?verified", 400, with(cacheableProblem(), "Content-Type", jsonCT), problem(400, "verified_reserved", "verified")},
		{"200 without ETag", "GET", svc, 200, with(ok200(), "ETag", ""), listBody},
		{"weak ETag", "GET", svc, 200, with(ok200(), "ETag", `W/"3f9a"`), listBody},
		{"200 not cacheable", "GET", svc, 200, with(ok200(), "Cache-Control", "no-store"), listBody},
		{"200 without CORS", "GET", svc, 200, with(ok200(), "Access-Control-Allow-Origin", ""), listBody},
		{"200 CORS for one origin", "GET", svc, 200, with(ok200(), "Access-Control-Allow-Origin", "https://a.example"), listBody},
		{"200 without Vary", "GET", svc, 200, with(ok200(), "Vary", ""), listBody},
		{"400 not cacheable", "GET", svc + "?verified", 400, with(cacheableProblem(), "Cache-Control", "no-store"), problem(400, "verified_reserved", "verified")},
		{"429 without Retry-After", "GET", svc + "?q=x", 429, with(noStoreProblem(), "Retry-After", ""), problem(429, "rate_limited", "")},
		{"429 cacheable", "GET", svc + "?q=x", 429, with(noStoreProblem(), "Cache-Control", "public, max-age=300"), problem(429, "rate_limited", "")},
		{"503 Retry-After not seconds", "GET", svc + "?q=x", 503, with(noStoreProblem(), "Retry-After", "soon"), problem(503, "search_unavailable", "")},
		{"304 without ETag", "GET", svc, 304, with(notModified(), "ETag", ""), ""},
		{"304 with a body", "GET", svc, 304, notModified(), listBody},
		{"HEAD with a body", "HEAD", svc, 200, ok200(), listBody},
		{"preflight without Allow-Methods", "OPTIONS", svc, 204, with(preflight(), "Access-Control-Allow-Methods", ""), ""},
		{"preflight allowing POST", "OPTIONS", svc, 204, with(preflight(), "Access-Control-Allow-Methods", "GET, POST"), ""},
		{"preflight answered 200", "OPTIONS", svc, 200, preflight(), ""},
		// Routes and methods the document does not describe.
		{"unknown path answered", "GET", "/api/public/v1/sellers", 200, ok200(), listBody},
		{"unknown path with a bad problem", "GET", "/api/public/v1/sellers", 404, cacheableProblem(), problem(404, "rate_limited", "")},
		{"POST answered", "POST", svc, 200, ok200(), listBody},
		{"405 without Allow", "PUT", svc, 405, hdr("Content-Type", problemCT), problem(405, "method_not_allowed", "")},
		{"405 with a wrong Allow", "PUT", svc, 405, hdr("Content-Type", problemCT, "Allow", "GET, PUT"), problem(405, "method_not_allowed", "")},
		{"405 with a bad body", "PATCH", svc, 405, hdr("Content-Type", problemCT, "Allow", "GET, HEAD, OPTIONS"), `{"error": "no"}`},
		{"outside the base path", "GET", "/../../other", 200, ok200(), listBody},
		// The API's root and the authenticated routes.
		{"root with a stray member", "GET", "/", 200, ok200(), mutate(discoveryBody, func(m map[string]any) { m["pages"] = "/" })},
		{"root not cacheable", "GET", "/", 200, with(ok200(), "Cache-Control", "no-store"), discoveryBody},
		{"root as the home page", "GET", "/", 200, with(ok200(), "Content-Type", "text/html; charset=utf-8"), "<!doctype html>"},
		{"agent with a stray member", "GET", "/agent/me", 200, noStoreJSON(), mutate(agentMeBody, func(m map[string]any) { m["key"] = "sk" })},
		{"agent head with a body", "HEAD", "/agent/me", 200, noStoreJSON(), agentMeBody},
		{"agent head undocumented status", "HEAD", "/agent/me", 409, hdr("Cache-Control", "no-store"), ""},
		{"agent head 401 without a challenge", "HEAD", "/agent/me", 401, with(unauthorized(), "WWW-Authenticate", ""), ""},
		{"405 without HEAD in Allow", "PUT", "/agent/me", 405, hdr("Content-Type", problemCT, "Allow", "GET"), problem(405, "method_not_allowed", "")},
		{"405 with OPTIONS in Allow", "PUT", "/agent/me", 405, hdr("Content-Type", problemCT, "Allow", "GET, HEAD, OPTIONS"), problem(405, "method_not_allowed", "")},
	}
	for _, s := range cases {
		t.Run(s.name, func(t *testing.T) {
			errs := check(d, s)
			if len(errs) == 0 {
				t.Fatalf("accepted")
			}
			t.Logf("rejected: %.300v", errs[0])
		})
	}

	// CheckResponse reports through the test.
	bad := cases[0]
	ft := runTB(func(tb testing.TB) { d.CheckResponse(tb, request(bad), response(bad), []byte(bad.body)) })
	if len(ft.msgs) == 0 || ft.fatal {
		t.Errorf("CheckResponse did not report with Errorf: %+v", ft)
	}
}

// TestSchemas validates a good sample of every component schema, and a bad one
// of some, directly against components.schemas.
func TestSchemas(t *testing.T) {
	d := Load(t, docPath)
	good := map[string][]string{
		"Slug":         {`"onesource-block-number"`, `"a1"`},
		"Hostname":     {`"api.onesource.io"`, `"xn--mnchen-3ya.example"`, `"localhost"`},
		"Category":     {`"ai"`, `"other"`},
		"Kind":         {`"x402"`, `"account"`},
		"Verdict":      {`"proceed"`, `"unknown"`},
		"Endpoint":     {member(listingItem, "endpoint")},
		"Price":        {`{"amount": "1000", "decimals": 6, "value": "0.001"}`, `{"amount": null, "decimals": null, "value": null}`},
		"ProbeOutcome": {`"payment_required"`, `"blocked_address"`, `"a_new_outcome"`},
		"Probe":        {member(member(listingItem, "trust"), "probe")},
		"Override":     {`{"verdict": "avoid", "reason": "r", "set_at": "2026-11-20T08:00:00Z", "expires_at": "2026-12-20T08:00:00Z"}`},
		"Trust":        {member(listingItem, "trust"), member(neverProbed, "trust")},
		"Stats":        {member(listingItem, "stats")},
		"SourceListing": {`{"source": "x402-bazaar", "calls_30d": 1018, "unique_payers_30d": 641, "last_called_at": null, "updated_at": "2026-08-07T00:00:00Z"}`,
			`{"source": "x402-bazaar", "calls_30d": null, "unique_payers_30d": null, "last_called_at": null, "updated_at": null}`},
		"ListingItem":                 {listingItem, neverProbed},
		"OAuthError":                  {`{"error": "invalid_grant", "error_description": "The code is not valid."}`, `{"error": "invalid_target"}`},
		"OAuthClientMetadata":         {`{"redirect_uris": ["http://127.0.0.1:7777/cb"], "client_name": "Desk", "grant_types": ["authorization_code", "refresh_token"], "response_types": ["code"], "token_endpoint_auth_method": "none", "scope": "agent", "logo_uri": "https://a.example/l.png"}`},
		"OAuthClient":                 {`{"client_id": "0123456789abcdef0123456789abcdef", "client_id_issued_at": 1795000000, "client_name": "Desk", "redirect_uris": ["http://127.0.0.1:7777/cb"], "grant_types": ["authorization_code", "refresh_token"], "response_types": ["code"], "token_endpoint_auth_method": "none", "scope": "agent"}`},
		"OAuthTokens":                 {`{"access_token": "wsat_a", "token_type": "Bearer", "expires_in": 3600, "refresh_token": "wsrt_r", "scope": "agent"}`},
		"ProtectedResourceMetadata":   {`{"resource": "https://w.example/functions/v1/api/mcp", "resource_name": "Waystation MCP server", "authorization_servers": ["https://w.example"], "scopes_supported": ["agent"], "bearer_methods_supported": ["header"], "resource_documentation": "https://w.example/reference"}`},
		"AuthorizationServerMetadata": {`{"issuer": "https://w.example", "authorization_endpoint": "https://w.example/functions/v1/api/oauth/authorize", "token_endpoint": "https://w.example/functions/v1/api/oauth/token", "registration_endpoint": "https://w.example/functions/v1/api/oauth/register", "revocation_endpoint": "https://w.example/functions/v1/api/oauth/revoke", "scopes_supported": ["agent"], "response_types_supported": ["code"], "grant_types_supported": ["authorization_code", "refresh_token"], "token_endpoint_auth_methods_supported": ["none"], "revocation_endpoint_auth_methods_supported": ["none"], "code_challenge_methods_supported": ["S256"]}`},
		"Guidance":                    {guidance, `{}`},
		"MethodDetail":                {detailBody},
		"SearchItem":                  {withMember(withMember(listingItem, "similarity", 0.5), "rank_score", 0.61)},
		"ListingDemand":               {`{"calls_30d": 1018, "unique_payers_30d": 641, "methods": 2}`},
		"ReportDeliveryRequest":       {`{"outcome": "wrong", "reason": "stale"}`, `{"outcome": "delivered"}`},
		"DeliveryReport":              {`{"paymentId": "` + uuid1 + `", "hostname": "api.seller.example", "outcome": "not_delivered", "reason": "no_answer", "reportedBy": "agent", "value": "0.01", "createdAt": "2026-11-20T08:00:00Z"}`},
		"Reports":                     {`{"received": 6, "observed_not_delivered": 1, "counted": 2, "delivered": 1, "wrong": 0, "not_delivered": 1, "payers": 2, "paid": "0.07", "rates": {"delivered": 0.1429, "wrong": 0, "not_delivered": 0.8571}, "moves_score": false, "weeks": [{"week": "2026-11-16", "delivered": 1, "wrong": 0, "not_delivered": 1}]}`},
		"ServiceDemand":               {`{"settled_30d": 12, "payers_30d": 5, "repeat_payers_30d": 3, "organic_payers_30d": 3}`},
		"Lookalike": {`{"resembles": [{"hostname": "api.tidewatch.example", "signal": "near_domain", "mine": "tidewatcb", "theirs": "tidewatch"}], "cleared": null}`,
			`{"resembles": [{"hostname": "api.tidewatch.example", "signal": "confusable", "mine": "tіdewatch", "theirs": "tidewatch"}], "cleared": "override"}`},
		"Resemblance":    {`{"hostname": "api.tidewatch.example", "signal": "brand_in_host", "mine": "tidewatch.pay-now.example", "theirs": "tidewatch"}`},
		"FacetValue":     {`{"value": "true", "count": 90}`},
		"Facets":         {member(listBody, "facets"), `{"category": []}`},
		"SnapshotRef":    {snapshotRef},
		"List":           {listBody, listMinimalBody},
		"Search":         {searchBody, searchNoneBody, searchExactBody, searchNearestBody, searchPhrasedBody},
		"NearestItem":    {nearestItem, withMember(withMember(neverProbed, "similarity", 0.3), "not_a_match", map[string]any{"reason": "outside_margin", "confidence": 0.7, "least": 0.35, "margin": 0.1})},
		"MerchantMethod": {`{"slug": "a", "name": "A", "category": "data", "payable": false}`},
		"ProbeRecord":    {elem(member(merchantBody, "probes"), 0), elem(member(merchantBody, "probes"), 1)},
		"Merchant":       {merchantBody},
		"HealthSnapshot": {member(healthBody, "snapshot")},
		"Health":         {healthBody},
		"ProblemCode":    {`"verified_reserved"`, `"search_unavailable"`},
		"LLMError": {`{"error": {"message": "The body holds a protected value.", "type": "invalid_request_error", "code": "protected_value_detected"}}`,
			`{"error": {"message": "Unknown parameter.", "type": "invalid_request_error", "param": "logit_bias", "code": "validation_failed"}}`},
		"AnthropicError": {`{"type": "error", "error": {"type": "invalid_request_error", "message": "The body holds a protected value.", "code": "protected_value_detected"}}`,
			`{"type": "error", "error": {"type": "request_too_large", "message": "Payload too large", "code": "payload_too_large"}}`},
		"LLMPassedError": {`{"error": {"message": "The model 'x' does not exist.", "type": "invalid_request_error", "code": "model_not_found"}}`,
			`{"error": {"message": "Rate limit reached.", "type": "rate_limit_error", "param": "model", "code": null}}`},
		"AnthropicPassedError": {`{"type": "error", "error": {"type": "not_found_error", "message": "model: x"}}`},
		"ResponsesRequest": {`{"model": "gpt-5", "input": "hi"}`, `{"model": "gpt-5", "instructions": "Be brief.", "input": [{"role": "user", "content": "hi"},
			{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}, {"type": "function_call", "call_id": "c1", "name": "pay", "arguments": "{}"},
			{"type": "function_call_output", "call_id": "c1", "output": "ok"}], "tools": [{"type": "function", "name": "pay"}], "metadata": {"k": "v"}}`},
		"ModelResponse": {`{"id": "resp_1", "object": "response", "output": []}`},
		"MessagesRequest": {`{"model": "claude", "max_tokens": 64, "system": "Be brief.", "messages": [{"role": "user", "content": "hi"}]}`, `{"model": "claude", "max_tokens": 64, "system": [{"type": "text", "text": "Be brief."}],
			"messages": [{"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "pay", "input": {}}]}, {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]}]}`},
		"Message": {`{"id": "msg_1", "type": "message", "role": "assistant", "content": []}`},
		"Problem": {problem(400, "verified_reserved", "verified"),
			`{"type": "/problems/not-found", "title": "Not found", "status": 404, "code": "not_found"}`},
		"OpenAPIDocument": {mustRead(t, docPath)},
		"Discovery":       {`{"apiVersion": "1.1.0", "openapi": "/functions/v1/api/openapi.json", "scopes": ["agent", "user"]}`},

		"Limits":             {limitsBody},
		"AgentMe":            {`{"id": "` + uuid1 + `", "name": "scout", "status": "active", "userId": "` + uuid2 + `", "limits": ` + limitsBody + `}`},
		"AgentStats":         {`{"sessions": 2, "sessionsByStatus": {"open": 1, "completed": 1}, "events": 7}`},
		"Agent":              {agentBody},
		"AgentList":          {`{"items": [` + agentBody + `]}`, `{"items": []}`},
		"Key":                {keyBody},
		"CreatedKey":         {strings.TrimSuffix(keyBody, "}") + `, "key": "sk_agent_0123456789abcdef_` + strings.Repeat("ab", 32) + `"}`},
		"KeyList":            {`{"items": [` + keyBody + `]}`},
		"KeyRevoked":         {`{"kid": "0123456789abcdef", "status": "revoked"}`},
		"CreateAgentRequest": {`{"name": "scout"}`},
		"CreateKeyRequest":   {`{"scope": "user"}`, `{"scope": "agent", "agentId": "` + uuid1 + `"}`},
		"Session":            {sessionBody},
		"SessionPage":        {`{"items": [` + sessionBody + `], "nextCursor": "eyJ0IjoxfQ"}`, `{"items": [], "nextCursor": null}`},
		"CreateSessionRequest": {`{"type": "checkout", "description": "buy a map", "clientSessionId": "s1"}`,
			`{"type": "checkout", "description": "d", "merchantName": "Maps", "targetUrl": "https://maps.example/", "clientSessionId": "s1"}`},
		"CompleteSessionRequest": {`{"clientCompletionId": "c1", "status": "completed", "summary": "done"}`},
		"Completion":             {`{"session": ` + sessionBody + `, "duplicate": false}`},
		"StopSessionRequest":     {`{"reasonCode": "user_request"}`},
		"Event":                  {eventBody},
		"EventPage":              {`{"items": [` + eventBody + `], "lastEventSeq": 1, "sessionStatus": "open"}`},
		"AppendEventRequest":     {`{"type": "runtime.page.loaded", "clientEventId": "e1", "data": {"step": 1}}`},

		"RequestContext": {`{"url": "https://maps.example/checkout", "pageTitle": "Checkout", "merchantName": "Maps", "reason": "to pay"}`, `{}`},
		"RequestField":   {`{"key": "email", "label": "Email", "type": "email", "secret": false}`, `{"key": "card", "label": "Card"}`},
		"RequestOption":  {`{"id": "fast", "label": "Express", "description": "1 day"}`},
		"RequestParams":  {`{"summary": "Buy a map", "amount": "12.50", "currency": "USDC", "recipient": "maps.example"}`, `{"purpose": "shipping"}`},
		"CreateRequestRequest": {`{"clientRequestId": "r1", "kind": "confirm", "ttlSeconds": 60, "params": {"summary": "Buy a map"}}`,
			`{"clientRequestId": "r2", "kind": "provide_missing", "fields": [{"key": "email", "label": "Email", "type": "email"}]}`},
		"Request":     {requestBody},
		"RequestPage": {`{"items": [` + requestBody + `], "nextCursor": null}`},
		"DecisionRequest": {`{"decision": "approve", "values": {"email": "a@b.example"}}`, `{"decision": "deny"}`, `{"decision": "approve", "selectedChoiceId": "fast"}`,
			`{"decision": "approve", "values": {"email": "a@b.example"}, "save": true, "askBeforeUse": false}`},
		"MemoryField":        {memoryField},
		"MemoryItem":         {memoryItem},
		"MemoryItemPage":     {`{"items": [` + memoryItem + `], "nextCursor": null}`, `{"items": [], "nextCursor": "abc"}`},
		"NewMemoryItem":      {`{"label": "Home", "hosts": ["shop.example"], "askBeforeUse": false, "fields": [{"fieldRef": "addr", "label": "Address", "valueType": "address", "value": "1 Row"}]}`},
		"MemoryItemPatch":    {`{"label": "Home", "fields": [{"fieldRef": "addr", "clearValue": true}, {"fieldRef": "zip", "remove": true}]}`, `{}`},
		"MemoryCatalog":      {`{"handles": [{"handle": "wh_x", "itemId": "` + uuid1 + `", "itemLabel": "Home", "fieldRef": "addr", "label": "Address", "valueType": "address", "askBeforeUse": true}], "unavailable": [{"itemId": "` + uuid1 + `", "fieldRef": "number", "reason": "payment_approval_required"}]}`},
		"MaterializeRequest": {`{"handles": ["wh_x"], "purpose": "fill the form"}`},
		"ChatCompletionRequest": {`{"model": "m", "messages": [{"role": "user", "content": "hi"}]}`,
			`{"model": "m", "stream": true, "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}], "tools": [{"type": "function"}]}`},
		"ChatCompletion": {`{"id": "c1", "choices": []}`},
		"ModelList":      {`{"object": "list", "data": [{"id": "m"}]}`},
		"TraceExport":    {`{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "4bf92f3577b34da6a3ce929d0e0e4736", "spanId": "00f067aa0ba902b7", "startTimeUnixNano": "1"}]}]}]}`},
		"OTLPStatus": {`{"code": 3, "message": "The body is not an OTLP trace export in JSON.", "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "VALIDATION_FAILED", "domain": "waystation", "metadata": {"code": "validation_failed", "type": "/problems/validation-failed"}}, {"@type": "type.googleapis.com/google.rpc.BadRequest", "fieldViolations": [{"field": "body", "description": "x"}]}]}`,
			`{"code": 14, "message": "x", "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "REDACTION_UNAVAILABLE", "domain": "waystation", "metadata": {"code": "redaction_unavailable", "type": "/problems/redaction-unavailable"}}]}`},
		"TraceExportResponse": {`{}`, `{"partialSuccess": {"rejectedSpans": "2", "errorMessage": "x"}}`},
		"Span": {`{"sessionId": "` + uuid1 + `", "traceId": "4bf92f3577b34da6a3ce929d0e0e4736", "spanId": "00f067aa0ba902b7", "parentSpanId": "", "name": "x", "kind": 1,
			"startTimeUnixNano": "1", "endTimeUnixNano": "2", "attributes": {"a": 1}, "status": {"code": 0}}`},
		"SpanPage":             {`{"items": [], "nextCursor": null}`},
		"MerchantCheckRequest": {`{"url": "https://shop.example/pay"}`},
		"QuoteRequest":         {`{"url": "https://shop.example/pay", "method": "POST"}`},
		"Quote": {`{"url": "https://shop.example/pay", "outcome": "payment_required", "httpStatus": 402,
			"offer": {"x402Version": 2, "scheme": "exact", "network": "eip155:8453", "asset": "0x8", "payTo": "0x2", "amount": "2500", "maxTimeoutSeconds": 60, "resource": "https://shop.example/pay"},
			"debit": {"amount": "2500", "value": "0.0025", "symbol": "USDC", "asset": "0x8", "network": "eip155:8453", "fee": "0", "testnet": false},
			"expiresAt": "2026-11-20T08:01:00Z", "reason": null, "quotedAt": "2026-11-20T08:00:00Z",
			"merchant": {"url": "https://shop.example/pay", "hostname": "shop.example", "listed": false, "verdict": "unknown", "score": null, "advisory": true, "reasons": [], "trust": null, "stats": null, "methods": 0, "snapshot": "abc"}}`},
		"MerchantCheck": {`{"url": "http://x.example", "hostname": "x.example", "listed": false, "verdict": "unknown", "score": null, "advisory": true,
			"reasons": ["Not in the directory: nothing is known of this seller."], "trust": null, "stats": null, "methods": 0, "snapshot": "abc"}`},
		"Materialized":   {`{"values": [{"handle": "wh_x", "status": "released", "value": "1 Row"}, {"handle": "wh_y", "status": "approval_required"}]}`},
		"ResolveRequest": {`{"intent": "buy a map", "fields": [{"key": "email", "type": "email"}]}`, `{"targetUrl": "https://shop.example/checkout"}`},
		"Resolution": {`{"match": "host", "providers": [{"serviceId": "shop.example", "methodId": "shop-map", "name": "Map", "url": "https://shop.example/map", "method": "GET", "price": "0.01", "network": null, "verdict": "proceed", "payable": true}],
			"fields": [{"key": "email", "candidates": [{"handle": "wh_x", "itemId": "` + uuid1 + `", "itemLabel": "Login", "requiresApproval": false}]}], "missing": [], "nextAction": "ask_before_use"}`},
		"Money":                {`"0.05"`, `"12"`, `"0"`},
		"WebhookEventName":     {`"request.waiting_user"`},
		"CreateWebhookRequest": {`{"url": "https://ops.example/hook", "events": ["request.waiting_user", "payment.settled"]}`},
		"Webhook":              {webhookBody},
		"CreatedWebhook": {strings.TrimSuffix(webhookBody, "}") + `, "secret": "whsec_` + strings.Repeat("a", 43) + `", "warnings": []}`,
			strings.TrimSuffix(webhookBody, "}") + `, "secret": "whsec_` + strings.Repeat("a", 43) + `", "warnings": ["Deliveries to 127.0.0.1 will be refused: it is a loopback address not in WEBHOOK_ALLOW_HOSTS."]}`},
		"WebhookPage":              {`{"items": [` + webhookBody + `]}`},
		"WebhookDelivery":          {deliveryBody},
		"WebhookDeliveryPage":      {`{"items": [` + deliveryBody + `]}`},
		"WebhookEvent":             {`{"id": "whd_1", "type": "request.waiting_user", "createdAt": "2026-11-21T10:00:00Z", "data": {"sessionId": "` + uuid1 + `", "seq": 3, "sessionEvent": "request.status_changed", "requestId": "` + uuid2 + `", "to": "waiting_user"}}`},
		"CreateCaptchaTaskRequest": {`{"clientTaskId": "c1", "type": "image_to_text", "pageUrl": "https://shop.example/login", "image": "iVBORw0KGgo="}`, `{"clientTaskId": "c2", "type": "turnstile", "pageUrl": "https://shop.example/login", "siteKey": "0x4AAA"}`},
		"CaptchaTask":              {captchaTask},
		"CaptchaTaskPage":          {`{"items": [` + captchaTask + `]}`},
		"HTTPRequestEnvelope":      {`{"url": "https://shop.example/pay"}`, `{"method": "POST", "url": "https://shop.example/pay", "headers": {"Content-Type": "application/json"}, "body": "{}"}`},
		"CreatePaymentRequest":     {`{"clientRequestId": "p1", "maximumDebit": "0.05", "httpRequest": {"url": "https://shop.example/pay"}, "reason": "the map"}`},
		"PaymentOffer":             {paymentOffer},
		"Payment":                  {paymentBody},
		"PaymentCreated":           {`{"request": ` + requestBody + `, "payment": ` + paymentBody + `}`},
		"SpendingLimits":           {spendingBody},
		"AgentStatusInput":         {`{"status": "disabled"}`, `{"status": "active"}`},
		"SpendingLimitsInput":      {`{"perPayment": "1", "daily": "5", "monthly": "50"}`, `{"perPayment": "0.5", "daily": "2", "monthly": "20", "hostsMode": "allow", "hosts": ["shop.example"], "paused": true}`},
		"ClaimedArtifact": {`{"requestId": "` + uuid1 + `", "type": "payment", "payment": {"paymentId": "` + uuid2 + `", "status": "settled", "failure": null, "amount": "10000", "value": "0.01",
			"asset": "0x036CbD53842c5426634e7929541eC2318f3dCF7e", "network": "eip155:84532", "payTo": "0x2", "transaction": "0xab",
			"response": {"status": 200, "contentType": "application/json", "body": "{}", "encoding": "text", "bytes": 2, "sha256": "` + strings.Repeat("0", 64) + `", "truncated": false}}, "claimedAt": "2026-11-20T08:00:00Z"}`,
			`{"requestId": "` + uuid1 + `", "type": "reference", "reference": {"handles": [{"fieldKey": "email", "handle": "wh_` + strings.Repeat("a", 32) + `"}]}, "claimedAt": "2026-11-20T08:00:00Z"}`,
			`{"requestId": "` + uuid1 + `", "type": "confirmation", "confirmation": {"confirmed": true, "scopeHash": "sha256:` + strings.Repeat("0", 64) + `"}, "claimedAt": "2026-11-20T08:00:00Z"}`,
			`{"requestId": "` + uuid1 + `", "type": "choice", "choice": {"selectedOptionId": "fast"}, "claimedAt": "2026-11-20T08:00:00Z"}`},
		"Owner": {`{"verified": true, "pay_to": "0x2c7536E3605D9C16a7a3D7b1898e529396a65c23", "origin": "https://api.seller.example", "points": 5}`,
			`{"verified": true, "pay_to": "0x2c7536E3605D9C16a7a3D7b1898e529396a65c23", "origin": "https://api.seller.example", "points": 0}`},
		"OriginListing": {`{"origin": "https://api.seller.example", "status": "listed", "reason": null, "owner": "0x2c7536E3605D9C16a7a3D7b1898e529396a65c23", "listed_at": "2026-11-21T10:00:00Z", "checked_at": "2026-11-21T10:30:00Z"}`,
			`{"origin": "http://localhost:4021", "status": "stale", "reason": "fetch: connection refused", "owner": null, "listed_at": "2026-11-21T10:00:00Z", "checked_at": "2026-11-22T10:30:00Z"}`},
		"SubmitOriginRequest": {`{"origin": "https://api.seller.example"}`},
		"OriginItemReport": {`{"index": 0, "url": "https://api.seller.example/v2/report", "method": "GET", "status": "listed", "slug": "seller-v2-report", "owner_verified": true}`,
			`{"index": 2, "url": "https://api.seller.example/v2/x", "method": "GET", "status": "refused", "owner_verified": false, "reason": "invalid_offer", "offer_reason": "bad_amount", "detail": "accepts[0].amount is not an integer"}`},
		"OriginSubmission": {`{"origin": "https://api.seller.example", "status": "refused", "listed": 0, "refused": 0, "reason": "nothing_listed", "owner": "", "items": []}`},
		"Origin":           {`{"origin": "https://api.seller.example", "hostname": "api.seller.example", "status": "delisted", "reason": "unreachable for 7 days", "owner": "", "listed_at": "2026-11-21T10:00:00Z", "checked_at": "2026-11-28T10:00:00Z", "last_fetched_at": "2026-11-21T10:00:00Z"}`},
	}
	bad := map[string][]string{
		"Owner":                    {`{"verified": false, "pay_to": "0x2", "origin": "https://a.example", "points": 5}`, `{"verified": true, "pay_to": "0x2", "origin": "https://a.example"}`, `{"verified": true, "pay_to": "0x2", "origin": "https://a.example", "points": 7}`},
		"OriginItemReport":         {`{"index": 0, "url": "u", "method": "GET", "status": "refused", "owner_verified": false, "reason": "too_far"}`},
		"SubmitOriginRequest":      {`{}`, `{"origin": "https://a.example", "extra": 1}`},
		"Origin":                   {`{"origin": "https://a.example", "hostname": "a.example", "status": "gone", "reason": "", "owner": "", "listed_at": "2026-11-21T10:00:00Z", "checked_at": "2026-11-21T10:00:00Z", "last_fetched_at": "2026-11-21T10:00:00Z"}`},
		"NearestItem":              {listingItem, mutate(nearestItem, func(m map[string]any) { m["not_a_match"].(map[string]any)["reason"] = "too_far" })},
		"Key":                      {strings.TrimSuffix(keyBody, "}") + `, "key": "sk_agent_0123456789abcdef_` + strings.Repeat("ab", 32) + `"}`},
		"Session":                  {mutate(sessionBody, func(m map[string]any) { m["status"] = "paused" })},
		"AppendEventRequest":       {`{"type": "session.completed", "clientEventId": "e1"}`},
		"Request":                  {mutate(requestBody, func(m map[string]any) { m["status"] = "pending" }), mutate(requestBody, func(m map[string]any) { m["values"] = map[string]any{"email": "x"} })},
		"DecisionRequest":          {`{"decision": "approve", "save": "yes"}`, `{"decision": "maybe"}`, `{"decision": "approve", "overrideVerdict": "yes"}`},
		"Money":                    {`"0.0000001"`, `"-1"`, `"01"`, `1`},
		"CaptchaTask":              {mutate(captchaTask, func(m map[string]any) { m["status"] = "approved" })},
		"CreateCaptchaTaskRequest": {`{"clientTaskId": "c1", "type": "audio", "pageUrl": "https://shop.example/login"}`},
		"CreatePaymentRequest":     {`{"clientRequestId": "p1", "maximumDebit": "0.05"}`, `{"clientRequestId": "p1", "maximumDebit": "0.05", "httpRequest": {"url": "https://shop.example/pay", "method": "TRACE"}}`},
		"Payment":                  {mutate(paymentBody, func(m map[string]any) { m["signature"] = "0x00" }), mutate(paymentBody, func(m map[string]any) { m["status"] = "paid" })},
		"AgentStatusInput":         {`{"status": "paused"}`, `{}`, `{"status": "active", "name": "x"}`},
		"SpendingLimitsInput":      {`{"perPayment": "1", "daily": "5"}`, `{"perPayment": "1", "daily": "5", "monthly": "50", "hostsMode": "only"}`},
		"MemoryItem":               {strings.Replace(memoryItem, `"hasValue": true`, `"hasValue": true, "value": "1 Row"`, 1)},
		"MemoryField":              {strings.Replace(memoryField, `}`, `, "value": "1 Row"}`, 1)},
		"NewMemoryItem":            {`{"label": "Home", "fields": []}`},
		"Materialized":             {`{"values": [{"handle": "wh_x", "status": "leaked"}]}`},
		"ChatCompletionRequest":    {`{"model": "m", "messages": []}`, `{"messages": [{"role": "user", "content": [{"type": "image_url"}]}]}`},
		"Resolution":               {`{"match": "none", "providers": [], "fields": [], "missing": [], "nextAction": "materialize"}`},
		"ClaimedArtifact":          {`{"requestId": "` + uuid1 + `", "type": "reference", "reference": {"handles": [{"fieldKey": "email", "handle": "wh_x", "value": "a@b.example"}]}, "claimedAt": "2026-11-20T08:00:00Z"}`},
		"CreateKeyRequest":         {`{"scope": "admin"}`},
		"Slug":                     {`"Bad_Slug"`, `"a--b"`, `""`},
		"Hostname":                 {`"API.onesource.io"`, `"api.onesource.io."`, `"a:80"`},
		"Category":                 {`"Weather"`},
		"Price":                    {`{"amount": 1000, "decimals": 6, "value": "0.001"}`, `{"amount": "1", "decimals": 6, "value": "0,1"}`},
		"ReportDeliveryRequest":    {`{"outcome": "great"}`, `{"outcome": "wrong", "reason": "wrong_content", "note": "text"}`},
		"ServiceDemand":            {`{"settled_30d": 0, "payers_30d": 1, "repeat_payers_30d": 0, "organic_payers_30d": 0}`},
		"Lookalike":                {`{"resembles": [], "cleared": null}`, `{"resembles": [{"hostname": "a.example", "signal": "near_domain", "mine": "b", "theirs": "a"}], "cleared": "maybe"}`},
		"Resemblance":              {`{"hostname": "a.example", "signal": "sounds_alike", "mine": "b", "theirs": "a"}`},
		"Stats":                    {`null`, `{"settled_payments": 42, "delivered": 41, "delivery_rate": 1.5}`},
		"SourceListing": {`null`, `{"source": "x402-bazaar", "calls_30d": -1, "unique_payers_30d": 0, "last_called_at": null, "updated_at": null}`,
			`{"source": "x402-bazaar"}`},
		"ListingItem":  {withMember(listingItem, "guidance", map[string]any{})},
		"MethodDetail": {withMember(detailBody, "similarity", 1)},
		"Problem":      {`{"type": "/problems/x", "title": "X", "status": 400, "code": "internal"}`},
		"LLMError": {`{"error": {"message": "m", "type": "invalid_request_error", "code": "no_such_code"}}`,
			`{"error": {"message": "m", "type": "teapot_error", "code": "internal"}}`, `{"code": "internal"}`},
		"AnthropicError": {`{"error": {"message": "m", "type": "invalid_request_error", "code": "protected_value_detected"}}`,
			`{"type": "error", "error": {"message": "m", "type": "teapot_error", "code": "internal"}}`},
		"LLMPassedError": {`{"error": {"message": "m", "type": "invalid_request_error"}}`, `{"error": {"message": "m", "type": "x", "code": 7}}`,
			`{"error": {"type": "x", "code": null}}`},
		"AnthropicPassedError": {`{"error": {"type": "not_found_error", "message": "m"}}`, `{"type": "error", "error": {"message": "m"}}`},
		"ResponsesRequest":     {`{"input": 7}`, `{"input": [{"role": "user", "content": [{"type": "input_image"}]}]}`},
		"MessagesRequest": {`{"model": "claude", "max_tokens": 8}`, `{"model": "claude", "max_tokens": 8, "messages": [{"role": "user", "content": [{"type": "image"}]}]}`,
			`{"model": "claude", "max_tokens": 0, "messages": [{"role": "user", "content": "hi"}]}`, `{"model": "claude", "messages": [{"role": "user", "content": "hi"}]}`},
		"Health":              {mutate(healthBody, func(m map[string]any) { m["database"] = "degraded" })},
		"OAuthError":          {`{"error": "invalid_grant", "error_description": "d", "extra": 1}`, `{"error": "access_denied"}`, `{"error_description": "d"}`},
		"OAuthClientMetadata": {`{"client_name": "x"}`, `{"redirect_uris": []}`, `{"redirect_uris": ["https://a.example/cb"], "token_endpoint_auth_method": "client_secret_basic"}`},
		"OAuthClient":         {`{"client_id": "c"}`},
		"OAuthTokens": {`{"access_token": "sk_agent_x", "token_type": "Bearer", "expires_in": 3600, "refresh_token": "wsrt_r", "scope": "agent"}`,
			`{"access_token": "wsat_a", "token_type": "bearer", "expires_in": 3600, "refresh_token": "wsrt_r", "scope": "agent"}`,
			`{"access_token": "wsat_a", "token_type": "Bearer", "expires_in": 0, "refresh_token": "wsrt_r", "scope": "agent"}`},
		"ProtectedResourceMetadata":   {`{"resource": "https://w.example/functions/v1/api/mcp"}`},
		"AuthorizationServerMetadata": {`{"issuer": "https://w.example"}`},
	}
	names := d.SchemaNames()
	for _, name := range names {
		if len(good[name]) == 0 {
			t.Errorf("no good sample for components.schemas.%s", name)
		}
		for i, body := range good[name] {
			if err := d.ValidateSchema(name, []byte(body)); err != nil {
				t.Errorf("%s good sample %d rejected: %v", name, i, err)
			}
		}
		for i, body := range bad[name] {
			if err := d.ValidateSchema(name, []byte(body)); err == nil {
				t.Errorf("%s bad sample %d accepted: %s", name, i, body)
			}
		}
	}
	for name := range good {
		if !slices.Contains(names, name) {
			t.Errorf("sample for missing schema %s", name)
		}
	}
	if err := d.ValidateSchema("Nope", []byte(`{}`)); err == nil {
		t.Error("ValidateSchema of a missing schema succeeded")
	}
}

// Samples of the authenticated API's schemas.
const (
	uuid1       = "6f1c2a7e-3b4d-4e5f-8a9b-0c1d2e3f4a5b"
	uuid2       = "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
	limitsBody  = `{"maxBodyBytes": 1048576, "maxWaitSeconds": 30, "maxPageSize": 200, "maxEventDataBytes": 16384, "maxOpenSessions": 100, "maxSessionEvents": 10000, "spending": null}`
	agentBody   = `{"id": "` + uuid1 + `", "userId": "` + uuid2 + `", "name": "scout", "status": "active", "createdAt": "2026-11-21T10:00:00Z"}`
	keyBody     = `{"kid": "0123456789abcdef", "scope": "agent", "userId": "` + uuid2 + `", "agentId": "` + uuid1 + `", "prefix": "sk_agent_0123456789abcdef", "createdAt": "2026-11-21T10:00:00Z", "lastUsedAt": null, "revokedAt": null}`
	sessionBody = `{"id": "` + uuid1 + `", "agentId": "` + uuid1 + `", "userId": "` + uuid2 + `", "type": "checkout", "description": "buy a map", "merchantName": null, "targetUrl": null, "status": "open", "summary": null, "stopReason": null, "lastEventSeq": 1, "createdAt": "2026-11-21T10:00:00Z", "updatedAt": "2026-11-21T10:00:00Z", "closedAt": null}`
	eventBody   = `{"seq": 1, "type": "session.opened", "actor": "agent", "clientEventId": null, "data": {}, "createdAt": "2026-11-21T10:00:00.123456Z"}`
	requestBody = `{"id": "` + uuid1 + `", "sessionId": "` + uuid2 + `", "agentId": "` + uuid1 + `", "userId": "` + uuid2 + `", "clientRequestId": "r1", "kind": "provide_missing", "status": "fulfilled", "resolutionPath": "user", "context": {"reason": "the form asks"}, "fields": [{"key": "email", "label": "Email", "type": "email", "secret": false}], "options": [], "params": {}, "expiresAt": "2026-11-21T10:15:00Z", "decidedBy": "user", "decidedAt": "2026-11-21T10:01:00Z", "createdAt": "2026-11-21T10:00:00Z", "updatedAt": "2026-11-21T10:01:00Z", "artifactType": "reference", "claimedAt": null, "approvalUrl": "/app/requests/` + uuid1 + `"}`
)

// Samples of the webhook schemas.
const (
	webhookBody  = `{"id": "` + uuid1 + `", "url": "https://ops.example/hook", "events": ["request.waiting_user"], "description": "", "createdAt": "2026-11-21T10:00:00Z"}`
	deliveryBody = `{"id": 7, "webhookId": "` + uuid1 + `", "event": "request.waiting_user", "status": "delivered", "attempts": 2, "lastStatus": 200, "lastError": null,
		"createdAt": "2026-11-21T10:00:00Z", "nextAttemptAt": null, "deliveredAt": "2026-11-21T10:00:11Z"}`
)

// Samples of the payment schemas.
const (
	paymentOffer = `{"x402Version": 2, "scheme": "exact", "network": "eip155:84532", "asset": "0x036CbD53842c5426634e7929541eC2318f3dCF7e", "symbol": "USDC",
		"payTo": "0x209693Bc6afc0C5328bA36FaF03C514EF312287C", "amount": "10000", "value": "0.01", "maxTimeoutSeconds": 60, "resource": "https://shop.example/pay"}`
	paymentBody = `{"id": "` + uuid2 + `", "requestId": "` + uuid1 + `", "sessionId": "` + uuid2 + `", "agentId": "` + uuid1 + `", "status": "awaiting_approval", "failure": null,
		"hostname": "shop.example", "httpRequest": {"method": "GET", "url": "https://shop.example/pay"}, "offer": ` + paymentOffer + `, "maximumDebit": "0.05",
		"merchant": {"verdict": "proceed", "score": 82, "listed": true}, "overrideVerdict": false, "payer": "0x2c7536E3605D9C16a7a3D7b1898e529396a65c23",
		"transaction": null, "createdAt": "2026-11-21T10:00:00Z", "signedAt": null, "settledAt": null, "delivered": null}`
	captchaTask = `{"id": "` + uuid1 + `", "sessionId": "` + uuid2 + `", "clientTaskId": "c1", "type": "image_to_text", "pageUrl": "https://shop.example/login",
		"siteKey": null, "via": "person", "status": "solved", "solution": "W7XK", "error": null, "requestId": "` + uuid1 + `", "approvalUrl": "/app/requests/` + uuid1 + `",
		"createdAt": "2026-11-21T10:00:00Z", "expiresAt": "2026-11-21T10:05:00Z", "solvedAt": "2026-11-21T10:01:00Z"}`
	spendingBody = `{"perPayment": "1", "daily": "5", "monthly": "50", "hostsMode": "deny", "hosts": [], "paused": false, "currency": "USD", "spent": {"today": "0.01", "thisMonth": "0.01"}}`
)

func TestConcurrentChecks(t *testing.T) {
	d := Load(t, docPath)
	samples := goodSamples(t)
	var wg sync.WaitGroup
	for range 4 {
		for _, s := range samples {
			wg.Go(func() {
				if errs := check(d, s); len(errs) > 0 {
					t.Errorf("%s: %v", s.name, errs)
				}
			})
		}
	}
	wg.Wait()
}

func mustRead(t *testing.T, path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// ---------------------------------------------------------------- a recording testing.TB

type fakeTB struct {
	testing.TB // nil: only the methods below are called
	mu         sync.Mutex
	msgs       []string
	fatal      bool
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Errorf(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.msgs = append(f.msgs, fmt.Sprintf(format, args...))
}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.Errorf(format, args...)
	f.mu.Lock()
	f.fatal = true
	f.mu.Unlock()
	runtime.Goexit()
}

// runTB runs f with a fakeTB in its own goroutine, so that Fatalf can stop it.
func runTB(f func(tb testing.TB)) *fakeTB {
	ft := &fakeTB{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(ft)
	}()
	<-done
	return ft
}

// Every array schema says what its items are, as Spectral's array-items rule (in
// spectral:oas) and code generators want.
func TestEveryArraySaysItsItems(t *testing.T) {
	var doc any
	if err := json.Unmarshal([]byte(mustRead(t, docPath)), &doc); err != nil {
		t.Fatal(err)
	}
	var walk func(v any, at string)
	walk = func(v any, at string) {
		switch v := v.(type) {
		case map[string]any:
			typ := v["type"]
			list, _ := typ.([]any)
			if _, ok := v["items"]; !ok && (typ == "array" || slices.Contains(list, any("array"))) {
				t.Errorf("%s: an array with no items", at)
			}
			for k, x := range v {
				walk(x, at+"/"+k)
			}
		case []any:
			for i, x := range v {
				walk(x, at+"/"+strconv.Itoa(i))
			}
		}
	}
	walk(doc, "#")
}
