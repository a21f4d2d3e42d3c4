package session

import (
	"bytes"
	"context"
	"encoding/json"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/waystation/waystation/internal/auth"
	"github.com/waystation/waystation/internal/problem"
	"github.com/waystation/waystation/internal/redact"
)

// MaxEventData is the most bytes an agent's event data may take.
const MaxEventData = 16 << 10

var (
	namePattern      = regexp.MustCompile(`^[a-z][a-z0-9_.-]{0,63}$`)
	runtimeEventType = regexp.MustCompile(`^runtime(\.[a-z0-9_]+){1,4}$`)
)

// Service is the sessions' use cases, the same for every adapter: an agent opens,
// logs and closes its workflows, within its limits.
type Service struct {
	Store Store
	// Limits cap an agent's open sessions and a session's events (zero fields: no
	// cap); past them a write is quota_exceeded.
	Limits Limits
	// Protected gives a user's protected values: every session and event read back
	// is cleaned with them as they are now, since what was written before a value
	// was saved holds it still. Without it (or when they cannot be loaded) reads
	// fail closed as redaction_unavailable.
	Protected redact.Source
}

// clean loads user's values, as they are now, to clean what is read back (see
// redact.Load).
func (s *Service) clean(ctx context.Context, user string) (*redact.Set, error) {
	return redact.Load(ctx, s.Protected, user, "nothing of the session is answered")
}

// Clean blanks set's values in the session's text, in place.
func (x *Session) Clean(set *redact.Set) {
	set.Strings(&x.Type, &x.Description, x.MerchantName, x.TargetURL, x.Summary, x.StopReason)
}

// Clean blanks set's values in the event's type, client id and data, in place.
func (e *Event) Clean(set *redact.Set) {
	set.Strings(&e.Type, e.ClientEventID)
	e.Data, _ = set.RawJSON(e.Data)
}

// cleaned is x cleaned with the values of now of its user (see clean), or err.
func (s *Service) cleaned(ctx context.Context, x Session, err error) (Session, error) {
	if err != nil {
		return x, err
	}
	set, err := s.clean(ctx, x.UserID)
	if err != nil {
		return Session{}, err
	}
	x.Clean(set)
	return x, nil
}

// CheckClientID checks a client's id of a write (clientSessionId and the like),
// named name in what it answers.
func CheckClientID(name, v string) error {
	if v == "" || len(v) > 200 {
		return problem.Invalid(name + " must be 1 to 200 bytes.")
	}
	return nil
}

// CheckName tells whether v is a lowercase code of at most 64 characters, as a
// session's type or a stop's reason is.
func CheckName(v string) bool { return namePattern.MatchString(v) }

