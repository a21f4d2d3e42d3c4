package trust

import (
	"context"
	"log/slog"
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
	Log      *slog.Logger
}

// Once probes every enabled method not probed since before, under the probe lock,
// and stores each probe. ran is false when another process holds the lock. The
// reserved names (example, test, invalid, localhost) never resolve on the internet:
// the demo catalog's sellers live there and keep their shipped history.
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
		if Probeable(t.Hostname) {
			kept = append(kept, t)
		}
	}
	stats, err = r.Prober.Round(ctx, kept, func(res Result) error { return r.Store.RecordProbe(ctx, res) })
	stats.Skipped += len(targets) - len(kept)
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
			r.Log.Info("probe round done", "probed", stats.Probed, "skipped", stats.Skipped, "took", time.Since(start).Round(time.Millisecond))
		}
	})
}
