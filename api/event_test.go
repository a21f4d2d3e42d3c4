package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waystation/waystation/api"
)

// Invariant 10: concurrent appends get gap-free, increasing seqs, and the database
// refuses to change or remove an event.
func TestEventSeqIsGapFreeUnderConcurrentAppendsAndTheLogIsAppendOnly(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	uid, userKey := e.user("ada")
	_, agentKey := e.agent(uid, "scout")
	sid := e.openSession(agentKey, "s1")

	const workers, each = 6, 8
	var wg sync.WaitGroup
	seqs := make(chan int64, workers*each)
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				body := fmt.Sprintf(`{"type":"runtime.step","clientEventId":"w%d-%d","data":{"i":%d}}`, w, i, i)
				r := e.call("POST", "/sessions/"+sid+"/events", agentKey, body)
				if r.StatusCode != 201 {
					t.Errorf("append: %d %s", r.StatusCode, r.body)
					return
				}
				var ev struct{ Seq int64 }
				json.Unmarshal(r.body, &ev)
				seqs <- ev.Seq
			}
		})
	}
	wg.Wait()
	close(seqs)
	seen := map[int64]bool{}
	for s := range seqs {
		if seen[s] {
			t.Errorf("seq %d handed out twice", s)
		}
		seen[s] = true
	}
	var page struct {
		Items        []struct{ Seq int64 }
		LastEventSeq int64
	}
	json.Unmarshal(e.call("GET", "/sessions/"+sid+"/events?limit=200", userKey, "").want(t, 200).body, &page)
	if len(page.Items) != workers*each+1 || page.LastEventSeq != workers*each+1 {
		t.Fatalf("%d events, last seq %d", len(page.Items), page.LastEventSeq)
	}
	for i, ev := range page.Items {
		if ev.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d", i, ev.Seq)
		}
	}
	// Paging by after continues exactly where the last page ended.
	json.Unmarshal(e.call("GET", "/sessions/"+sid+"/events?after=10&limit=3", userKey, "").want(t, 200).body, &page)
	if len(page.Items) != 3 || page.Items[0].Seq != 11 || page.Items[2].Seq != 13 {
		t.Errorf("after=10: %v", page.Items)
	}

	ctx := context.Background()
	for _, q := range []string{
		`UPDATE session_events SET type = 'runtime.forged' WHERE session_id = $1`,
		`DELETE FROM session_events WHERE session_id = $1`,
		`TRUNCATE session_events`,
	} {
		args := []any{sid}
		if strings.HasPrefix(q, "TRUNCATE") {
			args = nil
		}
		if _, err := e.store.Pool().Exec(ctx, q, args...); err == nil || !strings.Contains(err.Error(), "append-only") {
			t.Errorf("%s: %v", q, err)
		}
	}
	var n int
	e.store.Pool().QueryRow(ctx, `SELECT count(*) FROM session_events WHERE session_id = $1 AND type = 'runtime.step'`, sid).Scan(&n)
	if n != workers*each {
		t.Errorf("%d runtime events after the refused changes", n)
	}
}

func TestLongPollWakesOnANewEvent(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	uid, userKey := e.user("ada")
	_, agentKey := e.agent(uid, "scout")
	sid := e.openSession(agentKey, "s1")

	// Nothing after seq 1 yet: a short wait answers empty.
	var page struct{ Items []struct{ Seq int64 } }
	json.Unmarshal(e.call("GET", "/sessions/"+sid+"/events?after=1&wait=1", userKey, "").want(t, 200).body, &page)
	if len(page.Items) != 0 {
		t.Fatalf("events after 1: %v", page.Items)
	}

	got := make(chan response, 1)
	start := time.Now()
	go func() { got <- e.call("GET", "/sessions/"+sid+"/events?after=1&wait=30", userKey, "") }()
	time.Sleep(100 * time.Millisecond)
	e.call("POST", "/sessions/"+sid+"/events", agentKey, `{"type":"runtime.step","clientEventId":"e1"}`).want(t, 201)
	r := <-got
	r.want(t, 200)
	json.Unmarshal(r.body, &page)
	if len(page.Items) != 1 || page.Items[0].Seq != 2 {
		t.Fatalf("woken with %s", r.body)
	}
	// A poll that timed out would also find the event: only waking well before
	// the 30 s wait shows that the notification woke it.
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("the long poll took %v: it timed out instead of waking", d)
	}
}

