package protect

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/waystation/waystation/internal/auth"
	"github.com/waystation/waystation/internal/problem"
)

type values struct{ all, given []string }

func (v values) Protected(context.Context, string) ([]string, error)     { return v.all, nil }
func (v values) Given(context.Context, string, string) ([]string, error) { return v.given, nil }

// counter is a store that pauses at the budget, as the real one does.
type counter struct {
	n      int
	paused bool
	got    []Detection
}

func (c *counter) RecordDetection(_ context.Context, d Detection, _ time.Duration, budget int) (int, bool, error) {
	if c.paused {
		return 0, false, ErrPaused
	}
	c.n++
	c.got = append(c.got, d)
	c.paused = c.n >= budget
	return c.n, c.paused, nil
}

func (c *counter) Detections(context.Context, string, int) ([]Detection, error) { return c.got, nil }

var agent = auth.Principal{KID: "k", Scope: auth.ScopeAgent, UserID: "u", AgentID: "a"}

// A value the agent was given is refused where kept and never counted; one it was
// not given is refused and counted, split across parts too; the budget's last
// detection pauses it, and any detection after is the paused key's answer.
func TestCheckCountsOnlyWhatTheAgentWasNotGiven(t *testing.T) {
	c := &counter{}
	s := NewService(values{all: []string{"zebra-quartz-7731", "4111111111111111"}, given: []string{"zebra-quartz-7731"}}, c, Config{Budget: 2}, nil)
	ctx := context.Background()
	if err := s.Check(ctx, agent, "r", []string{"type ZEBRA QUARTZ 7731"}); problem.CodeOf(err) != problem.ProtectedValueDetected || c.n != 0 {
		t.Fatalf("a given value: %v, %d counted", err, c.n)
	}
	if err := s.Check(ctx, agent, "r", []string{"hello", "world"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Check(ctx, agent, "r", []string{"card 4111 1111", "1111 1111"}); problem.CodeOf(err) != problem.ProtectedValueDetected || c.n != 1 {
		t.Fatalf("a split card: %v, %d counted", err, c.n)
	}
	if err := s.Check(ctx, agent, "r", []string{"4111111111111111"}); problem.CodeOf(err) != problem.ProtectedValueDetected || !c.paused {
		t.Fatalf("the budget's last: %v, paused %v", err, c.paused)
	}
	if err := s.Check(ctx, agent, "r", []string{"4111111111111111"}); !errors.Is(err, ErrPaused) {
		t.Fatalf("after the pause: %v", err)
	}
	if c.got[0].Kind != KindValue || c.got[0].Route != "r" || c.got[0].AgentID != "a" {
		t.Errorf("recorded %+v", c.got[0])
	}
}

// The person's own key is refused alike and counts nothing; a flood of candidates is
// refused and counted even when none is right; without values nothing unchecked
// passes.
func TestCheckOfTheUserFloodsAndUnavailableValues(t *testing.T) {
	c := &counter{}
	s := NewService(values{all: []string{"4111111111111111"}}, c, Config{Budget: 5, CandidateLimit: 2}, nil)
	ctx := context.Background()
	user := auth.Principal{KID: "k", Scope: auth.ScopeUser, UserID: "u"}
	if err := s.Check(ctx, user, "r", []string{"4111111111111111"}); problem.CodeOf(err) != problem.ProtectedValueDetected || c.n != 0 {
		t.Fatalf("the user's key: %v, %d counted", err, c.n)
	}
	flood := []string{"5555555555554444\n4012888888881881\n4222222222222"}
	if err := s.Check(ctx, agent, "r", flood); problem.CodeOf(err) != problem.ProtectedValueDetected || c.n != 1 || c.got[0].Kind != KindCandidates {
		t.Fatalf("a flood: %v, %+v", err, c.got)
	}
	if err := s.Check(ctx, user, "r", flood); err != nil {
		t.Errorf("the user's own list of cards: %v", err)
	}
	var none *Service
	if err := none.Check(ctx, agent, "r", []string{"anything at all"}); problem.CodeOf(err) != problem.RedactionUnavailable {
		t.Errorf("without values: %v", err)
	}
}

// valuesCounted counts the loads of its values.
type valuesCounted struct {
	values
	loads int
}

func (v *valuesCounted) Protected(ctx context.Context, u string) ([]string, error) {
	v.loads++
	return v.values.Protected(ctx, u)
}

// A request's checks load the values once: the sets its context carries for its
// key serve the rest of it, and another key's context does not.
func TestSetsLoadOncePerRequest(t *testing.T) {
	v := &valuesCounted{values: values{all: []string{"4111111111111111"}}}
	s := NewService(v, &counter{}, Config{}, nil)
	ctx := context.Background()
	sets, err := s.Sets(ctx, agent)
	if err != nil || v.loads != 1 {
		t.Fatal(err, v.loads)
	}
	ctx = WithSets(ctx, agent, sets)
	if err := s.Check(ctx, agent, "r", []string{"4111 1111 1111 1111"}); problem.CodeOf(err) != problem.ProtectedValueDetected || v.loads != 1 {
		t.Errorf("with the sets carried: %v, %d loads", err, v.loads)
	}
	other := agent
	other.KID = "other"
	s.Check(ctx, other, "r", []string{"hello"})
	if v.loads != 2 {
		t.Errorf("another key's check took the carried sets: %d loads", v.loads)
	}
}
