package main

import (
	"log/slog"

	"github.com/waystation/waystation/internal/memory"
	"github.com/waystation/waystation/internal/payment"
	"github.com/waystation/waystation/internal/postgres"
	"github.com/waystation/waystation/internal/trust"
)

// services are the domain's use cases, each built once and handed to every adapter
// that serves it: the API (MCP included) and the console.
type services struct {
	payments *payment.Service
	// prober calls sellers for quotes and payments, never paying on its own.
	prober *trust.Prober
	memory *memory.Service
}

// newServices builds the services over store with cfg's settings.
func newServices(cfg Config, log *slog.Logger, store *postgres.Store) services {
	var s services
	s.payments, s.prober = newPayments(cfg, log, store)
	mc := memory.Config{}
	if cfg.Secrets != nil {
		mc.Sealer, mc.Opener = cfg.Secrets, cfg.Secrets
	}
	s.memory = memory.NewService(store, mc)
	return s
}
