package postgres_test

import (
	"context"
	"testing"

	"github.com/waystation/waystation/internal/auth"
	"github.com/waystation/waystation/internal/memory"
	"github.com/waystation/waystation/internal/postgres/pgtest"
	"github.com/waystation/waystation/internal/vault"
	"github.com/waystation/waystation/internal/webhook"
)

// Rotation: after Reseal under a new first key, every value opens with the new key
// alone, to the same plaintext, and a second run has nothing to do.
func TestResealMovesEveryValueToTheCurrentKey(t *testing.T) {
	s := pgtest.New(t)
	ctx := context.Background()
	old, err := vault.Parse("k1:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=")
	if err != nil {
		t.Fatal(err)
	}
	both, err := vault.Parse("k2:HxwdHh8AAQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRo=,k1:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=")
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := vault.Parse("k2:HxwdHh8AAQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRo=")
	if err != nil {
		t.Fatal(err)
	}
	u, err := s.EnsureUser(ctx, "ada")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, v := range []string{"first secret value", "second secret value", "third"} {
		val := v
		n := memory.New{Label: "item", Fields: []memory.FieldInput{{FieldRef: "f", Label: "F", Value: &val}}}
		if err := n.Validate(); err != nil {
			t.Fatal(err)
		}
		st, err := memory.Build(old, u.ID, memory.ByUser, n)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.CreateItem(ctx, st, 0); err != nil {
			t.Fatal(err)
		}
		want[st.ID] = val
	}
	// A webhook's secret, sealed under the old key too.
	hookID := "6f1c2a7e-3b4d-4e5f-8a9b-0c1d2e3f4a5b"
	keyID, nonce, ct, err := old.Seal([]byte("whsec_secret"), webhook.AAD(u.ID, hookID))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateWebhook(ctx, auth.Principal{Scope: auth.ScopeUser, UserID: u.ID}, hookID,
		webhook.New{URL: "https://ops.example/hook", Events: []string{webhook.RequestWaiting}}, webhook.Sealed{KeyID: keyID, Nonce: nonce, Ciphertext: ct}, webhook.MaxPerUser); err != nil {
		t.Fatal(err)
	}
	n, err := s.Reseal(ctx, both)
	if err != nil || n != 4 {
		t.Fatalf("resealed %d: %v", n, err)
	}
	var hk string
	var hn, hc []byte
	if err := s.Pool().QueryRow(ctx, `SELECT key_id, nonce, ciphertext FROM webhooks WHERE id = $1`, hookID).Scan(&hk, &hn, &hc); err != nil {
		t.Fatal(err)
	}
	if got, err := fresh.Open(hk, hn, hc, webhook.AAD(u.ID, hookID)); err != nil || string(got) != "whsec_secret" {
		t.Errorf("webhook secret after the reseal: %q %v", got, err)
	}
	for id, plain := range want {
		it, err := s.StoredItem(ctx, u.ID, id)
		if err != nil {
			t.Fatal(err)
		}
		v := it.Fields[0].Value
		got, err := fresh.Open(v.KeyID, v.Nonce, v.Ciphertext, memory.AAD(u.ID, id, "f"))
		if err != nil || string(got) != plain || v.KeyID != "k2" {
			t.Errorf("%s: %q %v under %s", id, got, err, v.KeyID)
		}
	}
	if n, err := s.Reseal(ctx, both); err != nil || n != 0 {
		t.Errorf("second run: %d %v", n, err)
	}
}
