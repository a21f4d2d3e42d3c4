package api_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waystation/waystation/api"
	"github.com/waystation/waystation/api/openapitest"
	"github.com/waystation/waystation/internal/memory"
	"github.com/waystation/waystation/internal/outbound"
	"github.com/waystation/waystation/internal/webhook"
)

// receiver is a webhook receiver on loopback that fails its first `fail` deliveries.
type receiver struct {
	mu     sync.Mutex
	fail   int
	got    []http.Header
	bodies [][]byte
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.fail > 0 {
		rc.fail--
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	rc.got = append(rc.got, r.Header.Clone())
	rc.bodies = append(rc.bodies, b)
}

func (rc *receiver) received() ([]http.Header, [][]byte) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]http.Header(nil), rc.got...), append([][]byte(nil), rc.bodies...)
}

// A raised request reaches the user's webhook within seconds, signed with the secret
// shown once; a failing receiver is tried again and the delivery log says so; no
// payload holds a provided value.
func TestWebhooksDeliverSignedEventsAndRetry(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t, func(a *api.Authenticated) {
		a.Webhooks = webhook.NewService(a.Requests.Store.(webhook.Store), webhook.Config{Sealer: a.Requests.Sealer.(webhook.Sealer)})
	})
	uid, userKey := e.user("ada")
	_, agentKey := e.agent(uid, "scout")
	good, flaky := &receiver{}, &receiver{fail: 1}
	goodSrv, flakySrv := httptest.NewServer(good), httptest.NewServer(flaky)
	defer goodSrv.Close()
	defer flakySrv.Close()

	var created struct {
		ID, Secret string
		Events     []string
	}
	e.call("POST", "/webhooks", userKey, `{"url":"`+goodSrv.URL+`/hook","events":["request.waiting_user","request.fulfilled","request.waiting_user"],"description":"ops"}`).
		want(t, 201).into(t, &created)
	if !strings.HasPrefix(created.Secret, webhook.SecretPrefix) || len(created.Events) != 2 {
		t.Fatalf("created %+v", created)
	}
	var flakyHook struct{ ID string }
	e.call("POST", "/webhooks", userKey, `{"url":"`+flakySrv.URL+`/hook","events":["request.waiting_user"]}`).want(t, 201).into(t, &flakyHook)
	var list struct{ Items []map[string]any }
	e.call("GET", "/webhooks", userKey, "").want(t, 200).into(t, &list)
	if len(list.Items) != 2 || list.Items[0]["secret"] != nil {
		t.Fatalf("list %v", list.Items)
	}
	for _, bad := range []string{`{"url":"ftp://x.example","events":["request.waiting_user"]}`, `{"url":"https://x.example","events":[]}`,
		`{"url":"https://x.example","events":["request.anything"]}`} {
		e.call("POST", "/webhooks", userKey, bad).want(t, 422)
	}
	e.call("POST", "/webhooks", agentKey, `{"url":"https://x.example","events":["request.waiting_user"]}`).want(t, 403)

	// The deliverer runs as in service: loopback receivers are allowed by name.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sender := outbound.New(outbound.Config{Timeout: 5 * time.Second, AllowHosts: []string{"127.0.0.1"}})
	go webhook.Deliverer{Store: e.store, Opener: testVault(t), Sender: sender, Every: 100 * time.Millisecond, Protected: memory.Protected{Store: e.store, Opener: testVault(t)},
		Log: slog.New(slog.DiscardHandler), Backoff: func(int) time.Duration { return 0 }}.Run(ctx)

	sid := e.openSession(agentKey, "hooks")
	const canary = "canary.hook.4417@example.org"
	r := e.raise(agentKey, sid, "r1", `{"kind":"provide_missing","fields":[{"key":"email","label":"Email","type":"email"}]}`)
	start := time.Now()
	var headers []http.Header
	var bodies [][]byte
	for time.Since(start) < 5*time.Second && len(headers) == 0 {
		time.Sleep(50 * time.Millisecond)
		headers, bodies = good.received()
	}
	if len(headers) == 0 {
		t.Fatal("no delivery within 5 s")
	}
	t.Logf("delivered in %s", time.Since(start).Round(10*time.Millisecond))
	if !webhook.Verify([]byte(created.Secret), headers[0].Get(webhook.SignatureHeader), bodies[0], time.Now(), 5*time.Minute) {
		t.Errorf("the signature does not verify: %s", headers[0].Get(webhook.SignatureHeader))
	}
	if webhook.Verify([]byte(created.Secret+"x"), headers[0].Get(webhook.SignatureHeader), bodies[0], time.Now(), 5*time.Minute) {
		t.Error("another secret verifies")
	}
	var ev struct {
		ID, Type string
		Data     struct{ SessionID, RequestID, Kind, To string }
	}
	json.Unmarshal(bodies[0], &ev)
	if ev.Type != "request.waiting_user" || ev.Data.SessionID != sid || ev.Data.RequestID != r["id"] || !strings.HasPrefix(ev.ID, "whd_") {
		t.Errorf("payload %s", bodies[0])
	}
	// The approval's event is delivered too, without the value provided.
	e.call("POST", "/sessions/"+sid+"/requests/"+r["id"].(string)+"/decision", userKey, `{"decision":"approve","values":{"email":"`+canary+`"}}`).want(t, 200)
	for time.Since(start) < 10*time.Second && len(bodies) < 2 {
		time.Sleep(50 * time.Millisecond)
		_, bodies = good.received()
	}
	if len(bodies) < 2 || !strings.Contains(string(bodies[1]), `"request.fulfilled"`) {
		t.Fatalf("no fulfilled delivery: %q", bodies)
	}
	for _, b := range bodies {
		if strings.Contains(string(b), canary) {
			t.Errorf("a payload holds the provided value: %s", b)
		}
	}
	// The flaky receiver got it on the second attempt, and the log says so.
	var dl struct {
		Items []struct {
			Status     string
			Attempts   int
			LastStatus *int
			Event      string
		}
	}
	for time.Since(start) < 10*time.Second {
		e.call("GET", "/webhooks/"+flakyHook.ID+"/deliveries", userKey, "").want(t, 200).into(t, &dl)
		if len(dl.Items) == 1 && dl.Items[0].Status == "delivered" {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(dl.Items) != 1 || dl.Items[0].Status != "delivered" || dl.Items[0].Attempts != 2 || dl.Items[0].LastStatus == nil || *dl.Items[0].LastStatus != 200 {
		t.Errorf("flaky deliveries %+v", dl.Items)
	}
	// Another user sees none of it; a deleted webhook gets nothing more.
	_, otherKey := e.user("bo")
	e.call("GET", "/webhooks/"+flakyHook.ID+"/deliveries", otherKey, "").want(t, 404)
	e.call("DELETE", "/webhooks/"+flakyHook.ID, otherKey, "").want(t, 404)
	e.call("DELETE", "/webhooks/"+flakyHook.ID, userKey, "").want(t, 204)
	e.call("DELETE", "/webhooks/"+flakyHook.ID, userKey, "").want(t, 404)
	e.call("GET", "/webhooks", userKey, "").want(t, 200).into(t, &list)
	if len(list.Items) != 1 {
		t.Errorf("after the delete: %v", list.Items)
	}
}

// A webhook whose host every delivery will be refused on is kept, and its 201 says
// so in warnings, as the OpenAPI document describes; a host the operator allows, or a
// public one, gets none.
func TestRegisteringAWebhookWarnsOfAHostDeliveriesWillBeRefusedOn(t *testing.T) {
	t.Parallel()
	doc := openapitest.Load(t, "openapi.json")
	e := newAuthEnv(t, func(a *api.Authenticated) {
		a.Webhooks = webhook.NewService(a.Requests.Store.(webhook.Store), webhook.Config{Sealer: a.Requests.Sealer.(webhook.Sealer),
			Guard: outbound.New(outbound.Config{AllowHosts: []string{"localhost:4022"}})})
	})
	_, userKey := e.user("ada")
	for url, want := range map[string]string{
		"http://localhost:4022/hooks": "",
		"http://127.0.0.1:4022/hooks": "Every delivery to 127.0.0.1:4022 will fail: it is reached on 127.0.0.1",
		"https://10.1.2.3/hooks":      "Every delivery to 10.1.2.3 will fail: it is reached on 10.1.2.3",
		"https://93.184.215.14/hooks": "",
	} {
		body := `{"url":"` + url + `","events":["session.completed"]}`
		r := e.call("POST", "/webhooks", userKey, body).want(t, 201)
		doc.CheckResponse(t, e.request("POST", "/webhooks", userKey, body), r.Response, r.body)
		var created struct{ Warnings []string }
		r.into(t, &created)
		if created.Warnings == nil || want == "" && len(created.Warnings) != 0 ||
			want != "" && (len(created.Warnings) != 1 || !strings.HasPrefix(created.Warnings[0], want)) {
			t.Errorf("%s: warnings %q", url, created.Warnings)
		}
	}
	var list struct{ Items []map[string]any }
	e.call("GET", "/webhooks", userKey, "").want(t, 200).into(t, &list)
	if len(list.Items) != 4 || list.Items[0]["warnings"] != nil {
		t.Errorf("the webhooks kept: %v", list.Items)
	}
}
