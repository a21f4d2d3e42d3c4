package request

import (
	"context"
	"log/slog"
	"time"

	"github.com/waystation/waystation/internal/auth"
	"github.com/waystation/waystation/internal/periodic"
	"github.com/waystation/waystation/internal/session"
)

// Store keeps requests and their artifacts. Every change is a conditional
// transition of the state machine that appends its session event in the same
// transaction; requests p may not see are ErrNotFound. A sessionID of "" finds a
// request in any of p's sessions.
type Store interface {
	// CreateRequest raises a request, refusing it with session.ErrTooManyEvents
	// when the session holds maxEvents events already (0: no cap).
	CreateRequest(ctx context.Context, p auth.Principal, sessionID string, n New, maxEvents int) (Request, error)
	Request(ctx context.Context, p auth.Principal, sessionID, id string) (Request, error)
	Requests(ctx context.Context, p auth.Principal, sessionID string, after *session.Cursor, limit int) ([]Request, *session.Cursor, error)
	WaitingRequests(ctx context.Context, userID string, limit int) ([]Request, error)
	Decide(ctx context.Context, p auth.Principal, id string, o Outcome) (Request, error)
	CancelRequest(ctx context.Context, p auth.Principal, sessionID, id string) (Request, error)
	ClaimArtifact(ctx context.Context, p auth.Principal, sessionID, id string) (Artifact, time.Time, error)
	// ExpireRequests moves every request due at the store's clock to expired and
	// says how many it moved.
	ExpireRequests(ctx context.Context) (int, error)
}

// Expirer moves requests whose time ran out to expired, so that agents waiting on
// them hear of it; reads expire a due request on the spot anyway. Every replica may
// run one: each expiry is a conditional update, made once.
type Expirer struct {
	Store Store
	Every time.Duration
	Log   *slog.Logger
}

// Run expires due requests every e.Every until ctx ends.
func (e Expirer) Run(ctx context.Context) {
	periodic.Sweep(ctx, e.Every, e.Log, "expire due requests", e.Store.ExpireRequests)
}
