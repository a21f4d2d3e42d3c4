package session

import (
	"context"
	"log/slog"
	"time"

	"github.com/waystation/waystation/internal/periodic"
)

// MinRetention is the shortest retention the database lets a sweep declare: a
// session's events outlive its close by at least a day.
const MinRetention = 24 * time.Hour

// Purger deletes closed sessions with everything that hangs from them.
type Purger interface {
	// DeleteClosedSessions deletes up to limit sessions closed longer ago than keep
	// (at least MinRetention), with their events, requests, artifacts and sealed
	// values, and says how many it deleted.
	DeleteClosedSessions(ctx context.Context, keep time.Duration, limit int) (int, error)
}

// Retention deletes the sessions closed longer ago than Keep, a batch at a time, so
// that what an agent leaves behind does not grow without bound. Every replica may
// run one: a session is deleted once.
type Retention struct {
	Store Purger
	Keep  time.Duration
	Every time.Duration
	Log   *slog.Logger
}

// retentionBatch is how many sessions one statement deletes.
const retentionBatch = 500

// Run sweeps every r.Every until ctx ends; a Keep under MinRetention keeps all.
func (r Retention) Run(ctx context.Context) {
	if r.Keep < MinRetention {
		return
	}
	periodic.Run(ctx, r.Every, r.Every, func(ctx context.Context) {
		total := 0
		for ctx.Err() == nil {
			n, err := r.Store.DeleteClosedSessions(ctx, r.Keep, retentionBatch)
			if err != nil {
				if ctx.Err() == nil {
					r.Log.Warn("deleting closed sessions past retention failed", "err", err)
				}
				break
			}
			total += n
			if n < retentionBatch {
				break
			}
		}
		if total > 0 {
			r.Log.Info("closed sessions past retention deleted", "count", total, "retention", r.Keep)
		}
	})
}
