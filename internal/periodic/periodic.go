// Package periodic runs the service's background chores on a schedule: expiring
// requests, sweeping idempotency records and old sessions, syncing embeddings,
// probing sellers.
package periodic

import (
	"context"
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
