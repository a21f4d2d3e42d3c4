// Command growcatalog grows the catalog of a database to a number of methods with
// pgtest.GrowCatalog's synthetic variants of the methods already there, and embeds
// them with the builtin model (the hybrid when SEARCH_MODEL_DIR names its files), for `make bench` (.ci/bench.sh) to load test the
// service at a scale no real catalog has yet. The catalog must be imported and its
// builtin model registered first (`server import`). Run twice, it does nothing the
// second time.
//
//	DATABASE_URL=... go run ./internal/cmd/growcatalog -methods 100000
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/waystation/waystation/internal/embedding"
	"github.com/waystation/waystation/internal/embedding/sentence"
	"github.com/waystation/waystation/internal/postgres"
	"github.com/waystation/waystation/internal/postgres/pgtest"
	"github.com/waystation/waystation/internal/search"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args, os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "growcatalog:", err)
		os.Exit(1)
	}
}

// bulk is how many missing vectors make it quicker to drop the model's HNSW index and
// build it once over every vector than to grow it one insert at a time.
const bulk = 5000

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("growcatalog", flag.ContinueOnError)
	fs.SetOutput(stderr)
	methods := fs.Int("methods", 100_000, "methods the catalog should hold")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	dbURL := getenv("DATABASE_URL")
	if dbURL == "" {
		return errors.New("DATABASE_URL is not set")
	}
	// Building the vector index over 100k vectors wants more than the default memory.
	u, err := url.Parse(dbURL)
	if err != nil {
		return fmt.Errorf("DATABASE_URL: %w", err)
	}
	q := u.Query()
	q.Set("maintenance_work_mem", "1GB")
	u.RawQuery = q.Encode()
	store, err := postgres.Open(ctx, u.String())
	if err != nil {
		return err
	}
	defer store.Close()
	pool := store.Pool()

	// The builtin model the server runs (the hybrid with SEARCH_MODEL_DIR), as the
	// import registered it, band included.
	var builtin embedding.Embedder = embedding.Lexhash{}
	if dir := getenv("SEARCH_MODEL_DIR"); dir != "" {
		enc, err := sentence.Load(dir)
		if err != nil {
			return fmt.Errorf("SEARCH_MODEL_DIR: %w", err)
		}
		builtin = embedding.NewHybrid(enc)
	}
	model := search.ModelRecord{ID: builtin.Model()}
	err = pool.QueryRow(ctx, `SELECT dimensions, similarity_floor::float8, similarity_margin::float8 FROM embedding_models WHERE id = $1`,
		model.ID).Scan(&model.Dimensions, &model.Floor, &model.Margin)
	if err != nil {
		return fmt.Errorf("model %s: %w (import the catalog first)", model.ID, err)
	}
	start := time.Now()
	if err := pgtest.GrowCatalog(ctx, store, *methods); err != nil {
		return err
	}
	var missing int
	err = pool.QueryRow(ctx, `
		SELECT count(*) FROM provider_methods m WHERE m.enabled AND NOT EXISTS (
			SELECT 1 FROM method_embeddings e WHERE e.method_id = m.id AND e.model_id = $1)`, model.ID).Scan(&missing)
	if err != nil {
		return fmt.Errorf("count the methods to embed: %w", err)
	}
	if missing >= bulk {
		var index string
		err := pool.QueryRow(ctx, `SELECT indexname FROM pg_indexes WHERE indexname LIKE 'method_embeddings_hnsw_%' AND indexdef LIKE '%''' || $1 || '''%'`, model.ID).Scan(&index)
		if err != nil {
			return fmt.Errorf("find the vector index of %s: %w", model.ID, err)
		}
		if _, err := pool.Exec(ctx, `DROP INDEX `+index); err != nil {
			return fmt.Errorf("drop the vector index: %w", err)
		}
	}
	n, err := search.Sync(ctx, store, builtin)
	if err != nil {
		return err
	}
	// The index again, unless it is there, and fresh statistics for the planner.
	if _, err := store.RegisterModel(ctx, model); err != nil {
		return err
	}
	if _, err := pool.Exec(ctx, `ANALYZE method_embeddings; ANALYZE provider_methods`); err != nil {
		return fmt.Errorf("analyze: %w", err)
	}
	var total int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM provider_methods WHERE enabled`).Scan(&total); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "growcatalog: %d enabled methods, %d embedded now, in %v\n", total, n, time.Since(start).Round(100*time.Millisecond))
	return nil
}
