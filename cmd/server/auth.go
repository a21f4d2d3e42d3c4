package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"

	"github.com/waystation/waystation/api"
	"github.com/waystation/waystation/internal/auth"
	"github.com/waystation/waystation/internal/postgres"
)

// errNoPepper is the key command's answer when AUTH_PEPPER is unset.
var errNoPepper = errors.New("AUTH_PEPPER is not set (make key and make run generate one into var/; in production set a random secret of at least 32 bytes)")

// loadPepper reads AUTH_PEPPER, the server-wide secret that API keys are hashed
// with; nil when it is unset.
func loadPepper(getenv func(string) string) ([]byte, error) {
	p := getenv("AUTH_PEPPER")
	if p == "" {
		return nil, nil
	}
	if len(p) < auth.MinPepperLen {
		return nil, fmt.Errorf("AUTH_PEPPER must be at least %d bytes", auth.MinPepperLen)
	}
	return []byte(p), nil
}

// withAuth starts the event listener and returns the option serving the
// authenticated API. Without a pepper the API fails closed: it refuses every key.
func withAuth(ctx context.Context, pepper []byte, log *slog.Logger, store *postgres.Store) api.Option {
	if pepper == nil {
		log.Warn("AUTH_PEPPER is not set: the authenticated API refuses every key")
		return api.WithAuth(api.Auth{})
	}
	listener := store.NewListener(log)
	go listener.Run(ctx)
	return api.WithAuth(api.Auth{Store: store, Pepper: pepper, Events: listener})
}

// issueKey is the key command: it creates the user (and the agent) if missing and
// prints a new key, the only time its secret is shown.
func issueKey(ctx context.Context, store *postgres.Store, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("key", flag.ContinueOnError)
	fs.SetOutput(stderr)
	user := fs.String("user", "", "name of the user, created if missing")
	agent := fs.String("agent", "", "name of the user's agent, created if missing; without it the key is a user key")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *user == "" || fs.NArg() > 0 {
		return errors.New("usage: key -user NAME [-agent NAME]")
	}
	pepper, err := loadPepper(getenv)
	if err != nil {
		return err
	}
	if pepper == nil {
		return errNoPepper
	}
	if err := store.Migrate(ctx); err != nil {
		return err
	}
	u, err := store.EnsureUser(ctx, *user)
	if err != nil {
		return err
	}
	scope, agentID := auth.ScopeUser, ""
	if *agent != "" {
		a, err := store.EnsureAgent(ctx, u.ID, *agent)
		if err != nil {
			return err
		}
		scope, agentID = auth.ScopeAgent, a.ID
	}
	k, err := auth.Generate(scope, pepper)
	if err != nil {
		return err
	}
	if _, err := store.InsertKey(ctx, k, u.ID, agentID); err != nil {
		return err
	}
	who := "user " + u.Name
	if agentID != "" {
		who = "agent " + *agent + " of user " + u.Name
	}
	fmt.Fprintf(stderr, "new %s key for %s (kid %s); it is shown only now:\n", scope, who, k.KID)
	fmt.Fprintln(stdout, k.Token)
	return nil
}
