package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/waystation/waystation/api"
	"github.com/waystation/waystation/generator"
	"github.com/waystation/waystation/internal/directory"
	"github.com/waystation/waystation/internal/trust"
	"github.com/waystation/waystation/web"
)

// loadSiteConfig reads where the generated site lives, how often the catalog is
// checked for changes and the memory limits of a full generation and of serving.
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
	limit, err := generator.ParseMemoryLimit(getenv("SNAPSHOT_MEMLIMIT"))
	if err != nil {
		return fmt.Errorf("SNAPSHOT_MEMLIMIT: %w", err)
	}
	c.SnapshotMemoryLimit = limit
	if c.ServeMemoryLimit, err = generator.ParseMemoryLimit(getenv("SERVE_MEMLIMIT")); err != nil {
		return fmt.Errorf("SERVE_MEMLIMIT: %w", err)
	}
	switch v := getenv("SERVE_GOGC"); v {
	case "", "auto":
		// GOGC set by hand is the operator's pacing, not to be overridden.
		if getenv("GOGC") == "" {
			c.ServeGCPercent = generator.AutoGCPercent
		}
	case "none":
		c.ServeGCPercent = 0
	default:
		p, err := strconv.Atoi(v)
		if err != nil || p < 1 || p > 10000 {
			return fmt.Errorf("SERVE_GOGC %q: want auto, none or a percent from 1 to 10000, as GOGC", v)
		}
		c.ServeGCPercent = p
	}
	return nil
}

// startSnapshots puts a snapshot in force before the server listens: the newest one
// published on disk, so that the directory answers even while PostgreSQL is down, then
// a fresh build. migrate runs between the two; its failure only stops the server when
// there is nothing on disk to serve. The generator then runs until ctx ends; the
// channel closes once it has, its last publication written out.
func startSnapshots(ctx context.Context, cfg Config, log *slog.Logger, store trust.RecordStore, migrate func(context.Context) error) (*generator.Holder, <-chan struct{}, error) {
	holder := generator.NewHolder()
	g := &generator.Generator{
		Source: store, Site: &generator.Site{Dir: cfg.SiteDir, Keep: 3, Views: views}, Holder: holder,
		Log: log, Every: cfg.SnapshotInterval, Watch: cfg.SnapshotWatch, FullMemoryLimit: cfg.SnapshotMemoryLimit,
		ServeMemoryLimit: cfg.ServeMemoryLimit, ServeGCPercent: cfg.ServeGCPercent,
	}
	if cfg.Payment.Payer != nil {
		g.Payer = cfg.Payment.Payer
	}
	fromDisk := false
	if snap, err := g.Load(); errors.Is(err, fs.ErrNotExist) {
		// A first start: nothing went wrong.
		log.Info("no snapshot on disk yet: building the first", "site", cfg.SiteDir)
	} else if err != nil {
		log.Warn("the snapshot on disk cannot be read: building a fresh one", "site", cfg.SiteDir, "err", err)
	} else {
		fromDisk = true
		log.Info("serving the snapshot on disk until a fresh one is built", "id", snap.Info().ID,
			"generated_at", snap.Info().GeneratedAt, "methods", snap.Len())
	}
	if err := migrate(ctx); err != nil {
		if !fromDisk {
			return nil, nil, err
		}
		log.Warn("database unavailable; serving the snapshot on disk", "err", err)
	}
	if !fromDisk {
		if _, err := g.Once(ctx); err != nil {
			log.Warn("first snapshot failed; serving an empty directory until the next", "err", err)
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		g.Run(ctx)
	}()
	return holder, done, nil
}

// newHandler serves the API's paths with the API (the OAuth metadata at the
// origin's well-known locations among them), /metrics with metrics and
// everything else with the human pages, whose search goes through the same search
// service as the API's; opts add the approval pages.
func newHandler(apiHandler, metrics http.Handler, log *slog.Logger, snapshots directory.Snapshots, search web.Searcher, opts ...web.Option) http.Handler {
	ref, err := web.ParseReference(api.Document(), api.BasePath+"/openapi.json")
	if err != nil {
		panic(err) // the embedded document is checked by the tests
	}
	pages := web.NewServer(log, snapshots, views, search, append(opts, web.WithReference(ref))...)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch p := r.URL.Path; {
		case p == api.BasePath || strings.HasPrefix(p, api.BasePath+"/"),
			strings.HasPrefix(p, api.AuthServerPath), strings.HasPrefix(p, api.ProtectedResourcePath):
			apiHandler.ServeHTTP(w, r)
		case p == metricsPath:
			metrics.ServeHTTP(w, r)
		default:
			pages.ServeHTTP(w, r)
		}
	})
}

// metricsPath is where Prometheus scrapes, outside the API's base path so that a CDN
// in front of the API never caches or exposes it by the API's rules.
const metricsPath = "/metrics"

// views builds the human pages, live and published alike, linking the API's JSON.
var views = web.Views{DirectoryAPI: api.DirectoryPath}
