package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/waystation/waystation/internal/problem"
)

// tool calls an MCP tool without a key and answers its result: the structured
// content, or the error result's text.
func (e *env) tool(t *testing.T, name string, args any) (out map[string]any, failure string) {
	t.Helper()
	a, _ := json.Marshal(args)
	req := httptest.NewRequest(http.MethodPost, base+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"`+name+`","arguments":`+string(a)+`}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	rec := httptest.NewRecorder()
	e.srv.ServeHTTP(rec, req)
	body := rec.Body.String()
	if i := strings.Index(body, "data: "); i >= 0 { // an event stream of one message
		body = strings.TrimSpace(body[i+len("data: "):])
	}
	var msg struct {
		Result struct {
			IsError           bool             `json:"isError"`
			StructuredContent map[string]any   `json:"structuredContent"`
			Content           []map[string]any `json:"content"`
		}
	}
	if err := json.Unmarshal([]byte(body), &msg); err != nil {
		t.Fatalf("%s: %d %v %s", name, rec.Code, err, body)
	}
	if msg.Result.IsError {
		text, _ := msg.Result.Content[0]["text"].(string)
		return nil, text
	}
	return msg.Result.StructuredContent, ""
}

// problemSaid is a route's problem as a tool says it to a model: the code, the
// status, the detail and the remedy.
func problemSaid(t *testing.T, r response) string {
	t.Helper()
	var p problemBody
	r.json(t, &p)
	text := fmt.Sprintf("%s (%d): %s", p.Code, r.StatusCode, p.Detail)
	if k, ok := problem.Lookup(p.Code); ok && k.Remedy != "" {
		text += " " + k.Remedy
	}
	return text
}

// The directory's tools call the services their routes call, not the router: each
// answers what its route answers (the same methods in the same order with the same
// similarities, the same merchant, the same facets) and refuses what its route
// refuses, in the route's words.
func TestMCPDirectoryToolsAnswerWhatTheirRoutesAnswer(t *testing.T) {
	t.Parallel()
	e := newSearchEnv(t, searchOptions{})
	snap := e.snaps.Current()

	for _, q := range []string{"weather forecast for a city", "bake a chocolate cake", "send an email", "  ethereum block number "} {
		out, failure := e.tool(t, "search_sellers", map[string]string{"query": q})
		if failure != "" {
			t.Fatalf("%q: %s", q, failure)
		}
		var page struct {
			Items   []map[string]any `json:"items"`
			Nearest []map[string]any `json:"nearest"`
		}
		e.get(services+"?q="+url.QueryEscape(q)).json(t, &page)
		if out["query"] != q {
			t.Errorf("%q: query %v", q, out["query"])
		}
		for _, part := range []struct {
			name  string
			route []map[string]any
		}{{"results", page.Items}, {"nearest", page.Nearest}} {
			got, _ := out[part.name].([]any)
			if len(got) != len(part.route) {
				t.Fatalf("%q: %d %s, the route %d", q, len(got), part.name, len(part.route))
			}
			for i, g := range got {
				g, w := g.(map[string]any), part.route[i]
				if g["slug"] != w["slug"] || g["similarity"] != w["similarity"] || !reflect.DeepEqual(g["not_a_match"], w["not_a_match"]) {
					t.Errorf("%q: %s[%d] %v, the route's %v %v %v", q, part.name, i, g, w["slug"], w["similarity"], w["not_a_match"])
				}
			}
		}
	}
	for _, c := range []struct {
		args  map[string]string
		route string
	}{
		{map[string]string{"query": "weather", "category": "no-such-category"}, "?category=no-such-category&q=weather"},
		{map[string]string{"query": "weather", "category": "Weather, data"}, "?category=" + url.QueryEscape("Weather, data") + "&q=weather"},
		{map[string]string{"query": "   "}, "?q=%20%20%20"},
		{map[string]string{"query": strings.Repeat("ö", 600)}, "?q=" + url.QueryEscape(strings.Repeat("ö", 600))},
	} {
		_, failure := e.tool(t, "search_sellers", c.args)
		r := e.get(services + c.route)
		if r.StatusCode == 200 {
			var page struct{ Items []map[string]any }
			r.json(t, &page)
			out, _ := e.tool(t, "search_sellers", c.args)
			if got, _ := out["results"].([]any); failure != "" || len(got) != len(page.Items) {
				t.Errorf("%v: %q %v, the route %d items", c.args, failure, out, len(page.Items))
			}
			continue
		}
		if want := problemSaid(t, r); failure != want {
			t.Errorf("%v: the tool says %q, the route %q", c.args, failure, want)
		}
	}

	m := snap.Methods()[0]
	out, failure := e.tool(t, "get_method", map[string]string{"slug": m.Slug})
	var detail map[string]any
	e.get(services+"/"+m.Slug).json(t, &detail)
	if failure != "" || out["slug"] != m.Slug || !reflect.DeepEqual(out["endpoint"], detail["endpoint"]) || !reflect.DeepEqual(out["guidance"], detail["guidance"]) {
		t.Errorf("get_method %s: %q %v, the route %v", m.Slug, failure, out, detail)
	}
	for _, slug := range []string{"no-such-method", "A;b", "100%", "ü"} {
		_, failure := e.tool(t, "get_method", map[string]string{"slug": slug})
		if want := problemSaid(t, e.get(services+"/"+url.PathEscape(slug))); failure != want {
			t.Errorf("get_method %q: the tool says %q, the route %q", slug, failure, want)
		}
	}

	for _, host := range []string{m.Hostname, strings.ToUpper(m.Hostname) + ".", "https://" + m.Hostname + "/x?y=1"} {
		out, failure := e.tool(t, "check_merchant", map[string]string{"hostname": host})
		var rec map[string]any
		e.get(base+"/api/public/v1/merchants/"+m.Hostname).json(t, &rec)
		if failure != "" || out["hostname"] != rec["hostname"] || len(out["methods"].([]any)) != len(rec["methods"].([]any)) {
			t.Errorf("check_merchant %q: %q %v, the route %v", host, failure, out, rec)
		}
	}
	for _, host := range []string{"not a host", "no-such-seller.example", "xn--zz", "a%2Cb"} {
		_, failure := e.tool(t, "check_merchant", map[string]string{"hostname": host})
		if want := problemSaid(t, e.get(base+"/api/public/v1/merchants/"+url.PathEscape(host))); failure != want {
			t.Errorf("check_merchant %q: the tool says %q, the route %q", host, failure, want)
		}
	}

	out, failure = e.tool(t, "list_categories", struct{}{})
	var list listBody
	e.get(services+"?limit=1").json(t, &list)
	got, _ := out["categories"].([]any)
	if failure != "" || len(got) != len(list.Facets.Category) || len(got) == 0 {
		t.Fatalf("list_categories: %q %v, the route's facets %v", failure, out, list.Facets.Category)
	}
	for i, c := range got {
		c := c.(map[string]any)
		if f := list.Facets.Category[i]; c["category"] != f.Value || c["methods"] != float64(f.Count) {
			t.Errorf("list_categories[%d] %v, the route's %v", i, c, f)
		}
	}
}
