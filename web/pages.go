package web

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"math"
	"net/http"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/a-h/templ"
	"github.com/go-chi/chi/v5"

	"github.com/waystation/waystation/internal/catalog"
	"github.com/waystation/waystation/internal/directory"
	"github.com/waystation/waystation/internal/problem"
	"github.com/waystation/waystation/internal/resource"
	"github.com/waystation/waystation/internal/search"
	"github.com/waystation/waystation/internal/telemetry"
)

// Pages renders every page of a snapshot that does not depend on the request: the
// home page, each category, method, merchant and problem page. emit gets each page's
// URL path and encoded body; it is called from several goroutines at once.
func (vs Views) Pages(snap *directory.Snapshot, emit func(url string, res *resource.Resource) error) error {
	sources := vs.PageSources(snap)
	jobs := make(chan PageSource)
	errc := make(chan error, 1)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for p := range jobs {
				res, err := p.Render()
				if err == nil {
					err = emit(p.URL, res)
				}
				if err != nil {
					select {
					case errc <- err:
					default:
					}
				}
			}
		})
	}
	for _, p := range sources {
		jobs <- p
	}
	close(jobs)
	wg.Wait()
	select {
	case err := <-errc:
		return err
	default:
		return nil
	}
}

// PageSource is one page Pages renders, before it is: its URL path and a digest of
// everything it is made from, so that a publisher holding the page made from the same
// digest need not render it again. A method page is made from its method's body and
// its merchant's probes, a merchant page from its record and its methods' bodies, a
// category page from the categories' counts and its methods' bodies in its order; the
// home page from the whole snapshot; all of them from the snapshot's time, which each
// page shows.
type PageSource struct {
	URL    string
	Digest [sha256.Size]byte
	page   func() templ.Component
}

// Render makes the page.
func (p PageSource) Render() (*resource.Resource, error) { return render(p.page()) }

// RenderTo appends the page's body to b, which a publisher reuses from page to page:
// a change at a hundred thousand methods renders a hundred megabytes of pages, every
// merchant and category page among them, that it writes out and drops.
func (p PageSource) RenderTo(b *bytes.Buffer) error {
	return p.page().Render(context.Background(), b)
}

// PageSources lists the pages of a snapshot that Pages renders, in its order, with
// their digests, without rendering any.
func (vs Views) PageSources(snap *directory.Snapshot) []PageSource {
	return vs.PageSourcesKept(snap, nil)
}

// PageSourcesKept is PageSources for a publisher that keeps cache from one snapshot
// to the next: the category and merchant pages are made of the rows it holds (and it
// keeps those rendered anew), and a merchant record is decoded only when it changed.
// The pages are the same bytes. A nil cache keeps nothing.
func (vs Views) PageSourcesKept(snap *directory.Snapshot, cache *PageCache) []PageSource {
	var out []PageSource
	vs.PageSourceBatches(snap, cache, math.MaxInt, func(batch []PageSource) error {
		out = batch
		return nil
	})
	return out
}

