package catalog

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/waystation/waystation/api/openapitest"
)

// testGuidance is the guidance of an imported method as tests read it back.
type testGuidance struct {
	Summary string
	Request struct {
		Method      string
		URL         string
		Tool        string
		Path        json.RawMessage
		Query       json.RawMessage
		QuerySchema json.RawMessage `json:"query_schema"`
		Headers     json.RawMessage
		BodyType    string `json:"body_type"`
		Body        json.RawMessage
		BodySchema  json.RawMessage `json:"body_schema"`
		Example     string
	}
	Response struct {
		MimeType string `json:"mime_type"`
		Schema   json.RawMessage
		Example  json.RawMessage
	}
	Payment string
	Notes   []string
}

func decodeGuidance(t *testing.T, m Method) testGuidance {
	t.Helper()
	var g testGuidance
	dec := json.NewDecoder(bytes.NewReader(m.Guidance))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&g); err != nil {
		t.Fatalf("%s: guidance %s: %v", m.SourceKey, m.Guidance, err)
	}
	return g
}

func onlyMethod(t *testing.T, line string) Method {
	t.Helper()
	cat, skipped := parseBazaarString(t, line)
	ms := allMethods(cat)
	if len(skipped) != 0 || len(ms) != 1 {
		t.Fatalf("skipped %v, %d methods", skipped, len(ms))
	}
	checkMethod(t, ms[0])
	return ms[0]
}

func compact(t *testing.T, s string) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestBazaarExtensionOfAQueryMethodBecomesGuidance(t *testing.T) {
	m := onlyMethod(t, compact(t, `{
		"resource": "https://api.tide.example/v1/tides/:port", "type": "http", "x402Version": 2,
		"description": "High and low tides for a port - next seven days",
		"accepts": [{"scheme": "exact", "network": "eip155:8453", "amount": "2500",
			"asset": "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913", "payTo": "0x9", "mimeType": "application/json"}],
		"extensions": {"bazaar": {
			"info": {
				"input": {"type": "http", "method": "GET", "queryParams": {"days": 3, "units": "m"},
					"pathParams": {"port": "brest"}, "headers": {"X-Client": "agent", "Bad Header": "x"}},
				"output": {"type": "json", "example": {"port": "brest", "tides": []}}
			},
			"schema": {"type": "object", "properties": {
				"input": {"type": "object", "properties": {
					"type": {"type": "string", "const": "http"},
					"queryParams": {"type": "object", "properties": {"days": {"type": "integer"}}, "required": ["days"]}}},
				"output": {"type": "object", "properties": {
					"example": {"type": "object", "properties": {"port": {"type": "string"}, "tides": {"type": "array"}}}}}}},
			"routeTemplate": "/v1/tides/:port"}}
	}`))
	g := decodeGuidance(t, m)
	if g.Summary != "High and low tides for a port - next seven days" || g.Request.Method != "GET" || g.Request.URL != m.Endpoint.URL {
		t.Errorf("summary or request %+v", g)
	}
	for what, pair := range map[string][2]string{
		"path":            {string(g.Request.Path), `{"port":"brest"}`},
		"query":           {string(g.Request.Query), `{"days":3,"units":"m"}`},
		"query schema":    {string(g.Request.QuerySchema), `{"type":"object","properties":{"days":{"type":"integer"}},"required":["days"]}`},
		"headers":         {string(g.Request.Headers), `{"X-Client":"agent"}`},
		"body schema":     {string(g.Request.BodySchema), `null`},
		"response schema": {string(g.Response.Schema), `{"type":"object","properties":{"port":{"type":"string"},"tides":{"type":"array"}}}`},
		"response":        {string(g.Response.Example), `{"port":"brest","tides":[]}`},
		"mime type":       {g.Response.MimeType, "application/json"},
		"example":         {g.Request.Example, `curl 'https://api.tide.example/v1/tides/brest?days=3&units=m' -H 'X-Client: agent'`},
	} {
		if pair[0] != pair[1] {
			t.Errorf("%s: %s\nwant %s", what, pair[0], pair[1])
		}
	}
	if !strings.HasPrefix(g.Payment, "x402, 0.0025 USDC on Base per call") {
		t.Errorf("payment %q", g.Payment)
	}
	if !containsText(g.Notes, "seller's own") || !containsText(g.Notes, ":port") {
		t.Errorf("notes %q", g.Notes)
	}
}

