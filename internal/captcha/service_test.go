package captcha

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"image/png"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waystation/waystation/internal/auth"
)

// onePixel is a PNG of one grey pixel, in base64.
const onePixel = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAAAAAA6fptVAAAADklEQVR4nGJiAAQAAP//AAYAA/rQWa4AAAAASUVORK5CYII="

var (
	agent = auth.Principal{KID: "k1", Scope: auth.ScopeAgent, UserID: "u1", AgentID: "a1"}
	other = auth.Principal{KID: "k2", Scope: auth.ScopeAgent, UserID: "u2", AgentID: "a2"}
)

// errClientIDTaken is the fake store's refusal of a client task id used before with
// another ask.
var errClientIDTaken = errors.New("client task id taken")

// memStore keeps tasks in memory as the PostgreSQL store does: a client task id
// asked again with the same ask is a replay, with another a conflict; a task is
// visible to its agent only; only a pending task is finished. finished receives each
// task as it is finished.
type memStore struct {
	mu       sync.Mutex
	tasks    []*Task
	timeouts []time.Duration // the timeout each created task was given
	finished chan Task
}

func newMemStore() *memStore { return &memStore{finished: make(chan Task, 8)} }

func (m *memStore) CreateTask(_ context.Context, p auth.Principal, sessionID string, n New, img []byte, via string, timeout time.Duration, _ int) (Task, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, t := range m.tasks {
		if t.SessionID == sessionID && t.ClientTaskID == n.ClientTaskID {
			if t.Type != n.Type || t.PageURL != n.PageURL || !bytes.Equal(t.Image, img) {
				return Task{}, false, errClientIDTaken
			}
			return *t, false, nil
		}
	}
	now := time.Now()
	t := &Task{ID: fmt.Sprintf("task-%d", len(m.tasks)+1), SessionID: sessionID, ClientTaskID: n.ClientTaskID, Type: n.Type,
		PageURL: n.PageURL, Via: via, Status: StatusPending, CreatedAt: now, ExpiresAt: now.Add(timeout), Image: img,
		AgentID: p.AgentID, UserID: p.UserID}
	if n.SiteKey != "" {
		t.SiteKey = &n.SiteKey
	}
	if via == ViaPerson {
		req := "req-" + t.ID
		t.RequestID = &req
	}
	m.tasks = append(m.tasks, t)
	m.timeouts = append(m.timeouts, timeout)
	return *t, true, nil
}

func (m *memStore) find(p auth.Principal, match func(*Task) bool) (Task, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, t := range m.tasks {
		if match(t) && t.AgentID == p.AgentID {
			return *t, nil
		}
	}
	return Task{}, ErrNotFound
}

func (m *memStore) Task(_ context.Context, p auth.Principal, sessionID, id string) (Task, error) {
	return m.find(p, func(t *Task) bool { return t.SessionID == sessionID && t.ID == id })
}

func (m *memStore) TaskOfRequest(_ context.Context, p auth.Principal, requestID string) (Task, error) {
	return m.find(p, func(t *Task) bool { return t.RequestID != nil && *t.RequestID == requestID })
}

func (m *memStore) Tasks(_ context.Context, p auth.Principal, sessionID string, limit int) ([]Task, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Task
	for i := len(m.tasks) - 1; i >= 0 && len(out) < limit; i-- {
		if t := m.tasks[i]; t.SessionID == sessionID && t.AgentID == p.AgentID {
			out = append(out, *t)
		}
	}
	return out, nil
}

func (m *memStore) SolverStarted(_ context.Context, id, solverTaskID string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, t := range m.tasks {
		if t.ID == id {
			t.SolverTaskID = solverTaskID
		}
	}
	return nil
}

func (m *memStore) FinishTask(_ context.Context, id, status, solution, errText string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, t := range m.tasks {
		if t.ID != id || t.Status != StatusPending {
			continue
		}
		t.Status = status
		if solution != "" {
			t.Solution = &solution
		}
		if errText != "" {
			t.Error = &errText
		}
		if status == StatusSolved {
			now := time.Now()
			t.SolvedAt = &now
		}
		m.finished <- *t
	}
	return nil
}

var _ Store = (*memStore)(nil)