// PageSourceBatches is PageSourcesKept in batches of at most n pages, in the same
// order, each handed to fn as it is made, its own slice: for a publisher that renders
// one batch while the next is made, and does not hold the sources of every page (at
// a hundred thousand methods, 200,000 of them, 23 MB). It changes nothing in cache
// once it hands on the first batch, so that the pages handed on may be rendered (which
// keeps their rows there, under its lock) while the rest are listed. It stops at fn's
// first error, which it returns.
func (vs Views) PageSourceBatches(snap *directory.Snapshot, cache *PageCache, n int, fn func([]PageSource) error) error {
	info := snap.Info()
	// One hash for every page, written the page's parts each after a zero byte: a
	// hundred thousand method pages are listed at each publication. Through a
	// buffer: the hash takes no string, and io.WriteString would copy each part into
	// a slice of its own, the ETags of every category's and merchant's methods among
	// them.
	h := sha256.New()
	b := bufio.NewWriterSize(h, 4096)
	at := strconv.FormatInt(info.GeneratedAt.UnixNano(), 10)
	digest := func(kind, url string, parts ...string) [sha256.Size]byte {
		h.Reset()
		b.Reset(h)
		b.WriteString(vs.DirectoryAPI)
		for _, p := range [...]string{kind, at, url} {
			b.WriteByte(0)
			b.WriteString(p)
		}
		for _, p := range parts {
			b.WriteByte(0)
			b.WriteString(p)
		}
		b.Flush()
		var d [sha256.Size]byte
		h.Sum(d[:0])
		return d
	}
	records := cache
	if records == nil {
		records = NewPageCache("") // the merchants', for this snapshot alone
	} else {
		cache.forget(snap)
	}
	categories := listFacets(snap).Category
	problems := ProblemSlugs()
	// What each merchant's record gives its pages, its methods and probes, taken
	// before any page is handed on.
	merchants := make(map[string]*keptMerchant, len(snap.Hostnames()))
	for _, h := range snap.Hostnames() {
		merchants[h] = records.merchant(snap, h)
	}
	// Sized to fit: at a hundred thousand methods, grown by appending, it was copied
	// over and over.
	total := 1 + len(categories) + snap.Len() + len(snap.Hostnames()) + len(problems)
	batch := make([]PageSource, 0, min(n, total))
	add := func(url string, d [sha256.Size]byte, page func() templ.Component) error {
		batch = append(batch, PageSource{URL: url, Digest: d, page: page})
		if len(batch) < n {
			return nil
		}
		full := batch
		total -= len(full)
		batch = make([]PageSource, 0, min(n, total))
		return fn(full)
	}
	if err := add("/", digest("home", "/", info.ID), func() templ.Component { return HomePage(vs.Home(snap)) }); err != nil {
		return err
	}
	// A category page shows every category with its count, and its own methods, best
	// trusted first.
	var counts strings.Builder
	for _, f := range categories {
		counts.WriteString(f.Value + "\x00" + strconv.Itoa(f.Count) + "\x00")
	}
	methods := snap.Methods()
	for _, f := range categories {
		c, u := f.Value, "/categories/"+url.PathEscape(f.Value)
		parts := []string{counts.String()}
		for _, p := range bestTrusted(methods, snap.Matching(directory.Filter{Categories: []string{c}})) {
			parts = append(parts, snap.MethodAt(p).ETag)
		}
		err := add(u, digest("category", u, parts...), func() templ.Component {
			v, _ := vs.category(snap, c, cache)
			return CategoryPage(v)
		})
		if err != nil {
			return err
		}
	}
	for i := range methods {
		// The page's closure holds the method's place, not a copy of it: at a hundred
		// thousand methods the copies would be 21 MB.
		m := &methods[i]
		res := snap.MethodAt(i)
		u := "/methods/" + m.Slug
		r := merchants[m.Hostname]
		err := add(u, digest("method", u, res.ETag, string(r.probes[:])), func() templ.Component {
			return MethodPageView(vs.methodPage(snap, *m, r.decoded, r.found))
		})
		if err != nil {
			return err
		}
	}
	for _, h := range snap.Hostnames() {
		u := "/merchants/" + h
		r := merchants[h]
		parts := make([]string, 1, len(r.slugs)+1)
		parts[0] = r.etag
		for _, slug := range r.slugs {
			if m, ok := snap.Method(slug); ok {
				parts = append(parts, m.ETag)
			}
		}
		err := add(u, digest("merchant", u, parts...), func() templ.Component {
			if !r.found {
				return MerchantPageView(MerchantView{})
			}
			return MerchantPageView(vs.merchantPage(snap, r.view, r.slugs, cache))
		})
		if err != nil {
			return err
		}
	}
	for _, p := range problems {
		u := "/problems/" + p
		err := add(u, digest("problem", u), func() templ.Component {
			v, _ := vs.ProblemPage(snap, p)
			return ProblemPageView(v)
		})
		if err != nil {
			return err
		}
	}
	if len(batch) > 0 {
		return fn(batch)
	}
	return nil
}

// page serves a page that depends only on the snapshot and the path: rendered once per
// snapshot and kept, with its ETag and gzip form.
func (s *Server) page(w http.ResponseWriter, r *http.Request, build func(*directory.Snapshot) (templ.Component, bool)) {
	if r.URL.RawQuery != "" {
		// The pages take no parameters; a query string would only split the caches.
		http.Redirect(w, r, r.URL.EscapedPath(), http.StatusMovedPermanently)
		return
	}
	snap := s.snapshots.Current()
	key := snap.Info().ID + "\x00" + r.URL.EscapedPath()
	if res, ok := s.pages.Get(key); ok {
		serve(w, r, res, cachePublic, http.StatusOK)
		return
	}
	c, ok := build(snap)
	if !ok {
		s.handleNotFound(w, r)
		return
	}
	res, err := render(c)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.pages.Add(key, res)
	serve(w, r, res, cachePublic, http.StatusOK)
}

