package api_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// Canary values planted through every input path of memory.
const (
	canaryEmail = "canary.memory@example.org"
	canaryCard  = "4111111111111111"
	canaryCode  = "zebra-quartz-7731"
)

// Invariant 12: a list and a read of memory items hold only the allow-listed keys
// and never a value; a ciphertext moved to another row does not open. If-Match
// guards every change.
func TestMemoryItemsAreValueFreeAndRevisioned(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	uid, userKey := e.user("ada")
	_, agentKey := e.agent(uid, "scout")
	_, otherKey := e.user("bob")

	body := `{"label":"Rain shop login","hosts":["https://Rain.example/checkout"],"askBeforeUse":false,
		"fields":[{"fieldRef":"email","label":"Email","valueType":"email","value":"` + canaryEmail + `"},
		{"fieldRef":"code","label":"Door code","secret":true,"value":"` + canaryCode + `"},
		{"fieldRef":"nick","label":"Nickname"}]}`
	r := e.call("POST", "/memory/items", userKey, body).want(t, 201)
	var item map[string]any
	json.Unmarshal(r.body, &item)
	id := item["id"].(string)
	if r.Header.Get("ETag") != `"r1"` || !strings.HasSuffix(r.Header.Get("Location"), "/memory/items/"+id) {
		t.Errorf("created: ETag %q Location %q", r.Header.Get("ETag"), r.Header.Get("Location"))
	}
	e.call("POST", "/memory/items", agentKey, `{"label":"Card","fields":[{"fieldRef":"number","label":"Card number","valueType":"card_number","value":"`+canaryCard+`"}]}`).want(t, 201)

	allowed := []string{"askBeforeUse", "createdAt", "fields", "hosts", "id", "label", "readOnly", "revision", "updatedAt"}
	fieldKeys := []string{"fieldRef", "hasValue", "label", "secret", "valueType"}
	check := func(it map[string]any) {
		t.Helper()
		var keys []string
		for k := range it {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		if !slices.Equal(keys, allowed) {
			t.Errorf("item keys %v", keys)
		}
		for _, f := range it["fields"].([]any) {
			var fk []string
			for k := range f.(map[string]any) {
				fk = append(fk, k)
			}
			slices.Sort(fk)
			if !slices.Equal(fk, fieldKeys) {
				t.Errorf("field keys %v", fk)
			}
		}
	}
	var page struct{ Items []map[string]any }
	for _, key := range []string{userKey, agentKey} {
		r := e.call("GET", "/memory/items", key, "").want(t, 200)
		json.Unmarshal(r.body, &page)
		if len(page.Items) != 2 {
			t.Fatalf("%d items", len(page.Items))
		}
		for _, it := range page.Items {
			check(it)
		}
		got := e.call("GET", "/memory/items/"+id, key, "").want(t, 200)
		var one map[string]any
		json.Unmarshal(got.body, &one)
		check(one)
		for _, canary := range []string{canaryEmail, canaryCode, canaryCard} {
			if strings.Contains(string(r.body)+string(got.body), canary) {
				t.Errorf("a value came back in a list or read")
			}
		}
	}
	json.Unmarshal(e.call("GET", "/memory/items?url=https://rain.example/x", userKey, "").want(t, 200).body, &page)
	if len(page.Items) != 2 {
		t.Errorf("url scope: %d items (the site's and the every-site card)", len(page.Items))
	}
	json.Unmarshal(e.call("GET", "/memory/items?allSites=true", userKey, "").want(t, 200).body, &page)
	if len(page.Items) != 1 || page.Items[0]["label"] != "Card" {
		t.Errorf("allSites: %v", page.Items)
	}
	e.call("GET", "/memory/items/"+id, otherKey, "").want(t, 404, "not_found")
	json.Unmarshal(e.call("GET", "/memory/items", otherKey, "").want(t, 200).body, &page)
	if len(page.Items) != 0 {
		t.Error("another user's list holds ada's items")
	}

	// Changes name their revision.
	patch := `{"label":"Rain login","fields":[{"fieldRef":"nick","value":"rainy"}]}`
	e.call("PATCH", "/memory/items/"+id, userKey, patch).want(t, 428, "precondition_required")
	e.call("PATCH", "/memory/items/"+id, userKey, patch, "If-Match", `"r7"`).want(t, 412, "precondition_failed")
	e.call("PATCH", "/memory/items/"+id, agentKey, patch, "If-Match", `"r1"`).want(t, 403, "wrong_key_scope")
	r = e.call("PATCH", "/memory/items/"+id, userKey, patch, "If-Match", `"r1"`).want(t, 200)
	if r.Header.Get("ETag") != `"r2"` || !strings.Contains(string(r.body), `"label":"Rain login"`) {
		t.Errorf("patched: %s %s", r.Header.Get("ETag"), r.body)
	}
	e.call("PATCH", "/memory/items/"+id, userKey, patch, "If-Match", `"r1"`).want(t, 412, "precondition_failed")
	e.call("PATCH", "/memory/items/"+id, otherKey, patch, "If-Match", `"r2"`).want(t, 404)

	// The database holds ciphertexts only, each bound to its row.
	ctx := context.Background()
	var dump string
	e.store.Pool().QueryRow(ctx, `SELECT string_agg(row_to_json(f)::text, ' ') FROM memory_fields f`).Scan(&dump)
	for _, canary := range []string{canaryEmail, canaryCode, canaryCard, "rainy"} {
		if strings.Contains(dump, canary) {
			t.Errorf("a plaintext value in memory_fields")
		}
	}
	sid := e.openSession(agentKey, "moved")
	code := handlesIn(t, e, agentKey, sid, "")["code"]
	e.raise(agentKey, sid, "use", `{"kind":"ask_before_use","fields":[{"key":"code","label":"Door code","handle":"`+code+`"}],"params":{"purpose":"to open the door"}}`)
	if _, err := e.store.Pool().Exec(ctx, `UPDATE memory_fields SET (key_id, nonce, ciphertext) =
		(SELECT key_id, nonce, ciphertext FROM memory_fields WHERE item_id = $1 AND field_ref = 'email')
		WHERE item_id = $1 AND field_ref = 'code'`, id); err != nil {
		t.Fatal(err)
	}
	// The moved ciphertext does not open: materialize fails rather than answer the
	// email as the code (its body, checked for protected values like every body,
	// already fails to be), and what needs the protected values fails closed.
	e.call("POST", "/sessions/"+sid+"/materialize", agentKey, `{"handles":["`+code+`"],"purpose":"open the door"}`).want(t, 503, "redaction_unavailable")
	e.call("POST", "/sessions/"+sid+"/events", agentKey, `{"type":"runtime.step","clientEventId":"e1","data":{"note":"door opened"}}`).want(t, 503, "redaction_unavailable")

	// Archiving forgets the values.
	e.call("DELETE", "/memory/items/"+id, userKey, "", "If-Match", `"r1"`).want(t, 412)
	e.call("DELETE", "/memory/items/"+id, userKey, "", "If-Match", `"r2"`).want(t, 204)
	e.call("GET", "/memory/items/"+id, userKey, "").want(t, 404)
	var left int
	e.store.Pool().QueryRow(ctx, `SELECT count(*) FROM memory_fields WHERE item_id = $1 AND ciphertext IS NOT NULL`, id).Scan(&left)
	if left != 0 {
		t.Errorf("%d values left after archiving", left)
	}
}

// handlesIn reads the session's memory catalog for url and returns its handles by
// field ref.
func handlesIn(t *testing.T, e *authEnv, agentKey, sid, url string) map[string]string {
	t.Helper()
	path := "/sessions/" + sid + "/memory/catalog"
	if url != "" {
		path += "?url=" + url
	}
	var c struct {
		Handles []struct{ Handle, FieldRef string }
	}
	json.Unmarshal(e.call("GET", path, agentKey, "").want(t, 200).body, &c)
	out := map[string]string{}
	for _, h := range c.Handles {
		out[h.FieldRef] = h.Handle
	}
	return out
}

// Invariant 7: materialize answers values only to the agent that owns an open
// session, for handles of that session covered by a fulfilled approval, card data
// never without a payment approval; every success writes exactly one audit row, and
// no value reaches an event, an audit row or an idempotency row.
func TestMaterializeNeedsTheSessionItsHandleAndAnApproval(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	uid, userKey := e.user("ada")
	_, agentKey := e.agent(uid, "scout")
	_, otherAgent := e.agent(uid, "runner")
	e.call("POST", "/memory/items", userKey, `{"label":"Rain login","hosts":["rain.example"],"askBeforeUse":false,
		"fields":[{"fieldRef":"email","label":"Email","valueType":"email","value":"`+canaryEmail+`"}]}`).want(t, 201)
	e.call("POST", "/memory/items", userKey, `{"label":"Door","fields":[{"fieldRef":"code","label":"Door code","secret":true,"value":"`+canaryCode+`"}]}`).want(t, 201)
	e.call("POST", "/memory/items", userKey, `{"label":"Card","askBeforeUse":false,"fields":[{"fieldRef":"number","label":"Card number","valueType":"card_number","value":"`+canaryCard+`"}]}`).want(t, 201)

	sid := e.openSession(agentKey, "s1")
	var cat struct {
		Handles     []struct{ Handle, FieldRef string }
		Unavailable []struct{ FieldRef, Reason string }
	}
	json.Unmarshal(e.call("GET", "/sessions/"+sid+"/memory/catalog?url=https://rain.example/pay", agentKey, "").want(t, 200).body, &cat)
	if len(cat.Handles) != 2 || len(cat.Unavailable) != 1 || cat.Unavailable[0].Reason != "payment_approval_required" {
		t.Fatalf("catalog %+v", cat)
	}
	h := handlesIn(t, e, agentKey, sid, "https://rain.example/pay")
	if again := handlesIn(t, e, agentKey, sid, "rain.example"); again["email"] != h["email"] {
		t.Error("the catalog gave a second handle for the same field")
	}
	e.call("GET", "/sessions/"+sid+"/memory/catalog", userKey, "").want(t, 403)
	e.call("GET", "/sessions/"+sid+"/memory/catalog", otherAgent, "").want(t, 404)

	mat := func(key, sid, purpose string, handles ...string) response {
		b, _ := json.Marshal(map[string]any{"handles": handles, "purpose": purpose})
		return e.call("POST", "/sessions/"+sid+"/materialize", key, string(b))
	}
	audits := func() int {
		var n int
		e.store.Pool().QueryRow(context.Background(), `SELECT count(*) FROM materializations WHERE session_id = $1`, sid).Scan(&n)
		return n
	}
	// Not yet approved: nothing is released, and the error says nothing.
	r := mat(agentKey, sid, "log in", h["email"], h["code"]).want(t, 403, "approval_required")
	var p map[string]any
	json.Unmarshal(r.body, &p)
	if p["detail"] != nil && p["detail"] != "" {
		t.Errorf("a materialize error carries detail: %s", r.body)
	}
	mat(userKey, sid, "log in", h["email"]).want(t, 403, "wrong_key_scope")
	mat(otherAgent, sid, "log in", h["email"]).want(t, 404)

	// An item that does not ask before use is approved at once; one that asks waits.
	auto := e.raise(agentKey, sid, "use-email", `{"kind":"ask_before_use","fields":[{"key":"email","label":"Email","handle":"`+h["email"]+`"}],"params":{"purpose":"log in"}}`)
	if auto["status"] != "fulfilled" || auto["resolutionPath"] != "auto" {
		t.Fatalf("auto path: %v", auto)
	}
	ask := e.raise(agentKey, sid, "use-code", `{"kind":"ask_before_use","fields":[{"key":"code","label":"Door code","handle":"`+h["code"]+`"}],"params":{"purpose":"open the door"}}`)
	if ask["status"] != "waiting_user" {
		t.Fatalf("ask path: %v", ask)
	}
	e.call("POST", "/sessions/"+sid+"/requests", agentKey, `{"clientRequestId":"bad","kind":"ask_before_use","fields":[{"key":"x","label":"X","handle":"wh_notfromthissessionatall0000"}]}`).want(t, 422)

	r = mat(agentKey, sid, "log in", h["email"], h["code"], "wh_unknownhandleunknownhandle00").want(t, 200)
	var out struct {
		Values []struct {
			Handle, Status string
			Value          *string
		}
	}
	json.Unmarshal(r.body, &out)
	if r.Header.Get("Cache-Control") != "no-store" || len(out.Values) != 3 ||
		out.Values[0].Status != "released" || out.Values[0].Value == nil || *out.Values[0].Value != canaryEmail ||
		out.Values[1].Status != "approval_required" || out.Values[1].Value != nil || out.Values[2].Status != "not_found" {
		t.Fatalf("materialized: %s", r.body)
	}
	if audits() != 1 {
		t.Errorf("%d audit rows after one success", audits())
	}
	e.call("POST", "/sessions/"+sid+"/requests/"+ask["id"].(string)+"/decision", userKey, `{"decision":"approve"}`).want(t, 200)
	r = mat(agentKey, sid, "open the door", h["code"]).want(t, 200)
	if !strings.Contains(string(r.body), canaryCode) || audits() != 2 {
		t.Errorf("after approval: %s, %d audits", r.body, audits())
	}
	// Never replayed, even with an Idempotency-Key.
	mat(agentKey, sid, "open the door", h["code"]).want(t, 200)
	if audits() != 3 {
		t.Errorf("%d audit rows after three successes", audits())
	}

	// Another session's handle is not this one's; a closed session releases nothing.
	s2 := e.openSession(agentKey, "s2")
	mat(agentKey, s2, "log in", h["email"]).want(t, 403, "approval_required")
	e.call("POST", "/sessions/"+sid+"/complete", agentKey, `{"clientCompletionId":"c","status":"completed","summary":"done"}`).want(t, 200)
	mat(agentKey, sid, "log in", h["email"]).want(t, 409, "session_closed")

	// No value anywhere but the materialize answers.
	ctx := context.Background()
	for _, q := range []string{
		`SELECT coalesce(string_agg(data::text, ' '), '') FROM session_events`,
		`SELECT coalesce(string_agg(row_to_json(m)::text, ' '), '') FROM materializations m`,
		`SELECT coalesce(string_agg(encode(response, 'escape'), ' '), '') FROM idempotency_keys WHERE response IS NOT NULL`,
		`SELECT coalesce(string_agg(row_to_json(r)::text, ' '), '') FROM requests r`,
		`SELECT coalesce(string_agg(data::text, ' '), '') FROM request_artifacts`,
	} {
		var dump string
		if err := e.store.Pool().QueryRow(ctx, q).Scan(&dump); err != nil && err != pgx.ErrNoRows {
			t.Fatal(err)
		}
		for _, canary := range []string{canaryEmail, canaryCode, canaryCard} {
			if strings.Contains(dump, canary) {
				t.Errorf("%s holds a canary", q)
			}
		}
	}
	if strings.Contains(e.logs.String(), canaryEmail) || strings.Contains(e.logs.String(), canaryCode) {
		t.Error("a canary in the log")
	}
}

// A provide_missing approval with save keeps the values as an item for the site:
// a later session finds them in its catalog, and, as saved to ask before use,
// needs one approval before materialize.
func TestProvidedValuesSavedForNextTime(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	uid, userKey := e.user("ada")
	_, agentKey := e.agent(uid, "scout")
	sid := e.openSession(agentKey, "s1")
	rid := e.raise(agentKey, sid, "r1", `{"kind":"provide_missing","context":{"url":"https://rain.example/checkout","merchantName":"Rain"},
		"fields":[{"key":"email","label":"Email","type":"email"}]}`)["id"].(string)
	e.call("POST", "/sessions/"+sid+"/requests/"+rid+"/decision", userKey,
		`{"decision":"approve","values":{"email":"`+canaryEmail+`"},"save":true,"askBeforeUse":false}`).want(t, 200)

	var page struct{ Items []map[string]any }
	json.Unmarshal(e.call("GET", "/memory/items?url=rain.example", userKey, "").want(t, 200).body, &page)
	if len(page.Items) != 1 || page.Items[0]["label"] != "Rain" || page.Items[0]["askBeforeUse"] != false {
		t.Fatalf("saved: %v", page.Items)
	}
	s2 := e.openSession(agentKey, "s2")
	h := handlesIn(t, e, agentKey, s2, "https://rain.example/checkout")
	if h["email"] == "" {
		t.Fatal("the saved value is not in the next session's catalog")
	}
	e.raise(agentKey, s2, "use", `{"kind":"ask_before_use","fields":[{"key":"email","label":"Email","handle":"`+h["email"]+`"}]}`)
	r := e.call("POST", "/sessions/"+s2+"/materialize", agentKey, `{"handles":["`+h["email"]+`"],"purpose":"receipt"}`).want(t, 200)
	if !strings.Contains(string(r.body), canaryEmail) {
		t.Errorf("materialized %s", r.body)
	}
}

// Resolution matches wanted fields against the user's saved values for the target's
// site, as this session's handles, and says what is missing and what comes next.
func TestResolveFindsSavedValuesAsHandles(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	uid, userKey := e.user("ada")
	_, agentKey := e.agent(uid, "scout")
	e.call("POST", "/memory/items", userKey, `{"label":"Rain login","hosts":["rain.example"],"askBeforeUse":false,
		"fields":[{"fieldRef":"email","label":"Email","valueType":"email","value":"`+canaryEmail+`"}]}`).want(t, 201)
	e.call("POST", "/memory/items", userKey, `{"label":"Home","fields":[{"fieldRef":"addr","label":"Street address","valueType":"address","value":"1 Canary Row"}]}`).want(t, 201)
	e.call("POST", "/memory/items", userKey, `{"label":"Card","fields":[{"fieldRef":"card","label":"Card number","valueType":"card_number","value":"`+canaryCard+`"}]}`).want(t, 201)
	sid := e.openSession(agentKey, "s1")

	var res struct {
		Match     string
		Providers []any
		Fields    []struct {
			Key        string
			Candidates []struct {
				Handle, ItemLabel string
				RequiresApproval  bool
			}
		}
		Missing    []string
		NextAction string
	}
	r := e.call("POST", "/sessions/"+sid+"/resolve", agentKey, `{"targetUrl":"https://rain.example/checkout",
		"fields":[{"key":"email"},{"key":"shipping","label":"street ADDRESS","type":"address"},{"key":"card"},{"key":"phone","type":"phone"}]}`).want(t, 200)
	json.Unmarshal(r.body, &res)
	if strings.Contains(string(r.body), canaryEmail) || strings.Contains(string(r.body), canaryCard) || strings.Contains(string(r.body), "Canary Row") {
		t.Fatalf("a value in a resolution: %s", r.body)
	}
	if res.Match != "none" || len(res.Providers) != 0 || len(res.Fields) != 4 || res.NextAction != "provide_missing" ||
		strings.Join(res.Missing, ",") != "card,phone" {
		t.Fatalf("resolution: %s", r.body)
	}
	email, addr := res.Fields[0].Candidates, res.Fields[1].Candidates
	if len(email) != 1 || email[0].RequiresApproval || len(addr) != 1 || !addr[0].RequiresApproval || addr[0].ItemLabel != "Home" {
		t.Fatalf("candidates: %s", r.body)
	}
	if h := handlesIn(t, e, agentKey, sid, "rain.example"); h["email"] != email[0].Handle || h["addr"] != addr[0].Handle {
		t.Error("resolution handles are not the session catalog's")
	}
	r = e.call("POST", "/sessions/"+sid+"/resolve", agentKey, `{"targetUrl":"https://rain.example/","fields":[{"key":"email"}]}`).want(t, 200)
	json.Unmarshal(r.body, &res)
	if res.NextAction != "ask_before_use" || len(res.Missing) != 0 {
		t.Errorf("all found: %s", r.body)
	}
	e.call("POST", "/sessions/"+sid+"/resolve", agentKey, `{"fields":[{"key":"email"}]}`).want(t, 422)
	e.call("POST", "/sessions/"+sid+"/resolve", userKey, `{"targetUrl":"https://rain.example/"}`).want(t, 403)
}

// choose_candidate: the user picks which of several saved values fills a field; the
// chosen handle, and only it, is covered for materialize.
func TestChooseCandidateCoversOnlyTheChosenValue(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	uid, userKey := e.user("ada")
	_, agentKey := e.agent(uid, "scout")
	e.call("POST", "/memory/items", userKey, `{"label":"Home","fields":[{"fieldRef":"home","label":"Address","valueType":"address","value":"1 Canary Row"}]}`).want(t, 201)
	e.call("POST", "/memory/items", userKey, `{"label":"Work","fields":[{"fieldRef":"work","label":"Address","valueType":"address","value":"2 Quartz Lane"}]}`).want(t, 201)
	sid := e.openSession(agentKey, "s1")
	h := handlesIn(t, e, agentKey, sid, "")
	req := e.raise(agentKey, sid, "pick", `{"kind":"choose_candidate","fields":[{"key":"shipping","label":"Shipping address","type":"address"}],
		"options":[{"id":"`+h["home"]+`","label":"Home"},{"id":"`+h["work"]+`","label":"Work"}]}`)
	if req["status"] != "waiting_user" {
		t.Fatalf("choose_candidate: %v", req)
	}
	e.call("POST", "/sessions/"+sid+"/requests", agentKey, `{"clientRequestId":"bad","kind":"choose_candidate","fields":[{"key":"x","label":"X"}],
		"options":[{"id":"wh_notfromthissessionatall0000","label":"A"},{"id":"`+h["home"]+`","label":"B"}]}`).want(t, 422)
	e.call("POST", "/sessions/"+sid+"/requests/"+req["id"].(string)+"/decision", userKey, `{"decision":"approve","selectedChoiceId":"`+h["work"]+`"}`).want(t, 200)
	r := e.call("POST", "/sessions/"+sid+"/materialize", agentKey, `{"handles":["`+h["work"]+`","`+h["home"]+`"],"purpose":"ship"}`).want(t, 200)
	if !strings.Contains(string(r.body), "2 Quartz Lane") || strings.Contains(string(r.body), "Canary Row") {
		t.Errorf("materialized %s", r.body)
	}
}

// noCanaryAnywhere fails if any table of the database, read as text (a plaintext
// dump: bytea as hex), or the log holds a canary.
func noCanaryAnywhere(t *testing.T, e *authEnv, canaries ...string) {
	t.Helper()
	ctx := context.Background()
	rows, err := e.store.Pool().Query(ctx, `SELECT tablename FROM pg_tables WHERE schemaname = 'public'`)
	if err != nil {
		t.Fatal(err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	for _, table := range tables {
		var dump string
		if err := e.store.Pool().QueryRow(ctx, `SELECT coalesce(string_agg(x::text, ' '), '') FROM `+pgx.Identifier{table}.Sanitize()+` x`).Scan(&dump); err != nil {
			t.Fatal(err)
		}
		for _, c := range canaries {
			if strings.Contains(strings.ToLower(dump), strings.ToLower(c)) {
				t.Errorf("table %s holds a canary in the clear", table)
			}
		}
	}
	// Binary columns (stored answers, ciphertexts) read as bytes, not hex.
	rows, err = e.store.Pool().Query(ctx, `SELECT table_name, column_name FROM information_schema.columns
		WHERE table_schema = 'public' AND data_type = 'bytea'`)
	if err != nil {
		t.Fatal(err)
	}
	cols, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) ([2]string, error) {
		var c [2]string
		return c, r.Scan(&c[0], &c[1])
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cols {
		var raw []byte
		q := `SELECT coalesce(string_agg(` + pgx.Identifier{c[1]}.Sanitize() + `, '\x00'::bytea), ''::bytea) FROM ` + pgx.Identifier{c[0]}.Sanitize()
		if err := e.store.Pool().QueryRow(ctx, q).Scan(&raw); err != nil {
			t.Fatal(err)
		}
		for _, canary := range canaries {
			if strings.Contains(string(raw), canary) {
				t.Errorf("%s.%s holds a canary in the clear", c[0], c[1])
			}
		}
	}
	for _, c := range canaries {
		if strings.Contains(e.logs.String(), c) {
			t.Errorf("the log holds a canary")
		}
	}
}

// Invariant 1 for every way a value comes in: saved through the API (by a user and
// by an agent), provided through a request, saved from one: after the whole flow
// (catalog, resolve, requests, approvals, claims, materialize, errors), no table
// holds a canary in the clear and neither does the log.
func TestNoValueIsStoredInTheClearByAnyPath(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	uid, userKey := e.user("ada")
	_, agentKey := e.agent(uid, "scout")
	const provided, saved, byAgent = "canary-provided-5150", "canary-saved-8675", "canary-agent-3090"
	e.call("POST", "/memory/items", userKey, `{"label":"Door","hosts":["rain.example"],"fields":[{"fieldRef":"code","label":"Code","secret":true,"value":"`+saved+`"}]}`,
		"Idempotency-Key", "i1").want(t, 201)
	e.call("POST", "/memory/items", agentKey, `{"label":"Learned","askBeforeUse":false,"fields":[{"fieldRef":"pin","label":"Pin","value":"`+byAgent+`"}]}`).want(t, 201)
	sid := e.openSession(agentKey, "s1")
	rid := e.raise(agentKey, sid, "r1", `{"kind":"provide_missing","context":{"url":"https://rain.example/"},"fields":[{"key":"email","label":"Email","type":"email"}]}`)["id"].(string)
	e.call("POST", "/sessions/"+sid+"/requests/"+rid+"/decision", userKey, `{"decision":"approve","values":{"email":"`+provided+`"},"save":true}`,
		"Idempotency-Key", "d1").want(t, 200)
	var claim struct {
		Reference struct{ Handles []struct{ Handle string } }
	}
	json.Unmarshal(e.call("POST", "/sessions/"+sid+"/requests/"+rid+"/claim", agentKey, "").want(t, 200).body, &claim)
	h := handlesIn(t, e, agentKey, sid, "https://rain.example/")
	e.call("POST", "/sessions/"+sid+"/resolve", agentKey, `{"targetUrl":"https://rain.example/","fields":[{"key":"code"},{"key":"email"}]}`).want(t, 200)
	use := e.raise(agentKey, sid, "u1", `{"kind":"ask_before_use","fields":[{"key":"code","label":"Code","handle":"`+h["code"]+`"},{"key":"pin","label":"Pin","handle":"`+h["pin"]+`"}]}`)
	e.call("POST", "/sessions/"+sid+"/requests/"+use["id"].(string)+"/decision", userKey, `{"decision":"approve"}`).want(t, 200)
	r := e.call("POST", "/sessions/"+sid+"/materialize", agentKey, `{"handles":["`+h["code"]+`","`+h["pin"]+`","`+claim.Reference.Handles[0].Handle+`","`+h["email"]+`"],"purpose":"check"}`).want(t, 200)
	for _, c := range []string{saved, byAgent, provided} {
		if !strings.Contains(string(r.body), c) {
			t.Errorf("materialize lacks a value it should release: %s", r.body)
		}
	}
	// The item saved from the request asks before use: its catalog handle is not
	// covered by the request that provided the value.
	if !strings.HasSuffix(string(r.body), `{"handle":"`+h["email"]+`","status":"approval_required"}]}`) {
		t.Errorf("the saved item's handle was released without an approval: %s", r.body)
	}
	e.call("POST", "/sessions/"+sid+"/materialize", agentKey, `{"handles":["`+saved+`"],"purpose":"`+provided+`"}`).want(t, 422)
	e.call("GET", "/memory/items", userKey, "").want(t, 200)
	e.call("GET", "/sessions/"+sid+"/events?limit=200", userKey, "").want(t, 200)
	e.call("GET", "/sessions/"+sid+"/requests", userKey, "").want(t, 200)
	noCanaryAnywhere(t, e, provided, saved, byAgent)
	// No answer but materialize's holds a value: not a list, a read, an event page,
	// a claim, a resolution or an error.
	for _, a := range e.answers {
		if strings.HasSuffix(a.path, "/materialize") {
			continue
		}
		for _, c := range []string{saved, byAgent, provided} {
			if strings.Contains(a.body, c) {
				t.Errorf("the answer to %s holds a value", a.path)
			}
		}
	}
}
