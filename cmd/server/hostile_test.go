package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/waystation/waystation/internal/origin"
	"github.com/waystation/waystation/internal/postgres"
	"github.com/waystation/waystation/internal/redact/redacttest"
)

// hostileStrings go into every path parameter, query parameter and body member.
var hostileStrings = []string{
	"", " ", "../../../../etc/passwd", `..\..\windows\win.ini`, "/etc/passwd", "//evil.example/x",
	"' OR '1'='1", "1; DROP TABLE sessions; --", `" OR ""="`, "1' UNION SELECT secret_hash FROM api_keys --",
	"{{.}}", `{{template "x"}}`, "${7*7}", "<%= 7*7 %>", "#{7*7}", "<script>alert(1)</script>",
	"\x00", "nul\x00inside", "bell\a", "del\x7f", "vt\v", "\x01", "\U000E0001", "\U0010FFFF", "\u2028", "\xff\xfe\xfd", "\u202e\ufeff", "🦀", "a\r\nX-Injected: 1", "%", "%zz", "%00", "*", `\`,
	"-1", "0", "99999999999999999999999", "1e309", "NaN", "null", "true", "[]", "{}",
	"http://169.254.169.254/latest/meta-data/", strings.Repeat("a", 5000),
}

// rawSegments are path segments sent as they are, already percent-encoded.
var rawSegments = []string{"..", ".", "%2e%2e", "%2E%2E%2F%2E%2E%2Fetc%2Fpasswd", "..%2F..%2Fetc%2Fpasswd",
	"a%2Fb", "%00", "%ff%fe", "%C0%AE%C0%AE", "%252e%252e", "%20", "a;b=c"}

// openAPIPaths is what the storm reads of the served OpenAPI document.
type openAPIPaths struct {
	Paths map[string]map[string]json.RawMessage `json:"paths"`
	Comps struct {
		Parameters map[string]openAPIParam `json:"parameters"`
	} `json:"components"`
}

type openAPIParam struct {
	Ref  string `json:"$ref"`
	Name string `json:"name"`
	In   string `json:"in"`
}

type openAPIOp struct {
	Parameters []openAPIParam `json:"parameters"`
}

// storm is one request of the storm.
type storm struct {
	method, target, auth, body string
}

// stormRoute is a path template the storm fills, under base, with the methods and
// query parameters it takes.
type stormRoute struct {
	base, path string
	methods    []string
	query      []string
}

// pages are the human pages: outside the API's base path, so not in its OpenAPI
// document, and stormed all the same.
var pages = []stormRoute{
	{path: "/", methods: []string{"GET", "HEAD"}},
	{path: "/categories/{category}", methods: []string{"GET", "HEAD"}},
	{path: "/methods/{slug}", methods: []string{"GET", "HEAD"}},
	{path: "/merchants/{hostname}", methods: []string{"GET", "HEAD"}},
	{path: "/search", methods: []string{"GET", "HEAD"}, query: []string{"q"}},
	{path: "/problems/{code}", methods: []string{"GET", "HEAD"}},
	{path: "/static/{name}", methods: []string{"GET", "HEAD"}},
	{path: "/app/requests", methods: []string{"GET", "HEAD"}},
	{path: "/app/requests/{id}", methods: []string{"GET", "HEAD"}},
	{path: "/app/requests/{id}/decision", methods: []string{"POST"}},
	{path: "/app/sign-in", methods: []string{"GET", "HEAD", "POST"}, query: []string{"request"}},
	{path: "/app/sign-out", methods: []string{"POST"}},
	{path: "/app/sessions/{id}", methods: []string{"GET", "HEAD"}},
	{path: "/app/spend", methods: []string{"GET", "HEAD"}},
	{path: "/app/spend.csv", methods: []string{"GET", "HEAD"}},
	{path: "/app/agents", methods: []string{"GET", "HEAD", "POST"}},
	{path: "/app/agents/{id}/limits", methods: []string{"POST"}},
	{path: "/app/agents/{id}/status", methods: []string{"POST"}},
	{path: "/app/keys", methods: []string{"GET", "HEAD", "POST"}},
	{path: "/app/keys/{kid}/revoke", methods: []string{"POST"}},
	{path: "/app/memory", methods: []string{"GET", "HEAD", "POST"}},
	{path: "/app/memory/{id}", methods: []string{"POST"}},
	{path: "/app/memory/{id}/archive", methods: []string{"POST"}},
	{path: "/app/webhooks", methods: []string{"GET", "HEAD", "POST"}},
	{path: "/app/webhooks/{id}/delete", methods: []string{"POST"}},
	{path: "/app/passkeys", methods: []string{"GET", "HEAD", "POST"}},
	{path: "/app/passkeys/options", methods: []string{"POST"}},
	{path: "/app/passkeys/{id}/delete", methods: []string{"POST"}},
	{path: "/app/sign-in/passkey", methods: []string{"POST"}},
	{path: "/app/sign-in/passkey/options", methods: []string{"POST"}},
}

// TestHostileRequestsGetNo5xxAndTheServiceKeepsServing sends malformed and hostile
// requests to every route of the OpenAPI document, and to every page, through a real
// TCP listener:
// hostile path and query values, path traversal, injection strings, broken and
// oversized bodies, bad Authorization headers, and raw requests that only the
// net/http parser sees. None may get a 5xx or make the log show a panic or an
// internal error, and the service must answer normally afterwards.
//
// A protected value of the user goes into the storm too, in every written form
// (plain, full-width, base64, percent-encoded), wherever hostile strings go and as a
// model, a logit_bias key, a call_id, a metadata key, a tool call's input key, a
// span's attribute key and a body's unknown member. Keys go as Authorization and as
// x-api-key, which the Messages route takes.
// Afterwards no table of the database, read as text, no answer and no request the
// model upstream received holds it (invariants 1 and 2).
func TestHostileRequestsGetNo5xxAndTheServiceKeepsServing(t *testing.T) {
	dbURL := demoDatabase(t)
	userKey, agentKey := apiKeys(t, dbURL)
	_, revokable := apiKeys(t, dbURL) // for the route that revokes the calling key
	// No per-caller search limit: every hostile query reaches the engine and its answer.
	// The LLM proxy forwards to an upstream on loopback that answers every call.
	var upstreamMu sync.Mutex
	var upstreamGot strings.Builder
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		upstreamMu.Lock()
		io.Copy(&upstreamGot, r.Body)
		upstreamMu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"object":"list","data":[]}`)
	}))
	defer upstream.Close()
	// A payer is configured, so that the payment routes answer as they do in service.
	// The agent's budget of detections is lifted, so that the storm reaches every
	// route with its key rather than a paused agent's refusal (the budget has its own
	// test: TestAnAgentPausedForGuessingAnswersAlikeWhateverItSends).
	srv := serveLogged(t, map[string]string{"DATABASE_URL": dbURL, "SEARCH_RATE_PER_MIN": "0", "LLM_UPSTREAM_URL": upstream.URL + "/v1", "LLM_ANTHROPIC_URL": upstream.URL,
		"X402_PAYER_KEY": testPayerKey, "X402_PAYER_NETWORKS": "eip155:84532", "DETECTION_BUDGET": "1000000000"})
	api := srv.base + "/functions/v1/api"
	sid := createSession(t, api, agentKey, "storm")
	closable := createSession(t, api, agentKey, "storm-closable")
	if r := mustSend(t, "POST", api+"/memory/items", userKey, `{"label":"Door","askBeforeUse":false,"fields":[{"fieldRef":"code","label":"Code","secret":true,"value":"`+hostileCanary+`"}]}`); r.StatusCode != http.StatusCreated {
		t.Fatalf("the canary: %d %s", r.StatusCode, r.body)
	}
	canaries := redacttest.Forms(hostileCanary)
	forms := slices.Sorted(maps.Values(canaries))
	hostile := slices.Concat(hostileStrings, forms)
	list := mustSend(t, "GET", api+"/api/public/v1/services", "", "")
	var items struct {
		Items []struct{ Slug, Hostname string }
	}
	if err := json.Unmarshal(list.body, &items); err != nil || len(items.Items) == 0 {
		t.Fatalf("list: %d %s", list.StatusCode, list.body)
	}
	var doc openAPIPaths
	if err := json.Unmarshal(mustSend(t, "GET", api+"/openapi.json", "", "").body, &doc); err != nil || len(doc.Paths) < 20 {
		t.Fatalf("openapi.json: %v, %d paths", err, len(doc.Paths))
	}
	valid := map[string]string{
		"slug": items.Items[0].Slug, "hostname": items.Items[0].Hostname, "id": sid,
		"kid": "0123456789abcdef", "rid": "00000000-0000-4000-8000-000000000000", "pid": "00000000-0000-4000-8000-000000000000",
		"category": "weather", "code": "not-found", "name": "style.css",
	}
	keys := []string{"Bearer " + agentKey, "Bearer " + userKey, ""}
	// A storm's auth of this prefix goes as x-api-key, as Anthropic's clients send it.
	const apiKeyAuth = "x-api-key: "
	badAuth := []string{"Bearer", "Bearer ", "Basic YWRhOnNlY3JldA==", "Bearer sk_agent_x_y", "Bearer sk_user_0123456789abcdef_" + strings.Repeat("A", 43),
		"Bearer " + agentKey + "x", "bearer " + strings.ToUpper(agentKey), "Bearer " + strings.Repeat("k", 8000), "Bearer ' OR 1=1 --", "Bearer {{.}}"}
	var bodies []string
	for _, h := range hostile {
		q, _ := json.Marshal(h)
		s := string(q)
		bodies = append(bodies,
			`{"type":"checkout","description":`+s+`,"merchantName":`+s+`,"targetUrl":`+s+`,"clientSessionId":`+s+`}`,
			`{"type":"runtime.step","clientEventId":`+s+`,"data":{"k":`+s+`,`+s+`:1}}`,
			`{"name":`+s+`}`, `{"scope":`+s+`,"agentId":`+s+`}`, `{"scope":"agent","agentId":`+s+`}`, `{"reasonCode":`+s+`}`,
			`{"clientCompletionId":`+s+`,"status":"completed","summary":`+s+`}`, `{"type":`+s+`}`, `{"origin":`+s+`}`)
	}
	bodies = append(bodies, "{", "}", "[]", "null", `"x"`, "0", "\x00\x01", "\xef\xbb\xbf{}", `{"type":1}`, `{"a":1}{"a":2}`,
		`{"type":"runtime.step","clientEventId":"raw","data":{"k":"`+"\xff\xfe"+`"}}`,
		`{"type":"runtime.step","clientEventId":"nul","data":{"k":"\u0000"}}`,
		`{"type":"checkout","description":"nul \u0000","clientSessionId":"nul"}`,
		strings.Repeat("[", 100000), `{"type":"runtime.step","clientEventId":"deep","data":`+strings.Repeat(`{"a":`, 3000)+"1"+strings.Repeat("}", 3000)+"}",
		`{"name":"`+strings.Repeat("x", 2<<20)+`"}`)
	// The canary also goes where the storm's own bodies do not put it: as a model,
	// a logit_bias key, a span's attribute key and name, an unknown member. Each
	// such body goes to its route with the agent's key, and into the storm.
	var canaryCalls []storm
	for _, f := range forms {
		q, _ := json.Marshal(f)
		s := string(q)
		llm, traces := api+"/llm/v1/chat/completions", api+"/traces"
		responses, messages, apiKey := api+"/llm/v1/responses", api+"/llm/v1/messages", apiKeyAuth+agentKey
		canaryCalls = append(canaryCalls,
			storm{"POST", responses, keys[0], `{"model":` + s + `,"input":"hi"}`},
			storm{"POST", responses, keys[0], `{"model":"stub-1","input":[{"type":"function_call_output","call_id":` + s + `,"output":"ok"}]}`},
			storm{"POST", responses, keys[0], `{"model":"stub-1","input":"hi","metadata":{` + s + `:"x"}}`},
			storm{"POST", responses, keys[0], `{"model":"stub-1","instructions":"the code is ` + f + `","input":[{"role":"user","content":[{"type":"input_text","text":` + s + `}]}]}`},
			storm{"POST", messages, apiKey, `{"model":` + s + `,"max_tokens":8,"messages":[{"role":"user","content":"hi"}]}`},
			storm{"POST", messages, apiKey, `{"model":"stub-1","max_tokens":8,"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"n","input":{` + s + `:1}}]}]}`},
			storm{"POST", messages, keys[0], `{"model":"stub-1","max_tokens":8,"system":` + s + `,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"the code is ` + f + `"}]}]}`},
			storm{"POST", api + "/sessions", keys[0], `{"type":"checkout","description":"d","clientSessionId":"c",` + s + `:1}`},
			storm{"POST", llm, keys[0], `{"model":` + s + `,"messages":[{"role":"user","content":"hi"}]}`},
			storm{"POST", llm, keys[0], `{"model":"stub-1","messages":[{"role":"user","content":"hi"}],"logit_bias":{` + s + `:1}}`},
			storm{"POST", llm, keys[0], `{"model":"stub-1","messages":[{"role":"user","content":"the code is ` + f + `"}]}`},
			storm{"POST", traces, keys[0], `{"resourceSpans":[{"resource":{"attributes":[{"key":` + s + `,"value":{"stringValue":"x"}}]},"scopeSpans":[{"spans":[{"traceId":"4bf92f3577b34da6a3ce929d0e0e4736",
				"spanId":"00f067aa0ba902b7","name":` + s + `,"attributes":[{"key":"workflow.session.id","value":{"stringValue":"` + sid + `"}},{"key":` + s + `,"value":{"stringValue":` + s + `}}]}]}]}]}`})
	}
	for _, c := range canaryCalls {
		bodies = append(bodies, c.body)
	}
	// Spans in protobuf, as OTLP exporters send them by default: the canary as a
	// resource's and a span's attribute key, as a value, as a name; and every hostile
	// string as a protobuf body.
	var protoCalls []storm
	for _, f := range forms {
		kv := func(k, v string) *commonpb.KeyValue {
			return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
		}
		b, _ := proto.Marshal(&tracepb.TracesData{ResourceSpans: []*tracepb.ResourceSpans{{
			Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{kv(f, "x")}},
			ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{{TraceId: []byte("0123456789abcdef"), SpanId: []byte("01234567"), Name: f,
				Attributes: []*commonpb.KeyValue{kv("workflow.session.id", sid), kv(f, f), kv("note", "the code is "+f)}}}}}}}})
		protoCalls = append(protoCalls, storm{"POST", api + "/v1/traces", keys[0], string(b)})
	}
	for _, h := range hostileStrings {
		protoCalls = append(protoCalls, storm{"POST", api + "/v1/traces", keys[0], h}, storm{"POST", api + "/traces", keys[1], "\x0a" + h})
	}

	var routes []stormRoute
	for tmpl, item := range doc.Paths {
		rt := stormRoute{base: api, path: tmpl}
		for m, raw := range item {
			if m == "parameters" || m == "summary" || m == "description" {
				continue
			}
			rt.methods = append(rt.methods, strings.ToUpper(m))
			var op openAPIOp
			json.Unmarshal(raw, &op)
			for _, p := range op.Parameters {
				if p.Ref != "" {
					p = doc.Comps.Parameters[p.Ref[strings.LastIndex(p.Ref, "/")+1:]]
				}
				if p.In == "query" && !slices.Contains(rt.query, p.Name) {
					rt.query = append(rt.query, p.Name)
				}
			}
		}
		routes = append(routes, rt)
	}
	param := regexp.MustCompile(`\{[a-z]+\}`)
	home := mustSend(t, "GET", srv.base+"/", "", "")
	if m := regexp.MustCompile(`/static/([^"/]+\.css)`).FindSubmatch(home.body); m != nil {
		valid["name"] = string(m[1])
	}
	for _, p := range pages {
		// The list stays true to the pages: each answers its path, filled with valid
		// values, with something other than 404.
		target := srv.base + param.ReplaceAllStringFunc(p.path, func(v string) string { return url.PathEscape(valid[v[1:len(v)-1]]) })
		if r := mustSend(t, p.methods[0], target, "", ""); r.StatusCode == http.StatusNotFound {
			t.Errorf("page %s %s: 404, is it still a page?", p.methods[0], target)
		}
		p.base = srv.base
		routes = append(routes, p)
	}

	var reqs []storm
	n := 0
	next := func() int { n++; return n }
	for _, rt := range routes {
		tmpl, prefix, methods, queryParams := rt.path, rt.base, rt.methods, rt.query
		fill := func(name, value string) string {
			return param.ReplaceAllStringFunc(tmpl, func(p string) string {
				p = p[1 : len(p)-1]
				if p == name {
					return value
				}
				v := valid[p]
				if p == "id" && (strings.HasSuffix(tmpl, "/complete") || strings.HasSuffix(tmpl, "/stop")) {
					v = closable
				}
				return url.PathEscape(v)
			})
		}
		keyFor := func(i int) string {
			if tmpl == "/agent/keys/current/revoke" {
				return "Bearer " + revokable
			}
			return keys[i%len(keys)]
		}
		paths := []string{fill("", "")}
		for _, name := range param.FindAllString(tmpl, -1) {
			name = name[1 : len(name)-1]
			for _, h := range hostile {
				paths = append(paths, fill(name, url.PathEscape(h)))
			}
			for _, raw := range rawSegments {
				paths = append(paths, fill(name, raw))
			}
		}
		for _, p := range paths {
			for _, m := range methods {
				i := next()
				reqs = append(reqs, storm{m, prefix + p, keyFor(i), bodies[i%len(bodies)]})
			}
		}
		validPath := prefix + paths[0]
		for _, qp := range append(queryParams, "verified", "unknown") {
			for _, h := range hostile {
				for _, m := range methods {
					i := next()
					reqs = append(reqs, storm{m, validPath + "?" + url.QueryEscape(qp) + "=" + url.QueryEscape(h), keyFor(i), ""})
				}
			}
		}
		for _, q := range []string{"?a=1&a=2", "?=", "?&&&", "?;", "?q=1;q=2", "?limit=1&limit=2", "?q=" + strings.Repeat("x", 60<<10), "?" + strings.Repeat("y=1&", 30<<10)} {
			reqs = append(reqs, storm{"GET", validPath + q, keyFor(next()), ""})
		}
		for _, f := range forms { // the canary as a parameter's name
			for _, k := range keys[:2] {
				reqs = append(reqs, storm{"GET", validPath + "?" + url.QueryEscape(f) + "=1", k, ""})
			}
		}
		for _, m := range methods {
			if m != "POST" {
				continue
			}
			for i, b := range bodies {
				reqs = append(reqs, storm{m, validPath, keyFor(i), b})
			}
		}
		for _, a := range badAuth {
			for _, m := range methods {
				reqs = append(reqs, storm{m, validPath, a, bodies[next()%len(bodies)]})
				// The key as x-api-key: a key on the Messages route, no key elsewhere.
				reqs = append(reqs, storm{m, validPath, apiKeyAuth + strings.TrimPrefix(a, "Bearer "), bodies[next()%len(bodies)]})
			}
		}
		for _, m := range []string{"PUT", "PATCH", "DELETE", "POST", "TRACE", "PROPFIND", "OPTIONS", "HEAD"} {
			reqs = append(reqs, storm{m, validPath, keyFor(next()), `{"a":1}`})
		}
	}

	reqs = append(reqs, canaryCalls...)

	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	defer client.CloseIdleConnections()
	var mu sync.Mutex
	var fails []string
	type job struct {
		storm
		contentType string
	}
	work := make(chan job)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for j := range work {
				s := j.storm
				req, err := http.NewRequest(s.method, s.target, strings.NewReader(s.body))
				if err != nil {
					t.Errorf("%s %.200s: %v", s.method, s.target, err)
					continue
				}
				if key, ok := strings.CutPrefix(s.auth, apiKeyAuth); ok {
					req.Header.Set("X-Api-Key", key)
				} else if s.auth != "" {
					req.Header.Set("Authorization", s.auth)
				}
				if s.body != "" {
					req.Header.Set("Content-Type", j.contentType)
				}
				res, err := client.Do(req)
				if err != nil {
					mu.Lock()
					fails = append(fails, fmt.Sprintf("%s %.200s: %v", s.method, s.target, err))
					mu.Unlock()
					continue
				}
				b, _ := io.ReadAll(res.Body)
				res.Body.Close()
				// An answer of the authenticated API to the user's key never holds the
				// user's value. A caller without one is nobody's, and the directory's
				// public routes and pages answer everyone alike.
				authenticated := (s.auth == keys[0] || s.auth == keys[1] || s.auth == apiKeyAuth+agentKey) && strings.HasPrefix(s.target, api+"/") && !strings.HasPrefix(s.target, api+"/api/public/")
				for name, f := range canaries {
					if authenticated && strings.Contains(string(b), f) {
						mu.Lock()
						fails = append(fails, fmt.Sprintf("%s %.200s (body %.200q): the answer holds the canary (%s): %.300s", s.method, s.target, s.body, name, b))
						mu.Unlock()
					}
				}
				// The search page says so, as documented, when search refuses the caller.
				refused := res.StatusCode == http.StatusServiceUnavailable && strings.HasPrefix(s.target, srv.base+"/search?")
				if res.StatusCode >= 500 && !refused {
					mu.Lock()
					fails = append(fails, fmt.Sprintf("%s %.200s (auth %.20q, body %.200q): %d %.300s", s.method, s.target, s.auth, s.body, res.StatusCode, b))
					mu.Unlock()
				}
				// Every answer that says it is JSON must parse as JSON.
				if ct := res.Header.Get("Content-Type"); (strings.HasPrefix(ct, "application/json") || strings.HasPrefix(ct, "application/problem+json")) &&
					s.method != http.MethodHead && res.StatusCode != http.StatusNotModified && !json.Valid(b) {
					mu.Lock()
					fails = append(fails, fmt.Sprintf("%s %.200s: %d %s is not JSON: %.300q", s.method, s.target, res.StatusCode, ct, b))
					mu.Unlock()
				}
			}
		})
	}
	start := time.Now()
	for _, s := range reqs {
		work <- job{s, "application/json"}
	}
	for _, s := range protoCalls {
		work <- job{s, "application/x-protobuf"}
	}
	close(work)
	wg.Wait()
	t.Logf("%d requests in %s", len(reqs)+len(protoCalls), time.Since(start).Round(time.Millisecond))

	addr := strings.TrimPrefix(srv.base, "http://")
	bearer := "Authorization: Bearer " + agentKey + "\r\n"
	raws := []string{
		"GET /functions/v1/api/api/public/v1/services/\xff\xfe HTTP/1.1\r\nHost: h\r\n\r\n",
		"GET /methods/\xc0\xae\xc0\xae/\xff HTTP/1.1\r\nHost: h\r\n\r\n",
		"GET /functions/v1/api/../../../../etc/passwd HTTP/1.1\r\nHost: h\r\n\r\n",
		"GET /%2e%2e/%2e%2e/etc/passwd HTTP/1.1\r\nHost: h\r\n\r\n",
		"GET //functions/v1/api//health HTTP/1.1\r\nHost: h\r\n\r\n",
		"GET /functions/v1/api/api/public/v1/services?q=%zz HTTP/1.1\r\nHost: h\r\n\r\n",
		"GET /functions/v1/api/api/public/v1/services?q=\xff\xfe HTTP/1.1\r\nHost: h\r\n\r\n",
		"GET /search?q=%ff%fe%00 HTTP/1.1\r\nHost: h\r\n\r\n",
		"GET /functions/v1/api/sessions/%zz HTTP/1.1\r\nHost: h\r\n" + bearer + "\r\n",
		"GET /functions/v1/api/sessions/" + sid + "/events?after=%zz HTTP/1.1\r\nHost: h\r\n" + bearer + "\r\n",
		"GET /functions/v1/api/sessions/" + sid + "/events HTTP/1.1\r\nHost: h\r\n" + bearer + "Accept: text/event-stream\r\nLast-Event-ID: \xff-1\r\n\r\n",
		"GET /functions/v1/api/agent/me HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer \xff\xfe\x00\r\n\r\n",
		"GET /functions/v1/api/agent/me HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer a\r\nAuthorization: Bearer b\r\n\r\n",
		"POST /functions/v1/api/llm/v1/messages HTTP/1.1\r\nHost: h\r\n" + bearer + "X-Api-Key: " + agentKey + "\r\nContent-Length: 2\r\n\r\n{}",
		"POST /functions/v1/api/llm/v1/messages HTTP/1.1\r\nHost: h\r\nX-Api-Key: \xff\xfe\x00\r\nX-Api-Key: b\r\nContent-Length: 2\r\n\r\n{}",
		"POST /functions/v1/api/llm/v1/messages HTTP/1.1\r\nHost: h\r\n" + bearer + "Anthropic-Version: \xff\r\nContent-Length: 2\r\n\r\n{}",
		"GET /functions/v1/api/health HTTP/1.1\r\nHost: h\r\nX-Big: " + strings.Repeat("b", 100<<10) + "\r\n\r\n",
		"GET /functions/v1/api/health?" + strings.Repeat("q", 100<<10) + " HTTP/1.1\r\nHost: h\r\n\r\n",
		"GET /functions/v1/api/health HTTP/1.1\r\n\r\n",
		"GET /functions/v1/api/health HTTP/1.1\r\nHost: h\r\nHost: i\r\n\r\n",
		"GET http://evil.example/functions/v1/api/health HTTP/1.1\r\nHost: h\r\n\r\n",
		"GET /functions/v1/api/health HTTP/9.9\r\nHost: h\r\n\r\n",
		"GET /functions/v1/api/health\r\n\r\n",
		"G\x00T / HTTP/1.1\r\nHost: h\r\n\r\n",
		"GET * HTTP/1.1\r\nHost: h\r\n\r\n",
		"OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n",
		"CONNECT evil.example:443 HTTP/1.1\r\nHost: evil.example:443\r\n\r\n",
		"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\x00\x00\x00\x00",
		"GET /functions/v1/api/api/public/v1/services HTTP/1.1\r\nHost: h\r\nIf-None-Match: \"" + strings.Repeat("\xff", 30<<10) + "\r\nAccept-Encoding: gzip;q=\xff, *;q=NaN\r\n\r\n",
		"POST /functions/v1/api/sessions HTTP/1.1\r\nHost: h\r\n" + bearer + "Content-Length: 100\r\n\r\n{\"type\"",
		"POST /functions/v1/api/sessions HTTP/1.1\r\nHost: h\r\n" + bearer + "Content-Length: 99999999999\r\n\r\n{",
		"POST /functions/v1/api/sessions HTTP/1.1\r\nHost: h\r\n" + bearer + "Content-Length: -1\r\n\r\n{}",
		"POST /functions/v1/api/sessions HTTP/1.1\r\nHost: h\r\n" + bearer + "Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n",
		"POST /functions/v1/api/sessions HTTP/1.1\r\nHost: h\r\n" + bearer + "Transfer-Encoding: chunked\r\nContent-Length: 2\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
		"POST /functions/v1/api/sessions/" + sid + "/events HTTP/1.1\r\nHost: h\r\n" + bearer + "Content-Type: application/json\r\nIdempotency-Key: \xff\xfe\r\nContent-Length: 2\r\n\r\n{}",
	}
	for _, raw := range raws {
		// A request cut short is ended by closing the connection's writing side; a
		// whole one is not, since net/http takes that for a client that left.
		status, err := rawRequest(addr, raw, !strings.HasSuffix(raw, "\r\n\r\n") && !strings.HasSuffix(raw, "{}"))
		if err != nil {
			t.Logf("raw %.80q: no answer: %v", raw, err)
			continue
		}
		// net/http itself answers 505 to an HTTP version it does not speak.
		if status >= 500 && !(status == http.StatusHTTPVersionNotSupported && strings.Contains(raw, "HTTP/9.9")) {
			fails = append(fails, fmt.Sprintf("raw %.200q: %d", raw, status))
		}
	}

	for _, f := range fails {
		t.Error(f)
	}
	if logs := srv.logs.String(); strings.Contains(logs, "panic") || strings.Contains(logs, "internal error") {
		t.Errorf("the log shows a panic or an internal error:\n%.20000s", logs)
	}
	if r := mustSend(t, "GET", api+"/api/public/v1/services", "", ""); r.StatusCode != 200 || string(r.body) != string(list.body) {
		t.Errorf("the list after the storm: %d", r.StatusCode)
	}
	if r := mustSend(t, "POST", api+"/sessions", agentKey, sessionBody("after-storm")); r.StatusCode != http.StatusCreated {
		t.Errorf("a session after the storm: %d %s", r.StatusCode, r.body)
	}

	store, err := postgres.Open(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	dump := strings.ToLower(dumpTables(t, store))
	upstreamMu.Lock()
	got := upstreamGot.String()
	upstreamMu.Unlock()
	// The canary was never given to the agent: a model request holding it is refused
	// whole, so the upstream gets the storm's other requests and no blanked text.
	if got == "" || strings.Contains(got, "[redacted]") {
		t.Errorf("the upstream received %d bytes, blanked text among them: did the storm reach it, and was the canary refused?", len(got))
	}
	for name, f := range canaries {
		if strings.Contains(dump, strings.ToLower(f)) {
			t.Errorf("a table holds the canary (%s) in the clear", name)
		}
		if strings.Contains(got, f) {
			t.Errorf("the model upstream received the canary (%s)", name)
		}
	}
}

