package api

import (
	"context"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/waystation/waystation/internal/catalog"
	"github.com/waystation/waystation/internal/directory"
	"github.com/waystation/waystation/internal/problem"
	"github.com/waystation/waystation/internal/search"
)

// The search's tool: search_sellers, as GET /services?q=.

// addSearchTools adds the search's tools.
func (s *Server) addSearchTools(srv *mcp.Server) {
	addTool(srv, &mcp.Tool{Name: "search_sellers", Title: "Search sellers", Annotations: directoryRead(),
		Description: "Search the directory of pay-per-call sellers by what you need, in plain words. Send rewrites too: up to four short phrasings of the same need (the capability in standard terms, a keyword version, the API or product category's name); the search reads each and answers only when they agree, which finds more and matches wrongly less. Answers at most three methods, best first, each with its slug (ask get_method for how to call and pay it), price, the directory's advisory verdict and whether Waystation can pay it for you. When fewer than three match, nearest lists the methods that come closest, none of them a match (not_a_match says why). Same ranking and limits as the public search route."},
		s.toolSearch)
}

type searchIn struct {
	Query    string   `json:"query" jsonschema:"what you need, in plain words (at most 1024 bytes)"`
	Rewrites []string `json:"rewrites,omitempty" jsonschema:"up to four other short phrasings of the same need, each at most 256 bytes: the capability in standard terms (e.g. ERC-20 token balance of a wallet), a keyword version (USDT balance Ethereum address), and the API or product category's name (token balance API). Write them from the need alone; each new one counts against your search rate"`
	Category string   `json:"category,omitempty" jsonschema:"only methods of this category (see list_categories)"`
}

// similarOut counts a result's near-duplicates and names the first of them.
type similarOut struct {
	Count int      `json:"count"`
	Slugs []string `json:"slugs"`
}

// notAMatch says why a method near the query is not a match, with the band's figures.
type notAMatch struct {
	Reason     string  `json:"reason" jsonschema:"below_confidence (nothing answers the query well enough), outside_margin (further below the best match than the margin) or below_floor (under the model's floor)"`
	Confidence float64 `json:"confidence" jsonschema:"how sure the search is that its nearest method answers the query"`
	Least      float64 `json:"least" jsonschema:"the least confidence the model accepts"`
	Margin     float64 `json:"margin" jsonschema:"how far below the best match's similarity a match may fall"`
}

type searchOut struct {
	Query   string        `json:"query"`
	Results []methodBrief `json:"results"`
	Nearest []methodBrief `json:"nearest,omitempty" jsonschema:"when fewer than three methods match: the methods nearest the query, none of them a match"`
	Note    string        `json:"note,omitempty"`
}

// toolSearch searches as the route GET /services?q= does: its arguments checked by
// the route's rules, the same search service, charged to the same caller; each
// method is the route's listing item, with its similarity rounded as the route
// writes it.
func (s *Server) toolSearch(ctx context.Context, _ *mcp.CallToolRequest, in searchIn) (*mcp.CallToolResult, searchOut, error) {
	const path = "/api/public/v1/services"
	q, rewrites, f, err := in.parse()
	if err == nil {
		err = s.screenQuery(ctx, principalOf(ctx), q, rewrites...)
	}
	if err != nil {
		return nil, searchOut{}, toolError(s.toolProblem(ctx, path, err))
	}
	snap := s.dir.Current()
	a, err := s.search.SearchPhrased(ctx, s.mcpSearchCaller(ctx), snap, q, rewrites, f)
	if err != nil {
		return nil, searchOut{}, toolError(s.toolProblem(ctx, path, err))
	}
	return nil, searchAnswer(in.Query, snap, a), nil
}

// parse checks the search's arguments by the route's rules, in the route's order:
// the category, the query, then its rewrites.
func (in searchIn) parse() (q string, rewrites []string, f directory.Filter, err error) {
	var prob *problem.Error
	if in.Category != "" {
		if f.Categories, prob = parseList("category", in.Category, catalog.Categories); prob != nil {
			return "", nil, f, prob
		}
	}
	if q, prob = parseQ(in.Query); prob != nil {
		return "", nil, f, prob
	}
	if len(in.Rewrites) > search.MaxRewrites {
		return "", nil, f, problem.Param(problem.InvalidParameter, "rewrite",
			"At most "+strconv.Itoa(search.MaxRewrites)+" rewrites go with one query; "+strconv.Itoa(len(in.Rewrites))+" were sent.")
	}
	rewrites = make([]string, len(in.Rewrites))
	for i, r := range in.Rewrites {
		if rewrites[i], prob = parseRewrite(r); prob != nil {
			return "", nil, f, prob
		}
	}
	return q, rewrites, f, nil
}

// searchAnswer is the search's answer a to query as the tool says it: its results
// brief, each with its near-duplicates' slugs, and, when fewer than three match,
// the nearest methods with why they are not a match.
func searchAnswer(query string, snap *directory.Snapshot, a search.Answer) searchOut {
	out := searchOut{Query: query, Results: make([]methodBrief, 0, len(a.Hits))}
	for _, h := range a.Hits {
		out.Results = append(out.Results, hitBrief(snap, h))
	}
	if band := a.Band; band != nil {
		for _, n := range a.Nearest {
			b := brief(snap.Item(n.Pos))
			b.Similarity = ptrTo(rounded(n.Similarity))
			b.NotAMatch = &notAMatch{Reason: n.Reason, Confidence: rounded(band.Confidence), Least: rounded(band.Least), Margin: rounded(band.Margin)}
			out.Nearest = append(out.Nearest, b)
		}
	}
	switch {
	case len(out.Results) == 0 && len(out.Nearest) > 0:
		out.Note = "Nothing in the directory matches; nearest lists the methods that come closest, none of them a match: check one does what you need before you pay it, or try other words, or list_categories."
	case len(out.Results) == 0:
		out.Note = "Nothing in the directory is near enough; try other words, or list_categories."
	}
	return out
}

// hitBrief is a search's hit h brief, with its similarity, its rank's score and
// the first of its near-duplicates.
func hitBrief(snap *directory.Snapshot, h search.Hit) methodBrief {
	b := brief(snap.Item(h.Pos))
	b.Similarity = ptrTo(rounded(h.Similarity))
	b.RankScore = ptrTo(rounded(h.Score))
	if len(h.Similar) > 0 {
		b.Similar = &similarOut{Count: len(h.Similar)}
		for _, p := range h.Similar[:min(len(h.Similar), search.MaxSimilar)] {
			b.Similar.Slugs = append(b.Similar.Slugs, snap.Methods()[p].Slug)
		}
	}
	return b
}
