package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
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
	"github.com/waystation/waystation/generator"
	"github.com/waystation/waystation/internal/app"
	"github.com/waystation/waystation/internal/auth"
	"github.com/waystation/waystation/internal/memory"
	"github.com/waystation/waystation/internal/oauth"
	"github.com/waystation/waystation/internal/postgres"
	"github.com/waystation/waystation/internal/postgres/pgtest"
	"github.com/waystation/waystation/internal/protect"
	"github.com/waystation/waystation/internal/request"
	"github.com/waystation/waystation/internal/session"
	"github.com/waystation/waystation/internal/trace"
	"github.com/waystation/waystation/internal/vault"
)

// authEnv serves the authenticated API through the real router on a fresh database.
type authEnv struct {
	t      *testing.T
	store  *postgres.Store
	srv    http.Handler
	pepper []byte
	logs   *bytes.Buffer
	// snaps is the directory the server answers from: empty until a test loads one.
	snaps *generator.Holder
	// oauth is the authorization server, where the console's consent is given.
	oauth *oauth.Service
	// answers is every answer a call got, by path, for tests that look for values in
	// them; calls may run concurrently.
	mu      sync.Mutex
	answers []answer
}

type answer struct{ path, body string }

func newAuthEnv(t *testing.T, opts ...func(*api.Authenticated)) *authEnv {
	t.Helper()
	store := pgtest.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	listener := store.NewListener(slog.New(slog.DiscardHandler))
	done := make(chan struct{})
	go func() { listener.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	pepper := []byte("test-pepper-of-at-least-32-bytes!!")
	a := api.Authenticated{Services: app.Services{Auth: auth.NewService(store, auth.Config{Pepper: pepper}), Sessions: &session.Service{Store: store, Protected: memory.Protected{Store: store, Opener: testVault(t)}}, Requests: &request.Service{Store: store, Protected: memory.Protected{Store: store, Opener: testVault(t)}, Sealer: testVault(t)}, Memory: memory.NewService(store, memory.Config{Sealer: testVault(t), Opener: testVault(t)})},
		Idempotency: store, Pepper: pepper, Events: listener,
		Protected: memory.Protected{Store: store, Opener: testVault(t)},
		Limits:    api.Limits{Heartbeat: 50 * time.Millisecond, MaxWait: 30 * time.Second}}
	for _, o := range opts {
		o(&a)
	}
	if values, ok := a.Protected.(memory.Protected); ok && a.Guard == nil {
		a.Guard = protect.NewService(values, store, protect.Config{}, nil)
	}
	if a.OAuth == nil {
		a.OAuth = oauth.NewService(store, a.Auth, oauth.Config{Pepper: pepper})
	}
	if a.Traces == nil {
		a.Traces = trace.NewService(store, memory.Protected{Store: store, Opener: testVault(t)}, trace.Config{Guard: a.Guard})
	}
	logs := &bytes.Buffer{}
	log := slog.New(slog.NewTextHandler(logs, nil))
	snaps := generator.NewHolder()
	srv := api.NewServer(api.Config{}, log, snaps, store, api.WithAuthenticated(a))
	return &authEnv{t: t, store: store, srv: srv, pepper: pepper, logs: logs, snaps: snaps, oauth: a.OAuth}
}

// testVault seals provided values under a fixed test key.
func testVault(t *testing.T) *vault.Vault {
	v, err := vault.Parse("t1:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=")
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// user makes a user and a user key.
func (e *authEnv) user(name string) (id, key string) {
	e.t.Helper()
	u, err := e.store.EnsureUser(context.Background(), name)
	if err != nil {
		e.t.Fatal(err)
	}
	return u.ID, e.key(auth.ScopeUser, u.ID, "")
}

// agent makes an agent of userID and an agent key.
func (e *authEnv) agent(userID, name string) (id, key string) {
	e.t.Helper()
	a, err := e.store.EnsureAgent(context.Background(), userID, name)
	if err != nil {
		e.t.Fatal(err)
	}
	return a.ID, e.key(auth.ScopeAgent, userID, a.ID)
}

func (e *authEnv) key(scope auth.Scope, userID, agentID string) string {
	e.t.Helper()
	k, err := auth.Generate(scope, e.pepper)
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.store.InsertKey(context.Background(), k, userID, agentID, 0); err != nil {
		e.t.Fatal(err)
	}
	return k.Token
}

// call sends a request with key (none if empty) and body (none if empty).
func (e *authEnv) call(method, path, key, body string, header ...string) response {
	e.t.Helper()
	req := e.request(method, path, key, body, header...)
	rec := httptest.NewRecorder()
	e.srv.ServeHTTP(rec, req)
	res := rec.Result()
	res.Request = req // so that a failure names the call
	b, _ := io.ReadAll(res.Body)
	e.mu.Lock()
	e.answers = append(e.answers, answer{req.URL.Path, string(b)})
	e.mu.Unlock()
	return response{res, b}
}

func (e *authEnv) request(method, path, key, body string, header ...string) *http.Request {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, base+path, rd)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return req
}

// want fails unless the response has the status (and problem code, if given).
func (r response) want(t *testing.T, status int, code ...string) response {
	t.Helper()
	if r.StatusCode != status {
		t.Fatalf("%s %s: status %d, want %d: %s", r.Request.Method, r.Request.URL.Path, r.StatusCode, status, r.body)
	}
	if len(code) > 0 {
		// problem+json has the code at the top; the LLM proxy's OpenAI-shaped errors
		// under error.
		var p struct {
			Code  string
			Error struct{ Code string }
		}
		json.Unmarshal(r.body, &p)
		if p.Code == "" {
			p.Code = p.Error.Code
		}
		if p.Code != code[0] {
			t.Fatalf("%s %s: code %q, want %q: %s", r.Request.Method, r.Request.URL.Path, p.Code, code[0], r.body)
		}
	}
	return r
}

func (r response) decode(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("body %q: %v", r.body, err)
	}
	return m
}

