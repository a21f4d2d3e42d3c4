// Command server runs Waystation: the HTTP service, and the database chores around
// it (migrate, load the demo catalog, import a Bazaar catalog).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/waystation/waystation/api"
	"github.com/waystation/waystation/internal/captcha"
	"github.com/waystation/waystation/internal/catalog"
	"github.com/waystation/waystation/internal/postgres"
	"github.com/waystation/waystation/internal/protect"
	"github.com/waystation/waystation/internal/ratelimit"
	"github.com/waystation/waystation/internal/resource"
	"github.com/waystation/waystation/internal/search"
	"github.com/waystation/waystation/internal/session"
	"github.com/waystation/waystation/internal/telemetry"
	"github.com/waystation/waystation/internal/vault"
	"github.com/waystation/waystation/web"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args, os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "waystation:", err)
		os.Exit(1)
	}
}

const usage = `usage: server <command> [arguments]

commands:
  serve            migrate, then serve the API (the default)
  migrate          apply database migrations
  demo             load the demo catalog into an empty catalog
  import [FILE]    import an x402 Bazaar discovery file (items or list responses, as
                   JSON lines or one document); without FILE, sync the listing of
                   the discovery endpoint BAZAAR_URL names
  probe            probe every enabled method once, now (never pays)
  override [-by NAME] [-expires 72h|7d|RFC3339] HOSTNAME VERDICT REASON
                   set an operator override on a hostname's verdict
  override-remove [-by NAME] HOSTNAME
                   remove the override in force on a hostname
  key -user NAME [-agent NAME]
                   create the user (and agent) if missing and print a new API key once
  reseal           re-seal every stored value (saved and provided) under the first key
                   of SECRETS_KEY, so that older keys can be dropped from it
  calibrate [-max-false-match 0.15] [-n] QUERIES.jsonl...
                   fit the search band of the model search answers with on labelled
                   queries, print its cross-validated figures and store it
`

// Config is everything the server reads from its environment.
type Config struct {
	Addr string
	// Socket names the listening socket systemd passed the server (socket
	// activation, see listen.go); "": the server listens on Addr itself (serve only).
	Socket           string
	DatabaseURL      string
	LogLevel         slog.Level
	SnapshotInterval time.Duration
	ShutdownTimeout  time.Duration
	// ShutdownDrain is the longest a stopping server keeps serving, closing each
	// connection after its answer, before it stops accepting (see drainer).
	ShutdownDrain time.Duration
	// AuthPepper is the secret API keys are hashed with, Secrets the keys provided
	// values are sealed with, PublicURL the origin of approval links (serve only).
	AuthPepper []byte
	Secrets    *vault.Vault
	PublicURL  string
	// SecurityContact is security.txt's Contact (serve only).
	SecurityContact []string
	// LoopbackHTTP lets the approval pages' cookies go without Secure to loopback
	// clients on plain HTTP, for development (serve only).
	LoopbackHTTP bool
	// MaxKeysPerUser and MaxAgentsPerUser cap what one user holds, SessionLimits what
	// one agent holds open, SessionRetention how long closed sessions are kept
	// (serve only).
	MaxKeysPerUser, MaxAgentsPerUser int
	SessionLimits                    session.Limits
	SessionRetention                 time.Duration
	// Detections is the budget of protected values an agent's requests may hold
	// before it is paused (serve only).
	Detections protect.Config
	// LLM is the upstream of the LLM proxy (serve only).
	LLM LLMConfig
	// SiteDir holds the published snapshots (see site.go); SnapshotWatch is how often
	// the catalog is checked for changes; SnapshotMemoryLimit is the soft memory limit
	// of a full generation, ServeMemoryLimit the one between generations, 0 for none;
	// ServeGCPercent paces the collector between generations (see
	// generator.Generator.ServeGCPercent).
	SiteDir             string
	SnapshotWatch       time.Duration
	SnapshotMemoryLimit int64
	ServeMemoryLimit    int64
	ServeGCPercent      int
	// Probe is how the prober runs (see trust.go).
	Probe ProbeConfig
	// Payment is how the server pays sellers (see payment.go).
	Payment PaymentConfig
	// CaptchaSolver answers CAPTCHA tasks; nil: people answer image ones (see captcha.go).
	CaptchaSolver *captcha.Solver
	// Search is how search embeds and limits queries (see search.go).
	Search SearchConfig
	// Bazaar is where import syncs the catalog from (see bazaar.go).
	Bazaar BazaarConfig
	// Telemetry is how the server reports on itself (see telemetry.go).
	Telemetry TelemetryConfig
}

// defaultHost is where the server listens unless HOST says otherwise: loopback, so
// that a server started to try the service is not open to the network it is on.
// HOST=0.0.0.0 (or ::) listens on every interface.
const defaultHost = "127.0.0.1"

