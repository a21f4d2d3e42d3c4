package main

import (
	"context"
	"log/slog"
	"math"

	"github.com/waystation/waystation/internal/app"
	"github.com/waystation/waystation/internal/auth"
	"github.com/waystation/waystation/internal/captcha"
	"github.com/waystation/waystation/internal/memory"
	"github.com/waystation/waystation/internal/oauth"
	"github.com/waystation/waystation/internal/origin"
	"github.com/waystation/waystation/internal/outbound"
	"github.com/waystation/waystation/internal/postgres"
	"github.com/waystation/waystation/internal/protect"
	"github.com/waystation/waystation/internal/ratelimit"
	"github.com/waystation/waystation/internal/redact"
	"github.com/waystation/waystation/internal/request"
	"github.com/waystation/waystation/internal/session"
	"github.com/waystation/waystation/internal/trace"
	"github.com/waystation/waystation/internal/trust"
	"github.com/waystation/waystation/internal/webhook"
)

// services are the domain's use cases, each built once and handed to every adapter
// that serves it (the API, MCP included, and the console), and what works beyond a
// request.
type services struct {
	app.Services
	// prober probes sellers for quotes and for origins' items, never paying; its
	// hosts' spacing is its own, apart from the probe rounds'.
	prober *trust.Prober
	// webhooks is the guarded client webhook deliveries go through.
	webhooks *outbound.Client
}

// newServices builds the services over store with cfg's settings, reaching other
// hosts through out; work they do beyond a request runs under ctx.
func newServices(ctx context.Context, cfg Config, log *slog.Logger, store *postgres.Store, out clients) services {
	var s services
	s.Auth = auth.NewService(store, auth.Config{Pepper: cfg.AuthPepper, MaxKeys: cfg.MaxKeysPerUser, MaxAgents: cfg.MaxAgentsPerUser,
		Passkeys: store, SignInAttempts: store})
	s.OAuth = oauth.NewService(store, s.Auth, oauth.Config{Pepper: cfg.AuthPepper, MaxKeys: cfg.MaxKeysPerUser,
		Registrations: registrationLimiter(store), TrustedProxies: cfg.Search.TrustedProxies})
	var protected redact.Source // without sealing keys, spans, sessions and requests fail closed
	if cfg.Secrets != nil {
		protected = memory.Protected{Store: store, Opener: cfg.Secrets}
	}
	s.Sessions = &session.Service{Store: store, Limits: cfg.SessionLimits, Protected: protected}
	payments := newPayments(cfg, log, store, out.sellers)
	s.Payments = payments
	s.prober = trust.NewProber(trust.ProberConfig{Client: out.sellers}, log)
	// A person's approval of a payment, through the API or the console alike, wakes
	// the executor at once.
	s.Requests = &request.Service{Store: store, Protected: protected, Approved: func(request.Request) { payments.Kick() }}
	if cfg.Secrets != nil { // without sealing keys, approvals that provide values fail
		s.Requests.Sealer = cfg.Secrets
	}
	mc := memory.Config{}
	if cfg.Secrets != nil {
		mc.Sealer, mc.Opener = cfg.Secrets, cfg.Secrets
	}
	s.Memory = memory.NewService(store, mc)
	if cfg.Secrets != nil { // without sealing keys there are no values, and the guard fails closed
		s.Guard = protect.NewService(memory.Protected{Store: store, Opener: cfg.Secrets}, store, cfg.Detections, log)
	}
	s.Traces = trace.NewService(store, protected, trace.Config{Guard: s.Guard})
	s.Captchas = &captcha.Service{Store: store, Solver: cfg.CaptchaSolver, Log: log, Background: ctx}

	// Deliveries go through the webhooks' client; registration asks its rule, to
	// warn of a URL it will refuse.
	s.webhooks = out.webhooks
	wc := webhook.Config{Guard: out.webhooks}
	if cfg.Secrets != nil {
		wc.Sealer = cfg.Secrets
	}
	s.Webhooks = webhook.NewService(store, wc)
	s.Origins = origin.NewService(store, out.sellers, s.prober, origin.Config{StaleAfter: cfg.Probe.OriginStaleAfter, DelistAfter: cfg.Probe.OriginDelistAfter,
		Limiter: submitLimiter(cfg.Probe.OriginSubmitPerHour, store), Log: log})
	return s
}

// registrationLimiter holds each address to oauth.RegistrationsPerHour host
// registrations, in bursts of a quarter of it, in the buckets every replica shares.
func registrationLimiter(store ratelimit.Store) oauth.Limiter {
	l := ratelimit.NewLimiter(oauth.RegistrationsPerHour/60.0, oauth.RegistrationsPerHour/4, rateLimitCallers, nil)
	l.Shared = store
	return l
}

// submitLimiter holds each user to perHour origin submissions, in bursts of a
// quarter of it, in the buckets every replica shares (searches' among them, the
// callers apart); nil for no limit.
func submitLimiter(perHour float64, store ratelimit.Store) origin.Limiter {
	if perHour <= 0 {
		return nil
	}
	l := ratelimit.NewLimiter(perHour/60, max(1, int(math.Ceil(perHour/4))), rateLimitCallers, nil)
	l.Shared = store
	return l
}
