package main

import "github.com/waystation/waystation/web"

// withApprovals serves the approval pages for people, deciding through the very
// services the API serves. Without a pepper they refuse every sign-in with a
// key, as the API refuses every key.
func withApprovals(cfg Config, svc services) web.Option {
	return web.WithApprovals(web.Approvals{Services: svc.Services, PublicURL: cfg.PublicURL, LoopbackHTTP: cfg.LoopbackHTTP,
		TrustedProxies: cfg.Search.TrustedProxies})
}