func (s *Server) handleHome() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.discovery != nil && s.discovery.catalog != nil {
			// The site's root points at its API catalog (RFC 9727, section 3).
			w.Header()["Link"] = hdrAPICatalogLink
		}
		s.page(w, r, func(snap *directory.Snapshot) (templ.Component, bool) {
			return HomePage(s.views.Home(snap)), true
		})
	}
}

func (s *Server) handleCategory() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.page(w, r, func(snap *directory.Snapshot) (templ.Component, bool) {
			v, ok := s.views.Category(snap, chi.URLParam(r, "category"))
			return CategoryPage(v), ok
		})
	}
}

func (s *Server) handleMethod() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.page(w, r, func(snap *directory.Snapshot) (templ.Component, bool) {
			v, ok := s.views.MethodPage(snap, chi.URLParam(r, "slug"))
			return MethodPageView(v), ok
		})
	}
}

func (s *Server) handleMerchant() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.page(w, r, func(snap *directory.Snapshot) (templ.Component, bool) {
			host, err := catalog.HostnameFromPath(chi.URLParam(r, "hostname"))
			if err != nil {
				return nil, false
			}
			v, ok := s.views.MerchantPage(snap, host)
			return MerchantPageView(v), ok
		})
	}
}

func (s *Server) handleProblem() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.page(w, r, func(snap *directory.Snapshot) (templ.Component, bool) {
			v, ok := s.views.ProblemPage(snap, chi.URLParam(r, "code"))
			return ProblemPageView(v), ok
		})
	}
}

// handleSearch runs a search for a person, through the same search service as the
// API, so the page gets the same ranking, per-caller rate limit and daily
// allowance. Without a search engine, or when it refuses, the page says so and
// points at the list, which always works.
func (s *Server) handleSearch() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		snap := s.snapshots.Current()
		q := strings.TrimSpace(r.URL.Query().Get("q"))
		status := http.StatusOK
		var v SearchView
		switch {
		case q == "":
			v = s.views.SearchPage(snap, q, nil, "")
		case !utf8.ValidString(q) || len(q) > search.MaxQueryBytes:
			v = s.views.SearchPage(snap, q, nil, "the query is longer than "+strconv.Itoa(search.MaxQueryBytes)+" bytes; shorten it.")
			status = http.StatusBadRequest
		default:
			// The query is screened first (see WithScreen), and a refused one is
			// neither searched nor shown again.
			if err := s.screen(r, q); err != nil {
				var msg string
				msg, status = searchRefusal(err)
				if p, ok := problem.As(err); ok && p.RetryAfter > 0 {
					w.Header().Set("Retry-After", strconv.Itoa(p.RetryAfter))
				}
				v = s.views.SearchPage(snap, "", nil, msg)
				break
			}
			ctx, cancel := context.WithTimeout(r.Context(), searchTimeout)
			// The page is charged by address, never by a key: a browser sends none.
			a, err := s.search.Search(ctx, search.Caller{RemoteAddr: r.RemoteAddr, ForwardedFor: r.Header.Values("X-Forwarded-For")}, snap, q, directory.Filter{})
			cancel()
			if err != nil {
				var msg string
				msg, status = searchRefusal(err)
				if p, ok := problem.As(err); ok && p.RetryAfter > 0 {
					w.Header().Set("Retry-After", strconv.Itoa(p.RetryAfter))
				}
				s.log.Warn("search page: search failed", "err", err)
				v = s.views.SearchPage(snap, q, nil, msg)
			} else {
				res := SearchResult{Match: a.Match, Degraded: a.Degraded}
				for _, h := range a.Hits {
					res.Slugs = append(res.Slugs, snap.Methods()[h.Pos].Slug)
				}
				if a.NearEnough() {
					for _, n := range a.Nearest {
						res.Nearest = append(res.Nearest, snap.Methods()[n.Pos].Slug)
					}
				}
				v = s.views.SearchPage(snap, q, &res, "")
			}
		}
		res, err := render(SearchPageView(v))
		if err != nil {
			s.fail(w, r, err)
			return
		}
		serve(w, r, res, cacheNone, status)
	}
}

