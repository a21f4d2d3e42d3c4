package api_test

import (
	"encoding/json"
	"testing"

	"github.com/waystation/waystation/api"
	"github.com/waystation/waystation/internal/session"
)

// An agent's open sessions and a session's events are capped: past the cap the
// agent's write is 409 quota_exceeded and nothing is written, a retry of what was
// written before still replays, the refusal is not remembered under its client id
// (the same request succeeds once a place is free), and the service's own events,
// such as the completion, still go in.
func TestOpenSessionsAndSessionEventsAreCappedPerAgent(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t, func(a *api.Authenticated) { a.Sessions.Limits = session.Limits{OpenSessions: 2, Events: 4} })
	uid, _ := e.user("ada")
	_, agentKey := e.agent(uid, "scout")

	var me struct {
		Limits struct{ MaxOpenSessions, MaxSessionEvents int }
	}
	e.call("GET", "/agent/me", agentKey, "").want(t, 200).into(t, &me)
	if me.Limits.MaxOpenSessions != 2 || me.Limits.MaxSessionEvents != 4 {
		t.Errorf("limits %+v", me.Limits)
	}

	s1 := e.openSession(agentKey, "s1")
	e.openSession(agentKey, "s2")
	third := `{"type":"checkout","description":"buy a map","clientSessionId":"s3"}`
	e.call("POST", "/sessions", agentKey, third).want(t, 409, "quota_exceeded")
	e.call("POST", "/sessions", agentKey, `{"type":"checkout","description":"buy a map","clientSessionId":"s1"}`).want(t, 200)

	// s1 holds its opened event; three more reach the cap of four.
	for _, id := range []string{"e1", "e2", "e3"} {
		e.call("POST", "/sessions/"+s1+"/events", agentKey, `{"type":"runtime.step","clientEventId":"`+id+`"}`).want(t, 201)
	}
	e.call("POST", "/sessions/"+s1+"/events", agentKey, `{"type":"runtime.step","clientEventId":"e4"}`).want(t, 409, "quota_exceeded")
	e.call("POST", "/sessions/"+s1+"/events", agentKey, `{"type":"runtime.step","clientEventId":"e2"}`).want(t, 200)
	e.call("POST", "/sessions/"+s1+"/requests", agentKey, `{"clientRequestId":"r1",`+confirmBody[1:]).want(t, 409, "quota_exceeded")
	var events struct{ LastEventSeq int64 }
	e.call("GET", "/sessions/"+s1+"/events", agentKey, "").want(t, 200).into(t, &events)
	if events.LastEventSeq != 4 {
		t.Fatalf("refused writes left the session at seq %d", events.LastEventSeq)
	}

	// Completing s1 (the service's own event, past the cap) frees a place: the
	// refused session is created under the same client id.
	e.call("POST", "/sessions/"+s1+"/complete", agentKey, `{"clientCompletionId":"c1","status":"completed","summary":"done"}`).want(t, 200)
	e.call("POST", "/sessions", agentKey, third).want(t, 201)
	e.call("POST", "/sessions", agentKey, `{"type":"checkout","description":"buy a map","clientSessionId":"s4"}`).want(t, 409, "quota_exceeded")
}

func (r response) into(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("body %q: %v", r.body, err)
	}
}