func TestBazaarExtensionOfABodyMethodBecomesGuidance(t *testing.T) {
	m := onlyMethod(t, compact(t, `{
		"resource": "https://api.words.example/translate", "x402Version": 2, "description": "Translate a text",
		"extensions": {"bazaar": {
			"info": {"input": {"type": "http", "method": "POST", "bodyType": "json", "body": {"text": "it's a test", "to": "fr"}},
				"output": {"type": "text", "example": "c'est un test"}},
			"schema": {"properties": {"input": {"properties": {
				"body": {"type": "object", "properties": {"text": {"type": "string"}, "to": {"type": "string"}}, "required": ["text", "to"]}}}}}}}
	}`))
	if m.Endpoint.Method != "POST" {
		t.Fatalf("method %s", m.Endpoint.Method)
	}
	g := decodeGuidance(t, m)
	if g.Request.BodyType != "json" || string(g.Request.Body) != `{"text":"it's a test","to":"fr"}` ||
		string(g.Request.BodySchema) != `{"type":"object","properties":{"text":{"type":"string"},"to":{"type":"string"}},"required":["text","to"]}` {
		t.Errorf("body %+v", g.Request)
	}
	if want := `curl -X POST 'https://api.words.example/translate' -H 'Content-Type: application/json' --data-raw '{"text":"it'\''s a test","to":"fr"}'`; g.Request.Example != want {
		t.Errorf("example\n%s\nwant\n%s", g.Request.Example, want)
	}
	if g.Response.MimeType != "text/plain" || string(g.Response.Example) != `"c'est un test"` || string(g.Response.Schema) != "null" {
		t.Errorf("response %+v", g.Response)
	}
	if !strings.Contains(g.Payment, "names no price") {
		t.Errorf("payment %q", g.Payment)
	}
}

