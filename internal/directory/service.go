package directory

import (
	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/waystation/waystation/internal/catalog"
	"github.com/waystation/waystation/internal/problem"
	"github.com/waystation/waystation/internal/resource"
)

// Snapshots hands out the current snapshot; it is never nil. The generator's holder
// is one, swapped each time a new snapshot is published.
type Snapshots interface {
	Current() *Snapshot
}

// maxCachedList is the largest filtered list body kept in the cache; larger ones are
// encoded for each request rather than crowding out the rest.
const maxCachedList = 512 << 10

// DefaultListCacheEntries bounds the cache of encoded filtered lists when the
// service is given no bound.
const DefaultListCacheEntries = 2048

// Service is the public directory's reads as every adapter meets them: the API's
// routes and the MCP tools read the same lists, methods and merchants through it,
// so they find the same answers and refuse the same names. It holds no state of its
// own beyond a cache of encoded lists, keyed by snapshot.
type Service struct {
	snapshots Snapshots
	lists     *lru.Cache[string, *resource.Resource]
}

// NewService serves the snapshots' reads, keeping at most listCacheEntries encoded
// filtered lists (DefaultListCacheEntries when it is 0 or less).
func NewService(snapshots Snapshots, listCacheEntries int) *Service {
	if listCacheEntries <= 0 {
		listCacheEntries = DefaultListCacheEntries
	}
	lists, _ := lru.New[string, *resource.Resource](listCacheEntries)
	return &Service{snapshots: snapshots, lists: lists}
}

// Current is the snapshot in force.
func (s *Service) Current() *Snapshot { return s.snapshots.Current() }

// List is snap's list of the methods that pass f: the unfiltered list's stored
// bytes for a zero filter, else an encoded list, taken from the cache of this
// snapshot's lists when it is there.
func (s *Service) List(snap *Snapshot, f Filter) *resource.Resource {
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

// Method is the detail (listing item and guidance) of the enabled method slug
// names, or not_found.
func (s *Service) Method(slug string) (*resource.Resource, error) {
	res, ok := s.snapshots.Current().Method(slug)
	if !ok {
		return nil, problem.New(problem.NotFound, "No enabled method has this slug.")
	}
	return res, nil
}

// Merchant is the trust record behind a hostname written as a path segment names it
// (see catalog.HostnameFromPath: in any case, percent-encoded, with a trailing dot,
// as an internationalised name), or invalid_parameter for a name that is no
// hostname, or not_found.
func (s *Service) Merchant(hostname string) (*resource.Resource, error) {
	host, err := catalog.HostnameFromPath(hostname)
	if err != nil {
		return nil, problem.Param(problem.InvalidParameter, "hostname", "Not a valid hostname: "+err.Error()+".")
	}
	res, ok := s.snapshots.Current().Merchant(host)
	if !ok {
		return nil, problem.New(problem.NotFound, "No method in the directory is served from this hostname.")
	}
	return res, nil
}
