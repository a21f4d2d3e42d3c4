package postgres_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/waystation/waystation/internal/auth"
	"github.com/waystation/waystation/internal/postgres"
	"github.com/waystation/waystation/internal/postgres/pgtest"
	"github.com/waystation/waystation/internal/session"
)

// principals makes a user with two agents and returns the user's and agents' principals.
func principals(t *testing.T, s *postgres.Store, name string) (user, a1, a2 auth.Principal) {
	t.Helper()
	ctx := context.Background()
	u, err := s.EnsureUser(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	user = auth.Principal{KID: "u", Scope: auth.ScopeUser, UserID: u.ID}
	for i, p := range []*auth.Principal{&a1, &a2} {
		a, err := s.EnsureAgent(ctx, u.ID, string(rune('a'+i)))
		if err != nil {
			t.Fatal(err)
		}
		*p = auth.Principal{KID: "a", Scope: auth.ScopeAgent, UserID: u.ID, AgentID: a.ID}
	}
	return
}

func TestSessionsAreVisibleToTheirAgentAndUserOnly(t *testing.T) {
	s := pgtest.New(t)
	ctx := context.Background()
	ada, scout, runner := principals(t, s, "ada")
	bob, bobAgent, _ := principals(t, s, "bob")

	sess, err := s.CreateSession(ctx, scout, session.New{Type: "checkout", Description: "d", ClientSessionID: "c1"}, 0)
	if err != nil || sess.Status != session.StatusOpen || sess.LastEventSeq != 1 {
		t.Fatalf("create: %+v %v", sess, err)
	}
	if _, err := s.CreateSession(ctx, scout, session.New{Type: "checkout", Description: "other", ClientSessionID: "c1"}, 0); !errors.Is(err, session.ErrClientIDTaken) {
		t.Errorf("reused client id: %v", err)
	}
	for _, p := range []auth.Principal{ada, scout} {
		if _, err := s.Session(ctx, p, sess.ID); err != nil {
			t.Errorf("%s cannot see its session: %v", p.Scope, err)
		}
	}
	for _, p := range []auth.Principal{runner, bob, bobAgent} {
		if _, err := s.Session(ctx, p, sess.ID); !errors.Is(err, session.ErrNotFound) {
			t.Errorf("%+v sees another's session: %v", p, err)
		}
		if _, err := s.AppendEvent(ctx, p, sess.ID, session.Append{Type: "runtime.x", Actor: session.ActorAgent}, 0); !errors.Is(err, session.ErrNotFound) {
			t.Errorf("%+v appends to another's session: %v", p, err)
		}
		if _, _, err := s.Events(ctx, p, sess.ID, 0, 10); !errors.Is(err, session.ErrNotFound) {
			t.Errorf("%+v reads another's events: %v", p, err)
		}
	}
	if list, _, _ := s.Sessions(ctx, bob, nil, 10); len(list) != 0 {
		t.Errorf("bob lists %d sessions", len(list))
	}
}

func TestCompletionIsFinalAndRepeatable(t *testing.T) {
	s := pgtest.New(t)
	ctx := context.Background()
	ada, scout, _ := principals(t, s, "ada")
	sess, _ := s.CreateSession(ctx, scout, session.New{Type: "checkout", Description: "d", ClientSessionID: "c1"}, 0)
	c := session.Completion{ClientCompletionID: "k1", Status: session.StatusCompleted, Summary: "ok"}
	done, dup, err := s.CompleteSession(ctx, scout, sess.ID, c)
	if err != nil || dup || done.Status != session.StatusCompleted || done.LastEventSeq != 2 || done.ClosedAt == nil {
		t.Fatalf("complete: %+v %v %v", done, dup, err)
	}
	if again, dup, err := s.CompleteSession(ctx, scout, sess.ID, c); err != nil || !dup || again.LastEventSeq != 2 {
		t.Errorf("repeat: %+v %v %v", again, dup, err)
	}
	c.Summary = "changed"
	if _, _, err := s.CompleteSession(ctx, scout, sess.ID, c); !errors.Is(err, session.ErrClientIDTaken) {
		t.Errorf("changed repeat: %v", err)
	}
	c.ClientCompletionID = "k2"
	if _, _, err := s.CompleteSession(ctx, scout, sess.ID, c); !errors.Is(err, session.ErrClosed) {
		t.Errorf("second completion: %v", err)
	}
	if _, err := s.StopSession(ctx, ada, sess.ID, "user_request"); !errors.Is(err, session.ErrClosed) {
		t.Errorf("stop after completion: %v", err)
	}
	if _, err := s.AppendEvent(ctx, scout, sess.ID, session.Append{Type: "runtime.x", Actor: session.ActorAgent, Data: json.RawMessage(`{}`)}, 0); !errors.Is(err, session.ErrClosed) {
		t.Errorf("append after completion: %v", err)
	}
}

func TestIdempotencyRecordsReplayConflictAndExpire(t *testing.T) {
	s := pgtest.New(t)
	ctx := context.Background()
	sum := []byte(strings.Repeat("a", 32))
	if prev, err := s.ClaimIdempotency(ctx, "k", "POST /x", "1", sum, time.Hour); prev != nil || err != nil {
		t.Fatalf("first claim: %v %v", prev, err)
	}
	if prev, _ := s.ClaimIdempotency(ctx, "k", "POST /x", "1", sum, time.Hour); prev == nil || prev.Status != 0 {
		t.Fatalf("in progress: %+v", prev)
	}
	if err := s.FinishIdempotency(ctx, "k", "POST /x", "1", 201, "application/json", []byte(`{"a":1}`)); err != nil {
		t.Fatal(err)
	}
	prev, _ := s.ClaimIdempotency(ctx, "k", "POST /x", "1", sum, time.Hour)
	if prev == nil || prev.Status != 201 || string(prev.Response) != `{"a":1}` {
		t.Fatalf("finished: %+v", prev)
	}
	// Another key's record is its own.
	if prev, _ := s.ClaimIdempotency(ctx, "other", "POST /x", "1", sum, time.Hour); prev != nil {
		t.Errorf("another key sees the record: %+v", prev)
	}
	// A request abandoned in progress is forgotten after a while.
	s.ClaimIdempotency(ctx, "k", "POST /x", "2", sum, 0)
	s.Pool().Exec(ctx, `UPDATE idempotency_keys SET created_at = now() - interval '1 hour' WHERE key = '2'`)
	if prev, err := s.ClaimIdempotency(ctx, "k", "POST /x", "2", sum, 0); prev != nil || err != nil {
		t.Errorf("abandoned record: %+v %v", prev, err)
	}
	// An expired record is forgotten.
	s.Pool().Exec(ctx, `UPDATE idempotency_keys SET expires_at = now() - interval '1 second' WHERE kid = 'k'`)
	if prev, err := s.ClaimIdempotency(ctx, "k", "POST /x", "1", sum, time.Hour); prev != nil || err != nil {
		t.Errorf("expired record: %+v %v", prev, err)
	}
}
