package web

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"
)

// discoveryServer is the pages with the API's reference and the discovery documents.
func discoveryServer(t *testing.T, d Discovery) *Server {
	t.Helper()
	doc, err := os.ReadFile("../api/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	ref, err := ParseReference(doc, "/functions/v1/api/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	return NewServer(slog.New(slog.DiscardHandler), fixed{testSnapshot(t)}, testViews, nil, WithReference(ref), WithDiscovery(d))
}

func ask(srv http.Handler, method, path string, header ...string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(method, path, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	srv.ServeHTTP(rec, req)
	return rec
}

// The API catalog is RFC 9727's: a JSON linkset with the catalog profile, anchored
// at the API's base, linking the OpenAPI document, the docs, llms.txt and the MCP
// server; HEAD answers with the api-catalog Link, and so does the site's root.
func TestAPICatalogLinksTheAPIsDescriptions(t *testing.T) {
	for _, origin := range []string{"", "https://waystation.example"} {
		srv := discoveryServer(t, Discovery{PublicURL: origin, SecurityContact: []string{"mailto:security@waystation.example"}})
		get := ask(srv, "GET", "/.well-known/api-catalog")
		if get.Code != 200 || get.Header().Get("Content-Type") != `application/linkset+json; profile="https://www.rfc-editor.org/info/rfc9727"` {
			t.Fatalf("GET: %d %q", get.Code, get.Header().Get("Content-Type"))
		}
		if get.Header().Get("Link") != `</.well-known/api-catalog>; rel="api-catalog"` || get.Header().Get("ETag") == "" ||
			get.Header().Get("Cache-Control") != "public, max-age=300" {
			t.Errorf("GET headers %v", get.Header())
		}
		var doc struct {
			Linkset []map[string]json.RawMessage `json:"linkset"`
		}
		if err := json.Unmarshal(get.Body.Bytes(), &doc); err != nil || len(doc.Linkset) != 1 {
			t.Fatalf("linkset %s: %v", get.Body, err)
		}
		ctx := doc.Linkset[0]
		var anchor string
		json.Unmarshal(ctx["anchor"], &anchor)
		if anchor != origin+"/functions/v1/api" {
			t.Errorf("anchor %q", anchor)
		}
		hrefs := func(rel string) []string {
			var targets []struct{ Href, Type string }
			if err := json.Unmarshal(ctx[rel], &targets); err != nil {
				t.Errorf("%s: %s", rel, ctx[rel])
			}
			var out []string
			for _, l := range targets {
				out = append(out, l.Href)
			}
			return out
		}
		for rel, want := range map[string]string{
			"service-desc": origin + "/functions/v1/api/openapi.json",
			"service-doc":  origin + "/docs/api " + origin + "/llms.txt",
			"item":         origin + "/functions/v1/api/mcp",
			"status":       origin + "/functions/v1/api/health",
			"api-catalog":  origin + "/.well-known/api-catalog",
		} {
			if got := strings.Join(hrefs(rel), " "); got != want {
				t.Errorf("%s: %q, want %q", rel, got, want)
			}
		}
		// Every link of the catalog answers on this server or is the API's, which
		// another handler serves.
		for rel := range ctx {
			if rel == "anchor" {
				continue
			}
			for _, h := range hrefs(rel) {
				p := strings.TrimPrefix(h, origin)
				if strings.HasPrefix(p, "/functions/") {
					continue
				}
				if res := ask(srv, "GET", p); res.Code != 200 {
					t.Errorf("%s %s: %d", rel, p, res.Code)
				}
			}
		}

		head := ask(srv, "HEAD", "/.well-known/api-catalog")
		if head.Code != 200 || head.Body.Len() != 0 || head.Header().Get("Link") != get.Header().Get("Link") ||
			head.Header().Get("Content-Type") != get.Header().Get("Content-Type") || head.Header().Get("ETag") != get.Header().Get("ETag") {
			t.Errorf("HEAD: %d, %d bytes, %v", head.Code, head.Body.Len(), head.Header())
		}
		if res := ask(srv, "GET", "/.well-known/api-catalog", "If-None-Match", get.Header().Get("ETag")); res.Code != http.StatusNotModified {
			t.Errorf("revalidation: %d", res.Code)
		}
		for _, m := range []string{"GET", "HEAD"} {
			if root := ask(srv, m, "/"); root.Code != 200 || root.Header().Get("Link") != `</.well-known/api-catalog>; rel="api-catalog"` {
				t.Errorf("%s /: %d, Link %q", m, root.Code, root.Header().Get("Link"))
			}
		}
		if res := ask(srv, "POST", "/.well-known/api-catalog"); res.Code != http.StatusMethodNotAllowed {
			t.Errorf("POST: %d", res.Code)
		}
	}

	// Without the discovery documents the root names no catalog.
	if root := ask(NewServer(slog.New(slog.DiscardHandler), fixed{testSnapshot(t)}, testViews, nil), "GET", "/"); root.Header().Get("Link") != "" {
		t.Errorf("no catalog, yet Link %q", root.Header().Get("Link"))
	}
}

// security.txt has RFC 9116's required fields, Contact and Expires, and an Expires
// that is never in the past: it moves with the clock, a week ahead.
func TestSecurityTxtNeverExpires(t *testing.T) {
	now := time.Date(2026, 12, 2, 23, 59, 0, 0, time.UTC)
	d := Discovery{PublicURL: "https://waystation.example", SecurityContact: []string{"mailto:sec@waystation.example", "https://waystation.example/security"},
		Now: func() time.Time { return now }}
	srv := discoveryServer(t, d)
	res := ask(srv, "GET", "/.well-known/security.txt")
	if res.Code != 200 || res.Header().Get("Content-Type") != "text/plain; charset=utf-8" {
		t.Fatalf("%d %q", res.Code, res.Header().Get("Content-Type"))
	}
	fields := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(res.Body.String()), "\n") {
		if strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, ": ")
		if !ok {
			t.Fatalf("line %q", line)
		}
		fields[k] = append(fields[k], v)
	}
	if strings.Join(fields["Contact"], " ") != "mailto:sec@waystation.example https://waystation.example/security" ||
		strings.Join(fields["Canonical"], "") != "https://waystation.example/.well-known/security.txt" ||
		strings.Join(fields["Preferred-Languages"], "") != "en" || len(fields["Expires"]) != 1 {
		t.Fatalf("fields %v", fields)
	}
	expires := func(body string) time.Time {
		for _, line := range strings.Split(body, "\n") {
			if v, ok := strings.CutPrefix(line, "Expires: "); ok {
				at, err := time.Parse(time.RFC3339, v)
				if err != nil {
					t.Fatal(err)
				}
				return at
			}
		}
		t.Fatal("no Expires")
		return time.Time{}
	}
	first := expires(res.Body.String())
	if !first.After(now.Add(6*24*time.Hour)) || first.After(now.AddDate(1, 0, 0)) {
		t.Errorf("Expires %v at %v: want about a week ahead, and less than a year (RFC 9116 2.5.5)", first, now)
	}
	if head := ask(srv, "HEAD", "/.well-known/security.txt"); head.Code != 200 || head.Body.Len() != 0 || head.Header().Get("ETag") != res.Header().Get("ETag") {
		t.Errorf("HEAD %d %v", head.Code, head.Header())
	}
	// Months later, the same server's file is still current.
	now = now.AddDate(0, 3, 0)
	later := ask(srv, "GET", "/.well-known/security.txt")
	if at := expires(later.Body.String()); !at.After(now) || !at.After(first) || later.Header().Get("ETag") == res.Header().Get("ETag") {
		t.Errorf("three months on, Expires %v at %v", at, now)
	}

	// Without a public origin there is no Canonical.
	d.PublicURL = ""
	if body := ask(discoveryServer(t, d), "GET", "/.well-known/security.txt").Body.String(); strings.Contains(body, "Canonical") {
		t.Errorf("no origin, yet %s", body)
	}
}

