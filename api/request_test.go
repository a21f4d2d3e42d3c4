package api_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waystation/waystation/internal/idempotency"
)

// raise creates a request of the given JSON body (without clientRequestId) in
// session sid and returns it decoded.
func (e *authEnv) raise(agentKey, sid, clientID, body string) map[string]any {
	e.t.Helper()
	body = `{"clientRequestId":"` + clientID + `",` + strings.TrimPrefix(body, "{")
	return e.call("POST", "/sessions/"+sid+"/requests", agentKey, body).want(e.t, 201).decode(e.t)
}

const (
	confirmBody = `{"kind":"confirm","context":{"url":"https://maps.example/checkout","pageTitle":"Checkout","merchantName":"Maps","reason":"to buy the map"},"params":{"summary":"Buy one city map","amount":"12.50","currency":"USDC","recipient":"maps.example"}}`
	choiceBody  = `{"kind":"choice","options":[{"id":"fast","label":"Express"},{"id":"slow","label":"Standard","description":"5 days"}]}`
	provideBody = `{"kind":"provide_missing","context":{"reason":"the form asks for them"},"fields":[{"key":"email","label":"Email","type":"email"},{"key":"card","label":"Card number","type":"card_number"}]}`
	askBody     = `{"kind":"ask_before_use","fields":[{"key":"address","label":"Home address","type":"address"}],"params":{"purpose":"shipping"}}`
)

// statusEvents returns the transitions the session's log records for request rid,
// as "from>to" strings in order.
func (e *authEnv) statusEvents(sid, rid, key string) []string {
	e.t.Helper()
	var page struct {
		Items []struct {
			Type  string
			Actor string
			Data  struct{ RequestID, From, To string }
		}
	}
	json.Unmarshal(e.call("GET", "/sessions/"+sid+"/events?limit=200", key, "").want(e.t, 200).body, &page)
	var out []string
	for _, ev := range page.Items {
		if ev.Type == "request.status_changed" && ev.Data.RequestID == rid {
			out = append(out, ev.Data.From+">"+ev.Data.To+"@"+ev.Actor)
		}
	}
	return out
}

