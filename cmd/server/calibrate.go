package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/waystation/waystation/generator"
	"github.com/waystation/waystation/internal/postgres"
	"github.com/waystation/waystation/internal/search"
)

// calibrate fits the band of the model search answers with (the provider's when
// EMBEDDINGS_URL is set, else the builtin one) on labelled query files in the
// development set's format, over the catalog in the database: it prints the
// cross-validated figures (thresholds chosen on other folds than the one scored),
// then writes the calibration fitted on every query into the model's
// embedding_models row, which replicas read when they start.
func calibrate(ctx context.Context, cfg SearchConfig, store *postgres.Store, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("calibrate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	maxFalse := fs.Float64("max-false-match", 0.15, "the false-match rate the threshold keeps under, on queries it was not fitted on")
	dryRun := fs.Bool("n", false, "print the figures and the calibration, write nothing")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		//lint:ignore ST1005 a usage line, the ellipsis saying that several files may be given, as in the server's usage
		return errors.New("usage: calibrate [-max-false-match 0.15] [-n] QUERIES.jsonl...")
	}
	primary, fallback, err := registerModels(ctx, cfg, store)
	if err != nil {
		return err
	}
	m := fallback
	if primary != nil {
		m = primary
	}
	if _, err := search.Sync(ctx, store, m.Embedder); err != nil {
		return fmt.Errorf("calibrate: embed the catalog: %w", err)
	}
	holder := generator.NewHolder()
	if err := holder.Refresh(ctx, store, nil); err != nil {
		return fmt.Errorf("calibrate: snapshot: %w", err)
	}
	snap := holder.Current()
	engine, err := search.NewEngine(search.Config{}, store, m, nil)
	if err != nil {
		return err
	}
	var samples []search.Labelled
	for _, path := range fs.Args() {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		qs, err := search.ReadQueries(f)
		f.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		for _, q := range qs {
			l, err := engine.Label(ctx, snap, m, filepath.Base(path), q)
			if err != nil {
				return fmt.Errorf("%s %s: %w", path, q.ID, err)
			}
			samples = append(samples, l)
		}
	}
	o := search.CalibrationOptions{Features: search.BandFeatures, MaxFalseMatch: *maxFalse}
	scores := search.CrossValidate(samples, o, 5, 4)
	fmt.Fprintf(stdout, "%s over %d labelled queries, 5 folds x 4 shuffles:\n", m.Record.ID, len(samples))
	fmt.Fprintf(stdout, "  recall@3       %s\n", search.Spread(scores, search.CalibrationScore.Recall))
	for _, k := range []string{"paraphrase", "task", "keyword"} {
		fmt.Fprintf(stdout, "    %-12s %s\n", k, search.Spread(scores, func(s search.CalibrationScore) float64 { return s.KindRecall(k) }))
	}
	fmt.Fprintf(stdout, "  false matches  %s\n", search.Spread(scores, search.CalibrationScore.FalseMatchRate))
	c := search.Calibrate(samples, o)
	b, _ := json.Marshal(c)
	fmt.Fprintf(stdout, "calibration: %s\n", b)
	if *dryRun {
		return nil
	}
	if err := store.SetCalibration(ctx, m.Record.ID, c); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "written into the row of %s: replicas answer with it once restarted\n", m.Record.ID)
	return nil
}
