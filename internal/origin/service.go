package origin

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/waystation/waystation/internal/catalog"
	"github.com/waystation/waystation/internal/periodic"
	"github.com/waystation/waystation/internal/problem"
	"github.com/waystation/waystation/internal/trust"
)

// Sender sends one request through a guarded client: public addresses only (and
// the hosts the operator allows), no redirect followed, bounded in time: the
// service's outbound.Client.
type Sender interface {
	Send(ctx context.Context, req *http.Request) (*http.Response, error)
}

// Prober probes one endpoint without paying, as the probe rounds do.
type Prober interface {
	Probe(ctx context.Context, t trust.Target) trust.Result
}

// How long an origin's manifest may fail to be fetched before the origin is marked
// stale, and before its items are no longer listed, unless the service is told
// otherwise.
const (
	DefaultStaleAfter  = 24 * time.Hour
	DefaultDelistAfter = 7 * 24 * time.Hour
)

// Config tunes the service. Zero values take the defaults.
type Config struct {
	// StaleAfter is how long an origin's manifest may fail to be fetched before the
	// origin is marked stale (DefaultStaleAfter); DelistAfter how long before its
	// items are no longer listed (DefaultDelistAfter).
	StaleAfter  time.Duration
	DelistAfter time.Duration
	// SubmitTimeout bounds a submission: the fetch and every probe (default 60s).
	SubmitTimeout time.Duration
	// Limiter holds each user to a rate of submissions; nil means no limit.
	Limiter Limiter
	// Now is the clock (default time.Now).
	Now func() time.Time
	Log *slog.Logger
}

// Limiter holds each caller to a rate, in buckets every replica shares.
type Limiter interface {
	// Take takes one from caller's bucket when it holds one; when it does not, wait
	// is how long until it will.
	Take(ctx context.Context, caller string) (wait time.Duration, ok bool)
}

// Service lists origins from their manifests and keeps them fresh.
type Service struct {
	store  Store
	sender Sender
	prober Prober
	cfg    Config
}

