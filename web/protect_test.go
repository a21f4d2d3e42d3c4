package web

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/waystation/waystation/internal/auth"
	"github.com/waystation/waystation/internal/memory"
	"github.com/waystation/waystation/internal/problem"
	"github.com/waystation/waystation/internal/protect"
	"github.com/waystation/waystation/internal/vault"
)

// The person sees in the console why the service paused an agent (its requests held
// protected values it was never given, as many times as the budget), which requests
// were refused and where, and resumes it; nothing on the page names a value.
func TestTheConsoleSaysWhyTheServicePausedAnAgent(t *testing.T) {
	var guard *protect.Service
	e := newAppEnv(t, func(a *Approvals) {
		v, _ := vault.Parse("t1:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=")
		store := a.Requests.Store.(interface {
			protect.Store
			ProtectedSealed(ctx context.Context, userID string) ([]memory.Releasable, error)
			GivenSealed(ctx context.Context, userID, agentID string) ([]memory.Releasable, error)
		})
		guard = protect.NewService(memory.Protected{Store: store, Opener: v}, store, protect.Config{Budget: 2}, nil)
		a.Guard = guard
	})
	ctx := context.Background()
	ada, adaKey := e.user("ada")
	scout, _ := e.agent(ada, "scout")
	courier, _ := e.agent(ada, "courier")
	for _, kind := range []string{protect.KindValue, protect.KindCandidates} {
		if err := guard.Detected(ctx, scout, "/llm/v1/chat/completions", kind); problem.CodeOf(err) != problem.ProtectedValueDetected {
			t.Fatalf("detection: %v", err)
		}
	}
	if err := guard.Detected(ctx, scout, "/llm/v1/chat/completions", protect.KindValue); problem.CodeOf(err) != problem.KeyRevoked {
		t.Fatalf("a paused agent's detection: %v", err)
	}
	if err := guard.Detected(ctx, courier, "/sessions/{id}/events", protect.KindValue); problem.CodeOf(err) != problem.ProtectedValueDetected {
		t.Fatal(err)
	}

	r := e.raise(scout, provideMissing("r1"))
	b := e.browser()
	b.mustSignIn(adaKey, r.ID)
	page := b.get("/app/agents")
	scoutPart, courierPart := agentSection(page.body, scout.AgentID), agentSection(page.body, courier.AgentID)
	for _, want := range []string{"Waystation paused it", "never given", "2 times", "Refused requests (2)", "/llm/v1/chat/completions", "many guesses shaped like a card number", "Resume scout"} {
		if !strings.Contains(scoutPart, want) {
			t.Errorf("the scout's part lacks %q: %.3000s", want, scoutPart)
		}
	}
	if strings.Contains(courierPart, "Waystation paused it") || !strings.Contains(courierPart, "Refused requests (1)") || !strings.Contains(courierPart, "Pause courier") {
		t.Errorf("the courier's part: %.2000s", courierPart)
	}

	// The person resumes it: the reason is gone, and its detections count anew.
	form := url.Values{"csrf": {csrfOf(t, page)}, "status": {auth.AgentActive}}
	if p := b.post("/app/agents/"+scout.AgentID+"/status", form); p.status != http.StatusSeeOther {
		t.Fatalf("resume: %d %.500s", p.status, p.body)
	}
	if page := b.get("/app/agents"); strings.Contains(page.body, "Waystation paused it") || !strings.Contains(page.body, "Pause scout") {
		t.Errorf("after the resume: %.3000s", page.body)
	}
	if err := guard.Detected(ctx, scout, "/llm/v1/chat/completions", protect.KindValue); problem.CodeOf(err) != problem.ProtectedValueDetected {
		t.Errorf("after the resume, a detection: %v", err)
	}
}

// agentSection is the part of the agents page about agent id.
func agentSection(body, id string) string {
	i := strings.Index(body, `id="agent-`+id+`"`)
	if i < 0 {
		return ""
	}
	rest := body[i:]
	if j := strings.Index(rest[1:], `<section class="agent"`); j >= 0 {
		return rest[:j+1]
	}
	return rest
}
