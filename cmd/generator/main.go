// Command generator builds the directory snapshot from PostgreSQL and publishes it as a
// static site (JSON, gzip, HTML pages, _headers, manifest) for nginx or a CDN: once, or
// every interval.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/waystation/waystation/api"
	"github.com/waystation/waystation/generator"
	"github.com/waystation/waystation/internal/payment"
	"github.com/waystation/waystation/internal/postgres"
	"github.com/waystation/waystation/web"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args, os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "generator:", err)
		os.Exit(1)
	}
}

// Config is what the generator reads from its flags and environment.
type Config struct {
	DatabaseURL string
	SiteDir     string
	Keep        int
	Interval    time.Duration
	Watch       time.Duration
	// MemoryLimit is the soft memory limit of a full generation, 0 for none.
	MemoryLimit int64
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("generator", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg := Config{DatabaseURL: getenv("DATABASE_URL"), SiteDir: getenv("SITE_DIR"), Keep: 3}
	if cfg.SiteDir == "" {
		cfg.SiteDir = "var/site"
	}
	var interval string
	fs.StringVar(&cfg.DatabaseURL, "database", cfg.DatabaseURL, "PostgreSQL URL (default $DATABASE_URL)")
	fs.StringVar(&cfg.SiteDir, "site", cfg.SiteDir, "site directory; current links to the newest snapshot (default $SITE_DIR or var/site)")
	fs.IntVar(&cfg.Keep, "keep", cfg.Keep, "published snapshots to keep on disk, the current one included")
	fs.StringVar(&interval, "every", getenv("GENERATOR_INTERVAL"), "generate every this long (e.g. 5m) instead of once (default $GENERATOR_INTERVAL)")
	fs.DurationVar(&cfg.Watch, "watch", 10*time.Second, "with -every: look for catalog changes this often and generate soon after one; 0 never looks")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: generator [-site DIR] [-every 5m] [-keep 3] [-database URL]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if interval != "" {
		d, err := time.ParseDuration(interval)
		if err != nil || d < time.Second {
			return fmt.Errorf("interval %q: want a duration of at least 1s", interval)
		}
		cfg.Interval = d
	}
	limit, err := generator.ParseMemoryLimit(getenv("SNAPSHOT_MEMLIMIT"))
	if err != nil {
		return fmt.Errorf("SNAPSHOT_MEMLIMIT: %w", err)
	}
	cfg.MemoryLimit = limit
	if cfg.DatabaseURL == "" {
		return errors.New("DATABASE_URL is not set")
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))

	store, err := postgres.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return err
	}
	defer store.Close()
	g := &generator.Generator{
		Source: store, Site: &generator.Site{Dir: cfg.SiteDir, Keep: cfg.Keep, Views: web.Views{DirectoryAPI: api.DirectoryPath}},
		Log: log, Every: cfg.Interval, Watch: cfg.Watch, FullMemoryLimit: cfg.MemoryLimit,
	}
	// The service's payer pays on X402_PAYER_NETWORKS and SOLANA_PAYER_NETWORKS:
	// methods payable there are marked payable. The keys stay with the server.
	var networks payment.Networks
	for _, n := range []struct {
		env   string
		parse func(string) (payment.Networks, error)
	}{{"X402_PAYER_NETWORKS", payment.ParseNetworks}, {"SOLANA_PAYER_NETWORKS", payment.ParseSolanaNetworks}} {
		if v := getenv(n.env); v != "" {
			ns, err := n.parse(v)
			if err != nil {
				return fmt.Errorf("%s: %w", n.env, err)
			}
			networks = append(networks, ns...)
		}
	}
	if networks != nil {
		g.Payer = networks
	}
	if cfg.Interval == 0 {
		st, err := g.Once(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, st)
		return nil
	}
	g.Run(ctx)
	return nil
}
