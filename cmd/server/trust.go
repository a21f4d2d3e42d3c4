package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/waystation/waystation/internal/origin"
	"github.com/waystation/waystation/internal/outbound"
	"github.com/waystation/waystation/internal/postgres"
	"github.com/waystation/waystation/internal/trust"
)

// ProbeConfig is how the prober runs.
type ProbeConfig struct {
	// Interval between probe rounds in the server; 0 disables the loop.
	// Concurrency is the prober's (0: trust.NewProber's default); Timeout bounds
	// each request to a seller (0: outbound.New's default).
	Interval    time.Duration
	Concurrency int
	Timeout     time.Duration
	// PerHost and PerRound bound the endpoints one round probes, of one host and
	// in all (PROBE_PER_HOST, PROBE_PER_ROUND; 0 for no bound).
	PerHost, PerRound int
	// OriginStaleAfter is how long a listed origin's manifest may fail to be
	// fetched before the origin is marked stale; OriginDelistAfter before its items
	// are no longer listed (0: origin.NewService's defaults).
	OriginStaleAfter  time.Duration
	OriginDelistAfter time.Duration
	// OriginSubmitPerHour is how many origins a user may submit an hour, in bursts
	// of a quarter of it (ORIGIN_SUBMIT_RATE_PER_HOUR; 0 for no limit).
	OriginSubmitPerHour float64
}

func loadProbeConfig(getenv func(string) string) (ProbeConfig, error) {
	c := ProbeConfig{Interval: 30 * time.Minute, OriginSubmitPerHour: 20, PerHost: 10, PerRound: 1000}
	if v := getenv("PROBE_INTERVAL"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || (d != 0 && d < time.Minute) {
			return c, fmt.Errorf("PROBE_INTERVAL %q: want 0 (off) or a duration of at least 1m", v)
		}
		c.Interval = d
	}
	if v := getenv("PROBE_CONCURRENCY"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 256 {
			return c, fmt.Errorf("PROBE_CONCURRENCY %q: want a whole number from 1 to 256", v)
		}
		c.Concurrency = n
	}
	if v := getenv("PROBE_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 100*time.Millisecond || d > 5*time.Minute {
			return c, fmt.Errorf("PROBE_TIMEOUT %q: want a duration from 100ms to 5m", v)
		}
		c.Timeout = d
	}
	for _, v := range []struct {
		name string
		to   *int
	}{{"PROBE_PER_HOST", &c.PerHost}, {"PROBE_PER_ROUND", &c.PerRound}} {
		if s := getenv(v.name); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n < 0 || n > 1000000 {
				return c, fmt.Errorf("%s %q: want 0 (no bound) or a whole number up to 1000000", v.name, s)
			}
			*v.to = n
		}
	}
	for _, v := range []struct {
		name string
		to   *time.Duration
	}{{"ORIGIN_STALE_AFTER", &c.OriginStaleAfter}, {"ORIGIN_DELIST_AFTER", &c.OriginDelistAfter}} {
		if s := getenv(v.name); s != "" {
			d, err := parseDays(s)
			if err != nil || d < time.Minute {
				return c, fmt.Errorf("%s %q: want a duration of at least 1m (Go syntax, or whole days as 7d)", v.name, s)
			}
			*v.to = d
		}
	}
	if v := getenv("ORIGIN_SUBMIT_RATE_PER_HOUR"); v != "" {
		n, err := strconv.ParseFloat(v, 64)
		if err != nil || n < 0 || n > 3600 || math.IsNaN(n) {
			return c, fmt.Errorf("ORIGIN_SUBMIT_RATE_PER_HOUR %q: want a number from 0 (no limit) to 3600", v)
		}
		c.OriginSubmitPerHour = n
	}
	if delist, stale := cmp.Or(c.OriginDelistAfter, origin.DefaultDelistAfter), cmp.Or(c.OriginStaleAfter, origin.DefaultStaleAfter); delist < stale {
		return c, fmt.Errorf("ORIGIN_DELIST_AFTER (%s) is shorter than ORIGIN_STALE_AFTER (%s): an origin is stale before it is delisted", delist, stale)
	}
	return c, nil
}