func TestRequestsOfEachKindMoveThroughTheStateMachineWithOneEventPerTransition(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	uid, userKey := e.user("ada")
	_, agentKey := e.agent(uid, "scout")
	sid := e.openSession(agentKey, "s1")

	r := e.raise(agentKey, sid, "r1", confirmBody)
	rid := r["id"].(string)
	if r["status"] != "waiting_user" || r["resolutionPath"] != "user" || r["approvalUrl"] != "/app/requests/"+rid {
		t.Fatalf("created: %v", r)
	}
	// A retry of the creation replays it; the same client id with another body conflicts.
	replay := e.call("POST", "/sessions/"+sid+"/requests", agentKey, `{"clientRequestId":"r1",`+confirmBody[1:]).want(t, 200)
	if replay.decode(t)["id"] != rid || replay.Header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("replay: %s", replay.body)
	}
	e.call("POST", "/sessions/"+sid+"/requests", agentKey, `{"clientRequestId":"r1",`+choiceBody[1:]).want(t, 409, "idempotency_conflict")

	d := e.call("POST", "/sessions/"+sid+"/requests/"+rid+"/decision", userKey, `{"decision":"approve"}`).want(t, 200).decode(t)
	if d["status"] != "fulfilled" || d["artifactType"] != "confirmation" || d["decidedBy"] != "user" {
		t.Fatalf("decided: %v", d)
	}
	if got := strings.Join(e.statusEvents(sid, rid, userKey), " "); got != ">waiting_user@agent waiting_user>approved@user approved>fulfilled@system" {
		t.Errorf("transitions: %s", got)
	}
	art := e.call("POST", "/sessions/"+sid+"/requests/"+rid+"/claim", agentKey, "").want(t, 200).decode(t)
	conf, _ := art["confirmation"].(map[string]any)
	if art["type"] != "confirmation" || conf["confirmed"] != true || !strings.HasPrefix(fmt.Sprint(conf["scopeHash"]), "sha256:") {
		t.Errorf("artifact: %v", art)
	}

	// Choice: the artifact names the chosen option; an option it did not offer is refused.
	cid := e.raise(agentKey, sid, "r2", choiceBody)["id"].(string)
	e.call("POST", "/sessions/"+sid+"/requests/"+cid+"/decision", userKey, `{"decision":"approve","selectedChoiceId":"other"}`).want(t, 422, "validation_failed")
	e.call("POST", "/sessions/"+sid+"/requests/"+cid+"/decision", userKey, `{"decision":"approve","selectedChoiceId":"slow"}`).want(t, 200)
	art = e.call("POST", "/sessions/"+sid+"/requests/"+cid+"/claim", agentKey, "").want(t, 200).decode(t)
	if ch, _ := art["choice"].(map[string]any); ch["selectedOptionId"] != "slow" {
		t.Errorf("choice artifact: %v", art)
	}

	// Ask before use: a confirmation bound to its fields and purpose.
	aid := e.raise(agentKey, sid, "r3", askBody)["id"].(string)
	e.call("POST", "/sessions/"+sid+"/requests/"+aid+"/decision", userKey, `{"decision":"approve","values":{"address":"x"}}`).want(t, 422, "validation_failed")
	e.call("POST", "/sessions/"+sid+"/requests/"+aid+"/decision", userKey, `{"decision":"approve"}`).want(t, 200)
	if e.call("POST", "/sessions/"+sid+"/requests/"+aid+"/claim", agentKey, "").want(t, 200).decode(t)["type"] != "confirmation" {
		t.Error("ask_before_use artifact is not a confirmation")
	}

	// Denied: no artifact.
	nid := e.raise(agentKey, sid, "r4", confirmBody)["id"].(string)
	e.call("POST", "/sessions/"+sid+"/requests/"+nid+"/decision", userKey, `{"decision":"deny"}`).want(t, 200)
	e.call("POST", "/sessions/"+sid+"/requests/"+nid+"/claim", agentKey, "").want(t, 409, "invalid_state_transition")
	if got := strings.Join(e.statusEvents(sid, nid, agentKey), " "); got != ">waiting_user@agent waiting_user>denied@user" {
		t.Errorf("denial transitions: %s", got)
	}

	// The list pages newest first.
	var page struct {
		Items      []struct{ ID string }
		NextCursor *string
	}
	json.Unmarshal(e.call("GET", "/sessions/"+sid+"/requests?limit=3", agentKey, "").want(t, 200).body, &page)
	if len(page.Items) != 3 || page.Items[0].ID != nid || page.NextCursor == nil {
		t.Fatalf("first page: %+v", page)
	}
	json.Unmarshal(e.call("GET", "/sessions/"+sid+"/requests?cursor="+*page.NextCursor, userKey, "").want(t, 200).body, &page)
	if len(page.Items) != 1 || page.Items[0].ID != rid || page.NextCursor != nil {
		t.Errorf("second page: %+v", page)
	}
}

