package api_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waystation/waystation/api"
	"github.com/waystation/waystation/api/openapitest"
	"github.com/waystation/waystation/internal/memory"
	"github.com/waystation/waystation/internal/outbound"
	"github.com/waystation/waystation/internal/redact"
	"github.com/waystation/waystation/internal/request"
	"github.com/waystation/waystation/internal/session"
	"github.com/waystation/waystation/internal/webhook"
)

// switchable is a source of protected values that fails while broken is set.
type switchable struct {
	redact.Source
	broken *atomic.Bool
}

func (s switchable) Protected(ctx context.Context, user string) ([]string, error) {
	if s.broken.Load() {
		return nil, errors.New("the vault is sealed")
	}
	return s.Source.Protected(ctx, user)
}

// Text an agent wrote while a value was not yet saved (a session's description and
// merchant, an event's data, a request's context and options, a webhook's body) is
// checked against the values of then; once the person saves the value, every read
// blanks it with the values of now, as traces are, and a read whose values cannot
// be loaded answers redaction_unavailable rather than the text.
func TestTextWrittenBeforeAValueWasSavedIsBlankedOnEveryRead(t *testing.T) {
	t.Parallel()
	var broken atomic.Bool
	e := newAuthEnv(t, func(a *api.Authenticated) {
		src := switchable{a.Protected, &broken}
		a.Sessions = &session.Service{Store: a.Sessions.Store, Protected: src}
		a.Requests = &request.Service{Store: a.Requests.Store, Protected: src, Sealer: a.Requests.Sealer}
		a.Webhooks = webhook.NewService(a.Requests.Store.(webhook.Store), webhook.Config{Sealer: a.Requests.Sealer.(webhook.Sealer)})
	})
	uid, userKey := e.user("ada")
	_, agentKey := e.agent(uid, "scout")
	const canary = "Quartz_Canary_4417"
	sid := e.call("POST", "/sessions", agentKey, `{"type":"checkout","description":"pay for `+canary+`","merchantName":"Shop `+canary+`","clientSessionId":"c1"}`).
		want(t, 201).decode(t)["id"].(string)
	e.call("POST", "/sessions/"+sid+"/events", agentKey, `{"clientEventId":"e1","type":"runtime.step","data":{"note":"saw `+canary+`","`+canary+`":[1]}}`).want(t, 201)
	rid := e.raise(agentKey, sid, "r1", `{"kind":"choice","context":{"reason":"because `+canary+`","pageTitle":"`+canary+`"},"options":[{"id":"a","label":"pick `+canary+`"},{"id":"b","label":"other","description":"not `+canary+`"}]}`)["id"].(string)

	receiver := &receiver{}
	hook := httptest.NewServer(receiver)
	defer hook.Close()
	var created struct{ ID string }
	e.call("POST", "/webhooks", userKey, `{"url":"`+hook.URL+`/hook","events":["session.completed"]}`).want(t, 201).into(t, &created)
	// A body queued while the value was not saved, sent after.
	if _, err := e.store.Pool().Exec(context.Background(), `INSERT INTO webhook_deliveries (webhook_id, event, payload) VALUES ($1, 'session.completed', $2)`,
		created.ID, `{"sessionId":"`+sid+`","summary":"done for `+canary+`"}`); err != nil {
		t.Fatal(err)
	}

	e.call("POST", "/memory/items", userKey, `{"label":"Door","fields":[{"fieldRef":"code","label":"Code","secret":true,"value":"`+canary+`"}]}`).want(t, 201)

	reads := []string{"/sessions/" + sid, "/sessions", "/sessions/" + sid + "/events", "/sessions/" + sid + "/requests",
		"/sessions/" + sid + "/requests/" + rid, "/sessions/" + sid + "/requests/" + rid + "?wait=1"}
	for _, key := range []string{agentKey, userKey} {
		for _, path := range reads {
			r := e.call("GET", path, key, "").want(t, 200)
			if body := strings.ToLower(string(r.body)); strings.Contains(body, "canary") || !strings.Contains(body, "[redacted]") {
				t.Errorf("GET %s answered the value:\n%s", path, r.body)
			}
		}
	}
	out, failure := e.toolCall(t, agentKey, "wait_request", `{"sessionId":"`+sid+`","requestId":"`+rid+`","waitSeconds":1}`)
	if failure != "" || strings.Contains(strings.ToLower(out["context"].(map[string]any)["reason"].(string)), "canary") {
		t.Errorf("wait_request answered the value: %v %q", out, failure)
	}

	sender := outbound.New(outbound.Config{Timeout: 5 * time.Second, AllowHosts: []string{"127.0.0.1"}})
	d := webhook.Deliverer{Store: e.store, Opener: testVault(t), Sender: sender, Protected: memory.Protected{Store: e.store, Opener: testVault(t)},
		Log: slog.New(slog.DiscardHandler), Backoff: func(int) time.Duration { return 0 }}
	if _, err := d.Once(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, bodies := receiver.received()
	if len(bodies) != 1 || strings.Contains(strings.ToLower(string(bodies[0])), "canary") || !strings.Contains(string(bodies[0]), "[redacted]") {
		t.Errorf("the webhook was sent %q", bodies)
	}

	broken.Store(true)
	doc := openapitest.Load(t, "openapi.json")
	for _, path := range reads {
		r := e.call("GET", path, agentKey, "")
		doc.CheckResponse(t, r.Request, r.Response, r.body)
		if r.StatusCode != 503 || !strings.Contains(string(r.body), "redaction_unavailable") || strings.Contains(strings.ToLower(string(r.body)), "canary") {
			t.Errorf("GET %s without the values: %d %s", path, r.StatusCode, r.body)
		}
	}
}
