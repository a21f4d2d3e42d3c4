package main

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/waystation/waystation/generator"
	"github.com/waystation/waystation/internal/embedding"
	"github.com/waystation/waystation/internal/postgres"
	"github.com/waystation/waystation/internal/search"
	"github.com/waystation/waystation/internal/telemetry"
	"github.com/waystation/waystation/internal/trust"
)

// TelemetryConfig is how the server reports on itself.
type TelemetryConfig struct {
	// LogFormat is "text" or "json"; AccessLog logs a line per request.
	LogFormat string
	AccessLog bool
	// Metrics is who may scrape /metrics: loopback clients alone unless
	// METRICS_TOKEN or METRICS_PUBLIC says otherwise.
	Metrics telemetry.Access
}

func loadTelemetryConfig(getenv func(string) string) (TelemetryConfig, error) {
	c := TelemetryConfig{LogFormat: getenv("LOG_FORMAT"), AccessLog: true, Metrics: telemetry.Access{Token: getenv("METRICS_TOKEN")}}
	switch c.LogFormat {
	case "", "text", "json":
	default:
		return c, fmt.Errorf("LOG_FORMAT %q: want text or json", c.LogFormat)
	}
	switch v := getenv("ACCESS_LOG"); v {
	case "", "true":
	case "false":
		c.AccessLog = false
	default:
		return c, fmt.Errorf("ACCESS_LOG %q: want true or false", v)
	}
	switch v := getenv("METRICS_PUBLIC"); v {
	case "", "false":
	case "true":
		c.Metrics.Public = true
	default:
		return c, fmt.Errorf("METRICS_PUBLIC %q: want true or false", v)
	}
	return c, nil
}

// metricsReadTimeout bounds what a scrape waits for a figure read from PostgreSQL.
const metricsReadTimeout = time.Second

// registerMetrics adds the figures read on every scrape: the snapshot's age and size,
// search's state and its breakers', the allowance left today, and the database pool.
// searcher's engine may be nil (search unavailable).
func registerMetrics(m *telemetry.Metrics, snapshots *generator.Holder, searcher *search.Service, cfg SearchConfig, store *postgres.Store) error {
	gauges := []struct {
		name, help string
		read       func() float64
	}{
		{"snapshot_age_seconds", "Seconds since the directory snapshot being served was generated.", func() float64 {
			return time.Since(snapshots.Current().Info().GeneratedAt).Seconds()
		}},
		{"snapshot_methods", "Methods in the directory snapshot being served.", func() float64 {
			return float64(snapshots.Current().Len())
		}},
		{"search_allowance_remaining", "Novel query embeddings left today of SEARCH_DAILY_ALLOWANCE, for every replica together (NaN without a limit, or while PostgreSQL cannot say).", func() float64 {
			ctx, cancel := context.WithTimeout(context.Background(), metricsReadTimeout)
			defer cancel()
			left, limited, err := allowanceLeft(cfg, store)(ctx)
			if err != nil || !limited {
				return math.NaN()
			}
			return float64(max(0, left))
		}},
	}
	for _, g := range gauges {
		if err := m.Gauge(g.name, g.help, g.read); err != nil {
			return err
		}
	}
	if err := m.State("search_status", "Search's state: ok, degraded (answered by the builtin model while the provider's breaker is open) or unavailable.",
		"status", []string{"ok", "degraded", "unavailable"}, searcher.Status); err != nil {
		return err
	}
	var models []string
	if e := searcher.Engine; e != nil {
		for _, model := range e.Models() {
			models = append(models, model.Record.ID)
		}
	}
	m.Init(models, search.Outcomes, trust.Outcomes)
	if e := searcher.Engine; e != nil {
		for _, model := range e.Models() {
			b, ok := embedding.Find[*embedding.Breaker](model.Embedder)
			if !ok {
				continue
			}
			if err := m.State("embedding_breaker_state", "The circuit breaker of a model's provider: closed, half-open or open.",
				"state", []string{"closed", "half-open", "open"}, b.State); err != nil {
				return err
			}
		}
	}
	return m.Pool(store.Pool().Stat)
}

// probeCounter counts the outcome of every probe a round stores.
type probeCounter struct {
	trust.ProbeStore
	metrics *telemetry.Metrics
}

func (c probeCounter) RecordProbe(ctx context.Context, r trust.Result) error {
	err := c.ProbeStore.RecordProbe(ctx, r)
	if err == nil {
		c.metrics.Probed(r.Outcome)
	}
	return err
}
