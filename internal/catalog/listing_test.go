package catalog

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// The items below are written for these tests; none is a real seller's.

func byKey(t *testing.T, cat Catalog) map[string]Method {
	t.Helper()
	out := map[string]Method{}
	for _, m := range allMethods(cat) {
		checkMethod(t, m)
		k := m.SourceKey
		if m.Tool != "" {
			k += "#" + m.Tool
		}
		if _, dup := out[k]; dup {
			t.Fatalf("method %s twice", k)
		}
		out[k] = m
	}
	return out
}

func TestParseBazaarReadsAListResponseSpreadOverLines(t *testing.T) {
	in := `{
  "x402Version": 2,
  "items": [
    {"resource": "https://api.alpha.example/v1/quote", "type": "http", "x402Version": 2,
     "description": "Quote of the day", "accepts": []},
    {"resource": "ftp://bad.example/x"},
    {"resource": "https://beta.example/ping", "type": "http", "x402Version": 2}
  ],
  "pagination": {"limit": 100, "offset": 0, "total": 3}
}
`
	cat, skipped := parseBazaarString(t, in)
	// An item's error names the line its list starts on, and its place in the list.
	if len(skipped) != 1 || !strings.HasPrefix(skipped[0].Error(), "line 1, item 2: resource URL: scheme") {
		t.Fatalf("skipped %v", skipped)
	}
	ms := byKey(t, cat)
	if len(ms) != 2 || ms["https://api.alpha.example/v1/quote"].Name != "Quote of the day" {
		t.Fatalf("methods %+v", ms)
	}
}

func TestParseBazaarReadsItemsAndListResponsesLineByLine(t *testing.T) {
	page := func(items ...string) string {
		return `{"x402Version":2,"items":[` + strings.Join(items, ",") + `],"pagination":{"limit":2,"offset":0,"total":5}}`
	}
	in := strings.Join([]string{
		`{"resource":"https://one.example/a","description":"First"}`,
		page(`{"resource":"https://two.example/b"}`, `{"description":"no resource"}`),
		page(`{"resource":"https://three.example/c"}`, `{"resource":"https://one.example/a","description":"First, again"}`),
		`{"x402Version":2,"items":{"not":"a list"}}`,
		`{"resources":[{"url":"https://four.example/d"}],"total":1,"limit":10,"offset":0}`,
	}, "\n")
	cat, skipped := parseBazaarString(t, in)
	var got []string
	for _, e := range skipped {
		got = append(got, e.Error())
	}
	want := []string{"line 2, item 2: no resource URL", "line 4: items is not a list"}
	if !slices.Equal(got, want) {
		t.Errorf("skipped %q, want %q", got, want)
	}
	var keys []string
	for _, m := range allMethods(cat) {
		checkMethod(t, m)
		keys = append(keys, m.SourceKey+" "+m.Description)
	}
	// A method listed again keeps its first place and takes the later item.
	wantKeys := []string{"https://one.example/a First, again", "https://two.example/b ", "https://three.example/c ", "https://four.example/d "}
	if !slices.Equal(keys, wantKeys) {
		t.Errorf("methods %q, want %q", keys, wantKeys)
	}
}

func TestParseBazaarBrokenFirstLineSkipsOnlyThatLine(t *testing.T) {
	in := `{"resource":"https://one.example/a","accepts":[` + "\n" +
		`{"resource":"https://two.example/b"}` + "\n" +
		`{"resource":"https://three.example/c"}` + "\n"
	cat, skipped := parseBazaarString(t, in)
	if len(skipped) != 1 || skipped[0].Line != 1 {
		t.Errorf("skipped %v", skipped)
	}
	if n := len(allMethods(cat)); n != 2 {
		t.Errorf("%d methods, want 2", n)
	}
}

