package auth_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/waystation/waystation/internal/auth"
	"github.com/waystation/waystation/internal/auth/passkeytest"
)

// memPasskeys keeps passkeys in memory, for the ceremonies alone.
type memPasskeys struct{ keys []auth.Passkey }

func (m *memPasskeys) Passkeys(_ context.Context, userID string) ([]auth.Passkey, error) {
	var out []auth.Passkey
	for _, k := range m.keys {
		if k.UserID == userID {
			out = append(out, k)
		}
	}
	return out, nil
}

func (m *memPasskeys) PasskeyByCredential(_ context.Context, _ string, id []byte) (auth.Passkey, error) {
	for _, k := range m.keys {
		if bytes.Equal(k.CredentialID, id) {
			return k, nil
		}
	}
	return auth.Passkey{}, auth.ErrPasskeyNotFound
}

func (m *memPasskeys) AddPasskey(_ context.Context, _ string, p auth.Passkey, _ int) (auth.Passkey, error) {
	p.ID = "00000000-0000-4000-8000-00000000000" + string(rune('0'+len(m.keys)))
	m.keys = append(m.keys, p)
	return p, nil
}

func (m *memPasskeys) UsedPasskey(_ context.Context, id string, credential []byte) error {
	for i := range m.keys {
		if m.keys[i].ID == id {
			m.keys[i].Credential = credential
		}
	}
	return nil
}

func (m *memPasskeys) DeletePasskey(context.Context, string, string) error { return nil }
func (m *memPasskeys) SaveCeremony(context.Context, []byte, auth.Ceremony, time.Duration) error {
	return nil
}
func (m *memPasskeys) TakeCeremony(context.Context, []byte) (auth.Ceremony, error) {
	return auth.Ceremony{}, auth.ErrNoCeremony
}

const (
	ada   = "4f1c2a9e-8d3b-4c6a-9e1f-2b7d5a8c3e10"
	grace = "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d"
)

func register(t *testing.T, store *memPasskeys, rp auth.RelyingParty, a *passkeytest.Authenticator, userID string) auth.Passkey {
	t.Helper()
	existing, _ := store.Passkeys(context.Background(), userID)
	options, session, err := auth.BeginPasskeyRegistration(rp, userID, "ada", existing)
	if err != nil {
		t.Fatal(err)
	}
	answer, err := a.Create(options)
	if err != nil {
		t.Fatal(err)
	}
	id, record, err := auth.FinishPasskeyRegistration(rp, userID, "ada", session, answer)
	if err != nil {
		t.Fatalf("registration refused: %v", err)
	}
	p, _ := store.AddPasskey(context.Background(), rp.ID, auth.Passkey{UserID: userID, Name: "Laptop", CredentialID: id, Credential: record}, 0)
	return p
}

func signIn(store *memPasskeys, rp auth.RelyingParty, a *passkeytest.Authenticator) (auth.Passkey, []byte, []byte, error) {
	options, session, err := auth.BeginPasskeySignIn(rp)
	if err != nil {
		return auth.Passkey{}, nil, nil, err
	}
	answer, err := a.Get(options)
	if err != nil {
		return auth.Passkey{}, nil, nil, err
	}
	p, err := auth.FinishPasskeySignIn(context.Background(), store, rp, session, answer)
	return p, session, answer, err
}