func TestRequestsAreValidatedForTheirKind(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	uid, _ := e.user("ada")
	_, agentKey := e.agent(uid, "scout")
	sid := e.openSession(agentKey, "s1")
	for name, body := range map[string]string{
		"unknown kind":          `{"clientRequestId":"x","kind":"otp"}`,
		"confirm, no summary":   `{"clientRequestId":"x","kind":"confirm"}`,
		"choice, one option":    `{"clientRequestId":"x","kind":"choice","options":[{"id":"a","label":"A"}]}`,
		"choice, same ids":      `{"clientRequestId":"x","kind":"choice","options":[{"id":"a","label":"A"},{"id":"a","label":"B"}]}`,
		"provide, no fields":    `{"clientRequestId":"x","kind":"provide_missing"}`,
		"provide, bad type":     `{"clientRequestId":"x","kind":"provide_missing","fields":[{"key":"k","label":"K","type":"blob"}]}`,
		"provide, same keys":    `{"clientRequestId":"x","kind":"provide_missing","fields":[{"key":"k","label":"K"},{"key":"k","label":"L"}]}`,
		"fields on confirm":     `{"clientRequestId":"x","kind":"confirm","params":{"summary":"s"},"fields":[{"key":"k","label":"K"}]}`,
		"amount, no currency":   `{"clientRequestId":"x","kind":"confirm","params":{"summary":"s","amount":"1"}}`,
		"bad amount":            `{"clientRequestId":"x","kind":"confirm","params":{"summary":"s","amount":"1e9","currency":"USD"}}`,
		"ttl too short":         `{"clientRequestId":"x","kind":"confirm","ttlSeconds":1,"params":{"summary":"s"}}`,
		"ttl too long":          `{"clientRequestId":"x","kind":"confirm","ttlSeconds":999999,"params":{"summary":"s"}}`,
		"relative context url":  `{"clientRequestId":"x","kind":"confirm","context":{"url":"/checkout"},"params":{"summary":"s"}}`,
		"unknown member":        `{"clientRequestId":"x","kind":"confirm","params":{"summary":"s","tip":"1"}}`,
		"no client id":          `{"kind":"confirm","params":{"summary":"s"}}`,
		"values in the request": `{"clientRequestId":"x","kind":"provide_missing","fields":[{"key":"k","label":"K","value":"v"}]}`,
	} {
		r := e.call("POST", "/sessions/"+sid+"/requests", agentKey, body)
		if r.StatusCode != 422 {
			t.Errorf("%s: %d %s", name, r.StatusCode, r.body)
		}
	}
	// Secret is forced on card fields and passwords.
	r := e.raise(agentKey, sid, "p", provideBody)
	fields := r["fields"].([]any)
	if fields[0].(map[string]any)["secret"] != false || fields[1].(map[string]any)["secret"] != true {
		t.Errorf("fields: %v", fields)
	}
	// A closed session takes no requests.
	e.call("POST", "/sessions/"+sid+"/complete", agentKey, `{"clientCompletionId":"c","status":"completed","summary":"done"}`).want(t, 200)
	e.call("POST", "/sessions/"+sid+"/requests", agentKey, `{"clientRequestId":"late",`+confirmBody[1:]).want(t, 409, "session_closed")
}

// Invariant 3: an agent key cannot approve, whatever link it holds; and invariant 5
// for requests: a user key cannot raise, cancel or claim.
func TestAnAgentKeyCannotDecideAndAUserKeyCannotActForTheAgent(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	uid, userKey := e.user("ada")
	_, agentKey := e.agent(uid, "scout")
	sid := e.openSession(agentKey, "s1")
	rid := e.raise(agentKey, sid, "r1", confirmBody)["id"].(string)
	path := "/sessions/" + sid + "/requests/" + rid

	e.call("POST", path+"/decision", agentKey, `{"decision":"approve"}`).want(t, 403, "wrong_key_scope")
	e.call("POST", "/sessions/"+sid+"/requests", userKey, `{"clientRequestId":"u",`+confirmBody[1:]).want(t, 403, "wrong_key_scope")
	e.call("POST", path+"/cancel", userKey, "").want(t, 403, "wrong_key_scope")
	e.call("POST", path+"/claim", userKey, "").want(t, 403, "wrong_key_scope")
	if got := e.call("GET", path, agentKey, "").want(t, 200).decode(t)["status"]; got != "waiting_user" {
		t.Fatalf("status after refused decisions: %v", got)
	}
	if got := e.statusEvents(sid, rid, userKey); len(got) != 1 {
		t.Errorf("refused calls left events: %v", got)
	}
}

// Invariant 4 for requests: other tenants' and other agents' requests are 404 on
// every request route.
func TestOtherTenantsRequestsAre404(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	ada, _ := e.user("ada")
	_, scoutKey := e.agent(ada, "scout")
	_, runnerKey := e.agent(ada, "runner")
	bob, bobKey := e.user("bob")
	_, bobAgentKey := e.agent(bob, "scout")
	sid := e.openSession(scoutKey, "s1")
	rid := e.raise(scoutKey, sid, "r1", confirmBody)["id"].(string)
	runnerSID := e.openSession(runnerKey, "s1")

	for _, key := range []string{bobKey, bobAgentKey, runnerKey} {
		for _, c := range []struct{ method, path, body string }{
			{"GET", "/sessions/" + sid + "/requests", ""},
			{"GET", "/sessions/" + sid + "/requests/" + rid, ""},
			{"GET", "/sessions/" + sid + "/requests/" + rid + "?wait=1", ""},
			{"POST", "/sessions/" + sid + "/requests", `{"clientRequestId":"x",` + confirmBody[1:]},
			{"POST", "/sessions/" + sid + "/requests/" + rid + "/decision", `{"decision":"approve"}`},
			{"POST", "/sessions/" + sid + "/requests/" + rid + "/cancel", ""},
			{"POST", "/sessions/" + sid + "/requests/" + rid + "/claim", ""},
			// The request under a session the caller does own is no better.
			{"GET", "/sessions/" + runnerSID + "/requests/" + rid, ""},
		} {
			r := e.call(c.method, c.path, key, c.body)
			if r.StatusCode == 403 {
				continue // the route is not for this key's scope at all
			}
			r.want(t, 404, "not_found")
		}
	}
	e.call("GET", "/sessions/"+sid+"/requests/nope", scoutKey, "").want(t, 404, "not_found")
}