// openSession opens a session with agentKey and returns its id.
func (e *authEnv) openSession(agentKey, clientID string) string {
	e.t.Helper()
	body := fmt.Sprintf(`{"type":"checkout","description":"buy a map","clientSessionId":%q}`, clientID)
	return e.call("POST", "/sessions", agentKey, body).want(e.t, 201).decode(e.t)["id"].(string)
}

const (
	challenge        = `Bearer realm="api"`
	challengeInvalid = `Bearer realm="api", error="invalid_token"`
	challengeAgent   = `Bearer error="insufficient_scope", scope="agent"`
)

func TestMissingAndInvalidKeysGet401WithTheirChallenges(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	uid, _ := e.user("ada")
	_, agentKey := e.agent(uid, "scout")

	r := e.call("GET", "/agent/me", "", "").want(t, 401, "unauthenticated")
	if got := r.Header.Get("WWW-Authenticate"); got != challenge {
		t.Errorf("missing key: WWW-Authenticate %q", got)
	}
	scope, kid, _, _ := auth.Parse(agentKey)
	wrongSecret := "sk_" + string(scope) + "_" + kid + "_" + strings.Repeat("0", 64)
	otherPepper, _ := auth.Generate(auth.ScopeAgent, []byte("another pepper, another service!!"))
	for _, bad := range []string{"nope", "sk_agent_", wrongSecret, otherPepper.Token, strings.Replace(agentKey, "sk_agent_", "sk_user_", 1)} {
		r := e.call("GET", "/agent/me", bad, "").want(t, 401, "invalid_api_key")
		if got := r.Header.Get("WWW-Authenticate"); got != challengeInvalid {
			t.Errorf("key %q: WWW-Authenticate %q", bad, got)
		}
	}
	req := e.request("GET", "/agent/me", "", "")
	req.Header.Set("Authorization", "Basic "+agentKey)
	rec := httptest.NewRecorder()
	e.srv.ServeHTTP(rec, req)
	if rec.Code != 401 || rec.Header().Get("WWW-Authenticate") != challengeInvalid {
		t.Errorf("Basic scheme: %d %q", rec.Code, rec.Header().Get("WWW-Authenticate"))
	}

	me := e.call("GET", "/agent/me", agentKey, "").want(t, 200).decode(t)
	if me["name"] != "scout" || me["userId"] != uid || me["status"] != "active" || me["limits"] == nil {
		t.Errorf("/agent/me: %v", me)
	}
	if strings.Contains(e.logs.String(), kid) {
		t.Errorf("the log mentions the key: %s", e.logs.String())
	}
}

