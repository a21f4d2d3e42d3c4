package memory_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/waystation/waystation/internal/auth"
	"github.com/waystation/waystation/internal/memory"
	"github.com/waystation/waystation/internal/session"
)

// items is a store of one user's items in a map, and of one session's handles:
// enough to see what the service asks of storage.
type items struct {
	byID     map[string]memory.Stored
	max      int // the cap CreateItem was last given
	release  []memory.Releasable
	recorded [][]string
}

func (s *items) CreateItem(_ context.Context, st memory.Stored, max int) (memory.Stored, error) {
	s.max = max
	if len(s.byID) >= max {
		return memory.Stored{}, memory.ErrTooManyItems
	}
	s.byID[st.ID] = st
	return st, nil
}

func (s *items) Items(context.Context, string, memory.Scope, *session.Cursor, int) ([]memory.Stored, *session.Cursor, error) {
	return nil, nil, nil
}

func (s *items) StoredItem(_ context.Context, userID, id string) (memory.Stored, error) {
	st, ok := s.byID[id]
	if !ok || st.UserID != userID {
		return memory.Stored{}, memory.ErrNotFound
	}
	return st, nil
}

func (s *items) UpdateItem(_ context.Context, st memory.Stored, revision int) (memory.Stored, error) {
	if s.byID[st.ID].Revision != revision {
		return memory.Stored{}, memory.ErrStale
	}
	st.Revision++
	s.byID[st.ID] = st
	return st, nil
}

func (s *items) ArchiveItem(_ context.Context, userID, id string, _ int) error {
	delete(s.byID, id)
	return nil
}

func (s *items) Catalog(context.Context, auth.Principal, string, memory.Scope) ([]memory.Entry, []memory.Unavailable, error) {
	return nil, nil, nil
}

func (s *items) Releasable(_ context.Context, _ auth.Principal, _ string, handles []string) ([]memory.Releasable, error) {
	return s.release, nil
}

func (s *items) RecordMaterialization(_ context.Context, _ auth.Principal, _ string, handles []string, _ string) error {
	s.recorded = append(s.recorded, handles)
	return nil
}

var (
	user  = auth.Principal{Scope: auth.ScopeUser, UserID: "u1"}
	agent = auth.Principal{Scope: auth.ScopeAgent, UserID: "u1", AgentID: "a1"}
)

func login() memory.New {
	return memory.New{Label: "Login", Fields: []memory.FieldInput{{FieldRef: "user", Label: "User", Value: ptr("ada")}}}
}

func TestServiceCreateCapsAndMarksTheWriter(t *testing.T) {
	st := &items{byID: map[string]memory.Stored{}}
	svc := memory.NewService(st, memory.Config{Sealer: testVault(t)})
	it, err := svc.Create(context.Background(), agent, login())
	if err != nil {
		t.Fatal(err)
	}
	if it.CreatedBy != memory.ByAgent || it.UserID != "u1" || st.max != memory.DefaultMaxItems || svc.MaxItems() != memory.DefaultMaxItems {
		t.Errorf("created by %q for %q under cap %d", it.CreatedBy, it.UserID, st.max)
	}
	if it, _ := svc.Create(context.Background(), user, login()); it.CreatedBy != memory.ByUser {
		t.Errorf("a user's item is marked %q", it.CreatedBy)
	}

	capped := memory.NewService(st, memory.Config{Sealer: testVault(t), MaxItems: 2})
	if _, err := capped.Create(context.Background(), user, login()); !errors.Is(err, memory.ErrTooManyItems) {
		t.Errorf("past the cap: %v", err)
	}
	if _, err := svc.Create(context.Background(), user, memory.New{Label: "x"}); err == nil || len(st.byID) != 2 {
		t.Errorf("an invalid item: %v, %d kept", err, len(st.byID))
	}
	unsealed := memory.NewService(st, memory.Config{})
	if _, err := unsealed.Create(context.Background(), user, login()); !errors.Is(err, memory.ErrNoSealer) {
		t.Errorf("no sealer: %v", err)
	}
}