// probeRounds runs a prober over the store's catalog, reaching sellers through
// sellers.
func probeRounds(cfg ProbeConfig, log *slog.Logger, store trust.ProbeStore, sellers *outbound.Client) *trust.Rounds {
	prober := trust.NewProber(trust.ProberConfig{Client: sellers, Concurrency: cfg.Concurrency}, log)
	return &trust.Rounds{Store: store, Prober: prober, Interval: cfg.Interval, Log: log,
		Budget: trust.Budget{PerHost: cfg.PerHost, PerRound: cfg.PerRound}}
}

// probeOnce is the probe command: one round over the enabled methods, now, within
// the budget.
func probeOnce(ctx context.Context, cfg ProbeConfig, log *slog.Logger, store *postgres.Store, sellers *outbound.Client, stdout io.Writer) error {
	start := time.Now()
	stats, ran, err := probeRounds(cfg, log, store, sellers).Once(ctx, start)
	if err != nil {
		return err
	}
	if !ran {
		return errors.New("probe: another process is running a probe round; try again later")
	}
	fmt.Fprintf(stdout, "probed %d methods in %s (%d skipped, %d left for the next round)\n",
		stats.Probed, time.Since(start).Round(time.Millisecond), stats.Skipped, stats.Deferred)
	outcomes := make([]string, 0, len(stats.Outcomes))
	for o := range stats.Outcomes {
		outcomes = append(outcomes, o)
	}
	sort.Strings(outcomes)
	for _, o := range outcomes {
		fmt.Fprintf(stdout, "  %-20s %d\n", o, stats.Outcomes[o])
	}
	return nil
}

// setOverride is the override command: override [-by NAME] [-expires WHEN]
// HOSTNAME VERDICT REASON...
func setOverride(ctx context.Context, store *postgres.Store, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("override", flag.ContinueOnError)
	fs.SetOutput(stderr)
	by := fs.String("by", getenv("USER"), "who sets the override (recorded)")
	expires := fs.String("expires", "", "when it ends: a duration (72h, 7d) or an RFC 3339 time; empty for never")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() < 3 {
		return errors.New("usage: override [-by NAME] [-expires WHEN] HOSTNAME VERDICT REASON")
	}
	now := time.Now().UTC()
	var until *time.Time
	if *expires != "" {
		t, err := parseExpiry(*expires, now)
		if err != nil {
			return err
		}
		until = &t
	}
	o, err := store.SetOverride(ctx, postgres.OverrideChange{
		Hostname: fs.Arg(0), Verdict: strings.ToLower(fs.Arg(1)),
		Reason: strings.Join(fs.Args()[2:], " "), By: *by, ExpiresAt: until,
	}, now)
	if err != nil {
		return err
	}
	ends := "until removed"
	if o.ExpiresAt != nil {
		ends = "until " + o.ExpiresAt.Format(time.RFC3339)
	}
	fmt.Fprintf(stdout, "override on %s: %s (%s), set by %s, %s; it shows at the next snapshot\n", fs.Arg(0), o.Verdict, o.Reason, *by, ends)
	return nil
}

// removeOverride is the override-remove command: override-remove [-by NAME] HOSTNAME.
func removeOverride(ctx context.Context, store *postgres.Store, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("override-remove", flag.ContinueOnError)
	fs.SetOutput(stderr)
	by := fs.String("by", getenv("USER"), "who removes the override (recorded)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New("usage: override-remove [-by NAME] HOSTNAME")
	}
	if err := store.RemoveOverride(ctx, fs.Arg(0), *by, time.Now()); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "override on %s removed by %s; the score decides again from the next snapshot\n", fs.Arg(0), *by)
	return nil
}

// parseExpiry reads a duration from now (Go syntax, or whole days as "7d") or an
// RFC 3339 time.
func parseExpiry(v string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t, nil
	}
	if days, ok := strings.CutSuffix(v, "d"); ok {
		if n, err := strconv.Atoi(days); err == nil && n > 0 {
			return now.AddDate(0, 0, n), nil
		}
	}
	d, err := parseDays(v)
	if err != nil || d <= 0 {
		return time.Time{}, fmt.Errorf("expires %q: want a duration such as 72h or 7d, or an RFC 3339 time", v)
	}
	return now.Add(d), nil
}

// parseDays reads a duration in Go syntax, or whole days as "90d" (of 24 hours).
func parseDays(v string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(v, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n < 0 || n > 36500 {
			return 0, fmt.Errorf("%q is not a number of days", v)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	return time.ParseDuration(v)
}
