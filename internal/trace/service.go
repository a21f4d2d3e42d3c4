package trace

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strconv"

	"github.com/waystation/waystation/internal/auth"
	"github.com/waystation/waystation/internal/problem"
	"github.com/waystation/waystation/internal/protect"
	"github.com/waystation/waystation/internal/redact"
)

// DefaultMaxPerSession is how many spans one session keeps, when the service is
// given no other bound.
const DefaultMaxPerSession = 10000

// DefaultPage is how many spans a page lists when its caller asks no number; a page
// lists at most MaxSpans.
const DefaultPage = 200

// Config holds the trace service's settings; a zero field takes its default.
type Config struct {
	// MaxPerSession caps the spans one session keeps (default DefaultMaxPerSession);
	// past it a session's new spans are rejected.
	MaxPerSession int
	// Guard, when set, is told of an agent's export holding a protected value the
	// agent was never given: the export is refused whole and counted against the
	// agent's budget (see package protect), for a span rejected for it would tell the
	// agent its guess was right.
	Guard *protect.Service
}

// Service is the spans' use cases, the same for every adapter: an agent's runtime
// exports them, the API and the console list a session's. Every span is cleaned of
// the user's protected values on its way in, and again, with the values of now, on
// its way out.
type Service struct {
	store     Store
	protected redact.Source
	cfg       Config
}

// NewService keeps spans in store, cleaned with the values protected gives (without
// it, exports and reads of spans fail closed as redaction_unavailable).
func NewService(store Store, protected redact.Source, cfg Config) *Service {
	if cfg.MaxPerSession <= 0 {
		cfg.MaxPerSession = DefaultMaxPerSession
	}
	return &Service{store: store, protected: protected, cfg: cfg}
}

// Export keeps the spans of an OTLP/HTTP export body, in encoding enc, for p: each
// span goes to the session its workflow.session.id names if p may see it and it has
// room, cleaned of the user's protected values and of URL queries. A span whose ids
// or times hold a value is rejected, not kept blanked: they are what names and
// orders it. It answers how many spans it rejected. A body that is no export is invalid, and one that carries
// more than MaxSpans spans too large.
func (s *Service) Export(ctx context.Context, p auth.Principal, body []byte, enc Encoding) (rejected int, err error) {
	spans, err := Parse(body, enc)
	if err != nil {
		return 0, err
	}
	if p.AgentID != "" && s.cfg.Guard != nil {
		sets, err := s.cfg.Guard.Sets(ctx, p)
		if err != nil {
			return 0, err
		}
		for i := range spans {
			// Clean blanks what it finds (and drops URL queries, as the cleaning below
			// does anyway): it counts a value anywhere in the span.
			if spans[i].Holds(sets.Foreign) || spans[i].Clean(sets.Foreign) > 0 {
				return 0, s.cfg.Guard.Detected(ctx, p, "/traces", protect.KindValue)
			}
		}
	}
	set, err := s.protectedSet(ctx, p.UserID, "nothing was forwarded or stored")
	if err != nil {
		return 0, err
	}
	kept := spans[:0]
	held := 0
	for i := range spans {
		if spans[i].Holds(set) {
			held++
			continue
		}
		spans[i].Clean(set)
		kept = append(kept, spans[i])
	}
	_, rejected, err = s.store.SaveSpans(ctx, p, kept, s.cfg.MaxPerSession)
	return held + rejected, err
}

// Spans lists session sessionID's spans by start time, after the cursor, at most
// limit of them, cleaned with the user's protected values as they are now: a span
// kept before a value was saved holds it in the store and is blanked on its way
// out. When the user's values cannot be loaded it answers redaction_unavailable and
// no span, failing closed. A service built without a store keeps no spans, and
// answers none.
func (s *Service) Spans(ctx context.Context, p auth.Principal, sessionID string, after *Cursor, limit int) ([]Span, *Cursor, error) {
	if s.store == nil {
		return nil, nil, nil
	}
	spans, next, err := s.store.Spans(ctx, p, sessionID, after, limit)
	if err != nil {
		return nil, nil, err
	}
	if len(spans) == 0 {
		return spans, next, nil
	}
	set, err := s.protectedSet(ctx, p.UserID, "no span is answered")
	if err != nil {
		return nil, nil, err
	}
	for i := range spans {
		spans[i].Clean(set)
	}
	return spans, next, nil
}

// protectedSet loads the user's protected values (see redact.Load); an error is
// redaction_unavailable, whose detail ends saying what therefore did not happen.
func (s *Service) protectedSet(ctx context.Context, userID, consequence string) (*redact.Set, error) {
	return redact.Load(ctx, s.protected, userID, consequence)
}

// Token is the cursor as a client holds it: opaque, URL-safe.
func (c Cursor) Token() string {
	b, _ := json.Marshal([]any{strconv.FormatUint(c.Start, 10), c.SpanID})
	return base64.RawURLEncoding.EncodeToString(b)
}

// ParseCursor reads a cursor's Token; anything else is invalid_parameter, named
// param.
func ParseCursor(param, token string) (*Cursor, error) {
	bad := problem.Param(problem.InvalidParameter, param, param+" must be a nextCursor this route gave.")
	b, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return nil, bad
	}
	var parts []string
	if json.Unmarshal(b, &parts) != nil || len(parts) != 2 {
		return nil, bad
	}
	start, err := strconv.ParseUint(parts[0], 10, 64)
	if err != nil || len(parts[1]) != 16 {
		return nil, bad
	}
	return &Cursor{Start: start, SpanID: parts[1]}, nil
}
