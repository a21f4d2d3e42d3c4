package main

import (
	"github.com/waystation/waystation/internal/postgres"
	"github.com/waystation/waystation/internal/request"
	"github.com/waystation/waystation/web"
)

// withApprovals serves the approval pages for people, deciding through the same
// stores and sealer as the API. Without a pepper they refuse every sign-in, as the
// API refuses every key.
func withApprovals(cfg Config, store *postgres.Store, svc services) web.Option {
	a := web.Approvals{Keys: store, Agents: store, Sessions: store, Requests: store, WebSessions: store, Traces: svc.traces,
		Pepper: cfg.AuthPepper, PublicURL: cfg.PublicURL, LoopbackHTTP: cfg.LoopbackHTTP, MaxKeys: cfg.MaxKeysPerUser, MaxAgents: cfg.MaxAgentsPerUser,
		Payments: svc.payments, Approved: func(request.Request) { svc.payments.Kick() }, Captchas: svc.captchas, Webhooks: svc.webhooks, Memory: svc.memory, Passkeys: store, SignInAttempts: store,
		TrustedProxies: cfg.Search.TrustedProxies}
	if cfg.Secrets != nil {
		a.Sealer = cfg.Secrets
	}
	return web.WithApprovals(a)
}