func loadConfig(getenv func(string) string) (Config, error) {
	c := Config{
		DatabaseURL:      getenv("DATABASE_URL"),
		SnapshotInterval: 5 * time.Minute,
		ShutdownTimeout:  15 * time.Second,
	}
	port := getenv("PORT")
	if port == "" {
		port = "8080"
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return c, fmt.Errorf("PORT %q is not a port number", port)
	}
	host := getenv("HOST")
	if host == "" {
		host = defaultHost
	}
	c.Addr = net.JoinHostPort(host, port)
	if c.DatabaseURL == "" {
		return c, errors.New("DATABASE_URL is not set (make run sets it for the local database)")
	}
	if v := getenv("LOG_LEVEL"); v != "" {
		if err := c.LogLevel.UnmarshalText([]byte(v)); err != nil {
			return c, fmt.Errorf("LOG_LEVEL: %w", err)
		}
	}
	if v := getenv("SNAPSHOT_INTERVAL"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Second {
			return c, fmt.Errorf("SNAPSHOT_INTERVAL %q: want a duration of at least 1s", v)
		}
		c.SnapshotInterval = d
	}
	if v := getenv("SHUTDOWN_DRAIN"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 || d > time.Minute {
			return c, fmt.Errorf("SHUTDOWN_DRAIN %q: want a duration from 0s to 1m", v)
		}
		c.ShutdownDrain = d
	}
	if err := loadSiteConfig(&c, getenv); err != nil {
		return c, err
	}
	probe, err := loadProbeConfig(getenv)
	if err != nil {
		return c, err
	}
	c.Probe = probe
	if c.Payment, err = loadPaymentConfig(getenv); err != nil {
		return c, err
	}
	if c.CaptchaSolver, err = loadCaptchaSolver(getenv); err != nil {
		return c, err
	}
	if c.Search, err = loadSearchConfig(getenv); err != nil {
		return c, err
	}
	if c.Bazaar, err = loadBazaarConfig(getenv); err != nil {
		return c, err
	}
	if c.Telemetry, err = loadTelemetryConfig(getenv); err != nil {
		return c, err
	}
	return c, nil
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("server", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage) }
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	cmd, rest := "serve", fs.Args()
	if len(rest) > 0 {
		cmd, rest = rest[0], rest[1:]
	}
	cfg, err := loadConfig(getenv)
	if err != nil {
		return err
	}
	log, err := telemetry.NewLogger(stderr, cfg.Telemetry.LogFormat, cfg.LogLevel)
	if err != nil {
		return err
	}
	// The access lines held back are written before the server says it stopped.
	defer telemetry.Flush(log)

	store, err := postgres.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return err
	}
	defer store.Close()

	switch cmd {
	case "serve":
		if cfg.AuthPepper, err = loadPepper(getenv); err != nil {
			return err
		}
		if cfg.Secrets, err = loadSecrets(getenv, cfg.AuthPepper); err != nil {
			return err
		}
		if cfg.PublicURL, err = loadPublicURL(getenv); err != nil {
			return err
		}
		if cfg.SecurityContact, err = loadSecurityContact(getenv, cfg.PublicURL); err != nil {
			return err
		}
		if cfg.LoopbackHTTP, err = loadLoopbackHTTP(getenv); err != nil {
			return err
		}
		if cfg.MaxKeysPerUser, cfg.MaxAgentsPerUser, err = loadCaps(getenv); err != nil {
			return err
		}
		if cfg.SessionLimits, cfg.SessionRetention, err = loadSessionLimits(getenv); err != nil {
			return err
		}
		if cfg.Detections, err = loadDetections(getenv); err != nil {
			return err
		}
		if cfg.LLM, err = loadLLM(getenv); err != nil {
			return err
		}
		if cfg.Socket, err = loadSocket(getenv, os.Getpid()); err != nil {
			return err
		}
		return serve(ctx, cfg, log, store, stdout)
	case "migrate":
		return store.Migrate(ctx)
	case "demo":
		if err := loadDemo(ctx, store, stdout); err != nil {
			return err
		}
		return embedCatalog(ctx, cfg.Search, store, stdout)
	case "import":
		if err := importCatalog(ctx, cfg.Bazaar, store, rest, stdout); err != nil {
			return err
		}
		return embedCatalog(ctx, cfg.Search, store, stdout)
	case "probe":
		return probeOnce(ctx, cfg.Probe, log, store, newClients(cfg).sellers, stdout)
	case "override":
		return setOverride(ctx, store, rest, getenv, stdout, stderr)
	case "override-remove":
		return removeOverride(ctx, store, rest, getenv, stdout, stderr)
	case "key":
		return issueKey(ctx, store, rest, getenv, stdout, stderr)
	case "reseal":
		return reseal(ctx, store, getenv, stdout)
	case "calibrate":
		return calibrate(ctx, cfg.Search, store, rest, stdout, stderr)
	}
	fs.Usage()
	return fmt.Errorf("unknown command %q", cmd)
}

