package memory

import (
	"context"

	"github.com/waystation/waystation/internal/auth"
	"github.com/waystation/waystation/internal/session"
)

// Store is what memory needs of storage: items, and a session's handles for them.
type Store interface {
	ItemStore
	Sessions
}

// ItemStore keeps memory items of users. Every method sees only userID's items.
type ItemStore interface {
	CreateItem(ctx context.Context, s Stored, max int) (Stored, error)
	Items(ctx context.Context, userID string, scope Scope, after *session.Cursor, limit int) ([]Stored, *session.Cursor, error)
	StoredItem(ctx context.Context, userID, id string) (Stored, error)
	// UpdateItem replaces item s.ID with s if its revision is still revision, and
	// advances it; ErrStale if not.
	UpdateItem(ctx context.Context, s Stored, revision int) (Stored, error)
	// ArchiveItem archives the item and forgets its values (revision 0: whatever
	// its revision); ErrStale if the revision moved.
	ArchiveItem(ctx context.Context, userID, id string, revision int) error
}

// Sessions is what materialisation and the catalog need of storage; the session
// must be open and the agent p's own.
type Sessions interface {
	// Catalog issues (or finds) session sessionID's handles for the fields with
	// values of its user's items in scope.
	Catalog(ctx context.Context, p auth.Principal, sessionID string, scope Scope) ([]Entry, []Unavailable, error)
	Releasable(ctx context.Context, p auth.Principal, sessionID string, handles []string) ([]Releasable, error)
	// RecordMaterialization writes the one audit row of a materialisation and its
	// memory.materialized event (handles only).
	RecordMaterialization(ctx context.Context, p auth.Principal, sessionID string, handles []string, purpose string) error
}
