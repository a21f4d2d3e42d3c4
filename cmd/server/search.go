package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"time"

	"github.com/waystation/waystation/api"
	"github.com/waystation/waystation/internal/clientip"
	"github.com/waystation/waystation/internal/embedding"
	"github.com/waystation/waystation/internal/embedding/sentence"
	"github.com/waystation/waystation/internal/postgres"
	"github.com/waystation/waystation/internal/search"
)

// SearchConfig is how search runs: the builtin model's files, the optional embeddings
// provider and the limits.
type SearchConfig struct {
	// ModelDir holds the sentence encoder's files (make model); empty: the builtin
	// model is the lexical one alone.
	ModelDir       string
	Provider       *embedding.ClientConfig // nil: the builtin model alone
	RatePerMin     float64
	Burst          int
	DailyAllowance int
	// CallerShare is the fraction of DailyAllowance one caller may spend a day.
	CallerShare    float64
	TrustedProxies clientip.Proxies
}

// Default similarity bands of the models (the builtin model's is search's, tuned with
// make eval); a model's band lives in its embedding_models row once registered, where
// an operator may change it.
const (
	builtinFloor     = search.BuiltinFloor
	builtinMargin    = search.BuiltinMargin
	providerFloor    = 0.35
	providerMargin   = 0.10
	queryCacheSize   = 10000
	rateLimitCallers = 100_000
)

func loadSearchConfig(getenv func(string) string) (SearchConfig, error) {
	c := SearchConfig{RatePerMin: 60, Burst: 20, DailyAllowance: 10000, CallerShare: 0.1, ModelDir: getenv("SEARCH_MODEL_DIR")}
	if u := getenv("EMBEDDINGS_URL"); u != "" {
		p := &embedding.ClientConfig{URL: u, APIKey: getenv("EMBEDDINGS_API_KEY"), Model: getenv("EMBEDDINGS_MODEL")}
		if p.Model == "" {
			p.Model = "text-embedding-3-small"
		}
		p.Dimensions = 1536
		if v := getenv("EMBEDDINGS_DIMENSIONS"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > 4000 {
				return c, fmt.Errorf("EMBEDDINGS_DIMENSIONS %q: want 1 to 4000", v)
			}
			p.Dimensions = n
		}
		c.Provider = p
	}
	num := func(name string, dst *int, min int) error {
		if v := getenv(name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < min {
				return fmt.Errorf("%s %q: want a whole number of at least %d", name, v, min)
			}
			*dst = n
		}
		return nil
	}
	rate := int(c.RatePerMin)
	if err := num("SEARCH_RATE_PER_MIN", &rate, 0); err != nil {
		return c, err
	}
	c.RatePerMin = float64(rate)
	if err := num("SEARCH_BURST", &c.Burst, 1); err != nil {
		return c, err
	}
	if err := num("SEARCH_DAILY_ALLOWANCE", &c.DailyAllowance, 0); err != nil {
		return c, err
	}
	if v := getenv("SEARCH_CALLER_SHARE"); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || !(f > 0 && f <= 1) {
			return c, fmt.Errorf("SEARCH_CALLER_SHARE %q: want a fraction over 0, at most 1", v)
		}
		c.CallerShare = f
	}
	proxies, err := clientip.ParseProxies(getenv("TRUSTED_PROXIES"))
	if err != nil {
		return c, fmt.Errorf("TRUSTED_PROXIES: %w", err)
	}
	c.TrustedProxies = proxies
	return c, nil
}

// embedders returns the models search uses: the provider's, if configured, and the
// builtin one (the hybrid with the encoder's files, else the lexical model), each
// wrapped the same way as in serve.
func embedders(cfg SearchConfig) (provider, builtin embedding.Embedder, err error) {
	builtin = embedding.WithCache(embedding.Lexhash{}, queryCacheSize)
	if cfg.ModelDir != "" {
		enc, err := sentence.Load(cfg.ModelDir)
		if err != nil {
			return nil, nil, fmt.Errorf("SEARCH_MODEL_DIR: %w (make model fetches the files)", err)
		}
		builtin = embedding.WithCache(embedding.NewHybrid(enc), queryCacheSize)
	}
	if cfg.Provider != nil {
		client, err := embedding.NewClient(*cfg.Provider)
		if err != nil {
			return nil, nil, err
		}
		provider = embedding.WithCache(embedding.WithBreaker(client, embedding.BreakerConfig{}), queryCacheSize)
	}
	return provider, builtin, nil
}

