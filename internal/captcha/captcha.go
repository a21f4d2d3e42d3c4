// Package captcha is the domain of CAPTCHA tasks: an agent that meets a CAPTCHA asks
// for its answer, and either its person answers it on the approval page (a captcha
// request) or a solver service speaking the common createTask / getTaskResult JSON
// API does, within a time limit. A solved task yields its answer to the agent and
// nothing else: it approves no request and authorises no payment.
package captcha

import (
	"cmp"
	"context"
	"encoding/base64"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/waystation/waystation/internal/auth"
	"github.com/waystation/waystation/internal/problem"
)

// Types of tasks. An image is read by a person or a solver; the others are widgets
// whose token only a solver can get, since it is bound to the site that shows them.
const (
	TypeImage     = "image_to_text"
	TypeRecaptcha = "recaptcha_v2"
	TypeHCaptcha  = "hcaptcha"
	TypeTurnstile = "turnstile"
)

// Types lists every type.
var Types = []string{TypeImage, TypeRecaptcha, TypeHCaptcha, TypeTurnstile}

// Statuses of a task.
const (
	StatusPending = "pending"
	StatusSolved  = "solved"
	StatusFailed  = "failed"
	StatusExpired = "expired"
)

// Who answers a task.
const (
	ViaPerson = "person"
	ViaSolver = "solver"
)

// Limits.
const (
	// SolverTimeout is how long a solver has.
	SolverTimeout = 120 * time.Second
	// PersonTimeout is how long a person has, by default.
	PersonTimeout = 5 * time.Minute
	// MaxImage bounds an image, decoded.
	MaxImage = 256 << 10
)

// New is what an agent asks.
type New struct {
	ClientTaskID string `json:"clientTaskId"`
	Type         string `json:"type"`
	PageURL      string `json:"pageUrl"`
	SiteKey      string `json:"siteKey"`
	// Image is the CAPTCHA image, base64 (standard, padded or not), for image_to_text.
	Image string `json:"image"`
	// Reason is shown to the person.
	Reason string `json:"reason"`
	// text is what the image's metadata held, once Validate has read it.
	text []string
}

// ImageText is what the metadata of the image held (see Clean), once Validate has
// read it, for the caller to check for protected values before the task is taken.
func (n *New) ImageText() []string { return n.text }

// Validate checks the ask; it decodes the image and answers it cleaned of all but
// its pixels (see Clean), keeping what its metadata held for ImageText.
func (n *New) Validate() (img []byte, err error) {
	if n.ClientTaskID == "" || len(n.ClientTaskID) > 200 {
		return nil, problem.Invalid("clientTaskId must be 1 to 200 bytes.")
	}
	if !slices.Contains(Types, n.Type) {
		return nil, problem.Invalid("type must be one of " + strings.Join(Types, ", ") + ".")
	}
	u, err := url.Parse(n.PageURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil || len(n.PageURL) > 2048 {
		return nil, problem.Invalid("pageUrl must be the absolute http or https URL of the page that shows the CAPTCHA, at most 2048 bytes.")
	}
	if err := problem.Text("reason", n.Reason, false, 1000); err != nil {
		return nil, err
	}
	if n.Type == TypeImage {
		if n.SiteKey != "" {
			return nil, problem.Invalid("siteKey goes with widget CAPTCHAs, not image_to_text.")
		}
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding} {
			if img, err = enc.DecodeString(strings.TrimSpace(n.Image)); err == nil {
				break
			}
		}
		if err != nil || len(img) == 0 || len(img) > MaxImage {
			return nil, errBadImage
		}
		img, n.text, err = Clean(img)
		return img, err
	}
	if n.Image != "" {
		return nil, problem.Invalid("image goes with image_to_text.")
	}
	if n.SiteKey == "" || len(n.SiteKey) > 200 || strings.ContainsAny(n.SiteKey, " \t\r\n\x00") {
		return nil, problem.Invalid("siteKey, the widget's public site key on pageUrl, is required for " + n.Type + " (at most 200 bytes).")
	}
	return nil, nil
}

// imageType is the MIME type of an image the page may show, by its first bytes.
func imageType(b []byte) string {
	switch {
	case len(b) > 8 && string(b[:8]) == "\x89PNG\r\n\x1a\n":
		return "image/png"
	case len(b) > 3 && b[0] == 0xff && b[1] == 0xd8 && b[2] == 0xff:
		return "image/jpeg"
	case len(b) > 6 && (string(b[:6]) == "GIF87a" || string(b[:6]) == "GIF89a"):
		return "image/gif"
	case len(b) > 12 && string(b[:4]) == "RIFF" && string(b[8:12]) == "WEBP":
		return "image/webp"
	}
	return ""
}

// ImageType is the MIME type of a task's image.
func ImageType(b []byte) string { return imageType(b) }