func TestServiceUpdateHoldsTheRevision(t *testing.T) {
	st := &items{byID: map[string]memory.Stored{}}
	svc := memory.NewService(st, memory.Config{Sealer: testVault(t)})
	ctx := context.Background()
	it, err := svc.Create(ctx, user, login())
	if err != nil {
		t.Fatal(err)
	}
	next, err := svc.Update(ctx, "u1", it.ID, it.Revision, memory.Patch{Label: ptr("Work login")})
	if err != nil || next.Label != "Work login" || next.Revision != 2 {
		t.Fatalf("update: %+v, %v", next.Item, err)
	}
	if _, err := svc.Update(ctx, "u1", it.ID, 1, memory.Patch{Label: ptr("again")}); !errors.Is(err, memory.ErrStale) {
		t.Errorf("an old revision: %v", err)
	}
	if _, err := svc.Update(ctx, "u2", it.ID, 2, memory.Patch{Label: ptr("theirs")}); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("another user's item: %v", err)
	}
	if got, _ := svc.Item(ctx, "u1", it.ID); got.Label != "Work login" {
		t.Errorf("after refused updates the label is %q", got.Label)
	}
}

func TestServiceMaterializeReleasesOnlyCoveredHandles(t *testing.T) {
	v := testVault(t)
	seal := func(ref, value string) (memory.Sealed, []byte) {
		aad := memory.AAD("u1", "i1", ref)
		k, n, c, err := v.Seal([]byte(value), aad)
		if err != nil {
			t.Fatal(err)
		}
		return memory.Sealed{KeyID: k, Nonce: n, Ciphertext: c}, aad
	}
	covered, aad1 := seal("user", "ada")
	card, aad2 := seal("card", "4242424242424242")
	h := func(c byte) string { return "handle-" + string(rune(c)) + "-00000000000000000000" }
	st := &items{byID: map[string]memory.Stored{}, release: []memory.Releasable{
		{Handle: h('a'), Found: true, Covered: true, Value: covered, AAD: aad1},
		{Handle: h('b'), Found: true, Covered: false, Value: covered, AAD: aad1},
		{Handle: h('c'), Found: true, Covered: true, CardLike: true, Value: card, AAD: aad2},
		{Handle: h('d')},
	}}
	svc := memory.NewService(st, memory.Config{Opener: v})
	ctx := context.Background()
	handles := []string{h('a'), h('b'), h('c'), h('d')}
	values, err := svc.Materialize(ctx, agent, "s1", handles, "sign in")
	if err != nil {
		t.Fatal(err)
	}
	var statuses []string
	for _, v := range values {
		statuses = append(statuses, v.Status)
	}
	if !slices.Equal(statuses, []string{memory.Released, memory.NeedsApproval, memory.NeedsApproval, memory.UnknownHandle}) {
		t.Fatalf("statuses = %q", statuses)
	}
	if values[0].Value == nil || *values[0].Value != "ada" || values[1].Value != nil || values[2].Value != nil {
		t.Error("a value other than the covered one was released")
	}
	if len(st.recorded) != 1 || !slices.Equal(st.recorded[0], []string{h('a')}) {
		t.Errorf("audit rows = %q, want one naming the released handle", st.recorded)
	}

	st.release = st.release[1:]
	if _, err := svc.Materialize(ctx, agent, "s1", handles[1:], "sign in"); !errors.Is(err, memory.ErrApprovalRequired) || len(st.recorded) != 1 {
		t.Errorf("nothing releasable: %v, %d audit rows", err, len(st.recorded))
	}
	if _, err := svc.Materialize(ctx, agent, "s1", []string{"short"}, "sign in"); err == nil {
		t.Error("a malformed handle was looked up")
	}
}
