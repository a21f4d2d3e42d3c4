package web

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/waystation/waystation/internal/resource"
)

// Where the site's discovery documents answer: the API catalog (RFC 9727) and
// security.txt (RFC 9116) at their well-known URIs, and robots.txt.
const (
	apiCatalogPath  = "/.well-known/api-catalog"
	securityTxtPath = "/.well-known/security.txt"
	robotsPath      = "/robots.txt"
)

// APICatalogType is the media type of the API catalog: a JSON linkset (RFC 9264)
// with the profile RFC 9727 registers for an API catalog.
const APICatalogType = `application/linkset+json; profile="https://www.rfc-editor.org/info/rfc9727"`

// APICatalogLink is the Link header that points at the API catalog (RFC 9727's
// api-catalog relation): the site's root and the catalog itself answer with it.
const APICatalogLink = `<` + apiCatalogPath + `>; rel="api-catalog"`

var hdrAPICatalogLink = []string{APICatalogLink}

// Discovery is what the discovery documents say beyond the API's own description.
type Discovery struct {
	// PublicURL is the origin the site is published under (https://host), "" when
	// not known: links are then relative references, which a reader resolves
	// against the document's own URL, and security.txt names no Canonical.
	PublicURL string
	// SecurityContact is security.txt's Contact: one or more URIs (mailto:, https:
	// or tel:).
	SecurityContact []string
	// Now is the clock security.txt's Expires is computed from; nil: time.Now.
	Now func() time.Time
}

// WithDiscovery serves the API catalog, security.txt and robots.txt; the catalog
// also needs WithReference, which says where the API is described.
func WithDiscovery(d Discovery) Option {
	return func(s *Server) {
		if d.Now == nil {
			d.Now = time.Now
		}
		s.discovery = &discovery{Discovery: d, robots: resource.New("text/plain; charset=utf-8", []byte(Robots()))}
	}
}

// discovery holds the documents, made once (security.txt once a day).
type discovery struct {
	Discovery
	robots   *resource.Resource
	catalog  *resource.Resource
	security atomic.Pointer[datedResource]
}

type datedResource struct {
	day string
	res *resource.Resource
}

// Robots is /robots.txt: crawlers may read the directory's pages, and are kept off
// the API (the MCP server is under it), the console, the search page (each search
// spends the daily allowance of the embedding model) and the metrics. The site has
// no sitemap: the home page and the category pages link every method and merchant.
func Robots() string {
	return "# The directory's pages are for everyone; the API, the console and search are not for crawlers.\n" +
		"User-agent: *\n" +
		"Allow: /\n" +
		"Disallow: /functions/\n" +
		"Disallow: /app/\n" +
		"Disallow: /search\n" +
		"Disallow: /metrics\n"
}

// linkTarget is one link of a linkset (RFC 9264, section 4.2.3).
type linkTarget struct {
	Href  string `json:"href"`
	Type  string `json:"type,omitempty"`
	Title string `json:"title,omitempty"`
}

// APICatalog is the API catalog (RFC 9727): one link context, the API's base, with
// its OpenAPI document (service-desc), its reference page and /llms.txt
// (service-doc), its health (status) and the MCP server (item: a second endpoint of
// the same API), and the catalog's own URL (api-catalog). Links are absolute under
// origin, or relative references when origin is "".
func (ref *Reference) APICatalog(origin string) []byte {
	at := func(path string) string { return origin + path }
	context := map[string]any{
		"anchor":       at(ref.Base),
		"service-desc": []linkTarget{{Href: at(ref.DocURL), Type: "application/openapi+json", Title: ref.Title + " OpenAPI document"}},
		"service-doc": []linkTarget{
			{Href: at(referencePath), Type: "text/html", Title: "API reference"},
			{Href: at(llmsPath), Type: "text/markdown", Title: "The API for agents (llms.txt)"},
		},
		"status":      []linkTarget{{Href: at(ref.Base + "/health"), Type: "application/json"}},
		"item":        []linkTarget{{Href: at(ref.Base + "/mcp"), Title: "MCP server (Streamable HTTP)"}},
		"api-catalog": []linkTarget{{Href: at(apiCatalogPath)}},
	}
	b, _ := json.MarshalIndent(map[string]any{"linkset": []any{context}}, "", "  ")
	return append(b, '\n')
}

// SecurityTxt is /.well-known/security.txt (RFC 9116) as of now: Contact, an
// Expires a week after the end of today (UTC), never stale while the service runs,
// the languages reports are read in, and, under a known origin, the file's
// Canonical URL.
func (d Discovery) SecurityTxt(now time.Time) string {
	var b strings.Builder
	b.WriteString("# How to report a security problem in this Waystation service.\n")
	for _, c := range d.SecurityContact {
		fmt.Fprintf(&b, "Contact: %s\n", c)
	}
	day := now.UTC().Truncate(24 * time.Hour)
	fmt.Fprintf(&b, "Expires: %s\n", day.AddDate(0, 0, 8).Add(-time.Second).Format(time.RFC3339))
	b.WriteString("Preferred-Languages: en\n")
	if d.PublicURL != "" {
		fmt.Fprintf(&b, "Canonical: %s%s\n", d.PublicURL, securityTxtPath)
	}
	return b.String()
}

func (s *Server) handleAPICatalog() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Link"] = hdrAPICatalogLink
		w.Header()["Access-Control-Allow-Origin"] = hdrAnyOrigin
		serve(w, r, s.discovery.catalog, cachePublic, http.StatusOK)
	}
}

func (s *Server) handleSecurityTxt() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		d := s.discovery
		now := d.Now()
		day := now.UTC().Format(time.DateOnly)
		cur := d.security.Load()
		if cur == nil || cur.day != day {
			cur = &datedResource{day: day, res: resource.New("text/plain; charset=utf-8", []byte(d.SecurityTxt(now)))}
			d.security.Store(cur)
		}
		serve(w, r, cur.res, cachePublic, http.StatusOK)
	}
}

func (s *Server) handleRobots() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		serve(w, r, s.discovery.robots, cachePublic, http.StatusOK)
	}
}

var hdrAnyOrigin = []string{"*"}
