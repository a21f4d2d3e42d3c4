package api_test

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waystation/waystation/api"
	"github.com/waystation/waystation/internal/captcha"
)

// A tiny PNG, as an agent would send the CAPTCHA it met.
const captchaPNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAAAAAA6fptVAAAADklEQVR4nGJiAAQAAP//AAYAA/rQWa4AAAAASUVORK5CYII="

type task struct {
	ID, Status, Via string
	Solution        *string
	Error           *string
	RequestID       *string
	ApprovalURL     *string
}

// fakeSolver speaks the createTask / getTaskResult API: it answers after `after`
// reads of the result, or never when after is negative, and keeps what it was sent.
type fakeSolver struct {
	mu    sync.Mutex
	after int
	reads int
	tasks []map[string]any
	keys  []string
}

func (f *fakeSolver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body struct {
		ClientKey string         `json:"clientKey"`
		Task      map[string]any `json:"task"`
		TaskID    json.RawMessage
	}
	json.NewDecoder(r.Body).Decode(&body)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.keys = append(f.keys, body.ClientKey)
	w.Header().Set("Content-Type", "application/json")
	switch r.URL.Path {
	case "/createTask":
		f.tasks = append(f.tasks, body.Task)
		if body.Task["type"] == "HCaptchaTaskProxyless" {
			w.Write([]byte(`{"errorId":1,"errorCode":"ERROR_ZERO_BALANCE","errorDescription":"no money"}`))
			return
		}
		w.Write([]byte(`{"errorId":0,"taskId":12345}`))
	case "/getTaskResult":
		f.reads++
		if f.after < 0 || f.reads <= f.after {
			w.Write([]byte(`{"errorId":0,"status":"processing"}`))
			return
		}
		if strings.Contains(string(body.TaskID), "12345") {
			w.Write([]byte(`{"errorId":0,"status":"ready","solution":{"text":"W7XK","gRecaptchaResponse":""}}`))
		}
	}
}

func newCaptchaEnv(t *testing.T, solver *fakeSolver, timeout time.Duration, opts ...func(*api.Authenticated)) (e *authEnv, agentKey, userKey, sid string) {
	t.Helper()
	var svc *captcha.Service
	e = newAuthEnv(t, append(opts, func(a *api.Authenticated) {
		svc = &captcha.Service{Store: nil, Log: slog.New(slog.DiscardHandler), Timeout: timeout}
		if solver != nil {
			srv := httptest.NewServer(solver)
			t.Cleanup(srv.Close)
			svc.Solver = &captcha.Solver{URL: srv.URL, Key: "solver-client-key-canary", Poll: 10 * time.Millisecond}
		}
		a.Captchas = svc
	})...)
	svc.Store = e.store
	uid, userKey := e.user("ada")
	_, agentKey = e.agent(uid, "scout")
	return e, agentKey, userKey, e.openSession(agentKey, "captcha")
}

func (e *authEnv) awaitTask(key, sid, id string) task {
	e.t.Helper()
	var out task
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		e.call("GET", "/sessions/"+sid+"/captcha/tasks/"+id+"?wait=2", key, "").want(e.t, 200).into(e.t, &out)
		if out.Status != "pending" {
			return out
		}
	}
	e.t.Fatalf("task %s still pending", id)
	return out
}

