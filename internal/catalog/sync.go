package catalog

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/waystation/waystation/internal/x402"
)

// Defaults and bounds of a BazaarSync.
const (
	DefaultPageSize    = 100
	MaxPageSize        = 1000
	DefaultMaxPages    = 1000
	DefaultPageTimeout = 30 * time.Second
	DefaultMaxPageBody = 16 << 20
)

// maxRedirects is how many redirects one page request follows.
const maxRedirects = 3

// BazaarSync reads the listing of an x402 Bazaar discovery endpoint (a facilitator's
// GET /discovery/resources) page by page, with limit and offset as the endpoint
// takes them. It sends no credentials: no Authorization, no cookies, and it refuses
// a URL that carries user information.
type BazaarSync struct {
	// URL is the discovery endpoint. Its query parameters are kept (a type filter,
	// say); limit and offset are set per page.
	URL string
	// Client makes the requests; nil means a client of the sync's own, which keeps
	// no cookies and follows at most three redirects, never from https to http.
	Client *http.Client
	// PageSize is how many items each page asks for, 1 to MaxPageSize; 0 means
	// DefaultPageSize. The endpoint may answer fewer.
	PageSize int
	// MaxPages is the most pages read; a listing longer than that is read in part.
	// 0 means DefaultMaxPages.
	MaxPages int
	// Timeout bounds each page, from the request to the last byte; 0 means
	// DefaultPageTimeout.
	Timeout time.Duration
	// MaxBody is the most bytes of a page read; a larger page fails the sync. 0
	// means DefaultMaxPageBody.
	MaxBody int64
}

// SyncResult is what a sync read.
type SyncResult struct {
	Catalog Catalog
	Skipped []LineError
	// Pages and Items count the pages read and the items they held; Total is the
	// listing's size as the endpoint last reported it, -1 when it does not say.
	Pages, Items, Total int
	// Complete reports that the whole listing was read: every page answered, the
	// end was reached within MaxPages, the total held steady and at least one method
	// came of it. Only a complete sync may disable what the listing no longer holds.
	Complete bool
	// Incomplete says why a sync that ended without an error is not complete.
	Incomplete string
}

// Run reads every page. On an error it returns what the pages before the failure
// held, not complete, with the error.
func (s *BazaarSync) Run(ctx context.Context) (SyncResult, error) {
	cfg, err := s.settings()
	if err != nil {
		return SyncResult{Total: -1}, err
	}
	r := &syncRun{syncSettings: cfg, res: SyncResult{Total: -1}, b: newBazaarBuilder(), seen: map[string]bool{}}
	done := false
	for page := 1; page <= cfg.pages && !done; page++ {
		if done, err = r.readPage(ctx, page); err != nil {
			r.res.Catalog, r.res.Skipped = r.b.catalog(), r.b.skipped
			return r.res, fmt.Errorf("catalog: sync %s: %w", redact(cfg.base), err)
		}
	}
	return r.finish(done), nil
}

// syncSettings are a sync's fields checked, each zero one at its default.
type syncSettings struct {
	base        *url.URL
	size, pages int
	timeout     time.Duration
	maxBody     int64
	client      *http.Client
}

// settings checks the discovery URL (http or https, without credentials) and the
// page size, and fills in the defaults.
func (s *BazaarSync) settings() (syncSettings, error) {
	base, err := url.Parse(s.URL)
	if err != nil {
		return syncSettings{}, fmt.Errorf("catalog: discovery URL: %w", err)
	}
	if base.Scheme != "http" && base.Scheme != "https" || base.Host == "" {
		return syncSettings{}, fmt.Errorf("catalog: discovery URL %q: want an http or https URL", s.URL)
	}
	if base.User != nil {
		return syncSettings{}, errors.New("catalog: discovery URL: carries user information; the sync sends no credentials")
	}
	c := syncSettings{base: base, size: cmp.Or(s.PageSize, DefaultPageSize), pages: s.MaxPages, timeout: s.Timeout, maxBody: s.MaxBody, client: s.Client}
	if c.size < 1 || c.size > MaxPageSize {
		return syncSettings{}, fmt.Errorf("catalog: page size %d: want 1 to %d", c.size, MaxPageSize)
	}
	if c.pages <= 0 {
		c.pages = DefaultMaxPages
	}
	if c.maxBody <= 0 {
		c.maxBody = DefaultMaxPageBody
	}
	if c.timeout <= 0 {
		c.timeout = DefaultPageTimeout
	}
	if c.client == nil {
		c.client = &http.Client{Timeout: c.timeout, CheckRedirect: checkRedirect}
	}
	return c, nil
}