// Task is one CAPTCHA task.
type Task struct {
	ID           string     `json:"id"`
	SessionID    string     `json:"sessionId"`
	ClientTaskID string     `json:"clientTaskId"`
	Type         string     `json:"type"`
	PageURL      string     `json:"pageUrl"`
	SiteKey      *string    `json:"siteKey"`
	Via          string     `json:"via"`
	Status       string     `json:"status"`
	Solution     *string    `json:"solution"`
	Error        *string    `json:"error"`
	RequestID    *string    `json:"requestId"`
	CreatedAt    time.Time  `json:"createdAt"`
	ExpiresAt    time.Time  `json:"expiresAt"`
	SolvedAt     *time.Time `json:"solvedAt"`
	// What the store keeps for the solver and the page.
	Image        []byte `json:"-"`
	AgentID      string `json:"-"`
	UserID       string `json:"-"`
	SolverTaskID string `json:"-"`
}

// Errors.
var (
	ErrNotFound     = problem.New(problem.NotFound, "No CAPTCHA task with this id is visible to this key.")
	ErrNeedsSolver  = problem.New(problem.ValidationFailed, "Only a solver can answer a widget CAPTCHA (its token is bound to the site that shows it), and this server has none: set CAPTCHA_SOLVER_URL, or send the widget's image as image_to_text.")
	errSolverFailed = "solver_error"
)

// Service takes tasks and has its solver answer them.
type Service struct {
	Store  Store
	Solver *Solver // nil: people answer image tasks, and widgets cannot be answered
	Log    *slog.Logger
	// Background is the context solver work runs under, beyond the request that
	// asked: the server's life.
	Background context.Context
	// Timeout is how long the solver has (default SolverTimeout, 120 s).
	Timeout time.Duration
}

// Create takes a task: for a solver when there is one, else for the person.
func (s *Service) Create(ctx context.Context, p auth.Principal, sessionID string, n New, maxEvents int) (Task, error) {
	img, err := n.Validate()
	if err != nil {
		return Task{}, err
	}
	via, timeout := ViaPerson, PersonTimeout
	if s.Solver != nil {
		via, timeout = ViaSolver, cmp.Or(s.Timeout, SolverTimeout)
	} else if n.Type != TypeImage {
		return Task{}, ErrNeedsSolver
	}
	t, created, err := s.Store.CreateTask(ctx, p, sessionID, n, img, via, timeout, maxEvents)
	if err != nil || !created || via != ViaSolver {
		return t, err
	}
	bg := s.Background
	if bg == nil {
		bg = context.Background()
	}
	go s.solve(bg, t)
	return t, nil
}

// Task is task id of session sessionID, if p may see it.
func (s *Service) Task(ctx context.Context, p auth.Principal, sessionID, id string) (Task, error) {
	return s.Store.Task(ctx, p, sessionID, id)
}

// Poll reads task id of session sessionID for a wait on it: the task, whether it is
// still pending, and when to read it again at the latest should no session event
// wake the wait: within a second (a solver's answer on another replica is seen so
// even without the session's events), or at its expiry if sooner.
func (s *Service) Poll(ctx context.Context, p auth.Principal, sessionID, id string) (t Task, pending bool, recheck time.Time, err error) {
	t, err = s.Store.Task(ctx, p, sessionID, id)
	recheck = time.Now().Add(time.Second)
	if t.ExpiresAt.Before(recheck) {
		recheck = t.ExpiresAt
	}
	return t, t.Status == StatusPending, recheck, err
}

// Tasks are session sessionID's newest tasks, at most limit.
func (s *Service) Tasks(ctx context.Context, p auth.Principal, sessionID string, limit int) ([]Task, error) {
	return s.Store.Tasks(ctx, p, sessionID, limit)
}

// RequestTask is what a captcha request's page shows: the task request requestID
// asks its person to answer; nil from a service built without a store, which keeps
// no tasks.
func (s *Service) RequestTask(ctx context.Context, p auth.Principal, requestID string) (*Task, error) {
	if s.Store == nil {
		return nil, nil
	}
	t, err := s.Store.TaskOfRequest(ctx, p, requestID)
	if err != nil {
		return nil, err
	}
	return &t, nil
}

// solve has the solver answer t within SolverTimeout and records the outcome.
func (s *Service) solve(ctx context.Context, t Task) {
	ctx, cancel := context.WithDeadline(ctx, t.ExpiresAt)
	defer cancel()
	solution, err := s.Solver.Solve(ctx, t, func(id string) {
		if err := s.Store.SolverStarted(context.WithoutCancel(ctx), t.ID, id); err != nil {
			s.Log.Warn("captcha: record solver task", "task", t.ID, "err", err)
		}
	})
	status, errText := StatusSolved, ""
	switch {
	case ctx.Err() != nil:
		status, errText = StatusExpired, "the solver gave no answer in time"
	case err != nil:
		status, errText = StatusFailed, errSolverFailed+": "+err.Error()
		if len(errText) > 300 {
			errText = errText[:300]
		}
	}
	if err := s.Store.FinishTask(context.WithoutCancel(ctx), t.ID, status, solution, errText); err != nil {
		s.Log.Warn("captcha: record outcome", "task", t.ID, "err", err)
	}
}