func TestWithoutAuthEveryKeyIsRefused(t *testing.T) {
	t.Parallel()
	srv := api.NewServer(api.Config{}, slog.New(slog.DiscardHandler), generator.NewHolder(), nil)
	k, _ := auth.Generate(auth.ScopeAgent, []byte("test-pepper-of-at-least-32-bytes!!"))
	req := httptest.NewRequest("GET", base+"/agent/me", nil)
	req.Header.Set("Authorization", "Bearer "+k.Token)
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, req)
	if rec.Code != 401 || rec.Header().Get("WWW-Authenticate") != challengeInvalid {
		t.Errorf("%d %q %s", rec.Code, rec.Header().Get("WWW-Authenticate"), rec.Body)
	}
}

// Invariant 8: a revoked key gets 401 on its very next call, with the stated headers.
func TestRevokedKeysGet401Immediately(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	uid, userKey := e.user("ada")
	_, agentKey := e.agent(uid, "scout")
	_, otherAgentKey := e.agent(uid, "runner")

	e.call("GET", "/agent/me", agentKey, "").want(t, 200)
	r := e.call("POST", "/agent/keys/current/revoke", agentKey, "").want(t, 200)
	if m := r.decode(t); m["status"] != "revoked" {
		t.Errorf("revoke: %v", m)
	}
	r = e.call("GET", "/agent/me", agentKey, "").want(t, 401, "key_revoked")
	if got := r.Header.Get("WWW-Authenticate"); got != challengeInvalid {
		t.Errorf("revoked: WWW-Authenticate %q", got)
	}

	// A user revokes an agent's key: refused on the next call, the others still work.
	_, kid, _, _ := auth.Parse(otherAgentKey)
	e.call("GET", "/sessions", otherAgentKey, "").want(t, 200)
	e.call("DELETE", "/keys/"+kid, userKey, "").want(t, 204)
	e.call("GET", "/sessions", otherAgentKey, "").want(t, 401, "key_revoked")
	e.call("GET", "/keys", userKey, "").want(t, 200)

	// The user revokes its own key.
	_, ukid, _, _ := auth.Parse(userKey)
	e.call("DELETE", "/keys/"+ukid, userKey, "").want(t, 204)
	e.call("GET", "/keys", userKey, "").want(t, 401, "key_revoked")
}

