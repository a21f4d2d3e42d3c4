package main

import (
	"github.com/waystation/waystation/internal/request"
	"github.com/waystation/waystation/web"
)

// withApprovals serves the approval pages for people, deciding through the same
// services and sealer as the API. Without a pepper they refuse every sign-in with a
// key, as the API refuses every key.
func withApprovals(cfg Config, svc services) web.Option {
	a := web.Approvals{Auth: svc.auth, Sessions: svc.sessions, Requests: svc.requests, Traces: svc.traces,
		PublicURL: cfg.PublicURL, LoopbackHTTP: cfg.LoopbackHTTP,
		Payments: svc.payments, Approved: func(request.Request) { svc.payments.Kick() }, Captchas: svc.captchas, Webhooks: svc.webhooks, Memory: svc.memory, Guard: svc.guard,
		TrustedProxies: cfg.Search.TrustedProxies}
	if cfg.Secrets != nil {
		a.Sealer = cfg.Secrets
	}
	return web.WithApprovals(a)
}
