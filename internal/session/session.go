// Package session is the domain of workflow sessions: one agent's workflow, its
// status, and its append-only event log, whose seq numbers have no gaps.
package session

import (
	"encoding/json"
	"errors"
	"time"
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
	ErrNotFound = errors.New("session: not found")
	// ErrClosed is a change to a session that is no longer open.
	ErrClosed = errors.New("session: closed")
	// ErrClientIDTaken is a client id already used with another request.
	ErrClientIDTaken = errors.New("session: client id already used")
)

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
