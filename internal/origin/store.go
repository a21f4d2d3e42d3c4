package origin

import (
	"context"
	"time"
)

// Store keeps the listed origins and lists their items in the catalog.
type Store interface {
	// ListOrigin records an origin and what its manifest lists, in one transaction:
	// it loads the methods (taking the place of a listing's copies with the same
	// URL), marks the owner-verified ones, records their probes, and stops listing
	// the origin's methods the manifest no longer holds. It answers each listed
	// method's slug by source key.
	ListOrigin(ctx context.Context, l Listing) (map[string]string, error)
	// Origin finds a listed origin by its canonical form, or problem not_found.
	Origin(ctx context.Context, origin string) (Origin, error)
	// Origins lists the origins that are listed or stale, for a refresh.
	Origins(ctx context.Context) ([]Origin, error)
	// OriginUnchanged records a fetch that found the manifest as listed.
	OriginUnchanged(ctx context.Context, id int64, at time.Time) error
	// OriginFailing records a fetch that failed: status stale keeps its items
	// listed, delisted stops listing them; reason says why.
	OriginFailing(ctx context.Context, id int64, status, reason string, at time.Time) error
	// TryRefreshLock takes the refresh lock if no other process holds it, so that
	// replicas take turns; release gives it back.
	TryRefreshLock(ctx context.Context) (release func(), ok bool, err error)
}
