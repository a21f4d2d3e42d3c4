package api

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/waystation/waystation/internal/catalog"
	"github.com/waystation/waystation/internal/directory"
	"github.com/waystation/waystation/internal/problem"
	"github.com/waystation/waystation/internal/resource"
)

// maxCachedList is the largest filtered list body kept in the cache; larger ones are
// encoded for each request rather than crowding out the rest.
const maxCachedList = 512 << 10

// handleServices answers the list (no q) and search (q).
func (s *Server) handleServices() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		snap := s.snapshots.Current()
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
		resource.Serve(w, r, s.filteredList(snap, sq.Filter), http.StatusOK)
	})
}

// filteredList encodes a filtered list, or takes it from the cache of this snapshot's
// lists.
func (s *Server) filteredList(snap *directory.Snapshot, f directory.Filter) *resource.Resource {
	if f.IsZero() {
		return snap.List()
	}
	key := snap.Info().ID + "\x00" + f.Key()
	if res, ok := s.lists.Get(key); ok {
		return res
	}
	res := resource.New(resource.JSON, snap.AppendList(nil, f))
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
			s.error(w, r, problem.New(problem.NotFound, "No enabled method has this slug."))
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
		host, err := catalog.HostnameFromPath(chi.URLParam(r, "hostname"))
		if err != nil {
			s.error(w, r, problem.Param(problem.InvalidParameter, "hostname", "Not a valid hostname: "+err.Error()+"."))
			return
		}
		res, ok := s.snapshots.Current().Merchant(host)
		if !ok {
			s.error(w, r, problem.New(problem.NotFound, "No method in the directory is served from this hostname."))
			return
		}
		resource.Serve(w, r, res, http.StatusOK)
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
		return s.snapshots.Current().List(), servicesPath
	}
	if slug, ok := strings.CutPrefix(p, methodPrefix); ok && slug != "" && !strings.Contains(slug, "/") {
		res, _ := s.snapshots.Current().Method(slug)
		return res, methodRoute
	}
	if raw, ok := strings.CutPrefix(p, merchantPrefix); ok && raw != "" && !strings.Contains(raw, "/") {
		host, err := catalog.HostnameFromPath(raw)
		if err != nil {
			return nil, ""
		}
		res, _ := s.snapshots.Current().Merchant(host)
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
