// Package session is the domain of workflow sessions: one agent's workflow, its
// status, and its append-only event log, whose seq numbers have no gaps.
package session

import (
	"encoding/json"
	"time"

	"github.com/waystation/waystation/internal/problem"
)

// Statuses of a session. Every status but open is final.
const (
	StatusOpen      = "open"
	StatusCompleted = "completed"
	StatusFailed    = "failed"
	StatusCanceled  = "canceled"
	StatusStopped   = "stopped"
)

// Actors of events.
const (
	ActorAgent  = "agent"
	ActorUser   = "user"
	ActorSystem = "system"
)

// Event types the service itself writes. Agents append only runtime.* types.
const (
	EventOpened    = "session.opened"
	EventCompleted = "session.completed"
	EventStopped   = "session.stopped"
)

var (
	// ErrNotFound is a session that does not exist or that the caller may not see.
	ErrNotFound = problem.New(problem.NotFound, "No session with this id is visible to this key.")
	// ErrClosed is a change to a session that is no longer open.
	ErrClosed = problem.New(problem.SessionClosed, "The session is closed.")
	// ErrClientIDTaken is a client id already used with another request.
	ErrClientIDTaken = problem.New(problem.IdempotencyConflict, "This client id was already used with another body.")
	// ErrTooManyOpen is a new session past the agent's cap of open sessions.
	ErrTooManyOpen = problem.New(problem.QuotaExceeded, "This agent has as many open sessions as one agent may; complete or stop one to open another.")
	// ErrTooManyEvents is an agent's write past the session's cap of events.
	ErrTooManyEvents = problem.New(problem.QuotaExceeded, "This session holds as many events as one session may; complete it and open another.")
)

// Limits bound what one agent keeps open; zero fields set no bound.
type Limits struct {
	// OpenSessions is the most sessions one agent may have open at once.
	OpenSessions int
	// Events is the most events one session may hold before the agent's own writes
	// (its events and new requests) are refused; what the service appends itself,
	// such as a request's transitions or the session's completion, always goes in.
	Events int
}

// Session is one workflow of one agent.
type Session struct {
	ID           string     `json:"id"`
	AgentID      string     `json:"agentId"`
	UserID       string     `json:"userId"`
	Type         string     `json:"type"`
	Description  string     `json:"description"`
	MerchantName *string    `json:"merchantName"`
	TargetURL    *string    `json:"targetUrl"`
	Status       string     `json:"status"`
	Summary      *string    `json:"summary"`
	StopReason   *string    `json:"stopReason"`
	LastEventSeq int64      `json:"lastEventSeq"`
	CreatedAt    time.Time  `json:"createdAt"`
	UpdatedAt    time.Time  `json:"updatedAt"`
	ClosedAt     *time.Time `json:"closedAt"`

	ClientSessionID    string  `json:"-"`
	ClientCompletionID *string `json:"-"`
}

// Event is one entry of a session's log.
type Event struct {
	Seq           int64           `json:"seq"`
	Type          string          `json:"type"`
	Actor         string          `json:"actor"`
	ClientEventID *string         `json:"clientEventId"`
	Data          json.RawMessage `json:"data"`
	CreatedAt     time.Time       `json:"createdAt"`
}

// New is what an agent gives to open a session.
type New struct {
	Type            string
	Description     string
	MerchantName    *string
	TargetURL       *string
	ClientSessionID string
}

// Completion closes a session on the agent's word.
type Completion struct {
	ClientCompletionID string
	Status             string // completed, failed or canceled
	Summary            string
}

// CompletionStatuses are the statuses an agent may complete a session with.
var CompletionStatuses = []string{StatusCompleted, StatusFailed, StatusCanceled}

// Append is an event to add to a session's log.
type Append struct {
	Type          string
	Actor         string
	ClientEventID *string
	Data          json.RawMessage
}

// Cursor is where a page of sessions (or of a session's requests), newest first,
// resumes.
type Cursor struct {
	CreatedAt time.Time
	ID        string
}

// Stats counts an agent's sessions by status, and their events.
type Stats struct {
	Sessions         int64            `json:"sessions"`
	SessionsByStatus map[string]int64 `json:"sessionsByStatus"`
	Events           int64            `json:"events"`
}
