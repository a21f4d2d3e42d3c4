package webhook

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/waystation/waystation/internal/auth"
	"github.com/waystation/waystation/internal/problem"
	"github.com/waystation/waystation/internal/vault"
)

// hooks keeps the webhooks it is given, sealed secrets and all.
type hooks struct {
	created []Sealed
	ids     []string
}

func (h *hooks) CreateWebhook(_ context.Context, _ auth.Principal, id string, n New, secret Sealed) (Webhook, error) {
	h.created, h.ids = append(h.created, secret), append(h.ids, id)
	return Webhook{ID: id, URL: n.URL, Events: n.Events, CreatedAt: time.Now()}, nil
}
func (h *hooks) Webhooks(context.Context, auth.Principal) ([]Webhook, error) { return nil, nil }
func (h *hooks) DeleteWebhook(context.Context, auth.Principal, string) error { return nil }
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