// Without a solver, the person reads an image CAPTCHA on the approval page and the
// agent gets the answer; a widget CAPTCHA cannot be answered so, and says why.
func TestThePersonAnswersAnImageCaptcha(t *testing.T) {
	t.Parallel()
	e, agentKey, userKey, sid := newCaptchaEnv(t, nil, 0)
	var tk task
	e.call("POST", "/sessions/"+sid+"/captcha/tasks", agentKey,
		`{"clientTaskId":"c1","type":"image_to_text","pageUrl":"https://shop.example/login","image":"`+captchaPNG+`","reason":"the login asks"}`).
		want(t, 201).into(t, &tk)
	if tk.Status != "pending" || tk.Via != "person" || tk.RequestID == nil || tk.ApprovalURL == nil || tk.Solution != nil {
		t.Fatalf("task %+v", tk)
	}
	e.call("POST", "/sessions/"+sid+"/captcha/tasks", agentKey,
		`{"clientTaskId":"c1","type":"image_to_text","pageUrl":"https://shop.example/login","image":"`+captchaPNG+`","reason":"the login asks"}`).want(t, 200)
	e.call("POST", "/sessions/"+sid+"/captcha/tasks", agentKey,
		`{"clientTaskId":"c1","type":"image_to_text","pageUrl":"https://shop.example/other","image":"`+captchaPNG+`"}`).want(t, 409)
	// The agent cannot answer its own CAPTCHA request.
	e.call("POST", "/sessions/"+sid+"/requests/"+*tk.RequestID+"/decision", agentKey, `{"decision":"approve","values":{"solution":"x"}}`).want(t, 403)
	e.call("POST", "/sessions/"+sid+"/requests/"+*tk.RequestID+"/decision", userKey, `{"decision":"approve"}`).want(t, 422)
	e.call("POST", "/sessions/"+sid+"/requests/"+*tk.RequestID+"/decision", userKey, `{"decision":"approve","values":{"solution":" W7XK "}}`).want(t, 200)
	got := e.awaitTask(agentKey, sid, tk.ID)
	if got.Status != "solved" || got.Solution == nil || *got.Solution != "W7XK" {
		t.Errorf("solved task %+v", got)
	}
	// Denied: failed.
	var denied task
	e.call("POST", "/sessions/"+sid+"/captcha/tasks", agentKey,
		`{"clientTaskId":"c2","type":"image_to_text","pageUrl":"https://shop.example/login","image":"`+captchaPNG+`"}`).want(t, 201).into(t, &denied)
	e.call("POST", "/sessions/"+sid+"/requests/"+*denied.RequestID+"/decision", userKey, `{"decision":"deny"}`).want(t, 200)
	if got := e.awaitTask(agentKey, sid, denied.ID); got.Status != "failed" || got.Solution != nil {
		t.Errorf("denied task %+v", got)
	}
	var page struct{ Items []task }
	e.call("GET", "/sessions/"+sid+"/captcha/tasks", userKey, "").want(t, 200).into(t, &page)
	if len(page.Items) != 2 || page.Items[0].ID != denied.ID {
		t.Errorf("list %+v", page.Items)
	}

	e.call("POST", "/sessions/"+sid+"/captcha/tasks", agentKey,
		`{"clientTaskId":"w","type":"turnstile","pageUrl":"https://shop.example/login","siteKey":"0x4AAA"}`).want(t, 422, "validation_failed")
	for _, bad := range []string{
		`{"clientTaskId":"b1","type":"image_to_text","pageUrl":"https://shop.example/login","image":"bm90IGFuIGltYWdl"}`,
		`{"clientTaskId":"b2","type":"image_to_text","pageUrl":"ftp://shop.example/login","image":"` + captchaPNG + `"}`,
		`{"clientTaskId":"b3","type":"audio","pageUrl":"https://shop.example/login"}`,
		`{"clientTaskId":"b4","type":"recaptcha_v2","pageUrl":"https://shop.example/login"}`,
	} {
		e.call("POST", "/sessions/"+sid+"/captcha/tasks", agentKey, bad).want(t, 422, "validation_failed")
	}
	e.call("POST", "/sessions/"+sid+"/captcha/tasks", userKey,
		`{"clientTaskId":"u","type":"image_to_text","pageUrl":"https://shop.example/login","image":"`+captchaPNG+`"}`).want(t, 403)
	e.call("GET", "/sessions/"+sid+"/captcha/tasks/00000000-0000-4000-8000-000000000000", agentKey, "").want(t, 404)
	// Another tenant sees none of it.
	uid2, _ := e.user("bo")
	_, otherAgent := e.agent(uid2, "other")
	e.call("GET", "/sessions/"+sid+"/captcha/tasks/"+tk.ID, otherAgent, "").want(t, 404)
	e.call("GET", "/sessions/"+sid+"/captcha/tasks", otherAgent, "").want(t, 404)
}

// With a solver, tasks go to it: its answer reaches the agent, its failure and its
// silence past the time limit say so, and its key is never answered.
func TestASolverAnswersTasksWithinItsTime(t *testing.T) {
	t.Parallel()
	solver := &fakeSolver{after: 2}
	// The time limit leaves a busy machine room to answer on the solver's second read;
	// the silent solver's task still expires within it.
	e, agentKey, _, sid := newCaptchaEnv(t, solver, 5*time.Second)
	var tk task
	e.call("POST", "/sessions/"+sid+"/captcha/tasks", agentKey,
		`{"clientTaskId":"s1","type":"recaptcha_v2","pageUrl":"https://shop.example/login","siteKey":"6Le-site-key"}`).want(t, 201).into(t, &tk)
	if tk.Via != "solver" || tk.RequestID != nil {
		t.Fatalf("task %+v", tk)
	}
	if got := e.awaitTask(agentKey, sid, tk.ID); got.Status != "solved" || got.Solution == nil || *got.Solution != "W7XK" {
		t.Errorf("solved %+v", got)
	}
	solver.mu.Lock()
	sent := solver.tasks[0]
	keys := solver.keys
	solver.mu.Unlock()
	if sent["type"] != "RecaptchaV2TaskProxyless" || sent["websiteURL"] != "https://shop.example/login" || sent["websiteKey"] != "6Le-site-key" {
		t.Errorf("the solver got %v", sent)
	}
	if len(keys) == 0 || keys[0] != "solver-client-key-canary" {
		t.Errorf("the solver got keys %v", keys)
	}
	var failed task
	e.call("POST", "/sessions/"+sid+"/captcha/tasks", agentKey,
		`{"clientTaskId":"s2","type":"hcaptcha","pageUrl":"https://shop.example/login","siteKey":"k"}`).want(t, 201).into(t, &failed)
	if got := e.awaitTask(agentKey, sid, failed.ID); got.Status != "failed" || got.Error == nil || !strings.Contains(*got.Error, "ERROR_ZERO_BALANCE") {
		t.Errorf("failed %+v", got)
	}
	solver.mu.Lock()
	solver.after = -1
	solver.mu.Unlock()
	var slow task
	e.call("POST", "/sessions/"+sid+"/captcha/tasks", agentKey,
		`{"clientTaskId":"s3","type":"image_to_text","pageUrl":"https://shop.example/login","image":"`+captchaPNG+`"}`).want(t, 201).into(t, &slow)
	if got := e.awaitTask(agentKey, sid, slow.ID); got.Status != "expired" || got.Solution != nil {
		t.Errorf("slow %+v", got)
	}
	for _, a := range e.answers {
		if strings.Contains(a.body, "solver-client-key-canary") {
			t.Errorf("%s answered the solver's key", a.path)
		}
	}
	time.Sleep(50 * time.Millisecond) // the expired task's solver work records it before the database goes
}