// fakeSolver is a solver service speaking the common API. result answers the n-th
// getTaskResult (from 1); calls records each call's method and body.
type fakeSolver struct {
	*httptest.Server
	mu     sync.Mutex
	calls  []solverCall
	result func(n int) any
}

type solverCall struct {
	method string
	body   map[string]any
}

func newFakeSolver(t *testing.T, result func(n int) any) *fakeSolver {
	f := &fakeSolver{result: result}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		json.NewDecoder(r.Body).Decode(&body)
		f.mu.Lock()
		method := strings.TrimPrefix(r.URL.Path, "/")
		f.calls = append(f.calls, solverCall{method, body})
		polls := 0
		for _, c := range f.calls {
			if c.method == "getTaskResult" {
				polls++
			}
		}
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch method {
		case "createTask":
			json.NewEncoder(w).Encode(map[string]any{"errorId": 0, "taskId": 7})
		case "getTaskResult":
			json.NewEncoder(w).Encode(f.result(polls))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeSolver) called(method string) []solverCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []solverCall
	for _, c := range f.calls {
		if c.method == method {
			out = append(out, c)
		}
	}
	return out
}

func (f *fakeSolver) solver() *Solver {
	return &Solver{URL: f.URL + "/", Key: "solver-key-secret", Client: f.Client(), Poll: time.Millisecond}
}

func ready(text string) any {
	return map[string]any{"errorId": 0, "status": "ready", "solution": map[string]any{"text": text}}
}

var processing = map[string]any{"errorId": 0, "status": "processing"}

func newService(store Store, solver *Solver) *Service {
	return &Service{Store: store, Solver: solver, Log: slog.New(slog.DiscardHandler), Background: context.Background()}
}

func imageAsk(id string) New {
	return New{ClientTaskID: id, Type: TypeImage, PageURL: "https://shop.example/login", Image: onePixel, Reason: "to sign in"}
}

// waitFinished is the next task the store finishes, failing the test after a while.
func waitFinished(t *testing.T, m *memStore) Task {
	t.Helper()
	select {
	case task := <-m.finished:
		return task
	case <-time.After(5 * time.Second):
		t.Fatal("no task was finished")
		return Task{}
	}
}

func TestWithoutASolverAnImageTaskGoesToThePersonAsACleanedPNG(t *testing.T) {
	store := newMemStore()
	s := newService(store, nil)
	task, err := s.Create(context.Background(), agent, "s1", imageAsk("c1"), 100)
	if err != nil {
		t.Fatal(err)
	}
	if task.Via != ViaPerson || task.Status != StatusPending || task.RequestID == nil {
		t.Errorf("the task is %+v, want a pending person's task with its request", task)
	}
	if store.timeouts[0] != PersonTimeout {
		t.Errorf("the person has %v, want %v", store.timeouts[0], PersonTimeout)
	}
	if _, err := png.Decode(bytes.NewReader(task.Image)); err != nil || ImageType(task.Image) != "image/png" {
		t.Errorf("the stored image is no PNG: %v", err)
	}
	got, err := s.RequestTask(context.Background(), agent, *task.RequestID)
	if err != nil || got == nil || got.ID != task.ID {
		t.Errorf("the request's task is %+v, %v; want %s", got, err, task.ID)
	}
}

func TestWithoutASolverAWidgetTaskIsRefusedAndNothingIsStored(t *testing.T) {
	store := newMemStore()
	s := newService(store, nil)
	n := New{ClientTaskID: "c1", Type: TypeTurnstile, PageURL: "https://shop.example/login", SiteKey: "0x4AAA"}
	if _, err := s.Create(context.Background(), agent, "s1", n, 100); !errors.Is(err, ErrNeedsSolver) {
		t.Errorf("Create answered %v, want ErrNeedsSolver", err)
	}
	if len(store.tasks) != 0 {
		t.Errorf("the store holds %d tasks", len(store.tasks))
	}
}

