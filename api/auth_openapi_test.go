package api_test

import (
	"context"
	"strings"
	"testing"

	"github.com/waystation/waystation/api/openapitest"
	"github.com/waystation/waystation/internal/auth"
)

// TestAuthenticatedResponsesMatchTheOpenAPIDocument sends every route of the
// authenticated API, answering and failing, through the real router and validates
// each response against the served document.
func TestAuthenticatedResponsesMatchTheOpenAPIDocument(t *testing.T) {
	t.Parallel()
	doc := openapitest.Load(t, "openapi.json")
	e := newAuthEnv(t)
	uid, userKey := e.user("ada")
	agentID, agentKey := e.agent(uid, "scout")
	_, bobKey := e.user("bob")
	_, spareKey := e.agent(uid, "spare")
	_, spareKid, _, _ := auth.Parse(spareKey)

	sid := e.openSession(agentKey, "s0")
	open2 := e.openSession(agentKey, "s2")
	created := `{"type":"checkout","description":"buy","merchantName":"Maps","targetUrl":"https://maps.example/","clientSessionId":"s1"}`
	missing := "/sessions/00000000-0000-4000-8000-000000000000"

	type c struct{ method, path, key, body string }
	var header []string
	cases := []c{
		{"GET", "/agent/me", agentKey, ""},
		{"GET", "/agent/me", "", ""},
		{"GET", "/agent/me", "sk_agent_nope", ""},
		{"GET", "/agent/me", userKey, ""},
		{"GET", "/agent/stats", agentKey, ""},
		{"GET", "/agents", userKey, ""},
		{"POST", "/agents", userKey, `{"name":"runner"}`},
		{"POST", "/agents", userKey, `{"name":""}`},
		{"POST", "/agents", agentKey, `{"name":"x"}`},
		{"GET", "/keys", userKey, ""},
		{"POST", "/keys", userKey, `{"scope":"agent","agentId":"` + agentID + `"}`},
		{"POST", "/keys", userKey, `{"scope":"nope"}`},
		{"DELETE", "/keys/" + spareKid, bobKey, ""},
		{"DELETE", "/keys/" + spareKid, userKey, ""},
		{"GET", "/agent/me", spareKey, ""},
		{"POST", "/sessions", agentKey, created},
		{"POST", "/sessions", agentKey, created},
		{"POST", "/sessions", agentKey, strings.Replace(created, "buy", "sell", 1)},
		{"POST", "/sessions", agentKey, `{`},
		{"POST", "/sessions", agentKey, `{"type":"checkout","description":"` + strings.Repeat("x", 1<<20) + `","clientSessionId":"big"}`},
		{"POST", "/sessions", userKey, created},
		{"GET", "/sessions", agentKey, ""},
		{"GET", "/sessions?limit=1", userKey, ""},
		{"GET", "/sessions?limit=500", userKey, ""},
		{"GET", "/sessions?other=1", userKey, ""},
		{"GET", "/sessions/" + sid, userKey, ""},
		{"GET", "/sessions/" + sid, bobKey, ""},
		{"GET", missing, agentKey, ""},
		{"POST", "/sessions/" + sid + "/events", agentKey, `{"type":"runtime.step","clientEventId":"e1","data":{"n":1}}`},
		{"POST", "/sessions/" + sid + "/events", agentKey, `{"type":"runtime.step","clientEventId":"e1","data":{"n":1}}`},
		{"POST", "/sessions/" + sid + "/events", agentKey, `{"type":"runtime.step","clientEventId":"e1","data":{"n":2}}`},
		{"POST", "/sessions/" + sid + "/events", agentKey, `{"type":"memory.read","clientEventId":"e2"}`},
		{"POST", missing + "/events", agentKey, `{"type":"runtime.step","clientEventId":"e1"}`},
		{"GET", "/sessions/" + sid + "/events", userKey, ""},
		{"GET", "/sessions/" + sid + "/events?after=1&limit=1", agentKey, ""},
		{"GET", "/sessions/" + sid + "/events?after=x", agentKey, ""},
		{"GET", missing + "/events", agentKey, ""},
		{"POST", "/sessions/" + sid + "/complete", agentKey, `{"clientCompletionId":"c1","status":"completed","summary":"done"}`},
		{"POST", "/sessions/" + sid + "/complete", agentKey, `{"clientCompletionId":"c1","status":"completed","summary":"done"}`},
		{"POST", "/sessions/" + sid + "/complete", agentKey, `{"clientCompletionId":"c2","status":"completed","summary":"done"}`},
		{"POST", "/sessions/" + sid + "/complete", agentKey, `{"clientCompletionId":"c3","status":"great","summary":""}`},
		{"POST", "/sessions/" + sid + "/events", agentKey, `{"type":"runtime.step","clientEventId":"late"}`},
		{"POST", "/sessions/" + open2 + "/stop", userKey, `{"reasonCode":"user_request"}`},
		{"POST", "/sessions/" + open2 + "/stop", agentKey, `{"reasonCode":"user_request"}`},
		{"POST", "/sessions/" + sid + "/stop", userKey, `{"reasonCode":"user_request"}`},
		{"POST", "/agent/keys/current/revoke", agentKey, ""},
		{"GET", "/agent/me", agentKey, ""},
	}
	for _, tc := range cases {
		r := e.call(tc.method, tc.path, tc.key, tc.body, header...)
		doc.CheckResponse(t, e.request(tc.method, tc.path, tc.key, ""), r.Response, r.body)
		if r.StatusCode >= 500 {
			t.Errorf("%s %s: %d %s", tc.method, tc.path, r.StatusCode, r.body)
		}
	}
	// Idempotency-Key replays are documented too.
	for range 2 {
		r := e.call("POST", "/agents", userKey, `{"name":"walker"}`, "Idempotency-Key", "k1")
		doc.CheckResponse(t, e.request("POST", "/agents", userKey, ""), r.Response, r.body)
	}
}