// Invariant 6: of concurrent claims, exactly one succeeds.
func TestConcurrentClaimsYieldExactlyOneArtifact(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	uid, userKey := e.user("ada")
	_, agentKey := e.agent(uid, "scout")
	sid := e.openSession(agentKey, "s1")
	for round := range 3 {
		rid := e.raise(agentKey, sid, fmt.Sprint("r", round), confirmBody)["id"].(string)
		e.call("POST", "/sessions/"+sid+"/requests/"+rid+"/decision", userKey, `{"decision":"approve"}`).want(t, 200)
		const claimers = 12
		statuses := make(chan int, claimers)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range claimers {
			wg.Go(func() {
				<-start
				r := e.call("POST", "/sessions/"+sid+"/requests/"+rid+"/claim", agentKey, "")
				if r.StatusCode == 409 && !strings.Contains(string(r.body), "artifact_already_claimed") {
					t.Errorf("claim: %s", r.body)
				}
				statuses <- r.StatusCode
			})
		}
		close(start)
		wg.Wait()
		close(statuses)
		won := 0
		for s := range statuses {
			switch s {
			case 200:
				won++
			case 409:
			default:
				t.Errorf("claim status %d", s)
			}
		}
		if won != 1 {
			t.Fatalf("round %d: %d claims succeeded", round, won)
		}
		var n int
		e.store.Pool().QueryRow(context.Background(), `SELECT count(*) FROM session_events
			WHERE session_id = $1 AND type = 'artifact.claimed' AND data->>'requestId' = $2`, sid, rid).Scan(&n)
		if n != 1 {
			t.Errorf("round %d: %d artifact.claimed events", round, n)
		}
	}
}