// searchRefusal says why a search was refused in words a person can act on, with the
// page's status: 429 for a caller over its rate, else 503.
func searchRefusal(err error) (string, int) {
	if errors.Is(err, errNoSearch) {
		return "the search engine is not running on this server.", http.StatusOK
	}
	p, _ := problem.As(err)
	retry := "a moment"
	if p != nil && p.RetryAfter > 0 {
		retry = secondsText(p.RetryAfter)
	}
	switch problem.CodeOf(err) {
	case problem.RateLimited:
		return "you have searched a lot in a short time; try again in " + retry + ".", http.StatusTooManyRequests
	case problem.AllowanceExhausted:
		return "today's allowance of new searches is spent; exact method and provider names still work, and it renews at midnight UTC.", http.StatusServiceUnavailable
	case problem.SearchUnavailable:
		return "no search model can answer right now; try again in a minute.", http.StatusServiceUnavailable
	case problem.ProtectedValueDetected:
		return "the query holds one of your saved values, in some written form; it was not searched.", http.StatusUnprocessableEntity
	case problem.RedactionUnavailable:
		return "your saved values could not be loaded to check the query, so it was not searched; try again in a minute.", http.StatusServiceUnavailable
	}
	return "search cannot answer right now; try again in a minute.", http.StatusServiceUnavailable
}

func (s *Server) handleStatic() http.HandlerFunc {
	byURL := map[string]Asset{}
	for _, a := range Assets() {
		byURL[a.URL] = a
	}
	return func(w http.ResponseWriter, r *http.Request) {
		a, ok := byURL[r.URL.Path]
		if !ok {
			s.handleNotFound(w, r)
			return
		}
		serve(w, r, a.Resource, cacheImmutable, http.StatusOK)
	}
}

func (s *Server) handleNotFound(w http.ResponseWriter, r *http.Request) {
	snap := s.snapshots.Current()
	res, err := render(NotFoundPage(NotFoundView{Page: newPage(snap, "Not found", "", ""), Path: r.URL.Path}))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	cache := cachePublic
	if isApp(r.URL.Path) {
		cache = cacheNone // an approval page that is not there now may be soon
	}
	serve(w, r, res, cache, http.StatusNotFound)
}

// handleMethodNotAllowed answers 405 with the Allow header listing the methods the
// path does take, found by asking the router.
func (s *Server) handleMethodNotAllowed(mux chi.Routes) http.HandlerFunc {
	methods := []string{http.MethodGet, http.MethodHead, http.MethodPost}
	return func(w http.ResponseWriter, r *http.Request) {
		var allowed []string
		for _, m := range methods {
			if mux.Match(chi.NewRouteContext(), m, r.URL.Path) {
				allowed = append(allowed, m)
			}
		}
		w.Header().Set("Allow", strings.Join(allowed, ", "))
		http.Error(w, "This path takes "+strings.Join(allowed, ", ")+", not the method sent.", http.StatusMethodNotAllowed) // never the method itself: a caller chose it
	}
}

// fail answers a page that could not be made: 503 while the approval pages' database
// is unreachable (the directory's pages never need it), else a logged 500.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	w.Header().Set("Cache-Control", "no-store")
	if problem.CodeOf(err) == problem.DatabaseUnavailable {
		s.log.WarnContext(r.Context(), "page: database unavailable", "err", err, "path", telemetry.LoggedPath(r))
		w.Header().Set("Retry-After", "5")
		http.Error(w, "The service cannot reach its database just now; try again in a minute.", http.StatusServiceUnavailable)
		return
	}
	if problem.CodeOf(err) == problem.RedactionUnavailable {
		// What the page would show is cleaned with the person's saved values, which
		// could not be loaded: it shows nothing rather than text unchecked.
		s.log.WarnContext(r.Context(), "page: saved values unavailable", "err", err, "path", telemetry.LoggedPath(r))
		w.Header().Set("Retry-After", "5")
		http.Error(w, "The service cannot load your saved values to check this page just now; try again in a minute.", http.StatusServiceUnavailable)
		return
	}
	s.log.ErrorContext(r.Context(), "page failed", "err", err, "path", telemetry.LoggedPath(r))
	http.Error(w, "Internal error.", http.StatusInternalServerError)
}