func TestParseBazaarV1ItemFallsBackToItsFirstOffer(t *testing.T) {
	in := strings.Join([]string{
		// Everything in accepts[0], as x402 v1 put it.
		`{"x402Version":1,"type":"http","accepts":[{"scheme":"exact","network":"base","maxAmountRequired":"5000",` +
			`"resource":"https://v1.example/v1/words/define","description":"Definition of a word. Short.","mimeType":"text/plain",` +
			`"payTo":"0x1","asset":"0x833589fcd6edb6e08f4c7c32d4f71b54bda02913",` +
			`"outputSchema":{"input":{"type":"http","method":"post","bodyFields":{"word":{"type":"string"}}},"output":{"definition":"a short meaning"}}}]}`,
		// The item's own fields win over the offer's.
		`{"x402Version":1,"resource":"https://v1.example/own","description":"Own words","mimeType":"application/json",` +
			`"accepts":[{"scheme":"exact","network":"base","resource":"https://v1.example/other","description":"Offer words","mimeType":"text/html"}]}`,
		// An empty resource falls back too.
		`{"x402Version":1,"resource":" ","accepts":[{"resource":"https://v1.example/empty"}]}`,
	}, "\n")
	cat, skipped := parseBazaarString(t, in)
	if len(skipped) != 0 {
		t.Fatalf("skipped %v", skipped)
	}
	ms := byKey(t, cat)
	def, ok := ms["https://v1.example/v1/words/define"]
	if !ok || def.Description != "Definition of a word. Short." || def.Name != "Definition of a word" || def.Endpoint.Method != "POST" {
		t.Fatalf("v1 method %+v", def)
	}
	g := decodeGuidance(t, def)
	if g.Response.MimeType != "text/plain" || string(g.Request.Body) != `{"word":{"type":"string"}}` ||
		string(g.Response.Example) != `{"definition":"a short meaning"}` {
		t.Errorf("v1 guidance %+v", g)
	}
	own := ms["https://v1.example/own"]
	if own.Description != "Own words" || decodeGuidance(t, own).Response.MimeType != "application/json" {
		t.Errorf("own fields lost: %+v", own)
	}
	if _, ok := ms["https://v1.example/empty"]; !ok {
		t.Errorf("empty resource did not fall back: %v", ms)
	}
}

func TestParseBazaarKeysMCPToolsByURLAndName(t *testing.T) {
	tool := func(name, desc string) string {
		return `{"resource":"https://mcp.tools.example/mcp","type":"mcp","x402Version":2,"description":"A server of small tools",` +
			`"extensions":{"bazaar":{"info":{"input":{"type":"mcp","toolName":"` + name + `","description":"` + desc + `",` +
			`"inputSchema":{"type":"object","properties":{"text":{"type":"string"}}}}}}}}`
	}
	in := strings.Join([]string{
		tool("count_words", "Counts the words of a text"),
		tool("reverse_text", ""),
		tool("count_words", "Counts the words of a text, again"),
		// The spec's own spelling of the name: input.tool.
		`{"resource":"https://mcp.tools.example/mcp","type":"mcp","extensions":{"bazaar":{"info":{"input":{"type":"mcp","tool":"shout","inputSchema":{"type":"object"}}}}}}`,
		// An HTTP endpoint at the same URL is yet another method.
		`{"resource":"https://mcp.tools.example/mcp","type":"http"}`,
	}, "\n")
	cat, skipped := parseBazaarString(t, in)
	if len(skipped) != 0 {
		t.Fatalf("skipped %v", skipped)
	}
	ms := allMethods(cat)
	var got []string
	slugs := map[string]bool{}
	for _, m := range ms {
		checkMethod(t, m)
		got = append(got, fmt.Sprintf("%s|%s|%s|%s", m.Tool, m.Endpoint.Method, m.Name, m.Slug))
		slugs[m.Slug] = true
	}
	want := []string{
		"count_words|POST|Counts the words of a text, again|mcp-tools-mcp-count-words",
		"reverse_text|POST|reverse text|mcp-tools-mcp-reverse-text",
		"shout|POST|shout|mcp-tools-mcp-shout",
		"|GET|mcp|mcp-tools-mcp",
	}
	if !slices.Equal(got, want) {
		t.Errorf("methods\n%q\nwant\n%q", got, want)
	}
	if len(slugs) != 4 {
		t.Errorf("slugs %v", slugs)
	}
	for _, m := range ms[:3] {
		if m.SourceKey != "https://mcp.tools.example/mcp" {
			t.Errorf("%s: source key %q", m.Tool, m.SourceKey)
		}
	}
	if ms[1].Description != "A server of small tools" {
		t.Errorf("a tool without a description of its own takes the item's: %q", ms[1].Description)
	}
}

func TestParseBazaarNamesProviderByServiceName(t *testing.T) {
	in := strings.Join([]string{
		`{"resource":"https://api.north.example/a","serviceName":"  North   Data  "}`,
		`{"resource":"https://other.example/b","serviceName":"North Data"}`,
		`{"resource":"https://api.north.example/c"}`,
		`{"resource":"https://api.north.example/d","serviceName":42}`,
		`{"resource":"https://api.north.example/e","serviceName":"` + strings.Repeat("Long ", 40) + `"}`,
	}, "\n")
	cat, skipped := parseBazaarString(t, in)
	if len(skipped) != 0 {
		t.Fatalf("skipped %v", skipped)
	}
	var got []string
	for _, p := range cat.Providers {
		got = append(got, fmt.Sprintf("%s:%d", p.Name, len(p.Methods)))
	}
	want := []string{"North Data:2", "north.example:2", strings.TrimSpace(strings.Repeat("Long ", 20)) + ":1"}
	if !slices.Equal(got, want) {
		t.Errorf("providers %q, want %q", got, want)
	}
}