// hostileCanary is the user's protected value the storm carries in every form.
const hostileCanary = "Quartz-Canary-4417"

// rawRequest writes raw on a new connection, then closes its writing side if
// halfClose, and returns the status of the answer.
func rawRequest(addr, raw string, halfClose bool) (int, error) {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.WriteString(conn, raw); err != nil {
		return 0, err
	}
	if halfClose {
		conn.(*net.TCPConn).CloseWrite()
	}
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return 0, err
	}
	res.Body.Close()
	return res.StatusCode, nil
}

// TestHostileManifestsAreRefusedAndListNothing submits an origin, through the
// running server, whose manifest is each time another hostile one: huge, deep, of
// the wrong types, with duplicate URLs, items on other hosts, a redirect to a private
// address, invalid signatures. Each is refused with its reason (422 manifest_refused,
// or 200 with every item refused and why), none gets a 5xx, and nothing is listed.
func TestHostileManifestsAreRefusedAndListNothing(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var manifest []byte
	var redirect string
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if r.URL.Path != origin.WellKnownPath {
			http.NotFound(w, r) // no item's endpoint asks for payment
			return
		}
		if redirect != "" {
			http.Redirect(w, r, redirect, http.StatusFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(manifest)
	})
	seller := httptest.NewServer(h)
	defer seller.Close()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(seller.URL, "http://"))
	o := "http://localhost:" + port
	dbURL := demoDatabase(t)
	userKey, _ := apiKeys(t, dbURL)
	// One user submits every manifest of the suite: no submission rate applies.
	srv := serveLogged(t, map[string]string{"DATABASE_URL": dbURL, "PAYMENT_ALLOW_HOSTS": "localhost:" + port, "ORIGIN_SUBMIT_RATE_PER_HOUR": "0"})
	api := srv.base + "/functions/v1/api"

	const key = "4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318"
	entry := `{"scheme":"exact","network":"eip155:84532","amount":"10000","asset":"0x036CbD53842c5426634e7929541eC2318f3dCF7e",` +
		`"payTo":"0x2c7536E3605D9C16a7a3D7b1898e529396a65c23","maxTimeoutSeconds":60,"extra":{"name":"USDC","version":"2"}}`
	item := func(u string) string {
		return `{"resource":{"url":"` + u + `"},"type":"http","accepts":[` + entry + `],"input":{"method":"GET"}}`
	}
	otherSig, _ := origin.SignOrigin("https://elsewhere.example", key)
	strangerSig, _ := origin.SignOrigin(o, strings.Repeat("2", 64))
	deep := strings.Repeat(`{"a":`, 5000) + "1" + strings.Repeat("}", 5000)
	cases := []struct {
		name, manifest, redirect string
		reason                   string // the manifest's reason, or the items' when it is read
		items                    []string
	}{
		{name: "huge", manifest: `{"x402Version":2,"items":[` + item(o+"/a") + `],"pad":"` + strings.Repeat("a", origin.MaxManifest) + `"}`, reason: origin.ReasonTooLarge},
		{name: "deep", manifest: `{"x402Version":2,"items":[` + deep + `]}`, reason: origin.ReasonTooDeep},
		{name: "not JSON", manifest: "<html>hello</html>", reason: origin.ReasonBadJSON},
		{name: "version of the wrong type", manifest: `{"x402Version":"2","items":[` + item(o+"/a") + `]}`, reason: origin.ReasonBadVersion},
		{name: "items of the wrong type", manifest: `{"x402Version":2,"items":{"0":` + item(o+"/a") + `}}`, reason: origin.ReasonNoItems},
		{name: "redirect to a private address", redirect: "http://10.0.0.1/.well-known/x402.json", reason: origin.ReasonRedirect},
		{name: "redirect to the metadata service", redirect: "http://169.254.169.254/latest/meta-data/", reason: origin.ReasonRedirect},
		{name: "malformed signature", manifest: `{"x402Version":2,"items":[` + item(o+"/a") + `],"ownershipProofs":["0xdeadbeef"]}`, reason: origin.ReasonBadProof},
		{name: "signature of another origin", manifest: `{"x402Version":2,"items":[` + item(o+"/a") + `],"ownershipProofs":["` + otherSig + `"]}`, reason: origin.ReasonBadProof},
		{name: "signature by a stranger", manifest: `{"x402Version":2,"items":[` + item(o+"/a") + `],"ownershipProofs":["` + strangerSig + `"]}`, reason: origin.ReasonBadProof},
		{name: "items of the wrong types", manifest: `{"x402Version":2,"items":[7,"x",{"resource":7},{"resource":{"url":"` + o + `/b"},"accepts":"x"},{"resource":{"url":"` + o + `/c"},"type":[],"accepts":[` + entry + `]}]}`,
			reason: origin.ReasonNothingListed, items: []string{origin.ItemNotObject, origin.ItemNotObject, origin.ItemBadURL, origin.ItemInvalidOffer, origin.ItemBadType}},
		{name: "duplicate URLs", manifest: `{"x402Version":2,"items":[` + item(o+"/a") + `,` + item(o+"/a") + `]}`,
			reason: origin.ReasonNothingListed, items: []string{origin.ItemProbeFailed, origin.ItemDuplicate}},
		{name: "items on other hosts", manifest: `{"x402Version":2,"items":[` + item("https://evil.example/a") + `,` + item("http://10.0.0.1/a") + `,` + item("https://localhost:"+port+"/a") + `]}`,
			reason: origin.ReasonNothingListed, items: []string{origin.ItemOtherOrigin, origin.ItemOtherOrigin, origin.ItemOtherOrigin}},
	}
	for _, c := range cases {
		mu.Lock()
		manifest, redirect = []byte(c.manifest), c.redirect
		mu.Unlock()
		r := mustSend(t, "POST", api+"/origins", userKey, `{"origin":"`+o+`"}`)
		if c.items == nil {
			var p struct{ Code, Detail string }
			if json.Unmarshal(r.body, &p); r.StatusCode != http.StatusUnprocessableEntity || p.Code != "manifest_refused" || !strings.HasPrefix(p.Detail, c.reason+": ") {
				t.Errorf("%s: %d %s; want manifest_refused %s", c.name, r.StatusCode, r.body, c.reason)
			}
			continue
		}
		var sub struct {
			Status, Reason string
			Listed         int
			Items          []struct{ Status, Reason, Detail string }
		}
		if json.Unmarshal(r.body, &sub); r.StatusCode != http.StatusOK || sub.Status != "refused" || sub.Reason != c.reason || sub.Listed != 0 || len(sub.Items) != len(c.items) {
			t.Errorf("%s: %d %s", c.name, r.StatusCode, r.body)
			continue
		}
		for i, it := range sub.Items {
			if it.Status != "refused" || it.Reason != c.items[i] || it.Detail == "" {
				t.Errorf("%s: items[%d] %+v; want %s", c.name, i, it, c.items[i])
			}
		}
	}
	if r := mustSend(t, "GET", api+"/origins?origin="+url.QueryEscape(o), userKey, ""); r.StatusCode != http.StatusNotFound {
		t.Errorf("a hostile origin was kept: %d %s", r.StatusCode, r.body)
	}
	if logs := srv.logs.String(); strings.Contains(logs, "panic") || strings.Contains(logs, "level=ERROR") {
		t.Errorf("the log shows a failure:\n%s", logs)
	}
}
