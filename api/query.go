package api

import (
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/waystation/waystation/internal/catalog"
	"github.com/waystation/waystation/internal/directory"
	"github.com/waystation/waystation/internal/problem"
	"github.com/waystation/waystation/internal/search"
)

// maxPage bounds limit and offset: far above any catalog, low enough to stay an int.
const maxPage = 1_000_000

// servicesQuery is a parsed query string of GET /api/public/v1/services.
type servicesQuery struct {
	Q      string // empty: the list
	Search bool
	// Rewrites are the caller's own phrasings of Q, in the order given.
	Rewrites []string
	Filter   directory.Filter
}

var servicesParams = []string{"q", "rewrite", "category", "verdict", "kind", "payable", "hostname", "limit", "offset"}

// parseServicesQuery reads the raw query string strictly: nothing silently means less
// than it says, so `verified` in any form, an unknown or repeated parameter and a
// malformed value are refused.
func parseServicesQuery(raw string) (servicesQuery, *problem.Error) {
	var sq servicesQuery
	type pair struct{ key, rawKey, value string }
	var pairs []pair
	for seg := range strings.SplitSeq(raw, "&") {
		if seg == "" {
			continue
		}
		rawKey, rawValue, _ := strings.Cut(seg, "=")
		key, err := url.QueryUnescape(rawKey)
		if err != nil {
			return sq, problem.Param(problem.InvalidParameter, rawKey, "The parameter name is not valid percent-encoding.")
		}
		if strings.EqualFold(strings.TrimSpace(key), "verified") {
			return sq, problem.Param(problem.VerifiedReserved, "verified",
				"The verified parameter is reserved for a future verified badge and is refused so that no request silently means less than it says. Use verdict=proceed for the closest filter.")
		}
		value, err := url.QueryUnescape(rawValue)
		if err != nil {
			return sq, problem.Param(problem.InvalidParameter, key, "The value is not valid percent-encoding.")
		}
		pairs = append(pairs, pair{key, rawKey, value})
	}
	seen := make(map[string]bool, len(pairs))
	for _, p := range pairs {
		if !slices.Contains(servicesParams, p.key) {
			return sq, problem.Param(problem.UnknownParameter, p.key,
				"This route takes only q, rewrite, category, verdict, kind, payable, hostname, limit and offset.")
		}
		if seen[p.key] && p.key != "rewrite" {
			return sq, problem.Param(problem.UnknownParameter, p.key,
				"The parameter is repeated; give several values as one comma-separated list.")
		}
		seen[p.key] = true
	}
	f := &sq.Filter
	for _, p := range pairs {
		var prob *problem.Error
		switch p.key {
		case "q":
			sq.Search = true
			sq.Q, prob = parseQ(p.value)
		case "rewrite":
			var r string
			if r, prob = parseRewrite(p.value); prob == nil {
				sq.Rewrites = append(sq.Rewrites, r)
			}
		case "category":
			f.Categories, prob = parseList(p.key, p.value, catalog.Categories)
		case "verdict":
			f.Verdicts, prob = parseList(p.key, p.value, directory.Verdicts)
		case "kind":
			f.Kinds, prob = parseList(p.key, p.value, catalog.Kinds)
		case "payable":
			var b bool
			b, prob = parseBool(p.key, p.value)
			f.Payable = &b
		case "hostname":
			h, err := catalog.NormalizeHostname(p.value)
			if err != nil {
				prob = problem.Param(problem.InvalidParameter, p.key, "The hostname is not a valid hostname: "+err.Error()+".")
			}
			f.Hostname = h
		case "limit":
			f.Limit, prob = parseInt(p.key, p.value, 1)
		case "offset":
			f.Offset, prob = parseInt(p.key, p.value, 0)
		}
		if prob != nil {
			return sq, prob
		}
	}
	switch {
	case len(sq.Rewrites) > 0 && !sq.Search:
		return sq, problem.Param(problem.InvalidParameter, "rewrite", "A rewrite is a phrasing of q: send it with q.")
	case len(sq.Rewrites) > search.MaxRewrites:
		return sq, problem.Param(problem.InvalidParameter, "rewrite", "At most "+strconv.Itoa(search.MaxRewrites)+" rewrites go with one q; "+strconv.Itoa(len(sq.Rewrites))+" were sent.")
	}
	if sq.Search && f.Offset != 0 {
		return sq, problem.Param(problem.InvalidParameter, "offset", "Search returns at most three methods: offset applies only to the list.")
	}
	return sq, nil
}

func parseQ(v string) (string, *problem.Error) {
	return parseText("q", "query", v, search.MaxQueryBytes, "leave q out for the list")
}

// parseRewrite reads one phrasing of q: as q is read, at most search.MaxRewriteBytes.
func parseRewrite(v string) (string, *problem.Error) {
	return parseText("rewrite", "rewrite", v, search.MaxRewriteBytes, "leave it out")
}

// parseText reads the text of parameter key (the "what" its problems name): valid
// UTF-8, trimmed, not empty (else leave says what to do), at most maxBytes.
func parseText(key, what, v string, maxBytes int, leave string) (string, *problem.Error) {
	if !utf8.ValidString(v) {
		return "", problem.Param(problem.InvalidParameter, key, "The "+what+" is not valid UTF-8.")
	}
	v = strings.TrimSpace(v)
	switch {
	case v == "":
		return "", problem.Param(problem.InvalidParameter, key, "The "+what+" is empty; "+leave+".")
	case len(v) > maxBytes:
		return "", problem.Param(problem.QueryTooLong, key, "The "+what+" is "+strconv.Itoa(len(v))+" UTF-8 bytes long; the most is "+strconv.Itoa(maxBytes)+".")
	}
	return v, nil
}

// parseList reads a comma-separated list of allowed values, any case.
func parseList(key, v string, allowed []string) ([]string, *problem.Error) {
	var out []string
	for part := range strings.SplitSeq(v, ",") {
		part = strings.ToLower(strings.TrimSpace(part))
		if !slices.Contains(allowed, part) {
			return nil, problem.Param(problem.InvalidParameter, key,
				strconv.Quote(part)+" is not one of: "+strings.Join(allowed, ", ")+".")
		}
		if !slices.Contains(out, part) {
			out = append(out, part)
		}
	}
	return out, nil
}

func parseBool(key, v string) (bool, *problem.Error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true", "1", "yes":
		return true, nil
	case "false", "0", "no":
		return false, nil
	}
	return false, problem.Param(problem.InvalidParameter, key, "Use true or false (also 1/0, yes/no).")
}

func parseInt(key, v string, min int) (int, *problem.Error) {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < min || n > maxPage {
		return 0, problem.Param(problem.InvalidParameter, key,
			"Use a whole number from "+strconv.Itoa(min)+" to "+strconv.Itoa(maxPage)+".")
	}
	return n, nil
}