func TestTagsChooseTheCategory(t *testing.T) {
	for _, c := range []struct {
		tags []string
		want string
		ok   bool
	}{
		{[]string{"Weather"}, "weather", true},
		{[]string{"AI"}, "ai", true},
		{[]string{"x402", "mcp", "api"}, "", false},
		{[]string{"defi", "analytics"}, "blockchain", true},
		{[]string{"Stock market", "news"}, "news", true}, // a category named outright weighs most
		{[]string{"solana", "finance"}, "finance", true},
		{[]string{"text to speech"}, "media", true},
		{[]string{"Finance", "Weather"}, "finance", true}, // a tie goes to the first tagged
		{[]string{"other"}, "", false},
		{nil, "", false},
	} {
		got, ok := tagCategory(c.tags)
		if got != c.want || ok != c.ok {
			t.Errorf("tagCategory(%q) = %q, %v; want %q, %v", c.tags, got, ok, c.want, c.ok)
		}
	}

	in := strings.Join([]string{
		// The description says blockchain; the seller's tags say weather.
		`{"resource":"https://a.example/1","description":"Block height of the chain","tags":["weather","forecast"]}`,
		// Tags that map to nothing leave the inference to the text.
		`{"resource":"https://a.example/2","description":"Block height of the chain","tags":["x402",7,"mcp"]}`,
		`{"resource":"https://a.example/3","description":"Block height of the chain","tags":"weather"}`,
	}, "\n")
	cat, _ := parseBazaarString(t, in)
	var got []string
	for _, m := range allMethods(cat) {
		got = append(got, m.Category)
	}
	if want := []string{"weather", "blockchain", "blockchain"}; !slices.Equal(got, want) {
		t.Errorf("categories %q, want %q", got, want)
	}
}

func TestParseBazaarKeepsTheListingsQualityAndLastUpdate(t *testing.T) {
	in := strings.Join([]string{
		`{"resource":"https://q.example/full","quality":{"l30DaysTotalCalls":120,"l30DaysUniquePayers":"7","lastCalledAt":"2026-08-01T10:00:00.1234567+02:00"},"lastUpdated":"2026-08-02T00:00:00Z"}`,
		`{"resource":"https://q.example/none"}`,
		`{"resource":"https://q.example/bad","quality":{"l30DaysTotalCalls":-1,"l30DaysUniquePayers":1.5,"lastCalledAt":"yesterday"},"lastUpdated":"99999-01-01T00:00:00Z"}`,
		`{"resource":"https://q.example/unix","quality":[1,2],"lastUpdated":1766458335}`,
	}, "\n")
	cat, skipped := parseBazaarString(t, in)
	if len(skipped) != 0 {
		t.Fatalf("skipped %v", skipped)
	}
	ms := byKey(t, cat)
	full := ms["https://q.example/full"]
	l := full.Listing
	if full.Source != SourceBazaar || l == nil || l.Calls30d == nil || *l.Calls30d != 120 || l.Payers30d == nil || *l.Payers30d != 7 {
		t.Fatalf("listing %+v", l)
	}
	if want := time.Date(2026, 8, 1, 8, 0, 0, 123456000, time.UTC); l.LastCalledAt == nil || !l.LastCalledAt.Equal(want) || l.LastCalledAt.Location() != time.UTC {
		t.Errorf("last called at %v, want %v in UTC", l.LastCalledAt, want)
	}
	if want := time.Date(2026, 8, 2, 0, 0, 0, 0, time.UTC); l.UpdatedAt == nil || !l.UpdatedAt.Equal(want) {
		t.Errorf("updated at %v", l.UpdatedAt)
	}
	for _, key := range []string{"https://q.example/none", "https://q.example/bad"} {
		if l := ms[key].Listing; l == nil || l.Calls30d != nil || l.Payers30d != nil || l.LastCalledAt != nil || l.UpdatedAt != nil {
			t.Errorf("%s: listing %+v, want every figure nil", key, l)
		}
	}
	if l := ms["https://q.example/unix"].Listing; l.UpdatedAt == nil || l.UpdatedAt.Unix() != 1766458335 {
		t.Errorf("unix lastUpdated read as %v", l.UpdatedAt)
	}
	// The listing's figures survive the catalog's JSON form.
	b, _ := json.Marshal(full)
	var back Method
	if err := json.Unmarshal(b, &back); err != nil || *back.Listing.Calls30d != 120 || !back.Listing.UpdatedAt.Equal(*l.UpdatedAt) {
		t.Errorf("round trip %s: %v", b, err)
	}
}
