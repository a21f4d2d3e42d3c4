package main

import (
	"github.com/waystation/waystation/internal/postgres"
	"github.com/waystation/waystation/web"
)

var _ web.AppStore = (*postgres.Store)(nil)

// withApp serves the approval pages for people, deciding through the same store and
// sealer as the API. Without a pepper they refuse every sign-in, as the API refuses
// every key.
func withApp(cfg Config, store *postgres.Store) web.Option {
	a := web.App{Store: store, Pepper: cfg.AuthPepper, Unavailable: postgres.Unavailable}
	if cfg.Secrets != nil {
		a.Sealer = cfg.Secrets
	}
	return web.WithApp(a)
}