func TestEventStreamResumesFromLastEventIDAndSendsHeartbeats(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	uid, userKey := e.user("ada")
	_, agentKey := e.agent(uid, "scout")
	sid := e.openSession(agentKey, "s1")
	for i := range 3 {
		e.call("POST", "/sessions/"+sid+"/events", agentKey, fmt.Sprintf(`{"type":"runtime.step","clientEventId":"e%d"}`, i)).want(t, 201)
	}
	srv := httptest.NewServer(e.srv)
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+base+"/sessions/"+sid+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+userKey)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Last-Event-ID", "2")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("stream: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	lines := bufio.NewScanner(res.Body)
	next := func(prefix string) string {
		t.Helper()
		for lines.Scan() {
			if l := lines.Text(); strings.HasPrefix(l, prefix) {
				return l
			}
		}
		t.Fatalf("stream ended before %q: %v", prefix, lines.Err())
		return ""
	}
	for _, want := range []string{"id: 3", "id: 4"} {
		if got := next("id: "); got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	}
	next(": heartbeat")
	e.call("POST", "/sessions/"+sid+"/events", agentKey, `{"type":"runtime.done","clientEventId":"last"}`).want(t, 201)
	if got := next("id: "); got != "id: 5" {
		t.Fatalf("live event %q", got)
	}
	if got := next("data: "); !strings.Contains(got, `"type":"runtime.done"`) {
		t.Fatalf("live data %q", got)
	}
	// Closing the session ends the stream after its last event.
	e.call("POST", "/sessions/"+sid+"/complete", agentKey, `{"clientCompletionId":"c","status":"completed","summary":"ok"}`).want(t, 200)
	if got := next("event: "); got != "event: session.completed" {
		t.Fatalf("closing event %q", got)
	}
	for lines.Scan() {
		if strings.HasPrefix(lines.Text(), "id: ") {
			t.Fatalf("event after the close: %q", lines.Text())
		}
	}
}

// openStream opens sid's event stream with key on srv and returns its lines.
func openStream(t *testing.T, ctx context.Context, srv *httptest.Server, sid, key string) (*bufio.Scanner, *http.Response) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+base+"/sessions/"+sid+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Accept", "text/event-stream")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != 200 {
		t.Fatalf("stream: %d", res.StatusCode)
	}
	return bufio.NewScanner(res.Body), res
}

// endsByItself reads a stream to its end and fails if ctx ran out first.
func endsByItself(t *testing.T, ctx context.Context, lines *bufio.Scanner) {
	t.Helper()
	for lines.Scan() {
	}
	if ctx.Err() != nil {
		t.Fatal("the stream did not end")
	}
}

func TestEventStreamEndsWhenItsKeyIsRevokedOrItsLifeIsOver(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t, func(a *api.Authenticated) { a.StreamLife = 300 * time.Millisecond })
	uid, userKey := e.user("ada")
	_, agentKey := e.agent(uid, "scout")
	sid := e.openSession(agentKey, "s1")
	srv := httptest.NewServer(e.srv)
	defer srv.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	lines, res := openStream(t, ctx, srv, sid, userKey)
	defer res.Body.Close()
	endsByItself(t, ctx, lines) // its life is 300 ms here

	e2 := newAuthEnv(t)
	uid, _ = e2.user("bea")
	_, agentKey = e2.agent(uid, "scout")
	sid = e2.openSession(agentKey, "s1")
	srv2 := httptest.NewServer(e2.srv)
	defer srv2.Close()
	// A deadline of its own: making the second database may take a while.
	ctx2, cancel2 := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel2()
	lines, res = openStream(t, ctx2, srv2, sid, agentKey)
	defer res.Body.Close()
	e2.call("POST", "/agent/keys/current/revoke", agentKey, "").want(t, 200)
	endsByItself(t, ctx2, lines) // at the next heartbeat (50 ms here)
}

func TestEventStreamsAndLongPollsAreCappedPerKey(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t, func(a *api.Authenticated) { a.MaxWaitsPerKey = 1 })
	uid, userKey := e.user("ada")
	_, agentKey := e.agent(uid, "scout")
	sid := e.openSession(agentKey, "s1")
	srv := httptest.NewServer(e.srv)
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, res := openStream(t, ctx, srv, sid, userKey)
	r := e.call("GET", "/sessions/"+sid+"/events?wait=5", userKey, "").want(t, 429, "rate_limited")
	if r.Header.Get("Retry-After") == "" {
		t.Fatal("no Retry-After past the cap")
	}
	// Another key has its own places.
	e.call("GET", "/sessions/"+sid+"/events", agentKey, "").want(t, 200)
	res.Body.Close()
	cancel()
	deadline := time.Now().Add(5 * time.Second)
	for e.call("GET", "/sessions/"+sid+"/events?wait=1", userKey, "").StatusCode == 429 {
		if time.Now().After(deadline) {
			t.Fatal("the place was not given back when the stream ended")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