// Invariant 5: user keys get 403 on session creation, agent-only session routes and
// /agent/*; agent keys get 403 on the user's routes.
func TestKeysOfTheWrongScopeGet403(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	uid, userKey := e.user("ada")
	_, agentKey := e.agent(uid, "scout")
	sid := e.openSession(agentKey, "s1")

	for _, c := range []struct{ method, path, body string }{
		{"POST", "/sessions", `{"type":"checkout","description":"x","clientSessionId":"u1"}`},
		{"GET", "/agent/me", ""},
		{"GET", "/agent/stats", ""},
		{"POST", "/agent/keys/current/revoke", ""},
		{"POST", "/sessions/" + sid + "/events", `{"type":"runtime.step","clientEventId":"e1"}`},
		{"POST", "/sessions/" + sid + "/complete", `{"clientCompletionId":"c1","status":"completed","summary":"done"}`},
	} {
		r := e.call(c.method, c.path, userKey, c.body).want(t, 403, "wrong_key_scope")
		if got := r.Header.Get("WWW-Authenticate"); got != challengeAgent {
			t.Errorf("%s %s: WWW-Authenticate %q", c.method, c.path, got)
		}
	}
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/agents", ""}, {"POST", "/agents", `{"name":"x"}`}, {"GET", "/keys", ""},
		{"POST", "/keys", `{"scope":"user"}`}, {"DELETE", "/keys/0123456789abcdef", ""},
		{"POST", "/sessions/" + sid + "/stop", `{"reasonCode":"user_request"}`},
	} {
		r := e.call(c.method, c.path, agentKey, c.body).want(t, 403, "wrong_key_scope")
		if got := r.Header.Get("WWW-Authenticate"); got != `Bearer error="insufficient_scope", scope="user"` {
			t.Errorf("%s %s: WWW-Authenticate %q", c.method, c.path, got)
		}
	}
	// The user key still reads its agents' sessions.
	e.call("GET", "/sessions/"+sid, userKey, "").want(t, 200)
	e.call("GET", "/sessions/"+sid+"/events", userKey, "").want(t, 200)
}

// Invariant 4: another tenant's (or another agent's) ids are 404 on every route, and
// lists never mix tenants.
func TestOtherTenantsAndAgentsObjectsAre404(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	ada, adaKey := e.user("ada")
	adaAgent, scoutKey := e.agent(ada, "scout")
	_, runnerKey := e.agent(ada, "runner")
	bob, bobKey := e.user("bob")
	_, bobAgentKey := e.agent(bob, "scout")

	sid := e.openSession(scoutKey, "s1")
	e.openSession(runnerKey, "s1")
	e.openSession(bobAgentKey, "s1")
	_, scoutKid, _, _ := auth.Parse(scoutKey)

	for _, key := range []string{bobKey, bobAgentKey, runnerKey} {
		for _, c := range []struct{ method, path, body string }{
			{"GET", "/sessions/" + sid, ""},
			{"GET", "/sessions/" + sid + "/events", ""},
			{"GET", "/sessions/" + sid + "/events?wait=1", ""},
			{"GET", "/sessions/" + sid + "/events", ""},
			{"POST", "/sessions/" + sid + "/events", `{"type":"runtime.step","clientEventId":"e1"}`},
			{"POST", "/sessions/" + sid + "/complete", `{"clientCompletionId":"c1","status":"completed","summary":"x"}`},
			{"POST", "/sessions/" + sid + "/stop", `{"reasonCode":"user_request"}`},
			{"DELETE", "/keys/" + scoutKid, ""},
		} {
			r := e.call(c.method, c.path, key, c.body)
			if r.StatusCode == 403 {
				continue // the route is not for this key's scope at all
			}
			r.want(t, 404, "not_found")
		}
	}
	e.call("GET", "/sessions/not-a-uuid", adaKey, "").want(t, 404, "not_found")
	e.call("POST", "/keys", bobKey, `{"scope":"agent","agentId":"`+adaAgent+`"}`).want(t, 422, "validation_failed")
	// Ada's key still works: Bob could not revoke it.
	e.call("GET", "/sessions/"+sid, scoutKey, "").want(t, 200)

	userIDs := func(key string) map[string]int {
		var page struct {
			Items []struct{ UserID, AgentID string }
		}
		json.Unmarshal(e.call("GET", "/sessions", key, "").want(t, 200).body, &page)
		out := map[string]int{}
		for _, s := range page.Items {
			out[s.UserID]++
			out[s.AgentID]++
		}
		return out
	}
	if got := userIDs(adaKey); got[ada] != 2 || got[bob] != 0 {
		t.Errorf("ada's list: %v", got)
	}
	if got := userIDs(scoutKey); got[ada] != 1 || got[adaAgent] != 1 {
		t.Errorf("scout's list: %v", got)
	}
	if got := userIDs(bobKey); got[bob] != 1 || got[ada] != 0 {
		t.Errorf("bob's list: %v", got)
	}
	var agents, keys struct{ Items []map[string]any }
	json.Unmarshal(e.call("GET", "/agents", bobKey, "").want(t, 200).body, &agents)
	json.Unmarshal(e.call("GET", "/keys", bobKey, "").want(t, 200).body, &keys)
	if len(agents.Items) != 1 || len(keys.Items) != 2 {
		t.Errorf("bob's agents %v, keys %v", agents.Items, keys.Items)
	}
	for _, k := range keys.Items {
		if k["userId"] != bob || k["key"] != nil || k["secretHash"] != nil {
			t.Errorf("bob's key listing: %v", k)
		}
	}
}

