package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/waystation/waystation/api/openapitest"
	"github.com/waystation/waystation/internal/embedding"
	"github.com/waystation/waystation/internal/postgres/pgtest"
)

// TestServeSearchesWithTheHybridModel runs the program with the sentence encoder's
// files: demo embeds the catalog under the hybrid model, and search answers with it,
// saying why in band, in the documented shape. A directory that is set but unreadable
// stops the server.
func TestServeSearchesWithTheHybridModel(t *testing.T) {
	t.Parallel()
	dir := os.Getenv("WAYSTATION_SENTENCE_MODEL")
	if dir == "" {
		t.Skip("WAYSTATION_SENTENCE_MODEL is not set (make test sets it)")
	}
	env := map[string]string{"DATABASE_URL": pgtest.URL(t), "HOST": "127.0.0.1", "PORT": "0", "SITE_DIR": t.TempDir(),
		"SEARCH_MODEL_DIR": t.TempDir(), "SEARCH_RATE_PER_MIN": "0"}
	getenv := func(k string) string { return env[k] }
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := run(ctx, []string{"server", "migrate"}, getenv, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	if err := run(ctx, []string{"server", "serve"}, getenv, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "SEARCH_MODEL_DIR") {
		t.Fatalf("serve with an empty SEARCH_MODEL_DIR: %v", err)
	}
	env["SEARCH_MODEL_DIR"] = dir
	var out strings.Builder
	if err := run(ctx, []string{"server", "demo"}, getenv, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), embedding.HybridModel+": ") {
		t.Fatalf("demo did not embed under %s: %q", embedding.HybridModel, out.String())
	}

	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"server", "serve"}, getenv, pw, io.Discard); pw.Close() }()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("no start line: %v", err)
	}
	go io.Copy(io.Discard, pr)
	baseURL := strings.Fields(line[strings.Index(line, "http://"):])[0]

	doc := openapitest.Load(t, "../../api/openapi.json")
	ask := func(q string) (answer struct {
		Match, Model string
		Band         *struct{ Confidence, Least, Semantic, Lexical float64 }
		Items        []struct{ Slug string }
	}) {
		req, _ := http.NewRequest(http.MethodGet, baseURL+"/api/public/v1/services?q="+strings.ReplaceAll(q, " ", "+"), nil)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		doc.CheckResponse(t, req, res, body)
		if err := json.Unmarshal(body, &answer); err != nil || res.StatusCode != 200 {
			t.Fatalf("%q: %d %s", q, res.StatusCode, body)
		}
		return answer
	}
	// The first sync runs in the background: wait for the vectors.
	deadline := time.Now().Add(time.Minute)
	for {
		a := ask("hourly weather forecast for my city")
		if a.Model != embedding.HybridModel || a.Band == nil {
			t.Fatalf("answer %+v", a)
		}
		if a.Match == "semantic" {
			if a.Band.Confidence < a.Band.Least || a.Band.Semantic <= 0 || a.Band.Lexical <= 0 || !strings.Contains(a.Items[0].Slug, "forecast") {
				t.Fatalf("answer %+v", a)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no semantic answer within a minute: %+v %+v", a, *a.Band)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if a := ask("song lyrics for a famous opera piece"); a.Match != "none" || len(a.Items) != 0 || a.Band.Confidence >= a.Band.Least {
		t.Fatalf("off-topic answer %+v", a)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not shut down")
	}
}
