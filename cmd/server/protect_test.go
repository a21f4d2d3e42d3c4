package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/waystation/waystation/internal/llmecho"
	"github.com/waystation/waystation/internal/postgres"
	"github.com/waystation/waystation/internal/postgres/pgtest"
	"github.com/waystation/waystation/internal/redact"
)

// The bisection attack against the served binary, as wired: an agent that knows a
// card's BIN and last four packs half of the 100,000 Luhn-valid candidates into each
// model request and reads refused-or-forwarded as a bit. It is paused within the
// default budget, with thousands of candidates left; from then on every answer is
// the paused key's, byte for byte but for the request id (in the shape of each API), whatever it sends and
// wherever (the card in a path included); the model saw no candidate, the person's
// agent list says why, and no table of the database holds the card.
func TestAnAgentPausedForGuessingAnswersAlikeWhateverItSends(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.URL(t)
	userKey, agentKey := apiKeys(t, dbURL)
	var mu sync.Mutex
	var seen strings.Builder
	echo := llmecho.New()
	echo.Called = func(c llmecho.Call) {
		mu.Lock()
		defer mu.Unlock()
		b, _ := json.Marshal(c)
		seen.Write(b)
	}
	upstream := httptest.NewServer(echo)
	defer upstream.Close()
	srv := serveLogged(t, map[string]string{"DATABASE_URL": dbURL, "LLM_UPSTREAM_URL": upstream.URL + "/v1"})
	api := srv.base + "/functions/v1/api"
	const card = "4111111111111111"
	if r := mustSend(t, "POST", api+"/memory/items", userKey, `{"label":"Card","fields":[{"fieldRef":"number","label":"Card number","valueType":"card_number","value":"`+card+`"}]}`); r.StatusCode != http.StatusCreated {
		t.Fatalf("the card: %d %s", r.StatusCode, r.body)
	}
	var left []string
	for mid := range 1000000 {
		if c := fmt.Sprintf("411111%06d1111", mid); redact.Luhn(c) {
			left = append(left, c)
		}
	}
	chat := func(text string) string {
		b, _ := json.Marshal(map[string]any{"model": "echo", "messages": []any{map[string]any{"role": "user", "content": text}}})
		return string(b)
	}
	refused := 0
	for calls := 0; ; calls++ {
		if calls == 17 || len(left) == 1 {
			t.Fatalf("after %d calls the agent is not paused; %d candidates left", calls, len(left))
		}
		half := left[:len(left)/2]
		r := mustSend(t, "POST", api+"/llm/v1/chat/completions", agentKey, chat(strings.Join(half, " ")))
		if r.StatusCode == http.StatusUnauthorized {
			break
		}
		switch r.StatusCode {
		case http.StatusUnprocessableEntity:
			refused++
			left = half
		case http.StatusOK:
			left = left[len(left)/2:]
		default:
			t.Fatalf("call %d: %d %s", calls, r.StatusCode, r.body)
		}
	}
	if refused > 3 || len(left) < 1000 {
		t.Errorf("%d refusals before the pause, %d candidates left", refused, len(left))
	}
	// One answer per shape: the model routes answer in their API's error shape.
	requestID := regexp.MustCompile(`"requestId":"[^"]*"`)
	first := map[bool]string{}
	for _, c := range []struct{ method, path, body string }{
		{"POST", "/llm/v1/chat/completions", chat("is it " + card + "?")},
		{"POST", "/llm/v1/chat/completions", chat("hello")},
		{"GET", "/agent/me", ""},
		{"GET", "/sessions/" + url.PathEscape(card), ""},
		{"GET", "/sessions?cursor=" + card, ""},
		{"POST", "/sessions", `{"type":"checkout","description":"` + card + `","clientSessionId":"c"}`},
	} {
		r := mustSend(t, c.method, api+c.path, agentKey, c.body)
		got, llm := requestID.ReplaceAllString(string(r.body), ""), strings.HasPrefix(c.path, "/llm/")
		if first[llm] == "" {
			first[llm] = got
		}
		if r.StatusCode != http.StatusUnauthorized || got != first[llm] || strings.Contains(got, "4111") {
			t.Errorf("%s %s: %d %s, want the paused key's answer %s", c.method, c.path, r.StatusCode, r.body, first[llm])
		}
	}
	var agents struct{ Items []map[string]any }
	json.Unmarshal(mustSend(t, "GET", api+"/agents", userKey, "").body, &agents)
	if len(agents.Items) != 1 || agents.Items[0]["pausedReason"] != "protected_values" {
		t.Errorf("agents %v", agents.Items)
	}
	mu.Lock()
	if strings.Contains(seen.String(), "411111") {
		t.Error("a candidate reached the model")
	}
	mu.Unlock()
	store, err := postgres.Open(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if dump := dumpTables(t, store); strings.Contains(dump, card) || strings.Contains(dump, "41111100") {
		t.Error("a table holds the card or a candidate")
	}
	if strings.Contains(srv.logs.String(), card) {
		t.Error("the log holds the card")
	}
}
