package api

import (
	"context"
	"math"
	"net/http"
	"strconv"

	"github.com/waystation/waystation/internal/auth"
	"github.com/waystation/waystation/internal/directory"
	"github.com/waystation/waystation/internal/jsonstr"
	"github.com/waystation/waystation/internal/problem"
	"github.com/waystation/waystation/internal/resource"
	"github.com/waystation/waystation/internal/search"
)

// WithSearch answers q through svc, which holds each caller to its limits.
func WithSearch(svc *search.Service) Option {
	return func(s *Server) { s.search = svc }
}

// handleSearch answers GET /services?q=...: the search service decides who is asking
// and whether they may, then ranks; the body is the snapshot's listing items, each
// with its similarity, and, when the band kept fewer than three, the nearest others,
// marked as no match.
func (s *Server) handleSearch(w http.ResponseWriter, r *http.Request, snap *directory.Snapshot, sq servicesQuery) {
	p := s.keyPrincipal(r)
	if err := s.screenQuery(r.Context(), p, sq.Q, sq.Rewrites...); err != nil {
		w.Header()["Cache-Control"] = hdrNoStore // the key's user's answer alone
		s.error(w, r, err)
		return
	}
	a, err := s.search.SearchPhrased(r.Context(), callerOf(r, p.UserID), snap, sq.Q, sq.Rewrites, sq.Filter)
	// The caller's quota is told only on answers no shared cache keeps: a 429, or any
	// answer to a caller named by its key (made private). On a public answer a CDN
	// would replay one caller's quota to everyone.
	refused := problem.CodeOf(err) == problem.RateLimited
	if a.Rate.Limit > 0 && (refused || a.Keyed) {
		h := w.Header()
		h.Set("RateLimit-Policy", `"search";q=`+strconv.Itoa(a.Rate.Limit)+`;w=`+strconv.Itoa(problem.Seconds(s.search.Limiter.Window())))
		h.Set("RateLimit", `"search";r=`+strconv.Itoa(a.Rate.Remaining)+`;t=`+strconv.Itoa(problem.Seconds(a.Rate.Reset)))
	}
	if err != nil {
		if r.Context().Err() == nil || problem.CodeOf(err) != "" {
			s.error(w, r, err)
		}
		return
	}
	if a.Keyed {
		w.Header()["Cache-Control"] = hdrCachePrivate
	}
	// A search answer is made for this request alone: it is gzipped only for a client
	// that takes gzip, which otherwise costs more than the search itself.
	body := appendSearch(nil, snap, sq.Q, a.Result)
	if resource.AcceptsGzip(r.Header) {
		resource.Serve(w, r, resource.NewLevels(resource.JSON, body, resource.Levels{Gzip: 1}), http.StatusOK)
		return
	}
	resource.Serve(w, r, resource.NewIdentity(resource.JSON, body), http.StatusOK)
}

// screenQuery refuses the query q of a caller that carries p's key when it holds
// one of p's user's protected values, in some written form, with the check every
// write route makes (see checkProtected): protected_value_detected, before the
// limiter, the engine, its cache or an embedding provider sees q, and before the
// answer could say it back. A keyless caller has no saved values to hold.
func (s *Server) screenQuery(ctx context.Context, p auth.Principal, q string, rewrites ...string) error {
	if p.UserID == "" {
		return nil
	}
	return s.checkParts(context.WithValue(ctx, principalKey{}, p), append([]string{q}, rewrites...))
}

// ScreenSearch is screenQuery for the search page, which the API does not serve:
// the query q of r is refused when r carries a key whose user saved a value q
// holds, so that the page sends on no more than the API's route would.
func (s *Server) ScreenSearch(r *http.Request, q string) error {
	return s.screenQuery(r.Context(), s.keyPrincipal(r), q)
}

