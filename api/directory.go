package api

import (
	"compress/gzip"
	"net/http"
	"net/url"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/waystation/waystation/internal/catalog"
	"github.com/waystation/waystation/internal/directory"
)

// maxCachedList is the largest filtered list body kept in the cache; larger ones are
// encoded for each request rather than crowding out the rest.
const maxCachedList = 512 << 10

// handleServices answers the list (no q) and search (q).
func (s *Server) handleServices() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		snap := s.snapshots.Current()
		if r.URL.RawQuery == "" {
			serveResource(w, r, snap.List())
			return
		}
		sq, prob := parseServicesQuery(r.URL.RawQuery)
		if prob != nil {
			s.error(w, r, prob)
			return
		}
		if sq.Search {
			s.handleSearch(w, r, snap, sq)
			return
		}
		serveResource(w, r, s.filteredList(snap, sq.Filter))
	})
}

// filteredList encodes a filtered list, or takes it from the cache of this snapshot's
// lists.
func (s *Server) filteredList(snap *directory.Snapshot, f directory.Filter) *directory.Resource {
	if f.IsZero() {
		return snap.List()
	}
	key := snap.Info().ID + "\x00" + f.Key()
	if res, ok := s.lists.Get(key); ok {
		return res
	}
	res := directory.NewResourceLevel(snap.AppendList(nil, f), gzip.DefaultCompression)
	if len(res.Body) <= maxCachedList {
		s.lists.Add(key, res)
	}
	return res
}

// handleService answers one enabled method with its guidance.
func (s *Server) handleService() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if prob := noParameters(r.URL.RawQuery); prob != nil {
			s.error(w, r, prob)
			return
		}
		slug := chi.URLParam(r, "slug")
		res, ok := s.snapshots.Current().Method(slug)
		if !ok {
			s.error(w, r, problemf(CodeNotFound, "No enabled method has this slug."))
			return
		}
		serveResource(w, r, res)
	})
}

// handleMerchant answers the trust record behind a hostname, in any case, with a
// trailing dot or as an internationalised name.
func (s *Server) handleMerchant() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if prob := noParameters(r.URL.RawQuery); prob != nil {
			s.error(w, r, prob)
			return
		}
		raw := chi.URLParam(r, "hostname")
		if strings.Contains(raw, "%") {
			if u, err := url.PathUnescape(raw); err == nil {
				raw = u
			}
		}
		host, err := catalog.NormalizeHostname(raw)
		if err != nil {
			s.error(w, r, paramProblem(CodeInvalidParameter, "hostname", "Not a valid hostname: "+err.Error()+"."))
			return
		}
		res, ok := s.snapshots.Current().Merchant(host)
		if !ok {
			s.error(w, r, problemf(CodeNotFound, "No method in the directory is served from this hostname."))
			return
		}
		serveResource(w, r, res)
	})
}

// noParameters refuses any query parameter on a route that takes none; `verified`
// anywhere in the query gets its own code.
func noParameters(raw string) *Problem {
	var first *Problem
	for seg := range strings.SplitSeq(raw, "&") {
		if seg == "" {
			continue
		}
		rawKey, _, _ := strings.Cut(seg, "=")
		key, err := url.QueryUnescape(rawKey)
		if err != nil {
			key = rawKey
		}
		if strings.EqualFold(strings.TrimSpace(key), "verified") {
			return paramProblem(CodeVerifiedReserved, "verified", "The verified parameter is reserved for a future verified badge.")
		}
		if first == nil {
			first = paramProblem(CodeUnknownParameter, key, "This route takes no query parameters.")
		}
	}
	return first
}
