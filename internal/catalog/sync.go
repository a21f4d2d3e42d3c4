package catalog

import (
	"context"
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
	res := SyncResult{Total: -1}
	base, err := url.Parse(s.URL)
	if err != nil {
		return res, fmt.Errorf("catalog: discovery URL: %w", err)
	}
	if base.Scheme != "http" && base.Scheme != "https" || base.Host == "" {
		return res, fmt.Errorf("catalog: discovery URL %q: want an http or https URL", s.URL)
	}
	if base.User != nil {
		return res, errors.New("catalog: discovery URL: carries user information; the sync sends no credentials")
	}
	size, pages, maxBody := s.PageSize, s.MaxPages, s.MaxBody
	if size == 0 {
		size = DefaultPageSize
	}
	if size < 1 || size > MaxPageSize {
		return res, fmt.Errorf("catalog: page size %d: want 1 to %d", size, MaxPageSize)
	}
	if pages <= 0 {
		pages = DefaultMaxPages
	}
	if maxBody <= 0 {
		maxBody = DefaultMaxPageBody
	}
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = DefaultPageTimeout
	}
	client := s.Client
	if client == nil {
		client = &http.Client{Timeout: timeout, CheckRedirect: checkRedirect}
	}

	b := newBazaarBuilder()
	seen := map[string]bool{}
	unsteady, done := false, false
	offset := 0
	for page := 1; page <= pages && !done; page++ {
		lp, err := s.fetch(ctx, client, base, size, offset, timeout, maxBody)
		if err != nil {
			res.Catalog, res.Skipped = b.catalog(), b.skipped
			return res, fmt.Errorf("catalog: sync %s: page %d (offset %d): %w", redact(base), page, offset, err)
		}
		res.Pages = page
		if lp.Offset >= 0 && lp.Offset != offset {
			res.Catalog, res.Skipped = b.catalog(), b.skipped
			return res, fmt.Errorf("catalog: sync %s: page %d answered offset %d for offset %d: the endpoint does not page by offset", redact(base), page, lp.Offset, offset)
		}
		if lp.Total >= 0 {
			if res.Total >= 0 && lp.Total != res.Total {
				unsteady = true
			}
			res.Total = lp.Total
		}
		read, fresh := 0, 0
		for i, raw := range lp.Items {
			if key, ok := b.addItem(raw, LineError{Page: page, Item: i + 1}); ok {
				read++
				if !seen[key] {
					seen[key] = true
					fresh++
				}
			}
		}
		res.Items += len(lp.Items)
		offset += len(lp.Items)
		if read > 0 && fresh == 0 {
			res.Catalog, res.Skipped = b.catalog(), b.skipped
			return res, fmt.Errorf("catalog: sync %s: page %d repeats what earlier pages held: the endpoint does not page by offset", redact(base), page)
		}
		// The end: an empty page, the total reached, or a page shorter than the
		// limit the endpoint says it applied. Without either figure only an empty
		// page ends the listing, since the endpoint may cap pages below the size
		// asked.
		done = len(lp.Items) == 0 ||
			lp.Total >= 0 && offset >= lp.Total ||
			lp.Total < 0 && lp.Limit > 0 && len(lp.Items) < lp.Limit
	}
	res.Catalog, res.Skipped = b.catalog(), b.skipped
	switch {
	case !done:
		res.Incomplete = fmt.Sprintf("stopped after %d pages, before the end of the listing", pages)
	case unsteady:
		res.Incomplete = "the listing's total changed while it was read"
	case len(b.items) == 0:
		res.Incomplete = "the listing held no method that could be read"
	default:
		res.Complete = true
	}
	return res, nil
}

// fetch reads one page.
func (s *BazaarSync) fetch(ctx context.Context, client *http.Client, base *url.URL, size, offset int, timeout time.Duration, maxBody int64) (listPage, error) {
	u := *base
	q := u.Query()
	q.Set("limit", strconv.Itoa(size))
	q.Del("offset")
	if offset > 0 {
		q.Set("offset", strconv.Itoa(offset))
	}
	u.RawQuery = q.Encode()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return listPage{}, err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "waystation-importer")
	resp, err := client.Do(req)
	if err != nil {
		// Without the URL, whose query may hold a token.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return listPage{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return listPage{}, fmt.Errorf("read the answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return listPage{}, fmt.Errorf("HTTP %d: %s", resp.StatusCode, x402.Clean(string(body), 200))
	}
	if int64(len(body)) > maxBody {
		return listPage{}, fmt.Errorf("the answer is larger than %d bytes", maxBody)
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
