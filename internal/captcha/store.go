package captcha

import (
	"context"
	"time"

	"github.com/waystation/waystation/internal/auth"
)

// Store keeps tasks. CreateTask raises a captcha request for tasks a person answers,
// in the same transaction, and is a replay when clientTaskId was used with the same
// ask before (created false).
type Store interface {
	CreateTask(ctx context.Context, p auth.Principal, sessionID string, n New, img []byte, via string, timeout time.Duration, maxEvents int) (t Task, created bool, err error)
	Task(ctx context.Context, p auth.Principal, sessionID, id string) (Task, error)
	Tasks(ctx context.Context, p auth.Principal, sessionID string, limit int) ([]Task, error)
	// TaskOfRequest is the task a captcha request asks the person to answer.
	TaskOfRequest(ctx context.Context, p auth.Principal, requestID string) (Task, error)
	// SolverStarted records the solver's task id; FinishTask ends a pending task.
	SolverStarted(ctx context.Context, id, solverTaskID string) error
	FinishTask(ctx context.Context, id, status, solution, errText string) error
}
