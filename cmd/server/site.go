package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/waystation/waystation/api"
	"github.com/waystation/waystation/generator"
	"github.com/waystation/waystation/internal/postgres"
	"github.com/waystation/waystation/web"
)

// loadSiteConfig reads where the generated site lives and how often the catalog is
// checked for changes.
func loadSiteConfig(c *Config, getenv func(string) string) error {
	c.SiteDir = getenv("SITE_DIR")
	if c.SiteDir == "" {
		c.SiteDir = "var/site"
	}
	c.SnapshotWatch = 10 * time.Second
	if v := getenv("SNAPSHOT_WATCH"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || (d != 0 && d < time.Second) {
			return fmt.Errorf("SNAPSHOT_WATCH %q: want 0 or a duration of at least 1s", v)
		}
		c.SnapshotWatch = d
	}
	return nil
}

// startSnapshots puts a snapshot in force before the server listens: the newest one
// published on disk, so that the directory answers even while PostgreSQL is down, then
// a fresh build. migrate runs between the two; its failure only stops the server when
// there is nothing on disk to serve. The generator then runs until ctx ends.
func startSnapshots(ctx context.Context, cfg Config, log *slog.Logger, store *postgres.Store, migrate func(context.Context) error) (*generator.Holder, error) {
	holder := generator.NewHolder()
	fromDisk := false
	if snap, err := generator.LoadSite(cfg.SiteDir); err != nil {
		log.Info("no snapshot on disk to start from", "site", cfg.SiteDir, "err", err)
	} else {
		holder.Set(snap)
		fromDisk = true
		log.Info("serving the snapshot on disk until a fresh one is built", "id", snap.Info().ID,
			"generated_at", snap.Info().GeneratedAt, "methods", snap.Len())
	}
	if err := migrate(ctx); err != nil {
		if !fromDisk {
			return nil, err
		}
		log.Warn("database unavailable; serving the snapshot on disk", "err", err)
	}
	g := &generator.Generator{
		Source: store, Site: &generator.Site{Dir: cfg.SiteDir, Keep: 3}, Holder: holder,
		Log: log, Every: cfg.SnapshotInterval, Watch: cfg.SnapshotWatch,
	}
	if !fromDisk {
		if _, err := g.Once(ctx); err != nil {
			log.Warn("first snapshot failed; serving an empty directory until the next", "err", err)
		}
	}
	go g.Run(ctx)
	return holder, nil
}

// newHandler serves the API's paths with the API and everything else with the human
// pages, whose search goes through the API's search route; opts add the approval pages.
func newHandler(apiHandler http.Handler, log *slog.Logger, snapshots web.Snapshots, opts ...web.Option) http.Handler {
	pages := web.NewServer(log, snapshots, apiSearch{apiHandler}, opts...)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := r.URL.Path; p == api.BasePath || strings.HasPrefix(p, api.BasePath+"/") {
			apiHandler.ServeHTTP(w, r)
			return
		}
		pages.ServeHTTP(w, r)
	})
}

// apiSearch answers the search page through the API's own search route, so that the
// page gets the same ranking, per-caller rate limit and daily allowance as the JSON.
type apiSearch struct{ api http.Handler }

var _ web.Searcher = apiSearch{}

// searchRefusal is a refused search, in words for the page, with the API's status
// and Retry-After, which the page passes on.
type searchRefusal struct {
	reason     string
	status     int
	retryAfter string
}

func (e searchRefusal) Error() string                { return e.reason }
func (e searchRefusal) SearchUnavailable() string    { return e.reason }
func (e searchRefusal) SearchRefused() (int, string) { return e.status, e.retryAfter }

func (s apiSearch) Search(r *http.Request, q string) (web.SearchResult, error) {
	req := r.Clone(r.Context())
	req.Method = http.MethodGet
	req.URL = &url.URL{Path: api.BasePath + "/api/public/v1/services", RawQuery: "q=" + url.QueryEscape(q)}
	req.RequestURI = req.URL.RequestURI()
	req.Header = http.Header{"X-Forwarded-For": r.Header["X-Forwarded-For"]}
	rec := &recorder{header: http.Header{}}
	s.api.ServeHTTP(rec, req)
	switch rec.status {
	case http.StatusOK:
	case http.StatusTooManyRequests:
		ra := rec.header.Get("Retry-After")
		return web.SearchResult{}, searchRefusal{"you have searched a lot in a short time; try again in " + ra + " seconds.", rec.status, ra}
	case http.StatusServiceUnavailable:
		var p struct {
			Code string `json:"code"`
		}
		json.Unmarshal(rec.body.Bytes(), &p)
		if p.Code == api.CodeAllowanceExhausted {
			return web.SearchResult{}, searchRefusal{"today's allowance of new searches is spent; exact method and provider names still work, and it renews at midnight UTC.", rec.status, rec.header.Get("Retry-After")}
		}
		return web.SearchResult{}, searchRefusal{"no search model can answer right now; try again in a minute.", rec.status, rec.header.Get("Retry-After")}
	default:
		return web.SearchResult{}, fmt.Errorf("search page: the API answered %d: %.200s", rec.status, rec.body.Bytes())
	}
	var body struct {
		Match    string `json:"match"`
		Degraded bool   `json:"degraded"`
		Items    []struct {
			Slug string `json:"slug"`
		} `json:"items"`
	}
	if err := json.Unmarshal(rec.body.Bytes(), &body); err != nil {
		return web.SearchResult{}, fmt.Errorf("search page: %w", err)
	}
	res := web.SearchResult{Match: body.Match, Degraded: body.Degraded}
	for _, it := range body.Items {
		res.Slugs = append(res.Slugs, it.Slug)
	}
	return res, nil
}

// recorder keeps an in-process response.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }
func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.body.Write(b)
}
func (r *recorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}
