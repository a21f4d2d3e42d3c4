package session

import (
	"context"

	"github.com/waystation/waystation/internal/auth"
)

// Store keeps sessions and their event logs. Every method sees only what p may see:
// an agent its own sessions, a user those of all its agents; anything else is
// ErrNotFound.
type Store interface {
	// CreateSession opens a session, refusing it with ErrTooManyOpen when the agent
	// has maxOpen open already (0: no cap); a retry of one created is never refused.
	CreateSession(ctx context.Context, p auth.Principal, n New, maxOpen int) (Session, error)
	Session(ctx context.Context, p auth.Principal, id string) (Session, error)
	Sessions(ctx context.Context, p auth.Principal, after *Cursor, limit int) ([]Session, *Cursor, error)
	CompleteSession(ctx context.Context, p auth.Principal, id string, c Completion) (Session, bool, error)
	StopSession(ctx context.Context, p auth.Principal, id, reason string) (Session, error)
	// AppendEvent appends an agent's event, refusing it with ErrTooManyEvents when
	// the session holds maxEvents already (0: no cap); a retry is never refused.
	AppendEvent(ctx context.Context, p auth.Principal, id string, a Append, maxEvents int) (Event, error)
	Events(ctx context.Context, p auth.Principal, id string, after int64, limit int) ([]Event, Session, error)
	AgentStats(ctx context.Context, agentID string) (Stats, error)
}
