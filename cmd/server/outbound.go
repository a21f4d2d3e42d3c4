package main

import (
	"time"

	"github.com/waystation/waystation/internal/outbound"
)

// clients are the guarded clients the service reaches other hosts through, each
// built once and shared by everything that reaches hosts of its kind.
type clients struct {
	// sellers reaches sellers: probe rounds, quotes, payments and origins'
	// manifests, on a private address only for the hosts PAYMENT_ALLOW_HOSTS names.
	sellers *outbound.Client
	// webhooks reaches webhook receivers, on a private address only for the hosts
	// WEBHOOK_ALLOW_HOSTS names; registration asks it to warn of a URL it will refuse.
	webhooks *outbound.Client
}

// webhookTimeout bounds one request to a webhook receiver.
const webhookTimeout = 10 * time.Second

func newClients(cfg Config) clients {
	return clients{
		sellers:  outbound.New(outbound.Config{Timeout: cfg.Probe.Timeout, AllowHosts: cfg.Payment.AllowHosts}),
		webhooks: outbound.New(outbound.Config{Timeout: webhookTimeout, AllowHosts: cfg.Payment.WebhookAllowHosts}),
	}
}
