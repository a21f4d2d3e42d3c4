package api

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/waystation/waystation/internal/catalog"
	"github.com/waystation/waystation/internal/problem"
	"github.com/waystation/waystation/internal/resource"
)

// handleServices answers the list (no q) and search (q).
func (s *Server) handleServices() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		snap := s.dir.Current()
		if r.URL.RawQuery == "" {
			resource.Serve(w, r, snap.List(), http.StatusOK)
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
		resource.Serve(w, r, s.dir.List(snap, sq.Filter), http.StatusOK)
	})
}

// handleService answers one enabled method with its guidance.
func (s *Server) handleService() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if prob := noParameters(r.URL.RawQuery); prob != nil {
			s.error(w, r, prob)
			return
		}
		res, err := s.dir.Method(chi.URLParam(r, "slug"))
		if err != nil {
			s.error(w, r, err)
			return
		}
		resource.Serve(w, r, res, http.StatusOK)
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
		res, err := s.dir.Merchant(chi.URLParam(r, "hostname"))
		if err == nil {
			// An error here is a record its published file no longer holds.
			err = resource.Serve(w, r, res, http.StatusOK)
		}
		if err != nil {
			s.error(w, r, err)
		}
	})
}

// DirectoryPath is where the public directory's JSON lives; the human pages link
// their JSON twins under it.
const DirectoryPath = BasePath + "/api/public/v1"

// Paths of the snapshot routes, as snapshotResource matches them.
const (
	servicesPath   = DirectoryPath + "/services"
	methodPrefix   = servicesPath + "/"
	merchantPrefix = DirectoryPath + "/merchants/"
	// methodRoute and merchantRoute are the router's patterns of those routes, which
	// name them in the metrics.
	methodRoute   = servicesPath + "/{slug}"
	merchantRoute = DirectoryPath + "/merchants/{hostname}"
)

// snapshotResource returns the stored answer to a GET or HEAD without a query of the
// unfiltered list, an enabled method or a merchant, the same the router's handlers
// find, and the route's pattern; nil for anything else, which the router answers (a miss, an invalid hostname,
// another method, a query, an escaped path the router matches on its raw form).
func (s *Server) snapshotResource(r *http.Request) (res *resource.Resource, route string) {
	if (r.Method != http.MethodGet && r.Method != http.MethodHead) || r.URL.RawQuery != "" || r.URL.RawPath != "" {
		return nil, ""
	}
	p := r.URL.Path
	if p == servicesPath {
		return s.dir.Current().List(), servicesPath
	}
	if slug, ok := strings.CutPrefix(p, methodPrefix); ok && slug != "" && !strings.Contains(slug, "/") {
		res, _ := s.dir.Current().Method(slug)
		return res, methodRoute
	}
	if raw, ok := strings.CutPrefix(p, merchantPrefix); ok && raw != "" && !strings.Contains(raw, "/") {
		host, err := catalog.HostnameFromPath(raw)
		if err != nil {
			return nil, ""
		}
		res, _ := s.dir.Current().Merchant(host)
		return res, merchantRoute
	}
	return nil, ""
}

// noParameters refuses any query parameter on a route that takes none; `verified`
// anywhere in the query gets its own code.
func noParameters(raw string) *problem.Error {
	var first *problem.Error
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
			return problem.Param(problem.VerifiedReserved, "verified", "The verified parameter is reserved for a future verified badge.")
		}
		if first == nil {
			first = problem.Param(problem.UnknownParameter, key, "This route takes no query parameters.")
		}
	}
	return first
}
