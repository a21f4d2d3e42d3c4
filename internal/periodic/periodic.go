// Package periodic runs the service's background chores on a schedule: expiring
// requests, sweeping idempotency records and old sessions, syncing embeddings,
// probing sellers.
package periodic

import (
	"context"
	"log/slog"
	"time"
)

// Run calls f after first, then every every, until ctx ends. Calls never overlap: a
// call that overruns its interval delays the next, and ticks missed meanwhile are
// dropped, not queued.
func Run(ctx context.Context, first, every time.Duration, f func(context.Context)) {
	t := time.NewTimer(first)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if ctx.Err() != nil {
			return
		}
		f(ctx)
		t.Reset(every)
	}
}

// Sweep runs a chore that deletes or moves the rows past their time and says how
// many: f is called every every (the first call after one interval) until ctx ends,
// as Run calls it. A failure is logged as a warning, unless ctx has ended meanwhile (a
// shutdown is no failure); a count above zero at debug level. what names the chore
// in the log, as "delete expired idempotency records".
func Sweep(ctx context.Context, every time.Duration, log *slog.Logger, what string, f func(context.Context) (int, error)) {
	Run(ctx, every, every, func(ctx context.Context) {
		n, err := f(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			log.Warn(what+" failed", "err", err)
		case err == nil && n > 0:
			log.Debug(what, "count", n)
		}
	})
}
