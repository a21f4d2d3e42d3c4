package trust

import (
	"cmp"
	"context"
	"log/slog"
	"slices"
	"time"

	"github.com/waystation/waystation/internal/periodic"
)

// ProbeStore is what probe rounds need from storage.
type ProbeStore interface {
	// TryProbeLock takes the probe-round lock if no other process holds it, so that
	// replicas take turns; release gives it back.
	TryProbeLock(ctx context.Context) (release func(), ok bool, err error)
	// ProbeTargets lists every enabled method not probed since before.
	ProbeTargets(ctx context.Context, before time.Time) ([]Target, error)
	RecordProbe(ctx context.Context, r Result) error
}

// Rounds probes the catalog in rounds: one now (Once), or one every Interval (Run).
type Rounds struct {
	Store  ProbeStore
	Prober *Prober
	// Interval is the time between rounds of Run.
	Interval time.Duration
	// Budget bounds how many endpoints one round probes; the zero Budget none.
	Budget Budget
	Log    *slog.Logger
}

// Budget keeps a round polite at the size of a real listing, where a few hundred
// hosts list thousands of endpoints: a round probes at most PerHost methods of one
// host and PerRound methods in all (0: no bound). Those it leaves have waited
// longest by the next round, and come first in it.
type Budget struct {
	PerHost, PerRound int
}

// Pick returns the targets a round within the budget probes: those never probed
// first, then those probed longest ago (in order of method id among equals), as
// many of each host and in all as the budget allows. targets is reordered.
func (b Budget) Pick(targets []Target) []Target {
	slices.SortStableFunc(targets, func(x, y Target) int {
		if c := x.LastProbed.Compare(y.LastProbed); c != 0 {
			return c
		}
		return cmp.Compare(x.MethodID, y.MethodID)
	})
	if b.PerHost <= 0 && b.PerRound <= 0 {
		return targets
	}
	perHost := map[string]int{}
	picked := make([]Target, 0, min(len(targets), max(b.PerRound, 0)))
	for _, t := range targets {
		if b.PerRound > 0 && len(picked) == b.PerRound {
			break
		}
		if b.PerHost > 0 && perHost[t.Hostname] == b.PerHost {
			continue
		}
		perHost[t.Hostname]++
		picked = append(picked, t)
	}
	return picked
}

// Once probes the enabled methods not probed since before, within the budget, under
// the probe lock, and stores each probe. ran is false when another process holds
// the lock. The reserved names (example, test, invalid, localhost) never resolve on
// the internet: the demo catalog's sellers live there and keep their shipped
// history. Neither they nor the hosts in backoff take a place in the budget.
func (r *Rounds) Once(ctx context.Context, before time.Time) (stats RoundStats, ran bool, err error) {
	release, ok, err := r.Store.TryProbeLock(ctx)
	if err != nil || !ok {
		return stats, false, err
	}
	defer release()
	targets, err := r.Store.ProbeTargets(ctx, before)
	if err != nil {
		return stats, true, err
	}
	kept := targets[:0]
	for _, t := range targets {
		if Probeable(t.Hostname) && !r.Prober.Resting(t.Hostname) {
			kept = append(kept, t)
		}
	}
	skipped := len(targets) - len(kept)
	picked := r.Budget.Pick(kept)
	stats, err = r.Prober.Round(ctx, picked, func(res Result) error { return r.Store.RecordProbe(ctx, res) })
	stats.Skipped += skipped
	stats.Deferred = len(kept) - len(picked)
	return stats, true, err
}

// Run probes every Interval (the first round a minute after start) until ctx ends. A
// method probed by any replica within the last nine tenths of an interval is left
// alone. The snapshot generator notices new probes through the store's fingerprint,
// so new verdicts show soon after a round.
func (r *Rounds) Run(ctx context.Context) {
	periodic.Run(ctx, min(time.Minute, r.Interval), r.Interval, func(ctx context.Context) {
		start := time.Now()
		stats, ran, err := r.Once(ctx, start.Add(-r.Interval*9/10))
		switch {
		case ctx.Err() != nil:
		case err != nil:
			r.Log.Warn("probe round failed", "err", err)
		case !ran:
			r.Log.Debug("probe round skipped: another replica is probing")
		default:
			r.Log.Info("probe round done", "probed", stats.Probed, "skipped", stats.Skipped, "deferred", stats.Deferred, "took", time.Since(start).Round(time.Millisecond))
		}
	})
}