// NewService is the service over store, fetching manifests through sender and
// probing items with prober.
func NewService(store Store, sender Sender, prober Prober, cfg Config) *Service {
	if cfg.StaleAfter <= 0 {
		cfg.StaleAfter = DefaultStaleAfter
	}
	if cfg.DelistAfter <= 0 {
		cfg.DelistAfter = DefaultDelistAfter
	}
	if cfg.DelistAfter < cfg.StaleAfter {
		cfg.DelistAfter = cfg.StaleAfter
	}
	if cfg.SubmitTimeout <= 0 {
		cfg.SubmitTimeout = 60 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return &Service{store: store, sender: sender, prober: prober, cfg: cfg}
}

// Submission is what became of a submitted origin: the origin as listed (when any
// item was) and each item of its manifest, listed or refused with its reason.
type Submission struct {
	Origin  string `json:"origin"`
	Status  string `json:"status"`
	Listed  int    `json:"listed"`
	Refused int    `json:"refused"`
	// Reason is nothing_listed when every item was refused.
	Reason string   `json:"reason,omitempty"`
	Owner  string   `json:"owner"`
	Items  []Report `json:"items"`
}

// Submit fetches origin's manifest, reads it, probes each item it accepts and lists
// those whose live endpoint answers a valid 402. A manifest refused as a whole
// answers problem manifest_refused and lists nothing; one whose every item is
// refused answers status refused, listing nothing either. A user past its rate of
// submissions gets submission_rate_limited, with its Retry-After, before anything
// is fetched.
func (s *Service) Submit(ctx context.Context, userID, rawOrigin string) (Submission, error) {
	origin, host, err := ParseOrigin(rawOrigin)
	if err != nil {
		return Submission{}, err
	}
	if s.cfg.Limiter != nil {
		if wait, ok := s.cfg.Limiter.Take(ctx, "origin:user:"+userID); !ok {
			p := problem.New(problem.SubmissionRateLimited, "This user submitted origins faster than its rate allows; submit again after Retry-After.")
			p.RetryAfter = max(1, problem.Seconds(wait))
			return Submission{}, p
		}
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.SubmitTimeout)
	defer cancel()
	body, etag, _, ref := s.fetch(ctx, origin, "")
	if ref != nil {
		return Submission{}, ref.Problem()
	}
	sub, err := s.list(ctx, Origin{Origin: origin, Hostname: host, SubmittedBy: userID, ETag: etag}, body)
	if ref, ok := err.(*Refusal); ok {
		return Submission{}, ref.Problem()
	}
	return sub, err
}

// list reads a fetched manifest, probes what it accepts and records the listing.
func (s *Service) list(ctx context.Context, o Origin, body []byte) (Submission, error) {
	m, err := ReadManifest(body, o.Origin)
	if err != nil {
		return Submission{}, err
	}
	now := s.cfg.Now().UTC()
	sub := Submission{Origin: o.Origin, Status: StatusListed, Items: append([]Report(nil), m.Refused...)}
	l := Listing{Origin: o, Verified: map[string]bool{}, Probes: map[string]trust.Result{}, At: now}
	var owner string
	var kept []Item
	for _, it := range m.Items {
		rep := Report{Index: it.Index, URL: it.URL, Method: it.Method, Status: ItemRefused}
		if ctx.Err() != nil {
			rep.Reason, rep.Detail = ItemProbeFailed, "not probed: the submission ran out of time"
			sub.Items = append(sub.Items, rep)
			continue
		}
		res := s.prober.Probe(ctx, trust.Target{Hostname: o.Hostname, Kind: catalog.KindX402, Method: it.Method, URL: it.URL})
		if res.Outcome != trust.OutcomePaymentRequired || res.Offer == nil {
			rep.Reason = ItemProbeFailed
			rep.Detail = "the live endpoint answered " + res.Outcome
			if res.Reason != "" {
				rep.Detail += " (" + res.Reason + ")"
			}
			sub.Items = append(sub.Items, rep)
			continue
		}
		kept = append(kept, it)
		key := it.URL
		l.Probes[key] = res
		// The owner's word: the payee that signed the origin is the one the live 402
		// names, and the manifest names it too.
		if pay := strings.ToLower(res.Offer.PayTo); m.Signers[pay] && strings.EqualFold(it.PayTo(), pay) {
			l.Verified[key] = true
			owner = res.Offer.PayTo
		}
	}
	if len(kept) == 0 {
		sub.Status, sub.Reason = "refused", ReasonNothingListed
		sub.Refused = len(sub.Items)
		sortReports(sub.Items)
		return sub, nil
	}
	cat, err := itemsCatalog(kept)
	if err != nil {
		return Submission{}, err
	}
	l.Catalog = cat
	l.Origin.Owner = owner
	l.Origin.Status = StatusListed
	slugs, err := s.store.ListOrigin(ctx, l)
	if err != nil {
		return Submission{}, err
	}
	for _, it := range kept {
		sub.Items = append(sub.Items, Report{Index: it.Index, URL: it.URL, Method: it.Method, Status: ItemListed,
			Slug: slugs[it.URL], OwnerVerified: l.Verified[it.URL]})
	}
	sortReports(sub.Items)
	sub.Listed, sub.Refused, sub.Owner = len(kept), len(sub.Items)-len(kept), owner
	return sub, nil
}

// itemsCatalog makes the accepted items methods of source origin, read as the
// catalog reads a discovery listing (names, categories, guidance, slugs).
func itemsCatalog(items []Item) (catalog.Catalog, error) {
	var lines bytes.Buffer
	for _, it := range items {
		lines.Write(it.Bazaar)
		lines.WriteByte('\n')
	}
	cat, skipped, err := catalog.ParseBazaar(&lines)
	if err != nil {
		return cat, err
	}
	if len(skipped) > 0 {
		return cat, fmt.Errorf("origin: an accepted item cannot be read as a listing's: %w", skipped[0])
	}
	for pi := range cat.Providers {
		for mi := range cat.Providers[pi].Methods {
			m := &cat.Providers[pi].Methods[mi]
			m.Source = catalog.SourceOrigin
			m.Listing = &catalog.Listing{UpdatedAt: m.Listing.UpdatedAt}
		}
	}
	return cat, nil
}

func sortReports(rs []Report) {
	sort.SliceStable(rs, func(i, j int) bool { return rs[i].Index < rs[j].Index })
}

// maxRedirects is how many redirects within the origin a manifest fetch follows.
const maxRedirects = 3

// fetch gets the origin's manifest through the guarded sender, following
// redirects only within the origin, reading at most MaxManifest bytes. With etag it
// asks If-None-Match, and notModified reports a 304.
func (s *Service) fetch(ctx context.Context, origin, etag string) (body []byte, newETag string, notModified bool, ref *Refusal) {
	target := origin + WellKnownPath
	for range maxRedirects + 1 {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
		if err != nil {
			return nil, "", false, refuse(ReasonUnreachable, "the manifest's URL cannot be requested")
		}
		req.Header.Set("Accept", "application/json")
		req.Header.Set("User-Agent", "Waystation-Origin/1 (+directory listing; reads /.well-known/x402.json)")
		if etag != "" {
			req.Header.Set("If-None-Match", etag)
		}
		resp, err := s.sender.Send(ctx, req)
		if err != nil {
			outcome, detail := trust.Classify(err)
			if outcome == trust.OutcomeBlockedAddress {
				return nil, "", false, refuse(ReasonBlockedAddress, "the origin resolves to an address that is not public")
			}
			return nil, "", false, refuse(ReasonUnreachable, "%s: %s", outcome, detail)
		}
		switch {
		case resp.StatusCode >= 300 && resp.StatusCode < 400 && resp.StatusCode != http.StatusNotModified:
			resp.Body.Close()
			loc, err := req.URL.Parse(resp.Header.Get("Location"))
			if err != nil || resp.Header.Get("Location") == "" {
				return nil, "", false, refuse(ReasonRedirect, "a redirect without a Location")
			}
			if o, _, err := ParseOrigin(loc.Scheme + "://" + loc.Host); err != nil || o != origin || loc.User != nil {
				return nil, "", false, refuse(ReasonRedirect, "a redirect to another origin, never followed")
			}
			target = (&url.URL{Scheme: loc.Scheme, Host: loc.Host, Path: loc.Path, RawPath: loc.RawPath, RawQuery: loc.RawQuery}).String()
			continue
		case resp.StatusCode == http.StatusNotModified && etag != "":
			resp.Body.Close()
			return nil, etag, true, nil
		case resp.StatusCode != http.StatusOK:
			resp.Body.Close()
			return nil, "", false, refuse(ReasonHTTPStatus, "the manifest's URL answered %d", resp.StatusCode)
		}
		b, err := io.ReadAll(io.LimitReader(resp.Body, MaxManifest+1))
		resp.Body.Close()
		if err != nil {
			outcome, detail := trust.Classify(err)
			return nil, "", false, refuse(ReasonUnreachable, "%s while reading: %s", outcome, detail)
		}
		if len(b) > MaxManifest {
			return nil, "", false, refuse(ReasonTooLarge, "the manifest is over %d bytes", MaxManifest)
		}
		tag := resp.Header.Get("ETag")
		if len(tag) > 256 {
			tag = ""
		}
		return b, tag, false, nil
	}
	return nil, "", false, refuse(ReasonRedirect, "more than %d redirects", maxRedirects)
}

// Origin is a listed origin, by any spelling ParseOrigin reads.
func (s *Service) Origin(ctx context.Context, raw string) (Origin, error) {
	origin, _, err := ParseOrigin(raw)
	if err != nil {
		return Origin{}, err
	}
	return s.store.Origin(ctx, origin)
}

// ErrNotFound is an origin never listed.
var ErrNotFound = problem.New(problem.NotFound, "No origin with this address was ever listed.")

// Refresh fetches every listed or stale origin's manifest again, asking
// If-None-Match: an unchanged one is recorded as seen; a changed one is listed anew
// (items gone from it are no longer listed); one that cannot be fetched is marked
// stale after StaleAfter, and delisted after DelistAfter, with the reason.
// One replica refreshes at a time; checked is 0 when another holds the lock.
func (s *Service) Refresh(ctx context.Context) (checked int, err error) {
	release, ok, err := s.store.TryRefreshLock(ctx)
	if err != nil || !ok {
		return 0, err
	}
	defer release()
	origins, err := s.store.Origins(ctx)
	if err != nil {
		return 0, err
	}
	for _, o := range origins {
		if ctx.Err() != nil {
			return checked, ctx.Err()
		}
		s.refresh(ctx, o)
		checked++
	}
	return checked, nil
}

func (s *Service) refresh(ctx context.Context, o Origin) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.SubmitTimeout)
	defer cancel()
	now := s.cfg.Now().UTC()
	body, etag, same, ref := s.fetch(ctx, o.Origin, o.ETag)
	if ref == nil && same {
		if err := s.store.OriginUnchanged(ctx, o.ID, now); err != nil {
			s.cfg.Log.Warn("origin: record an unchanged manifest", "origin", o.Origin, "err", err)
		}
		return
	}
	if ref == nil {
		o.ETag = etag
		sub, err := s.list(ctx, o, body)
		switch r, refused := err.(*Refusal); {
		case refused:
			ref = r
		case err != nil:
			s.cfg.Log.Warn("origin: list a changed manifest", "origin", o.Origin, "err", err)
			return
		case sub.Status != StatusListed:
			// The owner's manifest lists nothing any more: nor does the directory.
			if err := s.store.OriginFailing(ctx, o.ID, StatusDelisted, ReasonNothingListed+": the manifest lists no item that answers a valid 402", now); err != nil {
				s.cfg.Log.Warn("origin: delist", "origin", o.Origin, "err", err)
			}
			return
		default:
			return
		}
	}
	since := now.Sub(o.LastFetched)
	status := o.Status
	switch {
	case since >= s.cfg.DelistAfter:
		status = StatusDelisted
	case since >= s.cfg.StaleAfter:
		status = StatusStale
	}
	// Within StaleAfter the listing stands as it was, the failure kept as its reason.
	if err := s.store.OriginFailing(ctx, o.ID, status, ref.Error(), now); err != nil {
		s.cfg.Log.Warn("origin: record a failed fetch", "origin", o.Origin, "err", err)
	}
}

// Run refreshes every origin each interval (the first a minute after start) until
// ctx ends: the manifests are fetched with each probe round.
func (s *Service) Run(ctx context.Context, every time.Duration) {
	periodic.Run(ctx, min(time.Minute, every), every, func(ctx context.Context) {
		n, err := s.Refresh(ctx)
		if err != nil && ctx.Err() == nil {
			s.cfg.Log.Warn("origin refresh failed", "err", err)
			return
		}
		s.cfg.Log.Debug("origins refreshed", "origins", n)
	})
}