// TestRequestResponsesMatchTheOpenAPIDocument does the same for the request routes,
// through every status they answer.
func TestRequestResponsesMatchTheOpenAPIDocument(t *testing.T) {
	t.Parallel()
	doc := openapitest.Load(t, "openapi.json")
	e := newAuthEnv(t)
	uid, userKey := e.user("ada")
	_, agentKey := e.agent(uid, "scout")
	sid := e.openSession(agentKey, "s0")
	rs := "/sessions/" + sid + "/requests"
	provide := e.raise(agentKey, sid, "p", provideBody)["id"].(string)
	choice := e.raise(agentKey, sid, "c", choiceBody)["id"].(string)
	confirm := e.raise(agentKey, sid, "f", confirmBody)["id"].(string)
	expired := e.raise(agentKey, sid, "x", askBody)["id"].(string)
	if _, err := e.store.Pool().Exec(context.Background(), `UPDATE requests SET expires_at = now() WHERE id = $1`, expired); err != nil {
		t.Fatal(err)
	}

	type c struct{ method, path, key, body string }
	for _, tc := range []c{
		{"POST", rs, agentKey, `{"clientRequestId":"n",` + confirmBody[1:]},
		{"POST", rs, agentKey, `{"clientRequestId":"n",` + confirmBody[1:]},
		{"POST", rs, agentKey, `{"clientRequestId":"n",` + choiceBody[1:]},
		{"POST", rs, agentKey, `{"clientRequestId":"v","kind":"confirm"}`},
		{"POST", rs, userKey, `{"clientRequestId":"u",` + confirmBody[1:]},
		{"GET", rs, agentKey, ""},
		{"GET", rs + "?limit=1", userKey, ""},
		{"GET", rs + "?limit=0", userKey, ""},
		{"GET", rs + "/" + provide, agentKey, ""},
		{"GET", rs + "/" + provide + "?wait=1", agentKey, ""},
		{"GET", rs + "/" + provide + "?wait=99", agentKey, ""},
		{"GET", rs + "/00000000-0000-4000-8000-000000000000", agentKey, ""},
		{"POST", rs + "/" + provide + "/decision", agentKey, `{"decision":"approve"}`},
		{"POST", rs + "/" + provide + "/decision", userKey, `{"decision":"approve"}`},
		{"POST", rs + "/" + provide + "/decision", userKey, `{"decision":"approve","values":{"email":"a@b.example","card":"4242"}}`},
		{"POST", rs + "/" + provide + "/claim", agentKey, ""},
		{"POST", rs + "/" + provide + "/claim", agentKey, ""},
		{"POST", rs + "/" + choice + "/decision", userKey, `{"decision":"approve","selectedChoiceId":"fast"}`},
		{"POST", rs + "/" + choice + "/claim", agentKey, ""},
		{"POST", rs + "/" + confirm + "/claim", agentKey, ""},
		{"POST", rs + "/" + confirm + "/decision", userKey, `{"decision":"approve"}`},
		{"POST", rs + "/" + confirm + "/claim", agentKey, ""},
		{"POST", rs + "/" + confirm + "/cancel", agentKey, ""},
		{"POST", rs + "/" + expired + "/decision", userKey, `{"decision":"approve"}`},
		{"POST", rs + "/" + expired + "/cancel", agentKey, ""},
		{"POST", rs + "/" + expired + "/claim", agentKey, ""},
		{"POST", rs + "/" + expired + "/claim", userKey, ""},
		{"POST", rs, agentKey, `{"clientRequestId":"w",` + choiceBody[1:]},
	} {
		r := e.call(tc.method, tc.path, tc.key, tc.body)
		doc.CheckResponse(t, e.request(tc.method, tc.path, tc.key, ""), r.Response, r.body)
		if r.StatusCode >= 500 {
			t.Errorf("%s %s: %d %s", tc.method, tc.path, r.StatusCode, r.body)
		}
	}
	w := e.raise(agentKey, sid, "cancel-me", choiceBody)["id"].(string)
	r := e.call("POST", rs+"/"+w+"/cancel", agentKey, "")
	doc.CheckResponse(t, e.request("POST", rs+"/"+w+"/cancel", agentKey, ""), r.Response, r.body)
}
