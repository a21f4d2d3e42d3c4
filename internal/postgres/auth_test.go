package postgres_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"

	"github.com/waystation/waystation/internal/auth"
	"github.com/waystation/waystation/internal/postgres/pgtest"
	"github.com/waystation/waystation/internal/problem"
)

// TestKeyAndAgentCapsHoldUnderConcurrentCreation: creations racing for one user's
// last places never pass the caps, the rest are quota_exceeded, and a revoked key
// frees its place while another user's keys count for nothing.
func TestKeyAndAgentCapsHoldUnderConcurrentCreation(t *testing.T) {
	ctx := context.Background()
	store := pgtest.New(t)
	u, err := store.EnsureUser(ctx, "ada")
	if err != nil {
		t.Fatal(err)
	}
	other, err := store.EnsureUser(ctx, "bob")
	if err != nil {
		t.Fatal(err)
	}
	const max = 5
	var wg sync.WaitGroup
	var mu sync.Mutex
	agents, keys := 0, 0
	var agentIDs []string
	for i := range 20 {
		wg.Go(func() {
			a, err := store.CreateAgent(ctx, u.ID, "agent-"+strconv.Itoa(i), max)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				agents++
				agentIDs = append(agentIDs, a.ID)
			case !errors.Is(err, auth.ErrTooManyAgents) || problem.CodeOf(err) != problem.QuotaExceeded:
				t.Errorf("agent %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	if agents != max {
		t.Fatalf("%d of 20 concurrent agents created, want %d", agents, max)
	}
	newKey := func(userID, agentID string) (auth.Key, error) {
		scope := auth.ScopeUser
		if agentID != "" {
			scope = auth.ScopeAgent
		}
		nk, err := auth.Generate(scope, []byte("test-pepper-of-at-least-32-bytes!!"))
		if err != nil {
			t.Fatal(err)
		}
		return store.InsertKey(ctx, nk, userID, agentID, max)
	}
	var created []auth.Key
	for i := range 20 {
		wg.Go(func() {
			agentID := "" // user keys and agent keys count together
			if i%2 == 1 {
				agentID = agentIDs[i%len(agentIDs)]
			}
			k, err := newKey(u.ID, agentID)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				keys++
				created = append(created, k)
			case !errors.Is(err, auth.ErrTooManyKeys):
				t.Errorf("key %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	if keys != max {
		t.Fatalf("%d of 20 concurrent keys created, want %d", keys, max)
	}
	if _, err := newKey(other.ID, ""); err != nil {
		t.Fatalf("another user's key: %v", err)
	}
	if err := store.RevokeKey(ctx, u.ID, "", created[0].KID); err != nil {
		t.Fatal(err)
	}
	if _, err := newKey(u.ID, ""); err != nil {
		t.Fatalf("a key after one was revoked: %v", err)
	}
	if _, err := newKey(u.ID, ""); !errors.Is(err, auth.ErrTooManyKeys) {
		t.Fatalf("a key past the cap again: %v", err)
	}
}
