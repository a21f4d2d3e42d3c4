package api_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/waystation/waystation/api"
	"github.com/waystation/waystation/internal/llm"
	"github.com/waystation/waystation/internal/telemetry"
)

// A hostile agent's request headers come back to it, or go on, only in shapes that
// hold no text: its X-Request-Id is answered in a problem body only when it is a
// UUID or 32 hex digits (else a new id is), and the language model upstream never
// gets its traceparent, nor the trace id in it.
func TestCallerHeadersAreNotEchoedOrForwarded(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var upstream []string
	stub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		upstream = append(upstream, r.Header.Get("Traceparent"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"c1","object":"chat.completion","choices":[{"message":{"role":"assistant","content":"ok"}}]}`)
	}))
	t.Cleanup(stub.Close)
	e := newAuthEnv(t, func(a *api.Authenticated) { a.LLM = llm.Config{URL: stub.URL + "/v1", Key: upstreamKey} })
	uid, userKey := e.user("ada")
	_, agentKey := e.agent(uid, "scout")
	const card = "4111111111111111"
	e.call("POST", "/memory/items", userKey, `{"label":"Card","fields":[{"fieldRef":"number","label":"Card","valueType":"card_number","value":"`+card+`"}]}`).want(t, 201)
	h := telemetry.HTTP{}.Wrap(e.srv) // as the service is served

	do := func(method, path, body string, header ...string) *httptest.ResponseRecorder {
		req := e.request(method, path, agentKey, body, header...)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	for _, id := range []string{"card-" + card, card + "x", "x-4111-1111-1111-1111"} {
		rec := do("GET", "/sessions/not-a-session", "", "X-Request-Id", id)
		if rec.Code != http.StatusNotFound && rec.Code != http.StatusBadRequest && rec.Code != http.StatusUnprocessableEntity {
			t.Errorf("%s: %d", id, rec.Code)
		}
		if strings.Contains(rec.Body.String(), "4111") || strings.Contains(rec.Header().Get("X-Request-Id"), "4111") {
			t.Errorf("%s came back: %s %v", id, rec.Body.String(), rec.Header())
		}
	}
	const uuid = "5f0c2b4e-0000-4000-8000-000000000001"
	if rec := do("GET", "/sessions/not-a-session", "", "X-Request-Id", uuid); !strings.Contains(rec.Body.String(), `"requestId":"`+uuid+`"`) {
		t.Errorf("a UUID is not kept: %s", rec.Body.String())
	}

	rec := do("POST", "/llm/v1/chat/completions", `{"model":"stub-1","messages":[{"role":"user","content":"hi"}]}`,
		"Traceparent", "00-0000000000000000"+card+"-"+card+"-01")
	if rec.Code != http.StatusOK {
		t.Fatalf("proxy: %d %s", rec.Code, rec.Body.String())
	}
	mu.Lock()
	defer mu.Unlock()
	if len(upstream) != 1 || upstream[0] == "" || strings.Contains(upstream[0], card) {
		t.Errorf("the upstream got traceparent %q", upstream)
	}
}
