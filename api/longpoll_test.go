package api_test

import (
	"strings"
	"testing"
	"time"
)

// A long poll outlives its authentication: a key revoked, or its agent paused, while
// it waits must not be answered the request once the person decides. The route
// answers 401 key_revoked as the key's next call would, and wait_request the same
// failure.
func TestARequestWaitEndsWhenItsKeyIsRevokedOrItsAgentPaused(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	uid, userKey := e.user("ada")
	cases := []struct {
		name string
		cut  func(agentID, agentKey string)
	}{
		{"revoked", func(_, agentKey string) {
			e.call("POST", "/agent/keys/current/revoke", agentKey, "").want(t, 200)
		}},
		{"paused", func(agentID, _ string) {
			e.call("PATCH", "/agents/"+agentID, userKey, `{"status":"disabled"}`).want(t, 200)
		}},
	}
	for _, c := range cases {
		for _, via := range []string{"route", "wait_request"} {
			agentID, agentKey := e.agent(uid, c.name+"-"+via)
			sid := e.openSession(agentKey, "s-"+via)
			rid := e.raise(agentKey, sid, "r1", choiceBody)["id"].(string)
			got := make(chan string, 1)
			go func() {
				if via == "route" {
					r := e.call("GET", "/sessions/"+sid+"/requests/"+rid+"?wait=30", agentKey, "")
					got <- r.Status + " " + string(r.body)
					return
				}
				out, failure := e.toolCall(t, agentKey, "wait_request", `{"sessionId":"`+sid+`","requestId":"`+rid+`","waitSeconds":30}`)
				if failure != "" {
					got <- failure
					return
				}
				got <- "answered " + out["status"].(string)
			}()
			time.Sleep(300 * time.Millisecond)
			c.cut(agentID, agentKey)
			e.call("POST", "/sessions/"+sid+"/requests/"+rid+"/decision", userKey, `{"decision":"approve","selectedChoiceId":"fast"}`).want(t, 200)
			var answer string
			select {
			case answer = <-got:
			case <-time.After(20 * time.Second):
				t.Fatalf("%s, %s: the wait did not end", c.name, via)
			}
			if !strings.Contains(answer, "key_revoked") || strings.Contains(answer, "fulfilled") {
				t.Errorf("%s key, %s: the wait answered %q", c.name, via, answer)
			}
		}
	}
}
