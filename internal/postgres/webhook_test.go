package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/waystation/waystation/internal/auth"
	"github.com/waystation/waystation/internal/postgres/pgtest"
	"github.com/waystation/waystation/internal/webhook"
)

// TestWebhookCapHoldsUnderConcurrentRegistrations: registrations racing for one
// user's last places never pass the cap the service asks, the rest are ErrTooMany,
// and a deleted webhook frees its place.
func TestWebhookCapHoldsUnderConcurrentRegistrations(t *testing.T) {
	ctx := context.Background()
	store := pgtest.New(t)
	u, err := store.EnsureUser(ctx, "ada")
	if err != nil {
		t.Fatal(err)
	}
	p := auth.Principal{Scope: auth.ScopeUser, UserID: u.ID}
	const max = 3
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		kept []string
	)
	for i := range 12 {
		wg.Go(func() {
			w, err := store.CreateWebhook(ctx, p, fmt.Sprintf("6f1c2a7e-3b4d-4e5f-8a9b-%012d", i),
				webhook.New{URL: "https://ops.example/hook", Events: []string{webhook.RequestWaiting}},
				webhook.Sealed{KeyID: "k", Nonce: make([]byte, 12), Ciphertext: []byte("c")}, max)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				kept = append(kept, w.ID)
			case !errors.Is(err, webhook.ErrTooMany):
				t.Errorf("registration %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	if len(kept) != max {
		t.Fatalf("%d of 12 concurrent registrations kept, want %d", len(kept), max)
	}
	if err := store.DeleteWebhook(ctx, p, kept[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := store.CreateWebhook(ctx, p, "6f1c2a7e-3b4d-4e5f-8a9b-999999999999",
		webhook.New{URL: "https://ops.example/hook", Events: []string{webhook.RequestWaiting}},
		webhook.Sealed{KeyID: "k", Nonce: make([]byte, 12), Ciphertext: []byte("c")}, max); err != nil {
		t.Errorf("after a deletion: %v", err)
	}
}
