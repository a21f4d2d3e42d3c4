package api

import (
	"context"
	"encoding/json"
	"net/url"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/waystation/waystation/internal/directory"
)

// The directory's tools: get_method, check_merchant and list_categories, as the
// public routes of a method, a merchant and the list's facets.

// addDirectoryTools adds the directory's tools.
func (s *Server) addDirectoryTools(srv *mcp.Server) {
	addTool(srv, &mcp.Tool{Name: "get_method", Title: "Get a method", Annotations: directoryRead(),
		Description: "One method of the directory by its slug: how to call it (request, example), what it answers, and how to pay it, with its trust verdict."},
		s.toolMethod)
	addTool(srv, &mcp.Tool{Name: "check_merchant", Title: "Check a merchant", Annotations: directoryRead(),
		Description: "The directory's trust record for a seller's hostname: the advisory verdict and score, the last probes, settled-payment stats, what paying agents reported of its deliveries, the use the service saw of it, its methods, and whether it resembles an established seller (lookalike). Advisory: it never authorises a payment."},
		s.toolMerchant)
	addTool(srv, &mcp.Tool{Name: "list_categories", Title: "List categories", Annotations: directoryRead(),
		Description: "The directory's categories with how many methods each holds, to narrow a search."},
		s.toolCategories)
}

// directoryRead is what the directory's tools are: read-only, over the directory
// alone.
func directoryRead() *mcp.ToolAnnotations {
	return &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptrTo(false)}
}

// methodBrief is a method as a model needs it to choose: small, with the slug to ask
// for more.
type methodBrief struct {
	Slug       string   `json:"slug"`
	Name       string   `json:"name"`
	Provider   string   `json:"provider"`
	Hostname   string   `json:"hostname"`
	Category   string   `json:"category"`
	Kind       string   `json:"kind"`
	Summary    string   `json:"summary"`
	Price      string   `json:"price,omitempty" jsonschema:"the price per call as the last probe saw it, e.g. 0.01 USDC"`
	Verdict    string   `json:"verdict" jsonschema:"proceed, caution, avoid or unknown: advisory"`
	Score      *int     `json:"score,omitempty"`
	Payable    bool     `json:"payable" jsonschema:"Waystation can pay this method for you (pay_seller)"`
	Similarity *float64 `json:"similarity,omitempty"`
	RankScore  *float64 `json:"rank_score,omitempty" jsonschema:"what results are ordered by: the similarity with the weight of your words the method holds, or, with rewrites, the fused score of your phrasings"`
	// Similar names a result's near-duplicates, when it has any.
	Similar *similarOut `json:"similar,omitempty" jsonschema:"other sellers of the same thing (one host's near-identical endpoints, or the same API resold): how many, and the slugs of the first 20, the most trusted first; ask get_method for any"`
	// NotAMatch is set on a search's nearest methods alone.
	NotAMatch *notAMatch `json:"not_a_match,omitempty" jsonschema:"set on nearest methods only: why the method is not a match"`
}

// brief makes a listing item (or a method's detail) brief; the summary is cut at 200
// bytes on a word.
func brief(raw []byte) methodBrief {
	var m directory.Method
	json.Unmarshal(raw, &m)
	b := methodBrief{Slug: m.Slug, Name: m.Name, Provider: m.Provider, Hostname: m.Hostname, Category: m.Category, Kind: m.Kind,
		Summary: cutWords(m.Description, 200), Verdict: m.Trust.Verdict, Score: m.Trust.Score, Payable: m.Payable}
	if p := m.Trust.Probe; p != nil && p.Price != nil && p.Price.Value != nil {
		b.Price = *p.Price.Value
		if p.AssetSymbol != nil {
			b.Price += " " + *p.AssetSymbol
		}
	}
	return b
}

func cutWords(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := strings.LastIndex(s[:n], " ")
	if cut < n/2 {
		cut = n
	}
	return strings.TrimSpace(s[:cut]) + "…"
}

type slugIn struct {
	Slug string `json:"slug" jsonschema:"the method's slug, as search_sellers answers it"`
}

type methodOut struct {
	methodBrief
	Endpoint directory.Endpoint `json:"endpoint"`
	Guidance map[string]any     `json:"guidance" jsonschema:"how to call and pay: summary, request, response, payment, notes"`
}

