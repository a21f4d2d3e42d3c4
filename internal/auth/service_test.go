package auth

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/waystation/waystation/internal/problem"
)

// fakeStore keeps keys and agents in memory and records the caps it was given.
type fakeStore struct {
	keys              map[string]StoredKey
	agents            map[string]Agent
	maxKeys, maxAgent int
	touched           []string
}

func newFakeStore() *fakeStore {
	return &fakeStore{keys: map[string]StoredKey{}, agents: map[string]Agent{}}
}

func (f *fakeStore) StoredKey(_ context.Context, kid string) (StoredKey, error) {
	k, ok := f.keys[kid]
	if !ok {
		return k, ErrKeyNotFound
	}
	return k, nil
}

func (f *fakeStore) TouchKey(_ context.Context, kid string) error {
	f.touched = append(f.touched, kid)
	return nil
}

func (f *fakeStore) InsertKey(_ context.Context, k NewKey, userID, agentID string, max int) (Key, error) {
	f.maxKeys = max
	f.keys[k.KID] = StoredKey{Principal: Principal{KID: k.KID, Scope: k.Scope, UserID: userID, AgentID: agentID}, SecretHash: k.Hash}
	return Key{KID: k.KID, Scope: k.Scope, UserID: userID, Prefix: k.Prefix}, nil
}

func (f *fakeStore) Keys(context.Context, string) ([]Key, error) { return nil, nil }

func (f *fakeStore) RevokeKey(_ context.Context, _, _, kid string) error {
	k, ok := f.keys[kid]
	if !ok {
		return ErrKeyNotFound
	}
	k.Revoked = true
	f.keys[kid] = k
	return nil
}

func (f *fakeStore) Agent(_ context.Context, userID, id string) (Agent, error) {
	a, ok := f.agents[id]
	if !ok || a.UserID != userID {
		return Agent{}, ErrAgentNotFound
	}
	return a, nil
}

func (f *fakeStore) Agents(context.Context, string) ([]Agent, error) { return nil, nil }

func (f *fakeStore) CreateAgent(_ context.Context, userID, name string, max int) (Agent, error) {
	f.maxAgent = max
	a := Agent{ID: "a" + name, UserID: userID, Name: name, Status: AgentActive}
	f.agents[a.ID] = a
	return a, nil
}

func (f *fakeStore) SetAgentStatus(_ context.Context, userID, id, status string) (Agent, error) {
	a, err := f.Agent(context.Background(), userID, id)
	a.Status = status
	return a, err
}

func (f *fakeStore) CreateWebSession(context.Context, []byte, SignIn, string, time.Duration) error {
	return nil
}
func (f *fakeStore) WebSession(context.Context, []byte) (WebSession, error) {
	return WebSession{}, ErrNoWebSession
}
func (f *fakeStore) DeleteWebSession(context.Context, []byte) error { return nil }

var testPepper = []byte(strings.Repeat("p", 32))

// The caps' defaults are applied once, by the constructor, and every key and agent
// made through the service is held to them; a cap set in the config wins.
func TestServiceHoldsKeysAndAgentsToItsCaps(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		cfg              Config
		keys, agentsWant int
	}{
		{Config{Pepper: testPepper}, DefaultMaxKeys, DefaultMaxAgents},
		{Config{Pepper: testPepper, MaxKeys: 3, MaxAgents: 2}, 3, 2},
	} {
		store := newFakeStore()
		s := NewService(store, c.cfg)
		a, err := s.CreateAgent(ctx, "u1", "scout")
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.IssueKey(ctx, "u1", ScopeAgent, a.ID); err != nil {
			t.Fatal(err)
		}
		if store.maxKeys != c.keys || store.maxAgent != c.agentsWant {
			t.Errorf("%+v: caps %d keys, %d agents; want %d, %d", c.cfg, store.maxKeys, store.maxAgent, c.keys, c.agentsWant)
		}
	}
}

// A key the service issued authenticates, is recorded as used on a call, and is
// refused once revoked; an agent key needs one of the user's agents.
func TestServiceIssuesAndAuthenticatesKeys(t *testing.T) {
	ctx := context.Background()
	store := newFakeStore()
	s := NewService(store, Config{Pepper: testPepper})
	if _, _, err := s.IssueKey(ctx, "u1", ScopeAgent, "nobody"); problem.CodeOf(err) != problem.ValidationFailed {
		t.Errorf("a key for another's agent: %v", err)
	}
	k, token, err := s.IssueKey(ctx, "u1", ScopeUser, "")
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Use(ctx, token)
	if err != nil || p.UserID != "u1" || p.KID != k.KID || len(store.touched) != 1 {
		t.Fatalf("use: %+v %v, touched %v", p, err, store.touched)
	}
	if !s.KeyLive(ctx, p) {
		t.Error("a live key is not live")
	}
	if err := s.RevokeKey(ctx, "u1", "", k.KID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Use(ctx, token); problem.CodeOf(err) != problem.KeyRevoked || s.KeyLive(ctx, p) {
		t.Errorf("a revoked key: %v, live %v", err, s.KeyLive(ctx, p))
	}
}

// Without a pepper, or without a store, no key is valid and none is issued: the
// service fails closed, and says why to whoever asks.
func TestServiceWithoutAPepperFailsClosed(t *testing.T) {
	ctx := context.Background()
	k, _ := Generate(ScopeUser, testPepper)
	for name, s := range map[string]*Service{
		"no pepper": NewService(newFakeStore(), Config{}),
		"no store":  NewService(nil, Config{Pepper: testPepper}),
	} {
		if err := s.CheckPepper(); !errors.Is(err, ErrNoPepper) {
			t.Errorf("%s: CheckPepper %v", name, err)
		}
		if _, _, err := s.IssueKey(ctx, "u1", ScopeUser, ""); !errors.Is(err, ErrNoPepper) {
			t.Errorf("%s: IssueKey %v", name, err)
		}
		if _, err := s.Use(ctx, k.Token); problem.CodeOf(err) != problem.InvalidAPIKey {
			t.Errorf("%s: Use %v", name, err)
		}
		if s.KeyLive(ctx, Principal{KID: k.KID}) {
			t.Errorf("%s: a key is live", name)
		}
	}
}

// The rules of an agent's name and status are the service's, whichever adapter
// asks.
func TestServiceChecksAgentNamesAndStatuses(t *testing.T) {
	ctx := context.Background()
	s := NewService(newFakeStore(), Config{Pepper: testPepper})
	for _, name := range []string{"", "   ", strings.Repeat("x", 201)} {
		if _, err := s.CreateAgent(ctx, "u1", name); problem.CodeOf(err) != problem.ValidationFailed {
			t.Errorf("name %q: %v", name, err)
		}
	}
	a, err := s.CreateAgent(ctx, "u1", "scout")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetAgentStatus(ctx, "u1", a.ID, "sleeping"); problem.CodeOf(err) != problem.ValidationFailed {
		t.Errorf("status sleeping: %v", err)
	}
	if got, err := s.SetAgentStatus(ctx, "u1", a.ID, AgentDisabled); err != nil || got.Status != AgentDisabled {
		t.Errorf("pause: %+v %v", got, err)
	}
}