// syncRun is a sync under way: what its pages held so far, by key to tell a page
// that repeats earlier ones, and where the next page starts.
type syncRun struct {
	syncSettings
	res      SyncResult
	b        *bazaarBuilder
	seen     map[string]bool
	unsteady bool // the total changed between pages
	offset   int
}

// readPage reads the page at the run's offset and reports whether it ended the
// listing: an empty page, the total reached, or a page shorter than the limit the
// endpoint says it applied. Without either figure only an empty page ends the
// listing, since the endpoint may cap pages below the size asked. A page at
// another offset than asked, or holding only items read before, shows an endpoint
// that does not page by offset.
func (r *syncRun) readPage(ctx context.Context, page int) (done bool, err error) {
	lp, err := r.fetch(ctx, r.offset)
	if err != nil {
		return false, fmt.Errorf("page %d (offset %d): %w", page, r.offset, err)
	}
	r.res.Pages = page
	if lp.Offset >= 0 && lp.Offset != r.offset {
		return false, fmt.Errorf("page %d answered offset %d for offset %d: the endpoint does not page by offset", page, lp.Offset, r.offset)
	}
	if lp.Total >= 0 {
		r.unsteady = r.unsteady || r.res.Total >= 0 && lp.Total != r.res.Total
		r.res.Total = lp.Total
	}
	read, fresh := r.add(lp.Items, page)
	r.res.Items += len(lp.Items)
	r.offset += len(lp.Items)
	if read > 0 && fresh == 0 {
		return false, fmt.Errorf("page %d repeats what earlier pages held: the endpoint does not page by offset", page)
	}
	return len(lp.Items) == 0 ||
		lp.Total >= 0 && r.offset >= lp.Total ||
		lp.Total < 0 && lp.Limit > 0 && len(lp.Items) < lp.Limit, nil
}

// add adds a page's items to the catalog and counts those read and, of them, those
// no earlier page held.
func (r *syncRun) add(items []json.RawMessage, page int) (read, fresh int) {
	for i, raw := range items {
		key, ok := r.b.addItem(raw, LineError{Page: page, Item: i + 1})
		if !ok {
			continue
		}
		read++
		if !r.seen[key] {
			r.seen[key] = true
			fresh++
		}
	}
	return read, fresh
}

// finish is the run's result, complete only when the end was reached (done), the
// total held steady and some method was read.
func (r *syncRun) finish(done bool) SyncResult {
	res := r.res
	res.Catalog, res.Skipped = r.b.catalog(), r.b.skipped
	switch {
	case !done:
		res.Incomplete = fmt.Sprintf("stopped after %d pages, before the end of the listing", r.pages)
	case r.unsteady:
		res.Incomplete = "the listing's total changed while it was read"
	case len(r.b.items) == 0:
		res.Incomplete = "the listing held no method that could be read"
	default:
		res.Complete = true
	}
	return res
}

// fetch reads the page at offset.
func (c syncSettings) fetch(ctx context.Context, offset int) (listPage, error) {
	u := *c.base
	q := u.Query()
	q.Set("limit", strconv.Itoa(c.size))
	q.Del("offset")
	if offset > 0 {
		q.Set("offset", strconv.Itoa(offset))
	}
	u.RawQuery = q.Encode()
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return listPage{}, err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "waystation-importer")
	resp, err := c.client.Do(req)
	if err != nil {
		// Without the URL, whose query may hold a token.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return listPage{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, c.maxBody+1))
	if err != nil {
		return listPage{}, fmt.Errorf("read the answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return listPage{}, fmt.Errorf("HTTP %d: %s", resp.StatusCode, x402.Clean(string(body), 200))
	}
	if int64(len(body)) > c.maxBody {
		return listPage{}, fmt.Errorf("the answer is larger than %d bytes", c.maxBody)
	}
	it, err := decodeItem(body)
	if err != nil {
		return listPage{}, err
	}
	if !it.isList() {
		return listPage{}, errors.New("the answer is not a discovery list: no items")
	}
	return it.listPage()
}

// checkRedirect follows a few redirects, never from https down to http.
func checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= maxRedirects {
		return fmt.Errorf("more than %d redirects", maxRedirects)
	}
	if via[0].URL.Scheme == "https" && req.URL.Scheme != "https" {
		return errors.New("redirect from https to http refused")
	}
	return nil
}

// redact is the URL as errors show it: without its query, which may hold a token.
func redact(u *url.URL) string {
	c := *u
	c.RawQuery, c.Fragment = "", ""
	return c.String()
}