func (s *Server) toolMethod(ctx context.Context, _ *mcp.CallToolRequest, in slugIn) (*mcp.CallToolResult, methodOut, error) {
	if in.Slug == "" || strings.ContainsAny(in.Slug, "/?#") {
		return nil, methodOut{}, invalid("slug must be a method's slug, as search_sellers answers it.")
	}
	res, err := s.dir.Method(in.Slug)
	if err != nil {
		return nil, methodOut{}, toolError(s.toolProblem(ctx, "/api/public/v1/services/"+url.PathEscape(in.Slug), err))
	}
	var m struct {
		Endpoint directory.Endpoint `json:"endpoint"`
		Guidance map[string]any     `json:"guidance"`
	}
	json.Unmarshal(res.Body, &m)
	return nil, methodOut{methodBrief: brief(res.Body), Endpoint: m.Endpoint, Guidance: m.Guidance}, nil
}

type merchantIn struct {
	Hostname string `json:"hostname" jsonschema:"the seller's hostname, e.g. api.example.com (a URL is read for its host)"`
}

type merchantOut struct {
	Hostname  string           `json:"hostname"`
	Providers []string         `json:"providers"`
	Verdict   string           `json:"verdict"`
	Score     *int             `json:"score,omitempty"`
	Advisory  bool             `json:"advisory"`
	Override  string           `json:"override,omitempty" jsonschema:"an operator's reason, when one set the verdict"`
	LastProbe string           `json:"lastProbe,omitempty"`
	Stats     *directory.Stats `json:"stats,omitempty"`
	Methods   []string         `json:"methods" jsonschema:"the slugs of its methods"`
	// Reports and Demand are the record's trust block's: what payers reported of
	// the seller's deliveries, and the use the service saw of it.
	Reports *directory.Reports       `json:"reports,omitempty" jsonschema:"what paying agents and their people reported of its deliveries, with the paid calls the service recorded as not delivered; one person's reports count once a day, weighed by what was paid"`
	Demand  *directory.ServiceDemand `json:"serviceDemand,omitempty" jsonschema:"payments the service settled with it over 30 days and the people they came from; payers seen on one day only count a quarter in organic_payers_30d"`
	// Lookalike is the trust block's look-alike flag, when the seller has one.
	Lookalike *directory.Lookalike `json:"lookalike,omitempty" jsonschema:"present when the seller's hostname or provider name resembles an established seller's (resembles: whom, by which signal); while cleared is null the verdict is capped at caution: check you are paying the seller you meant"`
}

func (s *Server) toolMerchant(ctx context.Context, _ *mcp.CallToolRequest, in merchantIn) (*mcp.CallToolResult, merchantOut, error) {
	host := in.Hostname
	if u, err := url.Parse(host); err == nil && u.Host != "" {
		host = u.Hostname()
	}
	if host == "" || strings.ContainsAny(host, "/?#") {
		return nil, merchantOut{}, invalid("hostname must be a seller's hostname, such as api.example.com.")
	}
	res, err := s.dir.Merchant(host)
	var body []byte
	if err == nil {
		body, err = res.Bytes()
	}
	if err != nil {
		return nil, merchantOut{}, toolError(s.toolProblem(ctx, "/api/public/v1/merchants/"+url.PathEscape(host), err))
	}
	var m directory.Merchant
	json.Unmarshal(body, &m)
	out := merchantOut{Hostname: m.Hostname, Providers: m.Providers, Verdict: m.Trust.Verdict, Score: m.Trust.Score,
		Advisory: m.Trust.Advisory, Stats: m.Stats, Methods: make([]string, 0, len(m.Methods)), Reports: m.Trust.Reports, Demand: m.Trust.Demand}
	if o := m.Trust.Override; o != nil {
		out.Override = o.Verdict + ": " + o.Reason
	}
	out.Lookalike = m.Trust.Lookalike
	if p := m.Trust.Probe; p != nil {
		out.LastProbe = p.Outcome + " at " + p.ProbedAt.UTC().Format(time.RFC3339)
	}
	for _, me := range m.Methods {
		out.Methods = append(out.Methods, me.Slug)
	}
	return nil, out, nil
}

type categoriesOut struct {
	Categories []categoryCount `json:"categories"`
}

type categoryCount struct {
	Category string `json:"category"`
	Methods  int    `json:"methods"`
}

// toolCategories reads the facets of the list a route answers to GET
// /services?limit=1.
func (s *Server) toolCategories(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, categoriesOut, error) {
	res := s.dir.List(s.dir.Current(), directory.Filter{Limit: 1})
	var page struct {
		Facets struct {
			Category []struct {
				Value string `json:"value"`
				Count int    `json:"count"`
			} `json:"category"`
		} `json:"facets"`
	}
	json.Unmarshal(res.Body, &page)
	out := categoriesOut{Categories: []categoryCount{}}
	for _, f := range page.Facets.Category {
		out.Categories = append(out.Categories, categoryCount{f.Value, f.Count})
	}
	return nil, out, nil
}