// Invariant 9: terminal states are final, an expired request cannot be decided, and
// each transition emits exactly one event.
func TestTerminalStatesAreFinalAndExpiredRequestsCannotBeDecided(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	uid, userKey := e.user("ada")
	_, agentKey := e.agent(uid, "scout")
	sid := e.openSession(agentKey, "s1")
	ctx := context.Background()
	decide := func(rid, body string) response {
		return e.call("POST", "/sessions/"+sid+"/requests/"+rid+"/decision", userKey, body)
	}

	denied := e.raise(agentKey, sid, "denied", confirmBody)["id"].(string)
	decide(denied, `{"decision":"deny"}`).want(t, 200)
	decide(denied, `{"decision":"approve"}`).want(t, 409, "invalid_state_transition")
	decide(denied, `{"decision":"deny"}`).want(t, 409, "invalid_state_transition")
	e.call("POST", "/sessions/"+sid+"/requests/"+denied+"/cancel", agentKey, "").want(t, 409, "invalid_state_transition")

	canceled := e.raise(agentKey, sid, "canceled", confirmBody)["id"].(string)
	e.call("POST", "/sessions/"+sid+"/requests/"+canceled+"/cancel", agentKey, "").want(t, 200)
	e.call("POST", "/sessions/"+sid+"/requests/"+canceled+"/cancel", agentKey, "").want(t, 200) // a retry
	decide(canceled, `{"decision":"approve"}`).want(t, 409, "invalid_state_transition")

	fulfilled := e.raise(agentKey, sid, "fulfilled", confirmBody)["id"].(string)
	decide(fulfilled, `{"decision":"approve"}`).want(t, 200)
	decide(fulfilled, `{"decision":"deny"}`).want(t, 409, "invalid_state_transition")
	e.call("POST", "/sessions/"+sid+"/requests/"+fulfilled+"/cancel", agentKey, "").want(t, 409, "invalid_state_transition")

	// Time runs out on two requests: one is read, the other swept by the system.
	late := e.raise(agentKey, sid, "late", confirmBody)["id"].(string)
	swept := e.raise(agentKey, sid, "swept", confirmBody)["id"].(string)
	if _, err := e.store.Pool().Exec(ctx, `UPDATE requests SET expires_at = now() - interval '1 second' WHERE id IN ($1, $2)`, late, swept); err != nil {
		t.Fatal(err)
	}
	decide(late, `{"decision":"approve"}`).want(t, 410, "request_expired")
	decide(late, `{"decision":"deny"}`).want(t, 410, "request_expired")
	e.call("POST", "/sessions/"+sid+"/requests/"+late+"/cancel", agentKey, "").want(t, 410, "request_expired")
	e.call("POST", "/sessions/"+sid+"/requests/"+late+"/claim", agentKey, "").want(t, 410, "request_expired")
	if got := e.call("GET", "/sessions/"+sid+"/requests/"+late, agentKey, "").want(t, 200).decode(t); got["status"] != "expired" || got["decidedBy"] != "system" {
		t.Errorf("late: %v", got)
	}
	if n, err := e.store.ExpireRequests(ctx); err != nil || n != 1 {
		t.Errorf("sweep: %d sessions, %v", n, err)
	}
	if n, err := e.store.ExpireRequests(ctx); err != nil || n != 0 {
		t.Errorf("second sweep: %d sessions, %v", n, err)
	}
	decide(swept, `{"decision":"approve"}`).want(t, 410, "request_expired")

	want := map[string]string{
		denied:    ">waiting_user@agent waiting_user>denied@user",
		canceled:  ">waiting_user@agent waiting_user>canceled@agent",
		fulfilled: ">waiting_user@agent waiting_user>approved@user approved>fulfilled@system",
		late:      ">waiting_user@agent waiting_user>expired@system",
		swept:     ">waiting_user@agent waiting_user>expired@system",
	}
	for rid, w := range want {
		if got := strings.Join(e.statusEvents(sid, rid, userKey), " "); got != w {
			t.Errorf("%s: transitions %q, want %q", rid, got, w)
		}
	}
	// The database refuses a status the machine does not know.
	if _, err := e.store.Pool().Exec(ctx, `UPDATE requests SET status = 'done' WHERE id = $1`, denied); err == nil {
		t.Error("the database took an unknown status")
	}
}

func TestCompletingOrStoppingASessionCancelsItsOpenRequests(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	uid, userKey := e.user("ada")
	_, agentKey := e.agent(uid, "scout")
	for i, closeIt := range []func(sid string){
		func(sid string) {
			e.call("POST", "/sessions/"+sid+"/complete", agentKey, `{"clientCompletionId":"c","status":"failed","summary":"gave up"}`).want(t, 200)
		},
		func(sid string) {
			e.call("POST", "/sessions/"+sid+"/stop", userKey, `{"reasonCode":"user_request"}`).want(t, 200)
		},
	} {
		sid := e.openSession(agentKey, fmt.Sprint("s", i))
		open := e.raise(agentKey, sid, "open", confirmBody)["id"].(string)
		done := e.raise(agentKey, sid, "done", confirmBody)["id"].(string)
		e.call("POST", "/sessions/"+sid+"/requests/"+done+"/decision", userKey, `{"decision":"deny"}`).want(t, 200)
		closeIt(sid)
		if got := e.call("GET", "/sessions/"+sid+"/requests/"+open, agentKey, "").want(t, 200).decode(t)["status"]; got != "canceled" {
			t.Errorf("open request after close: %v", got)
		}
		if got := e.call("GET", "/sessions/"+sid+"/requests/"+done, agentKey, "").want(t, 200).decode(t)["status"]; got != "denied" {
			t.Errorf("denied request after close: %v", got)
		}
		e.call("POST", "/sessions/"+sid+"/requests/"+open+"/decision", userKey, `{"decision":"approve"}`).want(t, 409, "invalid_state_transition")
	}
}