// Invariant 11: a replay is byte-identical, and a changed body gets 409.
func TestIdempotentReplaysAreByteIdenticalAndChangedBodiesConflict(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	uid, userKey := e.user("ada")
	_, agentKey := e.agent(uid, "scout")

	body := `{"type":"checkout","description":"buy a map","merchantName":"Maps Inc","targetUrl":"https://maps.example/buy","clientSessionId":"s1"}`
	first := e.call("POST", "/sessions", agentKey, body).want(t, 201)
	again := e.call("POST", "/sessions", agentKey, body).want(t, 200)
	if !bytes.Equal(first.body, again.body) || again.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay differs or is unmarked:\n%s\n%s\n%v", first.body, again.body, again.Header)
	}
	if first.Header.Get("Idempotent-Replayed") != "" {
		t.Error("the first answer says it is replayed")
	}
	changed := strings.Replace(body, "buy a map", "buy two maps", 1)
	e.call("POST", "/sessions", agentKey, changed).want(t, 409, "idempotency_conflict")

	sid := first.decode(t)["id"].(string)
	ev := `{"type":"runtime.page.loaded","clientEventId":"e1","data":{"step":1}}`
	a := e.call("POST", "/sessions/"+sid+"/events", agentKey, ev).want(t, 201)
	b := e.call("POST", "/sessions/"+sid+"/events", agentKey, ev).want(t, 200)
	if !bytes.Equal(a.body, b.body) || b.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("event replay:\n%s\n%s", a.body, b.body)
	}
	e.call("POST", "/sessions/"+sid+"/events", agentKey, strings.Replace(ev, `"step":1`, `"step":2`, 1)).want(t, 409, "idempotency_conflict")

	// The Idempotency-Key header does the same for any other route.
	a = e.call("POST", "/agents", userKey, `{"name":"runner"}`, "Idempotency-Key", "k1").want(t, 201)
	b = e.call("POST", "/agents", userKey, `{"name":"runner"}`, "Idempotency-Key", "k1").want(t, 200)
	if !bytes.Equal(a.body, b.body) || b.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("header replay:\n%s\n%s", a.body, b.body)
	}
	e.call("POST", "/agents", userKey, `{"name":"walker"}`, "Idempotency-Key", "k1").want(t, 409, "idempotency_conflict")

	// Completion repeats answer duplicate; a different one conflicts.
	done := `{"clientCompletionId":"c1","status":"completed","summary":"bought"}`
	if d := e.call("POST", "/sessions/"+sid+"/complete", agentKey, done).want(t, 200).decode(t); d["duplicate"] != false {
		t.Errorf("first completion: %v", d)
	}
	if d := e.call("POST", "/sessions/"+sid+"/complete", agentKey, done).want(t, 200).decode(t); d["duplicate"] != true {
		t.Errorf("repeated completion: %v", d)
	}
	e.call("POST", "/sessions/"+sid+"/complete", agentKey, strings.Replace(done, "bought", "failed", 1)).want(t, 409, "idempotency_conflict")
	e.call("POST", "/sessions/"+sid+"/complete", agentKey, strings.Replace(done, "c1", "c2", 1)).want(t, 409, "session_closed")
	e.call("POST", "/sessions/"+sid+"/events", agentKey, `{"type":"runtime.step","clientEventId":"e2"}`).want(t, 409, "session_closed")
}