func TestMCPToolGuidanceIsItsToolsCall(t *testing.T) {
	m := onlyMethod(t, `{"resource":"https://mcp.tools.example/mcp","type":"mcp","x402Version":2,`+
		`"extensions":{"bazaar":{"info":{"input":{"type":"mcp","toolName":"count_words","transport":"sse",`+
		`"inputSchema":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]},"example":{"text":"one two"}},`+
		`"output":{"type":"json","example":{"words":2}}}}}}`)
	g := decodeGuidance(t, m)
	if g.Request.Method != "POST" || g.Request.Tool != "count_words" || g.Request.BodyType != "json" {
		t.Errorf("request %+v", g.Request)
	}
	if want := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"count_words","arguments":{"text":"one two"}}}`; string(g.Request.Body) != want {
		t.Errorf("body %s", g.Request.Body)
	}
	var schema struct {
		Properties struct {
			Params struct {
				Properties struct {
					Name      map[string]string
					Arguments json.RawMessage
				}
			}
		}
	}
	if err := json.Unmarshal(g.Request.BodySchema, &schema); err != nil ||
		schema.Properties.Params.Properties.Name["const"] != "count_words" ||
		string(schema.Properties.Params.Properties.Arguments) != `{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}` {
		t.Errorf("body schema %s: %v", g.Request.BodySchema, err)
	}
	if !strings.Contains(g.Request.Example, "-H 'Accept: application/json, text/event-stream'") || !strings.Contains(g.Request.Example, `"name":"count_words"`) {
		t.Errorf("example %s", g.Request.Example)
	}
	if !containsText(g.Notes, `"count_words"`) || !containsText(g.Notes, "SSE") {
		t.Errorf("notes %q", g.Notes)
	}
}

func TestGuidanceWithoutDiscoveryInfoSaysSo(t *testing.T) {
	m := onlyMethod(t, `{"resource":"https://plain.example/v1/block/{number}","description":"A block by number",`+
		`"accepts":[{"scheme":"exact","network":"solana","amount":"10","asset":"EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v","payTo":"S1","mimeType":"application/json"},`+
		`{"scheme":"exact","network":"eip155:999","amount":"7","asset":"0xabc","payTo":"0x1"},{"scheme":"exact","network":"base","amount":null}]}`)
	g := decodeGuidance(t, m)
	if string(g.Request.Query) != "{}" || string(g.Request.Headers) != "{}" || string(g.Request.BodySchema) != "null" ||
		g.Request.Example != "curl 'https://plain.example/v1/block/{number}'" || g.Response.MimeType != "application/json" {
		t.Errorf("guidance %+v", g)
	}
	if !containsText(g.Notes, "describes neither") || !containsText(g.Notes, "{number}") {
		t.Errorf("notes %q", g.Notes)
	}
	want := "x402, 0.00001 USDC on Solana, or 7 atomic units of asset 0xabc on eip155:999, or an unreadable amount on Base per call as listed"
	if !strings.HasPrefix(g.Payment, want) {
		t.Errorf("payment %q\nwant prefix %q", g.Payment, want)
	}
}

func TestGuidanceDropsWhatPostgreSQLCannotKeep(t *testing.T) {
	big := `"` + strings.Repeat("x", maxGuidancePart) + `"`
	m := onlyMethod(t, `{"resource":"https://drop.example/a","extensions":{"bazaar":{"info":{"input":{"type":"http","method":"GET",`+
		`"queryParams":{"q":"nul \u0000 here"}},"output":{"type":"json","example":{"big":`+big+`}}}}}}`)
	g := decodeGuidance(t, m)
	if string(g.Request.Query) != "{}" || g.Response.Example != nil {
		t.Errorf("kept %s and %d bytes", g.Request.Query, len(g.Response.Example))
	}
	if !containsText(g.Notes, "query, output example could not be kept") {
		t.Errorf("notes %q", g.Notes)
	}
	if bytes.Contains(m.Guidance, []byte(`\u0000`)) {
		t.Error("guidance holds a NUL")
	}
}

func containsText(notes []string, s string) bool {
	for _, n := range notes {
		if strings.Contains(n, s) {
			return true
		}
	}
	return false
}

// TestImportedGuidanceNamesOnlyRoutesTheAPIHas reads the guidance made for every
// method of the real snapshot and of a few hand-written items, and fails on a route
// of ours that the OpenAPI document lacks: guidance must never send an agent to a
// 404, and every one says how the service pays.
func TestImportedGuidanceNamesOnlyRoutesTheAPIHas(t *testing.T) {
	paths := openapitest.Paths(t, "../../api/openapi.json")
	in := `{"resource":"https://a.example/x"}` + "\n" +
		`{"resource":"https://b.example/y","accepts":[{"scheme":"exact","network":"base","amount":"1","asset":"0x833589fcd6edb6e08f4c7c32d4f71b54bda02913","payTo":"0x1"}]}`
	if data, err := os.ReadFile(bazaarFile); err == nil {
		in += "\n" + string(data)
	}
	cat, _ := parseBazaarString(t, in)
	mentions := 0
	for _, m := range allMethods(cat) {
		g := decodeGuidance(t, m)
		if !strings.Contains(g.Payment, "POST /sessions/{id}/x402/payments") {
			t.Errorf("%s: payment %q", m.Slug, g.Payment)
		}
		n, missing := openapitest.UndocumentedRoutes(paths, "/functions/v1/api", g.Payment+" "+strings.Join(g.Notes, " "))
		mentions += n
		for _, r := range missing {
			t.Errorf("%s: guidance names %s, which the API does not have", m.Slug, r)
		}
	}
	if mentions == 0 {
		t.Fatal("no guidance names a route: the walk found nothing to check")
	}
}
