package memory

import (
	"context"
	"strings"

	"github.com/waystation/waystation/internal/auth"
	"github.com/waystation/waystation/internal/problem"
	"github.com/waystation/waystation/internal/session"
)

// DefaultMaxItems is how many items one user keeps unless the service is told
// otherwise.
const DefaultMaxItems = 500

// Config is what a Service works with besides its store.
type Config struct {
	// Sealer seals values as they are saved; without it nothing with a value is
	// saved (ErrNoSealer).
	Sealer Sealer
	// Opener opens values as they are materialised; without it nothing is released.
	Opener Opener
	// MaxItems caps the items one user keeps (default DefaultMaxItems).
	MaxItems int
}

// Service is memory's use cases, the same for every adapter: a user's items, a
// session's catalog of handles for them, and materialisation.
type Service struct {
	store Store
	cfg   Config
}

// NewService is memory's use cases over store.
func NewService(store Store, cfg Config) *Service {
	if cfg.MaxItems <= 0 {
		cfg.MaxItems = DefaultMaxItems
	}
	return &Service{store: store, cfg: cfg}
}

// ErrNoSealer is a value to save on a server without a key to seal it under.
var ErrNoSealer = problem.New(problem.Internal, "")

// MaxItems is the most items one user keeps.
func (s *Service) MaxItems() int { return s.cfg.MaxItems }

// Items lists userID's items in scope, value-free, a page of at most limit after
// the cursor.
func (s *Service) Items(ctx context.Context, userID string, scope Scope, after *session.Cursor, limit int) ([]Stored, *session.Cursor, error) {
	return s.store.Items(ctx, userID, scope, after, limit)
}

// Item is userID's item id; ErrNotFound when there is none.
func (s *Service) Item(ctx context.Context, userID, id string) (Stored, error) {
	return s.store.StoredItem(ctx, userID, id)
}

// Create checks n and saves it for p's user, its values sealed; an agent's item is
// marked as the agent's. Past the cap it is ErrTooManyItems.
func (s *Service) Create(ctx context.Context, p auth.Principal, n New) (Stored, error) {
	if err := n.Validate(); err != nil {
		return Stored{}, err
	}
	if s.cfg.Sealer == nil {
		return Stored{}, ErrNoSealer
	}
	by := ByUser
	if p.Scope == auth.ScopeAgent {
		by = ByAgent
	}
	st, err := Build(s.cfg.Sealer, p.UserID, by, n)
	if err != nil {
		return Stored{}, err
	}
	return s.store.CreateItem(ctx, st, s.cfg.MaxItems)
}

// Update changes userID's item id as p says, if it is still at revision; ErrStale
// if it moved.
func (s *Service) Update(ctx context.Context, userID, id string, revision int, p Patch) (Stored, error) {
	cur, err := s.store.StoredItem(ctx, userID, id)
	if err != nil {
		return Stored{}, err
	}
	if cur.Revision != revision {
		return Stored{}, ErrStale
	}
	if s.cfg.Sealer == nil {
		return Stored{}, ErrNoSealer
	}
	next, err := Apply(s.cfg.Sealer, cur, p)
	if err != nil {
		return Stored{}, err
	}
	return s.store.UpdateItem(ctx, next, revision)
}

// Archive archives userID's item id and forgets its values; a revision other than
// 0 must still be the item's (ErrStale if not).
func (s *Service) Archive(ctx context.Context, userID, id string, revision int) error {
	return s.store.ArchiveItem(ctx, userID, id, revision)
}

// Catalog gives session sessionID of agent p handles for its user's values in
// scope, value-free, and the fields held back.
func (s *Service) Catalog(ctx context.Context, p auth.Principal, sessionID string, scope Scope) ([]Entry, []Unavailable, error) {
	return s.store.Catalog(ctx, p, sessionID, scope)
}

// CheckMaterialize checks a materialisation's handles and purpose: 1 to
// MaxMaterializeLen distinct handles, and a purpose of at most 500 bytes. Its error
// says nothing of the handles.
func CheckMaterialize(handles []string, purpose string) error {
	if len(handles) == 0 || len(handles) > MaxMaterializeLen {
		return problem.Invalid("")
	}
	seen := map[string]bool{}
	for _, h := range handles {
		if len(h) < 24 || len(h) > 100 || seen[h] {
			return problem.Invalid("")
		}
		seen[h] = true
	}
	if strings.TrimSpace(purpose) == "" || len(purpose) > 500 {
		return problem.Invalid("")
	}
	return nil
}

// Materialize releases handles for purpose to agent p in session sessionID (see
// Materializer).
func (s *Service) Materialize(ctx context.Context, p auth.Principal, sessionID string, handles []string, purpose string) ([]Value, error) {
	if err := CheckMaterialize(handles, purpose); err != nil {
		return nil, err
	}
	return Materializer{Store: s.store, Opener: s.cfg.Opener}.Materialize(ctx, p, sessionID, handles, purpose)
}