func TestARequestLongPollWakesWhenTheUserDecides(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	uid, userKey := e.user("ada")
	_, agentKey := e.agent(uid, "scout")
	sid := e.openSession(agentKey, "s1")
	rid := e.raise(agentKey, sid, "r1", choiceBody)["id"].(string)

	got := make(chan map[string]any, 1)
	began := time.Now()
	go func() {
		got <- e.call("GET", "/sessions/"+sid+"/requests/"+rid+"?wait=30", agentKey, "").want(t, 200).decode(t)
	}()
	time.Sleep(200 * time.Millisecond)
	e.call("POST", "/sessions/"+sid+"/requests/"+rid+"/decision", userKey, `{"decision":"approve","selectedChoiceId":"fast"}`).want(t, 200)
	r := <-got
	if r["status"] != "fulfilled" {
		t.Fatalf("long poll answered %v", r["status"])
	}
	if waited := time.Since(began); waited > 20*time.Second {
		t.Errorf("the long poll waited %v: it did not wake on the decision", waited)
	}
	// A request that no longer waits answers at once, whatever wait says.
	e.call("GET", "/sessions/"+sid+"/requests/"+rid+"?wait=30", agentKey, "").want(t, 200)
	e.call("GET", "/sessions/"+sid+"/requests/"+rid+"?wait=31", agentKey, "").want(t, 400, "invalid_parameter")
}

func TestARequestLongPollEndsWhenTheRequestExpires(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	uid, _ := e.user("ada")
	_, agentKey := e.agent(uid, "scout")
	sid := e.openSession(agentKey, "s1")
	rid := e.raise(agentKey, sid, "r1", confirmBody)["id"].(string)
	if _, err := e.store.Pool().Exec(context.Background(), `UPDATE requests SET expires_at = now() + interval '1 second' WHERE id = $1`, rid); err != nil {
		t.Fatal(err)
	}
	r := e.call("GET", "/sessions/"+sid+"/requests/"+rid+"?wait=30", agentKey, "").want(t, 200).decode(t)
	if r["status"] != "expired" {
		t.Errorf("long poll past expiry answered %v", r["status"])
	}
}