func loadDemo(ctx context.Context, store *postgres.Store, stdout io.Writer) error {
	empty, err := store.Empty(ctx)
	if err != nil {
		return err
	}
	if !empty {
		fmt.Fprintln(stdout, "catalog not empty: demo catalog not loaded")
		return nil
	}
	cat, err := catalog.Demo()
	if err != nil {
		return err
	}
	res, err := store.LoadCatalog(ctx, cat, time.Now())
	if err != nil {
		return err
	}
	disabled := 0
	for _, p := range cat.Providers {
		for _, m := range p.Methods {
			if m.Disabled {
				disabled++
			}
		}
	}
	fmt.Fprintf(stdout, "demo catalog loaded: %d providers, %d methods", res.Providers, res.Inserted)
	if disabled > 0 {
		// The demo shows what a disabled method looks like: it is kept, never listed.
		fmt.Fprintf(stdout, " (%d of them disabled, which the directory and search leave out)", disabled)
	}
	fmt.Fprintln(stdout)
	return nil
}

func serve(ctx context.Context, cfg Config, log *slog.Logger, store *postgres.Store, stdout io.Writer) error {
	snapshots, generated, err := startSnapshots(ctx, cfg, log, store, store.Migrate)
	if err != nil {
		return err
	}
	metrics := telemetry.NewMetrics()
	out := newClients(cfg)
	if cfg.Probe.Interval > 0 {
		// New probes reach the directory through the snapshot generator's watch.
		go probeRounds(cfg.Probe, log, probeCounter{store, metrics}, out.sellers).Run(ctx)
	}
	searcher := &search.Service{
		Limiter:        ratelimit.NewLimiter(cfg.Search.RatePerMin, cfg.Search.Burst, rateLimitCallers, nil),
		TrustedProxies: cfg.Search.TrustedProxies, Log: log,
	}
	searcher.Limiter.Shared = store // every replica takes from the same buckets
	if searcher.Engine, err = startSearch(ctx, cfg.Search, cfg.SnapshotInterval, log, store, metrics); err != nil {
		if store.Ping(ctx) == nil {
			return err
		}
		// The directory still answers from the snapshot on disk; search says it cannot.
		log.Warn("database unavailable; serving without search", "err", err)
	}

	if err := registerMetrics(metrics, snapshots, searcher, cfg.Search, store); err != nil {
		return err
	}
	observed := telemetry.HTTP{Metrics: metrics}
	if cfg.Telemetry.AccessLog {
		observed.AccessLog = log
	}

	svc := newServices(ctx, cfg, log, store, out)
	apiServer := api.NewServer(api.Config{}, log, snapshots, store, withAuthenticated(ctx, cfg, log, store, svc), api.WithSearch(searcher),
		api.WithAllowance(allowanceLeft(cfg.Search, store)))
	draining := newDrainer()
	srv := &http.Server{
		Addr: cfg.Addr,
		Handler: draining.closeWhile(observed.Wrap(newHandler(apiServer, metrics.Handler(cfg.Telemetry.Metrics),
			log, snapshots, searcher, withApprovals(cfg, svc), web.WithScreen(apiServer.ScreenSearch),
			web.WithDiscovery(web.Discovery{PublicURL: cfg.PublicURL, SecurityContact: cfg.SecurityContact})))),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		// Answers sent from files go out with their headers in one segment.
		ConnContext: resource.ConnContext,
		ConnState:   draining.track,
	}
	ln, err := listen(cfg)
	if err != nil {
		return err
	}
	from := ""
	if cfg.Socket != "" {
		from = "socket " + cfg.Socket + " from systemd, "
	}
	where := "http://" + ln.Addr().String() + api.BasePath
	if ln.Addr().Network() == "unix" {
		where = "unix:" + ln.Addr().String() + " at " + api.BasePath
	}
	fmt.Fprintf(stdout, "waystation serving on %s (%ssnapshot %s, %d methods)\n",
		where, from, snapshots.Current().Info().ID, snapshots.Current().Len())

	errc := make(chan error, 1)
	// The connections read and write without the scheduler's bookkeeping, which cost
	// the large answers a context switch each (see resource.Listener).
	go func() { errc <- srv.Serve(resource.Listener(ln)) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	start := time.Now()
	shutdownCtx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	if err := draining.stop(shutdownCtx, log, srv, ln, errc, cfg.ShutdownDrain, apiServer.Drain, cfg.Socket); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	// The snapshot generator stops with ctx; a publication under way is written out
	// before the server says it stopped, so nothing writes to SITE_DIR after.
	select {
	case <-generated:
	case <-shutdownCtx.Done():
		log.Warn("the snapshot generator did not stop within the shutdown timeout")
	}
	log.Info("stopped", "ms", time.Since(start).Milliseconds())
	return nil
}