// A passkey registered for a person signs that person in, with a fresh challenge
// each time; an answer signed for another origin, replayed, from an authenticator
// whose counter went back, or naming a credential the store does not know is
// refused.
func TestPasskeyCeremonies(t *testing.T) {
	rp, ok := auth.RelyingPartyOf("http://localhost:8080")
	if !ok || rp.ID != "localhost" {
		t.Fatalf("relying party %+v", rp)
	}
	store := &memPasskeys{}
	a := passkeytest.New(rp.Origin)
	added := register(t, store, rp, a, ada)

	p, session, answer, err := signIn(store, rp, a)
	if err != nil || p.ID != added.ID || p.UserID != ada {
		t.Fatalf("sign-in: %+v %v", p, err)
	}
	if bytes.Equal(p.Credential, added.Credential) {
		t.Error("the stored record did not take the new signature counter")
	}

	// The same answer again (a replay): its counter is no longer new.
	if _, err := auth.FinishPasskeySignIn(context.Background(), store, rp, session, answer); !errors.Is(err, auth.ErrPasskeyRefused) {
		t.Errorf("replayed answer: %v", err)
	}
	// A cloned authenticator: the counter went back.
	a.Counter = 0
	if _, _, _, err := signIn(store, rp, a); !errors.Is(err, auth.ErrPasskeyRefused) {
		t.Errorf("counter went back: %v", err)
	}
	a.Counter = 100
	if _, _, _, err := signIn(store, rp, a); err != nil {
		t.Errorf("a later counter: %v", err)
	}

	// An answer made at another origin (a phishing page relaying the challenge).
	phish := passkeytest.New("http://localhost:9999")
	register(t, &memPasskeys{}, auth.RelyingParty{ID: "localhost", Origin: "http://localhost:9999"}, phish, ada)
	options, session, _ := auth.BeginPasskeySignIn(rp)
	answer, _ = phish.Get(options)
	if _, err := auth.FinishPasskeySignIn(context.Background(), store, rp, session, answer); !errors.Is(err, auth.ErrPasskeyRefused) {
		t.Errorf("another origin, unknown credential: %v", err)
	}
	// The person's own passkey, used on a page at another origin.
	a.Origin = "http://localhost:9999"
	if _, _, _, err := signIn(store, rp, a); !errors.Is(err, auth.ErrPasskeyRefused) {
		t.Errorf("known passkey, another origin: %v", err)
	}
	a.Origin = rp.Origin
	// A known credential whose answer names another user.
	store.keys[0].UserID = grace
	if _, _, _, err := signIn(store, rp, a); !errors.Is(err, auth.ErrPasskeyRefused) {
		t.Errorf("another user's handle: %v", err)
	}
	store.keys[0].UserID = ada

	// A second registration excludes the passkeys the person has: the same
	// authenticator refuses to make a second one.
	existing, _ := store.Passkeys(context.Background(), ada)
	options, _, err = auth.BeginPasskeyRegistration(rp, ada, "ada", existing)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Create(options); err == nil {
		t.Error("the authenticator was not told its passkey is registered already")
	}
	// A registration answered for another challenge is refused.
	_, other, _ := auth.BeginPasskeyRegistration(rp, grace, "grace", nil)
	options, _, _ = auth.BeginPasskeyRegistration(rp, grace, "grace", nil)
	answer, _ = passkeytest.New(rp.Origin).Create(options)
	if _, _, err := auth.FinishPasskeyRegistration(rp, grace, "grace", other, answer); !errors.Is(err, auth.ErrPasskeyRefused) {
		t.Errorf("registration for another challenge: %v", err)
	}
	if _, _, err := auth.FinishPasskeyRegistration(rp, grace, "grace", other, []byte(`{"id":`)); !errors.Is(err, auth.ErrPasskeyRefused) {
		t.Errorf("malformed answer: %v", err)
	}
}

func TestRelyingPartyOf(t *testing.T) {
	for in, want := range map[string]string{
		"https://waystation.example":      "waystation.example",
		"http://localhost:8080":           "localhost",
		"https://Waystation.Example:8443": "waystation.example",
	} {
		if rp, ok := auth.RelyingPartyOf(in); !ok || rp.ID != want {
			t.Errorf("%s: %+v %v", in, rp, ok)
		}
	}
	for _, in := range []string{"http://127.0.0.1:8080", "http://[::1]:8080", "ftp://x.example", "https://", "https://a.example/path", "localhost:8080"} {
		if rp, ok := auth.RelyingPartyOf(in); ok {
			t.Errorf("%s: %+v", in, rp)
		}
	}
}

// BenchmarkPasskeySignIn is what a sign-in with a passkey costs the server: the
// options (a fresh challenge) and the check of the answer (an ECDSA P-256 signature,
// the counter, the record rewritten), without the store's round trips or the
// authenticator's signing, which happen elsewhere.
func BenchmarkPasskeySignIn(b *testing.B) {
	rp, _ := auth.RelyingPartyOf("https://waystation.example")
	store := &memPasskeys{}
	a := passkeytest.New(rp.Origin)
	existing, _ := store.Passkeys(context.Background(), ada)
	options, session, err := auth.BeginPasskeyRegistration(rp, ada, "ada", existing)
	if err != nil {
		b.Fatal(err)
	}
	answer, _ := a.Create(options)
	id, record, err := auth.FinishPasskeyRegistration(rp, ada, "ada", session, answer)
	if err != nil {
		b.Fatal(err)
	}
	store.AddPasskey(context.Background(), rp.ID, auth.Passkey{UserID: ada, CredentialID: id, Credential: record}, 0)
	b.ReportAllocs()
	for b.Loop() {
		options, session, err := auth.BeginPasskeySignIn(rp)
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		answer, err := a.Get(options)
		b.StartTimer()
		if err != nil {
			b.Fatal(err)
		}
		if _, err := auth.FinishPasskeySignIn(context.Background(), store, rp, session, answer); err != nil {
			b.Fatal(err)
		}
	}
}