func TestKeysAreShownOnceAndWork(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	_, userKey := e.user("ada")
	agent := e.call("POST", "/agents", userKey, `{"name":"scout"}`).want(t, 201).decode(t)
	e.call("POST", "/agents", userKey, `{"name":"scout"}`).want(t, 422, "validation_failed")
	created := e.call("POST", "/keys", userKey, `{"scope":"agent","agentId":"`+agent["id"].(string)+`"}`).want(t, 201)
	token := created.decode(t)["key"].(string)
	if !strings.HasPrefix(token, "sk_agent_") {
		t.Fatalf("key %q", token)
	}
	me := e.call("GET", "/agent/me", token, "").want(t, 200).decode(t)
	if me["id"] != agent["id"] {
		t.Errorf("me %v", me)
	}
	list := e.call("GET", "/keys", userKey, "").want(t, 200)
	secret := token[strings.LastIndexByte(token, '_')+1:]
	if strings.Contains(string(list.body), secret) {
		t.Error("the key list shows a secret")
	}
	var dump string
	e.store.Pool().QueryRow(context.Background(), `SELECT string_agg(t::text, ' ') FROM (SELECT * FROM api_keys) t`).Scan(&dump)
	e.store.Pool().QueryRow(context.Background(), `SELECT coalesce(string_agg(t::text, ' '), '') FROM (SELECT * FROM idempotency_keys) t`).Scan(new(string))
	if strings.Contains(dump, secret) {
		t.Error("the database holds a secret")
	}
	for _, b := range []string{`{"scope":"admin"}`, `{"scope":"agent"}`, `{"scope":"user","agentId":"` + agent["id"].(string) + `"}`, `{"scope":"user","extra":1}`, `[`, ``} {
		e.call("POST", "/keys", userKey, b).want(t, 422, "validation_failed")
	}
	stats := e.call("GET", "/agent/stats", token, "").want(t, 200).decode(t)
	if stats["sessions"] != float64(0) {
		t.Errorf("stats %v", stats)
	}
}

func TestBodiesAreBoundedAndValidated(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	uid, _ := e.user("ada")
	_, agentKey := e.agent(uid, "scout")
	big := `{"type":"checkout","description":"` + strings.Repeat("x", 1<<20) + `","clientSessionId":"s1"}`
	e.call("POST", "/sessions", agentKey, big).want(t, 413, "payload_too_large")
	for _, b := range []string{
		`{`, `not json`, `{"type":"checkout"}`, `{"type":"Checkout!","description":"x","clientSessionId":"s"}`,
		`{"type":"checkout","description":"x","clientSessionId":"s","targetUrl":"ftp://x"}`,
		`{"type":"checkout","description":"x","clientSessionId":"s","unknown":true}`,
		`{"type":"checkout","description":"x","clientSessionId":"s"} {}`,
		`{"type":1,"description":"x","clientSessionId":"s"}`,
	} {
		e.call("POST", "/sessions", agentKey, b).want(t, 422, "validation_failed")
	}
	sid := e.openSession(agentKey, "s1")
	for _, b := range []string{
		`{"type":"request.status_changed","clientEventId":"e1"}`,
		`{"type":"session.completed","clientEventId":"e1"}`,
		`{"type":"runtime.step","clientEventId":""}`,
		`{"type":"runtime.step","clientEventId":"e1","data":[1]}`,
	} {
		e.call("POST", "/sessions/"+sid+"/events", agentKey, b).want(t, 422, "validation_failed")
	}
	e.call("GET", "/sessions?limit=0", agentKey, "").want(t, 400, "invalid_parameter")
	e.call("GET", "/sessions?cursor=zzz", agentKey, "").want(t, 400, "invalid_parameter")
	e.call("GET", "/sessions?page=2", agentKey, "").want(t, 400, "unknown_parameter")
	e.call("GET", "/sessions/"+sid+"/events?wait=31", agentKey, "").want(t, 400, "invalid_parameter")
	if strings.Contains(e.logs.String(), "internal error") {
		t.Errorf("a bad request made an internal error: %s", e.logs.String())
	}
}

