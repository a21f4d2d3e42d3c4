package postgres_test

import (
	"context"
	"testing"

	"github.com/waystation/waystation/internal/memory"
	"github.com/waystation/waystation/internal/postgres/pgtest"
	"github.com/waystation/waystation/internal/vault"
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
	n, err := s.Reseal(ctx, both)
	if err != nil || n != 3 {
		t.Fatalf("resealed %d: %v", n, err)
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
