// Package protect is the rule for a person's protected values in what their agents
// send, the one place every route that takes an agent's text asks.
//
// An agent may repeat a value it was given (materialised to it after its person's
// approval): that value is blanked where it would reach a model and refused, without
// more, where it would be kept. Any other protected value in an agent's traffic can
// only have been guessed or stolen, so it is an attack signal, not a convenience: the
// request is refused with one answer that names neither the value nor how many there
// were, the detection is recorded, and once an agent's detections reach a small
// budget the agent is paused (all its keys refused) and its person told, and only the
// person resumes it. A request that carries many strings of a value's shape (card
// numbers, dates, phone numbers, email addresses) is how guesses are tested in bulk:
// it is refused and counted the same way, whether or not one of them is right, so that
// each answer can tell an agent at most one bit about a small set of guesses, and only
// a budget of times.
//
// A user's own key is the person: its text is refused where it would be kept, as
// before, and nothing is counted.
package protect

import (
	"context"
	"log/slog"
	"time"

	"github.com/waystation/waystation/internal/auth"
	"github.com/waystation/waystation/internal/problem"
	"github.com/waystation/waystation/internal/redact"
)

// Kinds of detection.
const (
	// KindValue is a protected value the agent was never given.
	KindValue = "value"
	// KindCandidates is a request with more strings of a value's shape than
	// Config.CandidateLimit.
	KindCandidates = "candidates"
)

// ReasonProtectedValues is why the service paused an agent: its detections reached
// the budget.
const ReasonProtectedValues = "protected_values"

// Values gives a user's protected values in plaintext: all of them, and those that
// were materialised to one of its agents.
type Values interface {
	Protected(ctx context.Context, userID string) ([]string, error)
	Given(ctx context.Context, userID, agentID string) ([]string, error)
}

// Store records detections and pauses agents.
type Store interface {
	// RecordDetection records d unless d's agent is paused already (ErrPaused), and
	// pauses it, in the same transaction, when its detections within window and since
	// it was last resumed reach budget; it answers that count and whether this
	// detection paused it. Detections of one agent are recorded one at a time.
	RecordDetection(ctx context.Context, d Detection, window time.Duration, budget int) (count int, paused bool, err error)
	// Detections lists the newest detections of userID's agents, newest first.
	Detections(ctx context.Context, userID string, limit int) ([]Detection, error)
}

// Detection is one refused request of an agent: where and what kind, never the value.
type Detection struct {
	UserID  string    `json:"-"`
	AgentID string    `json:"agentId"`
	KID     string    `json:"-"`
	Route   string    `json:"route"`
	Kind    string    `json:"kind"`
	At      time.Time `json:"at"`
}

// ErrPaused is a detection of an agent that is paused already: its key is answered
// as a paused agent's, which says nothing of what the request held.
var ErrPaused = problem.New(problem.KeyRevoked, "The API key was revoked.")

// Refusal is the one answer to a request that holds a protected value it may not, or
// a flood of strings of a value's shape: the same whichever it was, wherever.
func Refusal() error {
	return problem.New(problem.ProtectedValueDetected,
		"The request holds a protected value of the user, or many strings shaped like one; nothing was stored or forwarded. Refer to values by handle.")
}

// Unavailable is redaction_unavailable: the values could not be loaded, so nothing
// unchecked goes on.
func Unavailable(err error) error {
	p := problem.Wrap(problem.RedactionUnavailable, "The user's protected values could not be loaded, so nothing was forwarded or stored.", err)
	p.RetryAfter = 5
	return p
}

// Config is the budget.
type Config struct {
	// Budget is how many detections pause an agent within Window (default 3).
	Budget int
	// Window is how far back detections count (default 24h).
	Window time.Duration
	// CandidateLimit is how many card numbers or email addresses a request of an
	// agent may carry, and an eighth of how many dates or phone numbers (default 32):
	// a prompt quotes a few, a guessing attack thousands.
	CandidateLimit int
}

// Service applies the rule.
type Service struct {
	values Values
	store  Store
	cfg    Config
	log    *slog.Logger
}