// The canary test (invariant 1 for requests): values a user provides never appear in
// any response, log line, event, artifact, idempotency record or error body, nor in
// plaintext anywhere in the database; they are stored sealed, bound to their row.
func TestProvidedValuesNeverLeaveTheVault(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	uid, userKey := e.user("ada")
	_, agentKey := e.agent(uid, "scout")
	sid := e.openSession(agentKey, "s1")
	const email, card = "Canary.Q7x@Example.test", "4111-1111-1111-1111"
	variants := []string{email, strings.ToLower(email), strings.ToUpper(email), card, "4111111111111111",
		"4111 1111 1111 1111", fmt.Sprintf("%x", email), fmt.Sprintf("%x", card)}

	var seen strings.Builder
	call := func(method, path, key, body string, header ...string) response {
		r := e.call(method, path, key, body, header...)
		fmt.Fprintf(&seen, "%s %v\n%s\n", r.Status, r.Header, r.body)
		return r
	}
	rid := e.raise(agentKey, sid, "r1", provideBody)["id"].(string)
	path := "/sessions/" + sid + "/requests/" + rid
	values := `"values":{"email":"` + email + `","card":"` + card + `"}`
	// Refused decisions first: none may echo what it refused.
	for _, body := range []string{
		`{"decision":"approve","values":{"email":"` + email + `"}}`,
		`{"decision":"approve","values":{"email":"` + email + `","card":"` + card + `","cvc":"` + card + `"}}`,
		`{"decision":"approve","values":{"email":"` + email + strings.Repeat("x", 5000) + `","card":"` + card + `"}}`,
		`{"decision":"approve","values":["` + email + `"]}`,
		`{"decision":"approve","values":{"email":` + card[:4] + `}}`,
		`{"decision":"deny","save":true}`,
		`{"decision":"deny",` + values + `}`,
		`{"decision":"approve",` + values + `,"` + email + `":1}`,
		`{"decision":"` + email + `"}`,
		`{"decision":"approve",` + values,
	} {
		if r := call("POST", path+"/decision", userKey, body); r.StatusCode != 422 {
			t.Errorf("refused decision: %d %s", r.StatusCode, r.body)
		}
	}
	call("POST", path+"/decision", agentKey, `{"decision":"approve",`+values+`}`).want(t, 403)
	call("POST", path+"/decision", userKey, `{"decision":"approve",`+values+`}`, "Idempotency-Key", "d1").want(t, 200)
	call("POST", path+"/decision", userKey, `{"decision":"approve",`+values+`}`, "Idempotency-Key", "d1").want(t, 200)
	call("POST", path+"/decision", userKey, `{"decision":"approve",`+values+`}`).want(t, 409)
	call("GET", path, agentKey, "").want(t, 200)
	call("GET", path+"?wait=1", userKey, "").want(t, 200)
	call("GET", "/sessions/"+sid+"/requests", agentKey, "").want(t, 200)
	call("GET", "/sessions/"+sid+"/events?limit=200", userKey, "").want(t, 200)
	art := call("POST", path+"/claim", agentKey, "").want(t, 200).decode(t)
	call("POST", path+"/claim", agentKey, "").want(t, 409)

	for _, v := range variants {
		if strings.Contains(seen.String(), v) {
			t.Errorf("a response holds %q", v)
		}
		if strings.Contains(e.logs.String(), v) {
			t.Errorf("the log holds %q", v)
		}
	}

	// The database, table by table, as text (bytea as hex).
	ctx := context.Background()
	rows, err := e.store.Pool().Query(ctx, `SELECT tablename FROM pg_tables WHERE schemaname = 'public'`)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var name string
		rows.Scan(&name)
		tables = append(tables, name)
	}
	if len(tables) < 10 {
		t.Fatalf("only %d tables: %v", len(tables), tables)
	}
	for _, table := range tables {
		var dump *string
		if err := e.store.Pool().QueryRow(ctx, `SELECT string_agg(t::text, E'\n') FROM "`+table+`" t`).Scan(&dump); err != nil {
			t.Fatal(err)
		}
		for _, v := range variants {
			if dump != nil && strings.Contains(strings.ToLower(*dump), strings.ToLower(v)) {
				t.Errorf("table %s holds %q in plaintext", table, v)
			}
		}
	}

	// The values are there, sealed: the handles of the artifact open to them, and a
	// ciphertext moved to another row (another field's additional data) does not.
	stored, err := e.store.SessionValues(ctx, sid)
	if err != nil || len(stored) != 2 {
		t.Fatalf("stored values: %d, %v", len(stored), err)
	}
	handles := map[string]string{}
	for _, h := range art["reference"].(map[string]any)["handles"].([]any) {
		h := h.(map[string]any)
		handles[h["handle"].(string)] = h["fieldKey"].(string)
	}
	v := testVault(t)
	for i, s := range stored {
		if handles[s.Handle] != s.FieldKey || len(s.Handle) < 32 {
			t.Errorf("stored handle %q for %s is not the artifact's", s.Handle, s.FieldKey)
		}
		plain, err := v.Open(s.KeyID, s.Nonce, s.Ciphertext, []byte(uid+"|"+rid+"|"+s.FieldKey))
		want := map[string]string{"email": email, "card": card}[s.FieldKey]
		if err != nil || string(plain) != want {
			t.Errorf("%s does not open to its value: %v", s.FieldKey, err)
		}
		other := stored[1-i]
		if _, err := v.Open(s.KeyID, s.Nonce, s.Ciphertext, []byte(uid+"|"+rid+"|"+other.FieldKey)); err == nil {
			t.Errorf("%s's ciphertext opened as %s", s.FieldKey, other.FieldKey)
		}
	}
}

