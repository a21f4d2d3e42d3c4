package api

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The CAPTCHA task's tools: create_captcha_task and get_captcha_task, as POST
// /sessions/{id}/captcha/tasks and a long poll of GET
// /sessions/{id}/captcha/tasks/{tid}.

// addCaptchaTools adds the CAPTCHA task's tools.
func (s *Server) addCaptchaTools(srv *mcp.Server) {
	addTool(srv, &mcp.Tool{Name: "create_captcha_task", OutputSchema: outputSchema("CaptchaTask"), Title: "Get a CAPTCHA answered",
		Description: "Have a CAPTCHA you met answered, by the solver the server uses or by the person on its page; read the answer with get_captcha_task. The answer authorises nothing else."},
		s.toolCreateCaptchaTask)
	addTool(srv, &mcp.Tool{Name: "get_captcha_task", OutputSchema: outputSchema("CaptchaTask"), Title: "Read a CAPTCHA task", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
		Description: "A CAPTCHA task's status and, once solved, its answer; waits up to 30 s while it is pending."},
		s.toolGetCaptchaTask)
}

type captchaIn struct {
	SessionID    string `json:"sessionId"`
	ClientTaskID string `json:"clientTaskId"`
	Type         string `json:"type" jsonschema:"image_to_text, recaptcha_v2, hcaptcha or turnstile"`
	PageURL      string `json:"pageUrl"`
	SiteKey      string `json:"siteKey,omitempty"`
	Image        string `json:"image,omitempty" jsonschema:"the CAPTCHA image, base64"`
	Reason       string `json:"reason,omitempty"`
}

type captchaTaskIn struct {
	SessionID string `json:"sessionId"`
	TaskID    string `json:"taskId"`
}

// taskWait is how long get_captcha_task waits for a pending task.
const taskWait = 30 * time.Second

// toolCreateCaptchaTask takes a CAPTCHA task as POST /sessions/{id}/captcha/tasks
// does, once per client id.
func (s *Server) toolCreateCaptchaTask(ctx context.Context, _ *mcp.CallToolRequest, in captchaIn) (*mcp.CallToolResult, map[string]any, error) {
	sid, p, err := sessionPath(in.SessionID, "/captcha/tasks")
	if err != nil {
		return nil, nil, err
	}
	var task createTaskRequest
	body := map[string]string{"clientTaskId": in.ClientTaskID, "type": in.Type,
		"pageUrl": in.PageURL, "siteKey": in.SiteKey, "image": in.Image, "reason": in.Reason}
	return toolResult(s.toolCreate(ctx, p, body, &task, func() (any, error) {
		t, err := s.svc.Captchas.Create(ctx, principalOf(ctx), sid, task.New, s.svc.Sessions.Limits.Events)
		return s.taskBody(t), err
	}))
}

// toolGetCaptchaTask reads a CAPTCHA task as GET /sessions/{id}/captcha/tasks/{tid}
// does, waiting up to taskWait while it is pending.
func (s *Server) toolGetCaptchaTask(ctx context.Context, _ *mcp.CallToolRequest, in captchaTaskIn) (*mcp.CallToolResult, map[string]any, error) {
	if err := idArg("taskId", in.TaskID, "a task's id"); err != nil {
		return nil, nil, err
	}
	tid := strings.ToLower(in.TaskID)
	sid, p, err := sessionPath(in.SessionID, "/captcha/tasks/", tid)
	if err != nil {
		return nil, nil, err
	}
	body, err := s.await(ctx, sid, min(taskWait, s.svc.MaxWait), s.pollTask(ctx, sid, tid))
	return toolResult(s.toolAnswer(ctx, p, http.StatusOK, body, err))
}
