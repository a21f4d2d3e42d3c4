// Package web is the directory for people: templ components that are pure views over
// view models, rendered live by the page handlers here and to files by the generator,
// so that a CDN serving the files and the service answer the same pages.
package web

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync"

	"github.com/a-h/templ"
	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/waystation/waystation/internal/directory"
	"github.com/waystation/waystation/internal/resource"
	"github.com/waystation/waystation/internal/search"
)

// Searcher answers a natural-language query over the directory for a caller, with
// the caller's limits: *search.Service. Refusals are problems (rate_limited,
// search_allowance_exhausted, search_unavailable) with their Retry-After. Without
// one, the search page says search is unavailable.
type Searcher interface {
	Search(ctx context.Context, c search.Caller, snap *directory.Snapshot, q string, f directory.Filter) (search.Answer, error)
}

// errNoSearch is the answer of a server's searcher when it was given none.
var errNoSearch = errors.New("web: no search engine")

// noSearch is the searcher of a server given none: it answers errNoSearch.
type noSearch struct{}

func (noSearch) Search(context.Context, search.Caller, *directory.Snapshot, string, directory.Filter) (search.Answer, error) {
	return search.Answer{}, errNoSearch
}

// Server answers the human pages and their static files.
type Server struct {
	log       *slog.Logger
	snapshots directory.Snapshots
	search    Searcher
	pages     *lru.Cache[string, *resource.Resource]
	views     Views
	router    http.Handler
	// approvals serves the approval pages; without them /app has no pages. signIns
	// limits sign-in attempts per address.
	approvals *Approvals
	signIns   *signInLimiter
	// reference is the API's document, for the reference page and /llms.txt.
	reference *Reference
	llms      *resource.Resource
	// discovery serves the API catalog, security.txt and robots.txt.
	discovery *discovery
	// screen refuses a query before the search page sends it on (see WithScreen).
	screen func(r *http.Request, q string) error
}

// WithScreen has the search page ask screen about each query before it searches:
// a query screen refuses is neither searched nor shown again, and the page says why
// (a query that holds one of the saved values of the key the request carries is the
// API's protected_value_detected, whose check screen is). Without it every query
// is searched.
func WithScreen(screen func(r *http.Request, q string) error) Option {
	return func(s *Server) { s.screen = screen }
}

// NewServer wires the pages; search may be nil, and options add the approval pages.
func NewServer(log *slog.Logger, snapshots directory.Snapshots, views Views, search Searcher, opts ...Option) *Server {
	pages, _ := lru.New[string, *resource.Resource](1024)
	s := &Server{log: log, snapshots: snapshots, views: views, search: search, pages: pages,
		screen: func(*http.Request, string) error { return nil }}
	if search == nil {
		s.search = noSearch{}
	}
	for _, o := range opts {
		o(s)
	}
	s.router = s.routes()
	return s
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.router.ServeHTTP(w, r) }

// render encodes a page once; pages and the generator share it, so both give the
// same bytes and ETags. The page is rendered into a pooled buffer and copied out at
// its size: a category page at a hundred thousand methods is megabytes, which a
// buffer grown from nothing copied and cleared over and over.
func render(c templ.Component) (*resource.Resource, error) {
	b := renderBuffers.Get().(*bytes.Buffer)
	defer renderBuffers.Put(b)
	b.Reset()
	if err := c.Render(context.Background(), b); err != nil {
		return nil, err
	}
	body := bytes.Clone(b.Bytes())
	return resource.New(resource.HTML, body), nil
}

// renderBuffers are the buffers pages are rendered into.
var renderBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}