func TestSessionsPageNewestFirstWithOpaqueCursors(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	uid, userKey := e.user("ada")
	_, agentKey := e.agent(uid, "scout")
	var want []string
	for i := range 5 {
		want = append([]string{e.openSession(agentKey, fmt.Sprint("s", i))}, want...)
	}
	var got []string
	cursor := ""
	for pages := 0; ; pages++ {
		path := "/sessions?limit=2"
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		var page struct {
			Items      []struct{ ID string }
			NextCursor *string
		}
		json.Unmarshal(e.call("GET", path, userKey, "").want(t, 200).body, &page)
		for _, s := range page.Items {
			got = append(got, s.ID)
		}
		if page.NextCursor == nil {
			break
		}
		cursor = *page.NextCursor
		if pages > 5 {
			t.Fatal("endless pages")
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("pages %v, want %v", got, want)
	}
}

func TestUserStopsASessionAndTheLogRecordsIt(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	uid, userKey := e.user("ada")
	_, agentKey := e.agent(uid, "scout")
	sid := e.openSession(agentKey, "s1")
	e.call("POST", "/sessions/"+sid+"/events", agentKey, `{"type":"runtime.step","clientEventId":"e1","data":{"n":1}}`).want(t, 201)
	s := e.call("POST", "/sessions/"+sid+"/stop", userKey, `{"reasonCode":"user_request"}`).want(t, 200).decode(t)
	if s["status"] != "stopped" || s["lastEventSeq"] != float64(3) {
		t.Errorf("stopped session %v", s)
	}
	e.call("POST", "/sessions/"+sid+"/stop", userKey, `{"reasonCode":"user_request"}`).want(t, 200)
	e.call("POST", "/sessions/"+sid+"/complete", agentKey, `{"clientCompletionId":"c1","status":"completed","summary":""}`).want(t, 409, "session_closed")
	var page struct {
		Items []struct {
			Seq   int64
			Type  string
			Actor string
		}
	}
	json.Unmarshal(e.call("GET", "/sessions/"+sid+"/events", userKey, "").want(t, 200).body, &page)
	got := fmt.Sprint(page.Items)
	if want := "[{1 session.opened agent} {2 runtime.step agent} {3 session.stopped user}]"; got != want {
		t.Errorf("events %s, want %s", got, want)
	}
}

// TestKeysAndAgentsPerUserAreCapped: past the caps, creating a key or an agent is
// 409 quota_exceeded, as the OpenAPI document says, and a revoked key frees a place.
func TestKeysAndAgentsPerUserAreCapped(t *testing.T) {
	t.Parallel()
	doc := openapitest.Load(t, "openapi.json")
	e := newAuthEnv(t, func(a *api.Authenticated) {
		a.Auth = auth.NewService(a.Requests.Store.(auth.Store), auth.Config{Pepper: a.Pepper, MaxKeys: 2, MaxAgents: 1})
	})
	uid, userKey := e.user("ada")       // one key
	agentID, _ := e.agent(uid, "scout") // two keys, one agent
	check := func(r response, method, path string) {
		t.Helper()
		doc.CheckResponse(t, e.request(method, path, userKey, ""), r.Response, r.body)
	}
	r := e.call("POST", "/keys", userKey, `{"scope":"user"}`).want(t, 409, "quota_exceeded")
	check(r, "POST", "/keys")
	e.call("POST", "/keys", userKey, `{"scope":"agent","agentId":"`+agentID+`"}`).want(t, 409, "quota_exceeded")
	r = e.call("POST", "/agents", userKey, `{"name":"runner"}`, "Idempotency-Key", "a1").want(t, 409, "quota_exceeded")
	check(r, "POST", "/agents")
	var keys struct{ Items []auth.Key }
	if err := json.Unmarshal(e.call("GET", "/keys", userKey, "").want(t, 200).body, &keys); err != nil || len(keys.Items) != 2 {
		t.Fatalf("keys after refusals: %d (%v)", len(keys.Items), err)
	}
	e.call("DELETE", "/keys/"+keys.Items[1].KID, userKey, "").want(t, 204)
	e.call("POST", "/keys", userKey, `{"scope":"user"}`).want(t, 201)
	if strings.Contains(e.logs.String(), "level=ERROR") {
		t.Errorf("a refusal was logged as an internal error: %s", e.logs)
	}
}

// A user pauses one of their agents: its keys are refused as revoked until the user
// resumes it. Another user's agent, an agent key, a status that is not one and an id
// that is not one are refused, each with its problem.
func TestAUserPausesAndResumesAnAgent(t *testing.T) {
	t.Parallel()
	doc := openapitest.Load(t, "openapi.json")
	e := newAuthEnv(t)
	uid, userKey := e.user("ada")
	agentID, agentKey := e.agent(uid, "scout")
	other, _ := e.user("grace")
	otherAgent, _ := e.agent(other, "runner")
	check := func(r response, method, path, body string) {
		t.Helper()
		doc.CheckResponse(t, e.request(method, path, userKey, body), r.Response, r.body)
	}
	e.call("GET", "/agent/me", agentKey, "").want(t, 200)
	r := e.call("PATCH", "/agents/"+agentID, userKey, `{"status":"disabled"}`).want(t, 200)
	check(r, "PATCH", "/agents/"+agentID, `{"status":"disabled"}`)
	var a auth.Agent
	if err := json.Unmarshal(r.body, &a); err != nil || a.Status != "disabled" || a.ID != agentID {
		t.Fatalf("paused: %s", r.body)
	}
	e.call("GET", "/agent/me", agentKey, "").want(t, 401, "key_revoked")
	e.call("PATCH", "/agents/"+agentID, userKey, `{"status":"disabled"}`).want(t, 200)
	e.call("PATCH", "/agents/"+agentID, userKey, `{"status":"active"}`).want(t, 200)
	e.call("GET", "/agent/me", agentKey, "").want(t, 200)

	r = e.call("PATCH", "/agents/"+otherAgent, userKey, `{"status":"disabled"}`).want(t, 404, "not_found")
	check(r, "PATCH", "/agents/"+otherAgent, `{"status":"disabled"}`)
	r = e.call("PATCH", "/agents/"+agentID, userKey, `{"status":"paused"}`).want(t, 422, "validation_failed")
	check(r, "PATCH", "/agents/"+agentID, `{"status":"paused"}`)
	e.call("PATCH", "/agents/not-an-id", userKey, `{"status":"disabled"}`).want(t, 404, "not_found")
	e.call("PATCH", "/agents/"+agentID, agentKey, `{"status":"active"}`).want(t, 403, "wrong_key_scope")
	e.call("GET", "/agents/"+agentID, userKey, "").want(t, 405)
}

// everythingGiven is a guard for tests of what happens to values an agent was given
// (blanked before a model, refused where kept): it counts every protected value as
// given to every agent, so that none is an attack signal.
func everythingGiven(a *api.Authenticated) {
	a.Guard = protect.NewService(givenAll{a.Protected.(memory.Protected)}, nil, protect.Config{}, nil)
}

type givenAll struct{ values memory.Protected }

func (g givenAll) Protected(ctx context.Context, userID string) ([]string, error) {
	return g.values.Protected(ctx, userID)
}

func (g givenAll) Given(ctx context.Context, userID, _ string) ([]string, error) {
	return g.values.Protected(ctx, userID)
}