func TestAnInvalidAskIsRefusedBeforeTheStoreOrTheSolver(t *testing.T) {
	store := newMemStore()
	f := newFakeSolver(t, func(int) any { return ready("x") })
	s := newService(store, f.solver())
	for _, n := range []New{
		{ClientTaskID: strings.Repeat("c", 201), Type: TypeImage, PageURL: "https://shop.example/", Image: onePixel},
		{ClientTaskID: "c", Type: TypeImage, PageURL: "https://user:pw@shop.example/", Image: onePixel},
		{ClientTaskID: "c", Type: TypeImage, PageURL: "https://shop.example/" + strings.Repeat("p", 2048), Image: onePixel},
		{ClientTaskID: "c", Type: TypeImage, PageURL: "https://shop.example/", Image: "not base64!"},
		{ClientTaskID: "c", Type: TypeImage, PageURL: "https://shop.example/", Image: base64.StdEncoding.EncodeToString(make([]byte, MaxImage+1))},
		{ClientTaskID: "c", Type: TypeImage, PageURL: "https://shop.example/", Image: onePixel, Reason: strings.Repeat("r", 1001)},
		{ClientTaskID: "c", Type: TypeHCaptcha, PageURL: "https://shop.example/", SiteKey: "a key"},
		{ClientTaskID: "c", Type: TypeHCaptcha, PageURL: "https://shop.example/", SiteKey: strings.Repeat("k", 201)},
	} {
		if _, err := s.Create(context.Background(), agent, "s1", n, 100); err == nil {
			t.Errorf("%.80s: accepted", fmt.Sprintf("%+v", n))
		}
	}
	if len(store.tasks) != 0 || len(f.called("createTask")) != 0 {
		t.Errorf("an invalid ask reached the store (%d tasks) or the solver (%d)", len(store.tasks), len(f.called("createTask")))
	}
}

func TestTheSolverAnswersAnImageTaskAndTheAnswerIsRecorded(t *testing.T) {
	store := newMemStore()
	f := newFakeSolver(t, func(n int) any {
		if n < 3 {
			return processing
		}
		return ready("W68HP")
	})
	s := newService(store, f.solver())
	task, err := s.Create(context.Background(), agent, "s1", imageAsk("c1"), 100)
	if err != nil {
		t.Fatal(err)
	}
	if task.Via != ViaSolver || task.RequestID != nil || store.timeouts[0] != SolverTimeout {
		t.Errorf("the task is %+v with %v, want a solver's of %v and no request", task, store.timeouts[0], SolverTimeout)
	}
	done := waitFinished(t, store)
	if done.Status != StatusSolved || done.Solution == nil || *done.Solution != "W68HP" || done.SolvedAt == nil || done.Error != nil {
		t.Errorf("the task ended %+v", done)
	}
	if done.SolverTaskID != "7" {
		t.Errorf("the solver's task id recorded is %q, want 7", done.SolverTaskID)
	}
	created := f.called("createTask")
	if len(created) != 1 || len(f.called("getTaskResult")) != 3 {
		t.Fatalf("the solver was called %d times to create, %d to read, want 1 and 3", len(created), len(f.called("getTaskResult")))
	}
	sent := created[0].body["task"].(map[string]any)
	if created[0].body["clientKey"] != "solver-key-secret" || sent["type"] != "ImageToTextTask" ||
		sent["body"] != base64.StdEncoding.EncodeToString(task.Image) {
		t.Errorf("createTask was sent %v", created[0].body)
	}
	for _, c := range f.called("getTaskResult") {
		if c.body["taskId"] != float64(7) || c.body["clientKey"] != "solver-key-secret" {
			t.Errorf("getTaskResult was sent %v", c.body)
		}
	}
}

func TestEachWidgetIsSentAsItsSolverTaskAndItsTokenIsTheAnswer(t *testing.T) {
	for _, c := range []struct{ typ, task, field string }{
		{TypeRecaptcha, "RecaptchaV2TaskProxyless", "gRecaptchaResponse"},
		{TypeHCaptcha, "HCaptchaTaskProxyless", "gRecaptchaResponse"},
		{TypeTurnstile, "TurnstileTaskProxyless", "token"},
	} {
		t.Run(c.typ, func(t *testing.T) {
			store := newMemStore()
			f := newFakeSolver(t, func(int) any {
				return map[string]any{"errorId": 0, "status": "ready", "solution": map[string]any{c.field: "tok-" + c.typ}}
			})
			s := newService(store, f.solver())
			s.Timeout = time.Minute
			n := New{ClientTaskID: "c1", Type: c.typ, PageURL: "https://shop.example/login", SiteKey: "site-key"}
			if _, err := s.Create(context.Background(), agent, "s1", n, 100); err != nil {
				t.Fatal(err)
			}
			if store.timeouts[0] != time.Minute {
				t.Errorf("the solver has %v, want the service's minute", store.timeouts[0])
			}
			if done := waitFinished(t, store); done.Status != StatusSolved || *done.Solution != "tok-"+c.typ {
				t.Errorf("the task ended %+v", done)
			}
			sent := f.called("createTask")[0].body["task"].(map[string]any)
			if sent["type"] != c.task || sent["websiteURL"] != n.PageURL || sent["websiteKey"] != "site-key" {
				t.Errorf("createTask was sent %v", sent)
			}
		})
	}
}

