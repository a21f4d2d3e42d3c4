package trace

import (
	"context"

	"github.com/waystation/waystation/internal/auth"
)

// Store keeps spans of the sessions a principal may see.
type Store interface {
	// SaveSpans keeps the spans whose session p may see and that has room (at most
	// maxPerSession spans; 0: no cap); it says how many it kept and how many it
	// rejected. A span sent again is kept once.
	SaveSpans(ctx context.Context, p auth.Principal, spans []Span, maxPerSession int) (kept, rejected int, err error)
	// Spans lists session sessionID's spans by start time, after the cursor.
	Spans(ctx context.Context, p auth.Principal, sessionID string, after *Cursor, limit int) ([]Span, *Cursor, error)
}

// Cursor is where a page of spans resumes.
type Cursor struct {
	Start  uint64
	SpanID string
}
