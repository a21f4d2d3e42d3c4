package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/waystation/waystation/generator"
	"github.com/waystation/waystation/internal/catalog"
	"github.com/waystation/waystation/internal/directory"
	"github.com/waystation/waystation/internal/embedding"
	"github.com/waystation/waystation/internal/postgres"
	"github.com/waystation/waystation/internal/search"
)

// TestCalibrateWritesTheProvidersBand runs make calibrate's command against an
// OpenAI-compatible embeddings provider on loopback (its vectors are the builtin
// lexical model's): the provider's model gets a band of its own from the same
// calibration as the builtin's, stored in its embedding_models row, and the server's
// search answers with it once it registers the model again.
func TestCalibrateWritesTheProvidersBand(t *testing.T) {
	t.Parallel()
	calls := 0
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct{ Input []string }
		if r.URL.Path != "/v1/embeddings" || json.NewDecoder(r.Body).Decode(&req) != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		calls++
		type datum struct {
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		}
		var out struct {
			Data []datum `json:"data"`
		}
		for i, text := range req.Input {
			out.Data = append(out.Data, datum{i, embedding.Lexhash{}.Vector(text)})
		}
		json.NewEncoder(w).Encode(out)
	}))
	defer provider.Close()

	// Labelled queries over the demo catalog: each method by its name, and requests
	// the catalog has nothing for.
	demo, err := catalog.Demo()
	if err != nil {
		t.Fatal(err)
	}
	var lines bytes.Buffer
	enc := json.NewEncoder(&lines)
	for _, p := range demo.Providers {
		for _, m := range p.Methods {
			enc.Encode(search.Query{Text: m.Name, Relevant: []string{m.Endpoint.URL}, Kind: "keyword"})
		}
	}
	for _, q := range []string{"song lyrics for Bohemian Rhapsody", "book a table for two tonight", "knit a scarf pattern",
		"Powerball results from last night", "adopt a kitten near me", "tune a guitar by ear", "best pizza dough recipe",
		"learn to juggle three balls", "repair a bicycle puncture", "write a wedding toast", "train a puppy to sit",
		"plant tulip bulbs in autumn", "fold a paper crane", "choose running shoes", "paint a bedroom wall"} {
		enc.Encode(search.Query{Text: q, Relevant: []string{}, Kind: search.KindOffTopic})
	}
	file := filepath.Join(t.TempDir(), "labelled.jsonl")
	if err := os.WriteFile(file, lines.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}

	dbURL := demoDatabase(t)
	env := map[string]string{"DATABASE_URL": dbURL, "EMBEDDINGS_URL": provider.URL + "/v1", "EMBEDDINGS_MODEL": "fake-1",
		"EMBEDDINGS_DIMENSIONS": "1024"}
	getenv := func(k string) string { return env[k] }
	var out, errs bytes.Buffer
	if err := run(context.Background(), []string{"server", "calibrate", file}, getenv, &out, &errs); err != nil {
		t.Fatalf("calibrate: %v\n%s%s", err, out.String(), errs.String())
	}
	if !strings.Contains(out.String(), "openai:fake-1 over ") || !strings.Contains(out.String(), "false matches") ||
		!strings.Contains(out.String(), "written into the row of openai:fake-1") {
		t.Errorf("calibrate printed:\n%s", out.String())
	}
	if calls == 0 {
		t.Fatal("the provider was never asked")
	}

	store, err := postgres.Open(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	cfg, err := loadSearchConfig(getenv)
	if err != nil {
		t.Fatal(err)
	}
	primary, fallback, err := registerModels(context.Background(), cfg, store)
	if err != nil {
		t.Fatal(err)
	}
	c := primary.Record.Calibration
	if c == nil || c.Evidence != search.EvidenceVersion || c.Least <= 0 || c.Least >= 1 {
		t.Fatalf("the provider's row holds calibration %+v", c)
	}
	if fallback.Record.Calibration != nil && *fallback.Record.Calibration == *c {
		t.Error("the provider's band is the builtin's, not its own")
	}
	engine, err := search.NewEngine(search.Config{}, store, primary, fallback)
	if err != nil {
		t.Fatal(err)
	}
	snap := generatorSnapshot(t, store)
	res, err := engine.Search(context.Background(), "", snap, "what will the weather be like in Lisbon tomorrow", directory.Filter{})
	if err != nil || res.Band == nil || !res.Band.Calibrated || res.Model != "openai:fake-1" {
		t.Fatalf("search: %+v %v", res.Band, err)
	}

	// -n prints and writes nothing; a file that is not labelled queries is refused.
	if err := run(context.Background(), []string{"server", "calibrate", "-n", file}, getenv, &out, &errs); err != nil {
		t.Errorf("calibrate -n: %v", err)
	}
	bad := filepath.Join(t.TempDir(), "bad.jsonl")
	os.WriteFile(bad, []byte(`{"query": "x", "relevant": [], "kind": "task"}`+"\n"), 0o600)
	if err := run(context.Background(), []string{"server", "calibrate", bad}, getenv, &out, &errs); err == nil {
		t.Error("a malformed labelled file was calibrated on")
	}
}

func generatorSnapshot(t *testing.T, store *postgres.Store) *directory.Snapshot {
	t.Helper()
	h := generator.NewHolder()
	if err := h.Refresh(context.Background(), store, nil); err != nil {
		t.Fatal(err)
	}
	return h.Current()
}
