package captcha

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Solver is a CAPTCHA solving service speaking the common JSON API: POST createTask
// {clientKey, task} gives a taskId, POST getTaskResult {clientKey, taskId} gives
// {status: processing | ready, solution}. Its key is never logged or answered.
type Solver struct {
	// URL is the service's base URL; the calls go to URL/createTask and
	// URL/getTaskResult.
	URL string
	Key string
	// Client makes the calls (default: a 30 s timeout each); Poll is how long to wait
	// between two reads of the result (default 5 s).
	Client *http.Client
	Poll   time.Duration
}

// solverTask is the task of the common API for t.
func solverTask(t Task) map[string]any {
	site := ""
	if t.SiteKey != nil {
		site = *t.SiteKey
	}
	switch t.Type {
	case TypeImage:
		return map[string]any{"type": "ImageToTextTask", "body": base64.StdEncoding.EncodeToString(t.Image)}
	case TypeRecaptcha:
		return map[string]any{"type": "RecaptchaV2TaskProxyless", "websiteURL": t.PageURL, "websiteKey": site}
	case TypeHCaptcha:
		return map[string]any{"type": "HCaptchaTaskProxyless", "websiteURL": t.PageURL, "websiteKey": site}
	default:
		return map[string]any{"type": "TurnstileTaskProxyless", "websiteURL": t.PageURL, "websiteKey": site}
	}
}

type solverAnswer struct {
	ErrorID          int             `json:"errorId"`
	ErrorCode        string          `json:"errorCode"`
	ErrorDescription string          `json:"errorDescription"`
	TaskID           json.RawMessage `json:"taskId"`
	Status           string          `json:"status"`
	Solution         struct {
		Text               string `json:"text"`
		GRecaptchaResponse string `json:"gRecaptchaResponse"`
		Token              string `json:"token"`
	} `json:"solution"`
}

// Solve creates the task at the solver, tells started its id, and reads the result
// until it is ready or ctx ends.
func (s *Solver) Solve(ctx context.Context, t Task, started func(id string)) (string, error) {
	var created solverAnswer
	if err := s.call(ctx, "createTask", map[string]any{"clientKey": s.Key, "task": solverTask(t)}, &created); err != nil {
		return "", err
	}
	if created.ErrorID != 0 || len(created.TaskID) == 0 {
		return "", fmt.Errorf("createTask: %s", clean(created.ErrorCode+" "+created.ErrorDescription))
	}
	started(clean(strings.Trim(string(created.TaskID), `"`)))
	poll := s.Poll
	if poll <= 0 {
		poll = 5 * time.Second
	}
	for {
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(poll):
		}
		var res solverAnswer
		if err := s.call(ctx, "getTaskResult", map[string]any{"clientKey": s.Key, "taskId": created.TaskID}, &res); err != nil {
			return "", err
		}
		switch {
		case res.ErrorID != 0:
			return "", fmt.Errorf("getTaskResult: %s", clean(res.ErrorCode+" "+res.ErrorDescription))
		case res.Status == "ready":
			for _, v := range []string{res.Solution.Text, res.Solution.GRecaptchaResponse, res.Solution.Token} {
				if v != "" {
					if len(v) > 8192 {
						return "", errors.New("getTaskResult: a solution of over 8 KiB")
					}
					return v, nil
				}
			}
			return "", errors.New("getTaskResult: ready without a solution")
		}
	}
}

func (s *Solver) call(ctx context.Context, method string, body any, out *solverAnswer) error {
	b, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(s.URL, "/")+"/"+method, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	client := s.Client
	if client == nil {
		client = &http.Client{Timeout: 30 * time.Second}
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("%s: the solver could not be reached", method)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(out); err != nil {
		return fmt.Errorf("%s: the solver answered %s", method, resp.Status)
	}
	return nil
}

// clean keeps what a solver said fit to store: printable, short.
func clean(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, strings.TrimSpace(strings.ToValidUTF8(s, "")))
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}
