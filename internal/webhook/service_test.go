package webhook

import (
	"context"
	"errors"
	"iter"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/waystation/waystation/internal/auth"
	"github.com/waystation/waystation/internal/problem"
	"github.com/waystation/waystation/internal/vault"
)

// hooks keeps the webhooks it is given, sealed secrets and all, each user's up to
// the cap it is asked to keep.
type hooks struct {
	created []Sealed
	ids     []string
	owners  []string
	// caps are the caps asked, one a creation.
	caps []int
}

func (h *hooks) CreateWebhook(_ context.Context, p auth.Principal, id string, n New, secret Sealed, max int) (Webhook, error) {
	h.caps = append(h.caps, max)
	if kept := slices.Collect(h.of(p.UserID)); max > 0 && len(kept) >= max {
		return Webhook{}, ErrTooMany
	}
	h.created, h.ids, h.owners = append(h.created, secret), append(h.ids, id), append(h.owners, p.UserID)
	return Webhook{ID: id, URL: n.URL, Events: n.Events, CreatedAt: time.Now()}, nil
}

// of is the ids of userID's webhooks.
func (h *hooks) of(userID string) iter.Seq[string] {
	return func(yield func(string) bool) {
		for i, o := range h.owners {
			if o == userID && !yield(h.ids[i]) {
				return
			}
		}
	}
}

func (h *hooks) Webhooks(context.Context, auth.Principal) ([]Webhook, error) { return nil, nil }
func (h *hooks) DeleteWebhook(_ context.Context, p auth.Principal, id string) error {
	for i := range h.ids {
		if h.ids[i] == id && h.owners[i] == p.UserID {
			h.created, h.ids, h.owners = slices.Delete(h.created, i, i+1), slices.Delete(h.ids, i, i+1), slices.Delete(h.owners, i, i+1)
			return nil
		}
	}
	return ErrNotFound
}
func (h *hooks) Deliveries(context.Context, auth.Principal, string, int) ([]Delivery, error) {
	return nil, nil
}
func (h *hooks) DueDeliveries(context.Context, int, time.Duration) ([]Delivery, error) {
	return nil, nil
}
func (h *hooks) Attempted(context.Context, int64, string, int, string, *time.Time) error { return nil }

// Registering seals the secret to the user and the webhook, answers it once, and
// warns of a host deliveries will be refused on; a bad webhook or a server without a
// key keeps nothing.
func TestRegisterSealsTheSecretAndWarns(t *testing.T) {
	v, err := vault.Parse("t1:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=")
	if err != nil {
		t.Fatal(err)
	}
	store := &hooks{}
	svc := NewService(store, Config{Sealer: v, Guard: guard{"localhost:4022": "127.0.0.1"}})
	ada := auth.Principal{Scope: auth.ScopeUser, UserID: "u1"}
	reg, err := svc.Register(context.Background(), ada, New{URL: "http://localhost:4022/hooks", Events: []string{RequestWaiting}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(reg.Secret, SecretPrefix) || len(store.created) != 1 || reg.ID != store.ids[0] {
		t.Fatalf("registered %+v; kept %d", reg, len(store.created))
	}
	s := store.created[0]
	if strings.Contains(string(s.Ciphertext), reg.Secret) {
		t.Error("the secret is kept in the clear")
	}
	if plain, err := v.Open(s.KeyID, s.Nonce, s.Ciphertext, AAD("u1", reg.ID)); err != nil || string(plain) != reg.Secret {
		t.Errorf("the sealed secret opens to %q, %v", plain, err)
	}
	if len(reg.Warnings) != 1 || !strings.Contains(reg.Warnings[0], "localhost:4022 will fail") {
		t.Errorf("warnings = %q", reg.Warnings)
	}

	if _, err := svc.Register(context.Background(), ada, New{URL: "ftp://x.example", Events: []string{RequestWaiting}}); problem.CodeOf(err) != problem.ValidationFailed {
		t.Errorf("a bad URL: %v", err)
	}
	unsealed := NewService(store, Config{})
	if _, err := unsealed.Register(context.Background(), ada, New{URL: "https://ops.example/h", Events: []string{RequestWaiting}}); !errors.Is(err, ErrNoSealer) {
		t.Errorf("no sealer: %v", err)
	}
	if len(store.created) != 1 {
		t.Errorf("refused registrations kept %d webhooks", len(store.created)-1)
	}
}

// A user keeps at most MaxPerUser webhooks: the service asks the store for that cap
// on every registration, and one past it is quota_exceeded, naming the number, with
// nothing kept; once one is deleted the user registers again, and another user is
// held to a cap of its own.
func TestRegisterHoldsAUserToMaxPerUserWebhooks(t *testing.T) {
	v, err := vault.Parse("t1:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=")
	if err != nil {
		t.Fatal(err)
	}
	store := &hooks{}
	svc := NewService(store, Config{Sealer: v})
	ctx := context.Background()
	ada, bob := auth.Principal{Scope: auth.ScopeUser, UserID: "ada"}, auth.Principal{Scope: auth.ScopeUser, UserID: "bob"}
	n := New{URL: "https://ops.example/h", Events: []string{RequestWaiting}}
	var first string
	for i := range MaxPerUser {
		reg, err := svc.Register(ctx, ada, n)
		if err != nil {
			t.Fatalf("webhook %d of %d: %v", i+1, MaxPerUser, err)
		}
		if i == 0 {
			first = reg.ID
		}
	}
	_, err = svc.Register(ctx, ada, n)
	if !errors.Is(err, ErrTooMany) || problem.CodeOf(err) != problem.QuotaExceeded {
		t.Fatalf("webhook %d: %v, want quota_exceeded", MaxPerUser+1, err)
	}
	if p, _ := problem.As(err); !strings.Contains(p.Detail, "at most 20 webhooks") {
		t.Errorf("the refusal says %q", p.Detail)
	}
	if kept := len(slices.Collect(store.of("ada"))); kept != MaxPerUser {
		t.Errorf("%d webhooks kept, want %d", kept, MaxPerUser)
	}
	if _, err := svc.Register(ctx, bob, n); err != nil {
		t.Errorf("another user: %v", err)
	}
	if err := svc.Delete(ctx, ada, first); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Register(ctx, ada, n); err != nil {
		t.Errorf("after a deletion: %v", err)
	}
	for i, c := range store.caps {
		if c != MaxPerUser {
			t.Fatalf("creation %d asked a cap of %d, want %d", i+1, c, MaxPerUser)
		}
	}
}