// NewService is the rule over values and store (nil: detections are refused but
// neither recorded nor counted, for a server without a database).
func NewService(values Values, store Store, cfg Config, log *slog.Logger) *Service {
	if cfg.Budget <= 0 {
		cfg.Budget = 3
	}
	if cfg.Window <= 0 {
		cfg.Window = 24 * time.Hour
	}
	if cfg.CandidateLimit <= 0 {
		cfg.CandidateLimit = 32
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Service{values: values, store: store, cfg: cfg, log: log}
}

// Config is the service's budget, defaults filled in (a nil service's: the defaults).
func (s *Service) Config() Config {
	if s == nil {
		return NewService(nil, nil, Config{}, nil).cfg
	}
	return s.cfg
}

// Sets is what a caller's text is scanned with.
type Sets struct {
	// Foreign are the values the caller may not send at all: for an agent, those it
	// was never given; for the person's own key, none.
	Foreign *redact.Set
	// Given are the values the caller may repeat, which are still blanked before a
	// model and refused where text is kept.
	Given *redact.Set
	// All holds both, for cleaning what is read back.
	All *redact.Set
}

// setsKey carries, in a request's context, the sets already loaded for its key.
type setsKey struct{}

type loaded struct {
	kid  string
	sets Sets
}

// WithSets is ctx carrying sets, loaded for p, so that the checks of the rest of the
// request (its path screened first, then its body) load the values once.
func WithSets(ctx context.Context, p auth.Principal, sets Sets) context.Context {
	return context.WithValue(ctx, setsKey{}, loaded{kid: p.KID, sets: sets})
}

// Sets loads the values p's text is scanned with, or takes those ctx carries for p's
// key (WithSets); an error is redaction_unavailable.
func (s *Service) Sets(ctx context.Context, p auth.Principal) (Sets, error) {
	if l, ok := ctx.Value(setsKey{}).(loaded); ok && l.kid == p.KID && p.KID != "" {
		return l.sets, nil
	}
	if s == nil || s.values == nil {
		return Sets{}, Unavailable(errNoValues)
	}
	all, err := s.values.Protected(ctx, p.UserID)
	if err != nil {
		return Sets{}, Unavailable(err)
	}
	if p.AgentID == "" || len(all) == 0 {
		set := redact.New(all)
		return Sets{Given: set, All: set}, nil
	}
	given, err := s.values.Given(ctx, p.UserID, p.AgentID)
	if err != nil {
		return Sets{}, Unavailable(err)
	}
	mine := make(map[string]bool, len(given))
	for _, v := range given {
		mine[v] = true
	}
	var foreign []string
	for _, v := range all {
		if !mine[v] {
			foreign = append(foreign, v)
		}
	}
	return Sets{Foreign: redact.New(foreign), Given: redact.New(given), All: redact.New(all)}, nil
}

// Check is the rule for parts, the strings of a request of p to route that would be
// kept or sent on: nil when none holds a protected value (the parts are also scanned
// joined, for a value split across them); else the Refusal, the detection recorded
// when it is an attack signal; redaction_unavailable when the values cannot be loaded.
func (s *Service) Check(ctx context.Context, p auth.Principal, route string, parts []string) error {
	sets, err := s.Screen(ctx, p, route, parts)
	if err != nil {
		return err
	}
	if sets.Given.ContainsParts(parts) {
		return Refusal()
	}
	return nil
}

// Screen refuses and records what Check does for an agent's foreign values and
// floods of candidates, and answers the sets for a caller that treats the given
// values its own way (the LLM proxy blanks them).
func (s *Service) Screen(ctx context.Context, p auth.Principal, route string, parts []string) (Sets, error) {
	if s == nil {
		return Sets{}, Unavailable(errNoValues)
	}
	if p.AgentID != "" && s.flood(parts) {
		return Sets{}, s.Detected(ctx, p, route, KindCandidates)
	}
	sets, err := s.Sets(ctx, p)
	if err != nil {
		return Sets{}, err
	}
	if sets.Foreign.ContainsParts(parts) {
		return Sets{}, s.Detected(ctx, p, route, KindValue)
	}
	return sets, nil
}

// flood tells whether parts carry more candidates of a value's shape than a request
// may: CandidateLimit card numbers or email addresses, or eight times as many dates or
// phone numbers, which ordinary text (timestamps, ids, tables) holds more of and whose
// spaces a guesser must cover in the thousands all the same.
func (s *Service) flood(parts []string) bool {
	c := redact.CountCandidates(parts)
	return max(c.Cards, c.Emails) > s.cfg.CandidateLimit || max(c.Dates, c.Phones) > 8*s.cfg.CandidateLimit
}

// Detected records that a request of p to route held what kind says, pausing p's
// agent once its detections reach the budget, and answers the Refusal (ErrPaused
// when the agent was paused already). The person's own key is refused alike and
// counts nothing.
func (s *Service) Detected(ctx context.Context, p auth.Principal, route, kind string) error {
	if p.AgentID == "" || s.store == nil {
		return Refusal()
	}
	d := Detection{UserID: p.UserID, AgentID: p.AgentID, KID: p.KID, Route: route, Kind: kind, At: time.Now()}
	n, paused, err := s.store.RecordDetection(ctx, d, s.cfg.Window, s.cfg.Budget)
	if err != nil {
		if problem.CodeOf(err) == problem.KeyRevoked {
			return ErrPaused
		}
		// Unrecorded, the request is still refused: it says nothing more.
		s.log.ErrorContext(ctx, "record a detection", "agent", p.AgentID, "err", err)
		return Refusal()
	}
	s.log.WarnContext(ctx, "protected value detected in an agent's request", "agent", p.AgentID, "kid", p.KID,
		"route", route, "kind", kind, "detections", n, "budget", s.cfg.Budget, "paused", paused)
	return Refusal()
}

// Detections lists the newest detections of userID's agents, for the person.
func (s *Service) Detections(ctx context.Context, userID string, limit int) ([]Detection, error) {
	if s == nil || s.store == nil {
		return nil, nil
	}
	return s.store.Detections(ctx, userID, limit)
}

type noValuesError struct{}

func (noValuesError) Error() string { return "no source of protected values" }

var errNoValues error = noValuesError{}