// robots.txt lets crawlers read the directory's pages and keeps them off the API
// (MCP included), the console, search and the metrics.
func TestRobotsTxtKeepsCrawlersOffTheAPI(t *testing.T) {
	srv := discoveryServer(t, Discovery{SecurityContact: []string{"mailto:security@localhost"}})
	res := ask(srv, "GET", "/robots.txt")
	if res.Code != 200 || res.Header().Get("Content-Type") != "text/plain; charset=utf-8" || res.Header().Get("Cache-Control") != "public, max-age=300" {
		t.Fatalf("%d %v", res.Code, res.Header())
	}
	// The rules as a crawler reads them: the longest matching prefix wins.
	var allow, disallow []string
	for _, line := range strings.Split(res.Body.String(), "\n") {
		if v, ok := strings.CutPrefix(line, "Allow: "); ok {
			allow = append(allow, v)
		}
		if v, ok := strings.CutPrefix(line, "Disallow: "); ok {
			disallow = append(disallow, v)
		}
	}
	allowed := func(path string) bool {
		best, ok := -1, true
		for _, p := range allow {
			if strings.HasPrefix(path, p) && len(p) > best {
				best, ok = len(p), true
			}
		}
		for _, p := range disallow {
			if strings.HasPrefix(path, p) && len(p) >= best {
				best, ok = len(p), false
			}
		}
		return ok
	}
	for path, want := range map[string]bool{
		"/": true, "/categories/blockchain": true, "/methods/x": true, "/merchants/a.example": true, "/docs/api": true, "/llms.txt": true,
		"/functions/v1/api/api/public/v1/services": false, "/functions/v1/api/mcp": false, "/app/requests": false,
		"/search?q=x": false, "/metrics": false,
	} {
		if allowed(path) != want {
			t.Errorf("%s: allowed %v, want %v", path, !want, want)
		}
	}
	if head := ask(srv, "HEAD", "/robots.txt"); head.Code != 200 || head.Body.Len() != 0 {
		t.Errorf("HEAD %d", head.Code)
	}
}