func TestAReplayedAskAnswersTheSameTaskAndIsNotSolvedAgain(t *testing.T) {
	store := newMemStore()
	f := newFakeSolver(t, func(int) any { return ready("W68HP") })
	s := newService(store, f.solver())
	first, err := s.Create(context.Background(), agent, "s1", imageAsk("c1"), 100)
	if err != nil {
		t.Fatal(err)
	}
	waitFinished(t, store)
	again, err := s.Create(context.Background(), agent, "s1", imageAsk("c1"), 100)
	if err != nil || again.ID != first.ID || again.Status != StatusSolved {
		t.Errorf("the replay answered %+v, %v; want the solved task %s", again, err, first.ID)
	}
	other := imageAsk("c1")
	other.PageURL = "https://shop.example/other"
	if _, err := s.Create(context.Background(), agent, "s1", other, 100); !errors.Is(err, errClientIDTaken) {
		t.Errorf("another ask under the same client id answered %v", err)
	}
	time.Sleep(20 * time.Millisecond) // a second solve, were one started, would have called by now
	if n := len(f.called("createTask")); n != 1 {
		t.Errorf("the solver was asked %d times, want once", n)
	}
}

func TestASolverThatCannotSolveFailsTheTaskWithABoundedError(t *testing.T) {
	long := strings.Repeat("unreadable ", 100)
	for name, answer := range map[string]any{
		"an error":         map[string]any{"errorId": 12, "errorCode": "ERROR_CAPTCHA_UNSOLVABLE", "errorDescription": long},
		"no solution":      map[string]any{"errorId": 0, "status": "ready"},
		"an oversized one": ready(strings.Repeat("x", 8193)),
	} {
		t.Run(name, func(t *testing.T) {
			store := newMemStore()
			f := newFakeSolver(t, func(int) any { return answer })
			s := newService(store, f.solver())
			if _, err := s.Create(context.Background(), agent, "s1", imageAsk("c1"), 100); err != nil {
				t.Fatal(err)
			}
			done := waitFinished(t, store)
			if done.Status != StatusFailed || done.Solution != nil || done.Error == nil {
				t.Fatalf("the task ended %+v", done)
			}
			if !strings.HasPrefix(*done.Error, errSolverFailed+": getTaskResult: ") || len(*done.Error) > 300 {
				t.Errorf("the error is %q (%d bytes)", *done.Error, len(*done.Error))
			}
			if strings.Contains(*done.Error, "solver-key-secret") {
				t.Error("the error holds the solver's key")
			}
		})
	}
}

