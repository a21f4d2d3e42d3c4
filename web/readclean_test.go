package web

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/waystation/waystation/internal/memory"
	"github.com/waystation/waystation/internal/redact"
	"github.com/waystation/waystation/internal/session"
	"github.com/waystation/waystation/internal/vault"
)

// A session and a request an agent wrote before the person saved a value show the
// value blanked on the console's pages, their titles and headings included: they
// are read with the person's values of now.
func TestConsolePagesBlankAValueSavedAfterTheTextWasWritten(t *testing.T) {
	var broken atomic.Bool
	e := newAppEnv(t, func(a *Approvals) {
		a.Sessions.Protected = switchable{a.Sessions.Protected, &broken}
		a.Requests.Protected = a.Sessions.Protected
	})
	ctx := context.Background()
	ada, adaKey := e.user("ada")
	scout, _ := e.agent(ada, "scout")
	const canary = "Quartz_Canary_4417"
	s, err := e.store.CreateSession(ctx, scout, session.New{Type: "checkout", Description: "Pay " + canary, ClientSessionID: "c1"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	n := provideMissing("r1")
	n.Context.PageTitle, n.Context.Reason = "Checkout "+canary, "The page asks for "+canary
	if err := n.Validate(); err != nil {
		t.Fatal(err)
	}
	r, err := e.store.CreateRequest(ctx, scout, s.ID, n, 0)
	if err != nil {
		t.Fatal(err)
	}
	v, err := vault.Parse(testVaultKey)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := memory.NewService(e.store, memory.Config{Sealer: v, Opener: v}).Create(ctx, ada, memory.New{Label: "Door",
		Fields: []memory.FieldInput{{FieldRef: "code", Label: "Code", Secret: true, Value: ptr(canary)}}}); err != nil {
		t.Fatal(err)
	}
	b := e.browser()
	b.mustSignIn(adaKey, "")
	for _, path := range []string{sessionURL(s.ID), requestURL(r.ID), "/app/requests"} {
		p := b.get(path)
		if p.status != 200 || strings.Contains(strings.ToLower(p.body), "canary") {
			t.Errorf("%s: %d, holds the value:\n%.2000s", path, p.status, p.body)
		}
	}
	// Without the values, the pages show nothing of what they would clean.
	broken.Store(true)
	for _, path := range []string{sessionURL(s.ID), requestURL(r.ID), "/app/requests"} {
		p := b.get(path)
		if p.status != 503 || strings.Contains(strings.ToLower(p.body), "canary") {
			t.Errorf("%s without the values: %d\n%.2000s", path, p.status, p.body)
		}
	}
}

// switchable is a source of protected values that fails while broken is set.
type switchable struct {
	redact.Source
	broken *atomic.Bool
}

func (s switchable) Protected(ctx context.Context, user string) ([]string, error) {
	if s.broken.Load() {
		return nil, errors.New("the vault is sealed")
	}
	return s.Source.Protected(ctx, user)
}