// Decisions, cancels and the session's completion race without deadlocks or 5xx: each
// request ends in exactly one terminal status, reached by transitions the log records.
func TestConcurrentDecisionsAndSessionCloseEndEachRequestOnce(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	uid, userKey := e.user("ada")
	_, agentKey := e.agent(uid, "scout")
	sid := e.openSession(agentKey, "s1")
	var rids []string
	for i := range 8 {
		rids = append(rids, e.raise(agentKey, sid, fmt.Sprint("r", i), confirmBody)["id"].(string))
	}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, rid := range rids {
		wg.Go(func() {
			<-start
			path := "/sessions/" + sid + "/requests/" + rid
			var r response
			if i%2 == 0 {
				r = e.call("POST", path+"/decision", userKey, `{"decision":"approve"}`)
			} else {
				r = e.call("POST", path+"/cancel", agentKey, "")
			}
			if r.StatusCode != 200 && r.StatusCode != 409 {
				t.Errorf("%s: %d %s", path, r.StatusCode, r.body)
			}
		})
	}
	wg.Go(func() {
		<-start
		e.call("POST", "/sessions/"+sid+"/complete", agentKey, `{"clientCompletionId":"c","status":"completed","summary":"x"}`).want(t, 200)
	})
	close(start)
	wg.Wait()
	for _, rid := range rids {
		got := e.statusEvents(sid, rid, userKey)
		last := got[len(got)-1]
		switch {
		case strings.HasSuffix(last, ">fulfilled@system") && len(got) == 3:
		case strings.HasSuffix(last, ">canceled@agent") && len(got) == 2:
		default:
			t.Errorf("%s: transitions %v", rid, got)
		}
	}
}

// A retry whose first answer was lost (the server stopped after committing, before
// recording the answer) gets the request it created; another body still conflicts.
func TestARequestRetriedAfterALostAnswerIsTheSameRequest(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	uid, _ := e.user("ada")
	_, agentKey := e.agent(uid, "scout")
	sid := e.openSession(agentKey, "s1")
	rid := e.raise(agentKey, sid, "r1", provideBody)["id"].(string)
	if _, err := e.store.Pool().Exec(context.Background(), `DELETE FROM idempotency_keys`); err != nil {
		t.Fatal(err)
	}
	again := e.call("POST", "/sessions/"+sid+"/requests", agentKey, `{"clientRequestId":"r1",`+provideBody[1:]).want(t, 201).decode(t)
	if again["id"] != rid {
		t.Errorf("the retry made request %v, not %s", again["id"], rid)
	}
	e.call("POST", "/sessions/"+sid+"/requests", agentKey, `{"clientRequestId":"r1",`+choiceBody[1:]).want(t, 409, "idempotency_conflict")
	if got := e.statusEvents(sid, rid, agentKey); len(got) != 1 {
		t.Errorf("transitions %v", got)
	}
}

// TestIdempotencyKeepsNoValueRecoverable: a short value sent in a decision with an
// Idempotency-Key cannot be found again from the idempotency record by hashing the
// thousand candidates; the record holds a keyed fingerprint, which the retry still
// matches.
func TestIdempotencyKeepsNoValueRecoverable(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	uid, userKey := e.user("ada")
	_, agentKey := e.agent(uid, "scout")
	sid := e.openSession(agentKey, "s1")
	rid := e.raise(agentKey, sid, "r1", `{"kind":"provide_missing","context":{"reason":"checkout"},"fields":[{"key":"cvc","label":"CVC","secret":true}]}`)["id"].(string)
	path := "/sessions/" + sid + "/requests/" + rid + "/decision"
	body := func(cvc string) string { return `{"decision":"approve","values":{"cvc":"` + cvc + `"}}` }
	e.call("POST", path, userKey, body("731"), "Idempotency-Key", "d1").want(t, 200)
	e.call("POST", path, userKey, body("731"), "Idempotency-Key", "d1").want(t, 200)
	e.call("POST", path, userKey, body("732"), "Idempotency-Key", "d1").want(t, 409)

	rows, err := e.store.Pool().Query(context.Background(), `SELECT route, body_mac FROM idempotency_keys`)
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for rows.Next() {
		var route string
		var mac []byte
		if err := rows.Scan(&route, &mac); err != nil {
			t.Fatal(err)
		}
		for i := range 1000 {
			candidate := []byte(body(fmt.Sprintf("%03d", i)))
			plain := sha256.Sum256(candidate)
			if bytes.Equal(mac, plain[:]) {
				t.Fatalf("the record of %s gives the value away", route)
			}
			if bytes.Equal(mac, idempotency.Fingerprint(e.pepper, route, candidate)) {
				found++
			}
		}
	}
	if found != 1 {
		t.Fatalf("%d records match the body's keyed fingerprint, want 1", found)
	}
}