// registerModels registers the builtin model and the provider's, if configured, with
// their default bands, and returns them ready for the engine.
func registerModels(ctx context.Context, cfg SearchConfig, store search.ModelStore) (primary, fallback *search.Model, err error) {
	provider, builtin, err := embedders(cfg)
	if err != nil {
		return nil, nil, err
	}
	fallback = &search.Model{Embedder: builtin}
	rec := search.ModelRecord{ID: builtin.Model(), Dimensions: builtin.Dimensions(), Floor: builtinFloor, Margin: builtinMargin}
	if builtin.Model() == embedding.HybridModel {
		c := search.HybridCalibration
		rec.Floor, rec.Margin, rec.Calibration = search.HybridFloor, search.HybridMargin, &c
	}
	fallback.Record, err = store.RegisterModel(ctx, rec)
	if err != nil {
		return nil, nil, err
	}
	if provider != nil {
		primary = &search.Model{Embedder: provider}
		primary.Record, err = store.RegisterModel(ctx, search.ModelRecord{ID: provider.Model(), Dimensions: provider.Dimensions(), Floor: providerFloor, Margin: providerMargin})
		if err != nil {
			return nil, nil, err
		}
	}
	return primary, fallback, nil
}

// startSearch registers the models, embeds what is missing and keeps the vectors in
// step with the catalog every interval. Search answers with the builtin model alone
// when no provider is configured.
func startSearch(ctx context.Context, cfg SearchConfig, every time.Duration, log *slog.Logger, store *postgres.Store, observer search.Observer) (*search.Engine, error) {
	primary, fallback, err := registerModels(ctx, cfg, store)
	if err != nil {
		return nil, err
	}
	if fallback.Record.ID != embedding.HybridModel {
		log.Warn("search runs on the builtin lexical model alone: SEARCH_MODEL_DIR is not set (make model)")
	}
	syncer := &search.Syncer{Store: store, Every: every, Log: log, Models: []embedding.Embedder{fallback.Embedder}}
	if primary != nil {
		syncer.Models = append(syncer.Models, primary.Embedder)
	}
	// The first sync may embed the whole catalog (a new model, or an upgrade): search
	// answers from the vectors already there meanwhile, the directory from its
	// snapshot.
	go func() {
		syncer.Once(ctx)
		syncer.Run(ctx)
	}()
	return search.NewEngine(search.Config{DailyAllowance: cfg.DailyAllowance, CallerShare: cfg.CallerShare, Observer: observer,
		MemoryVectors: search.DefaultMemoryVectors}, store, primary, fallback)
}

// embedCatalog embeds the methods an import changed, under every configured model.
func embedCatalog(ctx context.Context, cfg SearchConfig, store *postgres.Store, stdout io.Writer) error {
	primary, fallback, err := registerModels(ctx, cfg, store)
	if err != nil {
		return err
	}
	for _, m := range []*search.Model{fallback, primary} {
		if m == nil {
			continue
		}
		start := time.Now()
		n, err := search.Sync(ctx, store, m.Embedder)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s: %d methods embedded (the enabled ones whose text is new or changed) in %s\n", m.Record.ID, n, time.Since(start).Round(time.Millisecond))
	}
	return nil
}

// allowanceLeft reads how much of cfg's daily allowance every replica together has
// left today, for /health and the metrics.
func allowanceLeft(cfg SearchConfig, store *postgres.Store) api.AllowanceLeft {
	return func(ctx context.Context) (int, bool, error) {
		if cfg.DailyAllowance <= 0 {
			return 0, false, nil
		}
		used, err := store.AllowanceUsed(ctx, time.Now())
		return cfg.DailyAllowance - used, true, err
	}
}