func TestASolverThatRefusesTheTaskOrCannotBeReachedFailsIt(t *testing.T) {
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"errorId": 1, "errorCode": "ERROR_KEY_DOES_NOT_EXIST", "errorDescription": "bad\nkey"}`)
	}))
	defer refusing.Close()
	garbled := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadGateway)
		fmt.Fprint(w, "<html>")
	}))
	defer garbled.Close()
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	for url, want := range map[string]string{
		refusing.URL: "createTask: ERROR_KEY_DOES_NOT_EXIST badkey",
		garbled.URL:  "createTask: the solver answered 502 Bad Gateway",
		gone.URL:     "createTask: the solver could not be reached",
	} {
		store := newMemStore()
		s := newService(store, &Solver{URL: url, Key: "solver-key-secret", Poll: time.Millisecond})
		if _, err := s.Create(context.Background(), agent, "s1", imageAsk("c1"), 100); err != nil {
			t.Fatal(err)
		}
		done := waitFinished(t, store)
		if done.Status != StatusFailed || done.Error == nil || *done.Error != errSolverFailed+": "+want {
			t.Errorf("%s: the task ended %+v, want the error %q", url, done, want)
		}
	}
}

func TestATaskTheSolverDoesNotAnswerInTimeExpires(t *testing.T) {
	store := newMemStore()
	f := newFakeSolver(t, func(int) any { return processing })
	s := newService(store, f.solver())
	s.Timeout = 50 * time.Millisecond
	task, err := s.Create(context.Background(), agent, "s1", imageAsk("c1"), 100)
	if err != nil {
		t.Fatal(err)
	}
	done := waitFinished(t, store)
	if done.Status != StatusExpired || done.Error == nil || *done.Error != "the solver gave no answer in time" || done.Solution != nil {
		t.Errorf("the task ended %+v", done)
	}
	if time.Now().Before(task.ExpiresAt) {
		t.Error("the task expired before its time")
	}
	if len(f.called("getTaskResult")) == 0 {
		t.Error("the solver's result was never read")
	}
}

func TestAPollWaitsForAPendingTaskUntilItsExpiryAtTheLatest(t *testing.T) {
	store := newMemStore()
	f := newFakeSolver(t, func(int) any { return processing })
	s := newService(store, f.solver())
	s.Timeout = 300 * time.Millisecond
	task, err := s.Create(context.Background(), agent, "s1", imageAsk("c1"), 100)
	if err != nil {
		t.Fatal(err)
	}
	got, pending, recheck, err := s.Poll(context.Background(), agent, "s1", task.ID)
	if err != nil || !pending || got.ID != task.ID {
		t.Fatalf("the poll answered %+v, %v, %v", got, pending, err)
	}
	if !recheck.Equal(task.ExpiresAt) {
		t.Errorf("a task expiring within a second is read again at %v, want its expiry %v", recheck, task.ExpiresAt)
	}
	waitFinished(t, store)
	got, pending, _, err = s.Poll(context.Background(), agent, "s1", task.ID)
	if err != nil || pending || got.Status != StatusExpired {
		t.Errorf("after its expiry the poll answered %+v, pending %v, %v", got, pending, err)
	}

	s.Solver = nil
	person, err := s.Create(context.Background(), agent, "s1", imageAsk("c2"), 100)
	if err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	_, pending, recheck, err = s.Poll(context.Background(), agent, "s1", person.ID)
	if err != nil || !pending || recheck.Before(before.Add(time.Second)) || recheck.After(time.Now().Add(time.Second)) {
		t.Errorf("a person's task of five minutes is read again at %v (pending %v, %v), want within a second", recheck.Sub(before), pending, err)
	}
}

func TestATaskIsVisibleToItsAgentOnly(t *testing.T) {
	store := newMemStore()
	s := newService(store, nil)
	task, err := s.Create(context.Background(), agent, "s1", imageAsk("c1"), 100)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Task(context.Background(), other, "s1", task.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("another agent reads the task: %v", err)
	}
	if _, _, _, err := s.Poll(context.Background(), other, "s1", task.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("another agent polls the task: %v", err)
	}
	if _, err := s.RequestTask(context.Background(), other, *task.RequestID); !errors.Is(err, ErrNotFound) {
		t.Errorf("another agent reads the request's task: %v", err)
	}
	if got, err := s.Task(context.Background(), agent, "s1", task.ID); err != nil || got.ID != task.ID {
		t.Errorf("its agent reads %+v, %v", got, err)
	}
	if _, err := s.Create(context.Background(), agent, "s1", imageAsk("c2"), 100); err != nil {
		t.Fatal(err)
	}
	list, err := s.Tasks(context.Background(), agent, "s1", 10)
	if err != nil || len(list) != 2 || list[0].ClientTaskID != "c2" {
		t.Errorf("its agent lists %+v, %v; want c2 then c1", list, err)
	}
	if list, _ := s.Tasks(context.Background(), other, "s1", 10); len(list) != 0 {
		t.Errorf("another agent lists %d tasks", len(list))
	}
}

func TestAServiceWithoutAStoreHasNoRequestTask(t *testing.T) {
	got, err := (&Service{}).RequestTask(context.Background(), agent, "req-1")
	if got != nil || err != nil {
		t.Errorf("RequestTask answered %+v, %v", got, err)
	}
}
