package api

import (
	"context"
	"net/http"
	"time"

	"github.com/waystation/waystation/internal/captcha"
)

type createTaskRequest struct {
	captcha.New
}

func (c *createTaskRequest) validate() error {
	_, err := c.New.Validate()
	return err
}

func (c *createTaskRequest) clientKey() string { return "clientTaskId:" + c.ClientTaskID }

// heldText is what the image's metadata held: checked with the body, since an
// agent may hide a value there that the cleaned image no longer shows.
func (c *createTaskRequest) heldText() []string { return c.New.ImageText() }

// taskJSON is a task as the API shows it: the approval page a person answers it on,
// when one does.
type taskJSON struct {
	captcha.Task
	ApprovalURL *string `json:"approvalUrl"`
}

func (s *Server) taskBody(t captcha.Task) taskJSON {
	out := taskJSON{Task: t}
	if t.RequestID != nil {
		u := s.svc.PublicURL + AppPath + "/requests/" + *t.RequestID
		out.ApprovalURL = &u
	}
	return out
}

// handleCreateTask takes a CAPTCHA task for a solver, or for the person, once per
// clientTaskId.
func (s *Server) handleCreateTask() http.HandlerFunc {
	return s.serve(func(w http.ResponseWriter, r *http.Request) error {
		var req createTaskRequest
		id, body, err := s.readSessionRequest(w, r, &req)
		if err != nil {
			return err
		}
		route := "POST /sessions/" + id + "/captcha/tasks"
		s.once(w, r, route, req.clientKey(), body, s.svc.clientIDTTL(), func(w http.ResponseWriter) error {
			t, err := s.svc.Captchas.Create(r.Context(), principal(r), id, req.New, s.svc.Sessions.Limits.Events)
			if err != nil {
				return err
			}
			writeJSON(w, http.StatusCreated, s.taskBody(t))
			return nil
		})
		return nil
	})
}

type taskPage struct {
	Items []taskJSON `json:"items"`
}

// handleTasks lists a session's tasks, newest first.
func (s *Server) handleTasks() http.HandlerFunc {
	return s.serve(func(w http.ResponseWriter, r *http.Request) error {
		id, err := sessionID(r)
		if err != nil {
			return err
		}
		limit, err := limitQuery(r)
		if err != nil {
			return err
		}
		items, err := s.svc.Captchas.Tasks(r.Context(), principal(r), id, limit)
		if err != nil {
			return err
		}
		page := taskPage{Items: make([]taskJSON, len(items))}
		for i, t := range items {
			page.Items[i] = s.taskBody(t)
		}
		writeJSON(w, http.StatusOK, page)
		return nil
	})
}

// handleTask answers a task: at once, or with wait=N after up to N seconds while it
// is pending (a long poll woken by the session's events).
func (s *Server) handleTask() http.HandlerFunc {
	return s.serve(func(w http.ResponseWriter, r *http.Request) error {
		sid, err := sessionID(r)
		if err != nil {
			return err
		}
		id, err := uuidParam(r, "tid", captcha.ErrNotFound)
		if err != nil {
			return err
		}
		s.longPoll(w, r, sid, s.pollTask(r.Context(), sid, id))
		return nil
	})
}

// pollTask reads task id of session sid for a wait on it (see
// captcha.Service.Poll), answering it as the API shows it.
func (s *Server) pollTask(ctx context.Context, sid, id string) func() (any, bool, time.Time, error) {
	return func() (any, bool, time.Time, error) {
		t, pending, recheck, err := s.svc.Captchas.Poll(ctx, principalOf(ctx), sid, id)
		return s.taskBody(t), pending, recheck, err
	}
}