// appendSearch encodes a search answer. Each item is the snapshot's listing item with
// its similarity added before the closing brace, so it is byte for byte the list's.
func appendSearch(dst []byte, snap *directory.Snapshot, q string, res search.Result) []byte {
	dst = append(dst, `{"object":"search","query":`...)
	dst = jsonstr.Append(dst, q)
	dst = append(dst, `,"match":`...)
	dst = jsonstr.Append(dst, res.Match)
	dst = append(dst, `,"model":`...)
	dst = jsonstr.Append(dst, res.Model)
	dst = append(dst, `,"degraded":`...)
	dst = strconv.AppendBool(dst, res.Degraded)
	if b := res.Band; b != nil {
		dst = append(dst, `,"band":{"confidence":`...)
		dst = appendRounded(dst, b.Confidence)
		dst = append(dst, `,"least":`...)
		dst = appendRounded(dst, b.Least)
		dst = append(dst, `,"margin":`...)
		dst = appendRounded(dst, b.Margin)
		if b.Parts {
			dst = append(dst, `,"semantic":`...)
			dst = appendRounded(dst, b.Semantic)
			dst = append(dst, `,"lexical":`...)
			dst = appendRounded(dst, b.Lexical)
			dst = append(dst, `,"gap":`...)
			dst = appendRounded(dst, b.Gap)
		}
		if b.Phrasings > 0 {
			dst = append(dst, `,"phrasings":`...)
			dst = strconv.AppendInt(dst, int64(b.Phrasings), 10)
			dst = append(dst, `,"agreed":`...)
			dst = strconv.AppendInt(dst, int64(b.Agreed), 10)
			dst = append(dst, `,"needed":`...)
			dst = strconv.AppendInt(dst, int64(b.Needed), 10)
		}
		dst = append(dst, '}')
	}
	dst = append(dst, `,"items":[`...)
	for i, h := range res.Hits {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = snap.AppendOpenItem(dst, h.Pos)
		dst = append(dst, `,"similarity":`...)
		dst = appendRounded(dst, h.Similarity)
		dst = append(dst, `,"rank_score":`...)
		dst = appendRounded(dst, h.Score)
		dst = appendSimilar(dst, snap, h.Similar)
		dst = append(dst, '}')
	}
	dst = append(dst, `],"count":`...)
	dst = strconv.AppendInt(dst, int64(len(res.Hits)), 10)
	if len(res.Nearest) > 0 && res.Band != nil {
		dst = append(dst, `,"nearest":[`...)
		for i, n := range res.Nearest {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendNear(dst, snap, n, res.Band)
		}
		dst = append(dst, ']')
	}
	return append(dst, '}')
}

// appendSimilar encodes a result's near-duplicates, when it has any: how many, and
// the slugs of the first search.MaxSimilar, the most trusted first.
func appendSimilar(dst []byte, snap *directory.Snapshot, similar []int) []byte {
	if len(similar) == 0 {
		return dst
	}
	dst = append(dst, `,"similar":{"count":`...)
	dst = strconv.AppendInt(dst, int64(len(similar)), 10)
	dst = append(dst, `,"slugs":[`...)
	for i, p := range similar[:min(len(similar), search.MaxSimilar)] {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = jsonstr.Append(dst, snap.Methods()[p].Slug)
	}
	return append(dst, `]}`...)
}

// appendNear encodes a method near the query that is not a match: its listing item
// with its similarity, as in items, and not_a_match, which says why.
func appendNear(dst []byte, snap *directory.Snapshot, n search.Near, b *search.BandReport) []byte {
	dst = snap.AppendOpenItem(dst, n.Pos)
	dst = append(dst, `,"similarity":`...)
	dst = appendRounded(dst, n.Similarity)
	dst = append(dst, `,"not_a_match":{"reason":"`...)
	dst = append(dst, n.Reason...) // one of search.Reasons: nothing to escape
	dst = append(dst, `","confidence":`...)
	dst = appendRounded(dst, b.Confidence)
	dst = append(dst, `,"least":`...)
	dst = appendRounded(dst, b.Least)
	dst = append(dst, `,"margin":`...)
	dst = appendRounded(dst, b.Margin)
	return append(dst, `}}`...)
}

// appendRounded appends x rounded to four decimals.
func appendRounded(dst []byte, x float64) []byte {
	return strconv.AppendFloat(dst, rounded(x), 'f', -1, 64)
}

// rounded is x rounded to four decimals, as a search answer says its figures.
func rounded(x float64) float64 { return math.Round(x*1e4) / 1e4 }