// Validate checks what an agent gives to open a session.
func (n New) Validate() error {
	switch {
	case !CheckName(n.Type):
		return problem.Invalid("type must be a lowercase word of at most 64 characters, such as checkout or research.")
	case strings.TrimSpace(n.Description) == "" || len(n.Description) > 2000:
		return problem.Invalid("description must be 1 to 2000 bytes.")
	case n.MerchantName != nil && (strings.TrimSpace(*n.MerchantName) == "" || len(*n.MerchantName) > 200):
		return problem.Invalid("merchantName must be 1 to 200 bytes when given.")
	}
	if n.TargetURL != nil {
		u, err := url.Parse(*n.TargetURL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || len(*n.TargetURL) > 2048 {
			return problem.Invalid("targetUrl must be an absolute http or https URL of at most 2048 bytes when given.")
		}
	}
	return CheckClientID("clientSessionId", n.ClientSessionID)
}

// Validate checks an agent's word closing a session.
func (c Completion) Validate() error {
	if !slices.Contains(CompletionStatuses, c.Status) {
		return problem.Invalid("status must be one of " + strings.Join(CompletionStatuses, ", ") + ".")
	}
	if len(c.Summary) > 4000 {
		return problem.Invalid("summary must be at most 4000 bytes.")
	}
	return CheckClientID("clientCompletionId", c.ClientCompletionID)
}

// RuntimeEvent is an event an agent appends to its session's log.
type RuntimeEvent struct {
	Type          string
	ClientEventID string
	// Data is a JSON object, or nothing (null or empty: {}).
	Data json.RawMessage
}

// Validate checks an agent's event: a runtime.* type, data a JSON object of at most
// MaxEventData bytes, and a client id.
func (e RuntimeEvent) Validate() error {
	if !runtimeEventType.MatchString(e.Type) {
		return problem.Invalid("Agents append runtime events only: type must look like runtime.step or runtime.page.loaded.")
	}
	if !e.empty() {
		if e.Data[0] != '{' {
			return problem.Invalid("data must be a JSON object.")
		}
		if len(e.Data) > MaxEventData {
			return problem.Invalid("data must be at most " + strconv.Itoa(MaxEventData) + " bytes.")
		}
	}
	return CheckClientID("clientEventId", e.ClientEventID)
}

func (e RuntimeEvent) empty() bool { return len(e.Data) == 0 || bytes.Equal(e.Data, []byte("null")) }

// Open checks n and opens a session for agent p, within its cap of open sessions.
func (s *Service) Open(ctx context.Context, p auth.Principal, n New) (Session, error) {
	if err := n.Validate(); err != nil {
		return Session{}, err
	}
	return s.Store.CreateSession(ctx, p, n, s.Limits.OpenSessions)
}

// Complete checks c and closes session id on agent p's word; the flag says whether
// it repeats a completion already made.
func (s *Service) Complete(ctx context.Context, p auth.Principal, id string, c Completion) (Session, bool, error) {
	if err := c.Validate(); err != nil {
		return Session{}, false, err
	}
	x, again, err := s.Store.CompleteSession(ctx, p, id, c)
	x, err = s.cleaned(ctx, x, err)
	return x, again, err
}

// AppendRuntime checks e and appends it to session id as agent p's, within the
// session's cap of events.
func (s *Service) AppendRuntime(ctx context.Context, p auth.Principal, id string, e RuntimeEvent) (Event, error) {
	if err := e.Validate(); err != nil {
		return Event{}, err
	}
	data := e.Data
	if e.empty() {
		data = json.RawMessage(`{}`)
	}
	return s.Store.AppendEvent(ctx, p, id, Append{Type: e.Type, Actor: ActorAgent, ClientEventID: &e.ClientEventID, Data: data}, s.Limits.Events)
}

// Session is session id, if p may see it, cleaned (see Protected).
func (s *Service) Session(ctx context.Context, p auth.Principal, id string) (Session, error) {
	x, err := s.Store.Session(ctx, p, id)
	return s.cleaned(ctx, x, err)
}

// Sessions lists the sessions p may see, newest first, limit after the cursor,
// cleaned (see Protected).
func (s *Service) Sessions(ctx context.Context, p auth.Principal, after *Cursor, limit int) ([]Session, *Cursor, error) {
	items, next, err := s.Store.Sessions(ctx, p, after, limit)
	if err != nil || len(items) == 0 {
		return items, next, err
	}
	set, err := s.clean(ctx, p.UserID)
	if err != nil {
		return nil, nil, err
	}
	for i := range items {
		items[i].Clean(set)
	}
	return items, next, nil
}

// Stop closes session id on user p's word, for reason.
func (s *Service) Stop(ctx context.Context, p auth.Principal, id, reason string) (Session, error) {
	x, err := s.Store.StopSession(ctx, p, id, reason)
	return s.cleaned(ctx, x, err)
}

// Events are session id's events after seq after, at most limit, with the session,
// all cleaned (see Protected).
func (s *Service) Events(ctx context.Context, p auth.Principal, id string, after int64, limit int) ([]Event, Session, error) {
	items, x, err := s.Store.Events(ctx, p, id, after, limit)
	if err != nil {
		return items, x, err
	}
	set, err := s.clean(ctx, x.UserID)
	if err != nil {
		return nil, Session{}, err
	}
	x.Clean(set)
	for i := range items {
		items[i].Clean(set)
	}
	return items, x, nil
}

// AppendSystem appends an event of the service's own of type typ to session id,
// beyond the session's cap of events: what the service did for the agent is
// always told.
func (s *Service) AppendSystem(ctx context.Context, p auth.Principal, id, typ string, data json.RawMessage) (Event, error) {
	return s.Store.AppendEvent(ctx, p, id, Append{Type: typ, Actor: ActorSystem, Data: data}, 0)
}

// AgentStats counts agent agentID's sessions and events.
func (s *Service) AgentStats(ctx context.Context, agentID string) (Stats, error) {
	return s.Store.AgentStats(ctx, agentID)
}
