package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/waystation/waystation/internal/postgres/pgtest"
)

// TestRunServesTheDemoEndToEnd runs the real program: migrate, load the demo, serve
// on a free loopback port, answer the directory, and shut down cleanly on cancel.
func TestRunServesTheDemoEndToEnd(t *testing.T) {
	dbURL := pgtest.URL(t)
	env := map[string]string{"DATABASE_URL": dbURL, "HOST": "127.0.0.1", "PORT": "0", "SITE_DIR": t.TempDir()}
	getenv := func(k string) string { return env[k] }
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	var out strings.Builder
	if err := run(ctx, []string{"server", "migrate"}, getenv, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if err := run(ctx, []string{"server", "demo"}, getenv, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "demo catalog loaded") {
		t.Fatalf("demo: %q", out.String())
	}

	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"server", "serve"}, getenv, pw, io.Discard); pw.Close() }()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("no start line: %v", err)
	}
	go io.Copy(io.Discard, pr)
	i := strings.Index(line, "http://")
	if i < 0 {
		t.Fatalf("start line %q", line)
	}
	baseURL := strings.Fields(line[i:])[0]

	res, err := http.Get(baseURL + "/api/public/v1/services?limit=3")
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Count int `json:"count"`
		Total int `json:"total"`
	}
	json.NewDecoder(res.Body).Decode(&list)
	res.Body.Close()
	if res.StatusCode != 200 || list.Count != 3 || list.Total < 50 {
		t.Fatalf("list: %d %+v", res.StatusCode, list)
	}
	res, err = http.Get(baseURL + "/health")
	if err != nil {
		t.Fatal(err)
	}
	var health struct{ Database string }
	json.NewDecoder(res.Body).Decode(&health)
	res.Body.Close()
	if health.Database != "ok" {
		t.Fatalf("health: %+v", health)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run returned %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("run did not shut down")
	}
}

func TestConfigRefusesBadValues(t *testing.T) {
	for _, env := range []map[string]string{
		{},
		{"DATABASE_URL": "x", "PORT": "http"},
		{"DATABASE_URL": "x", "SNAPSHOT_INTERVAL": "soon"},
		{"DATABASE_URL": "x", "LOG_LEVEL": "loud"},
	} {
		if _, err := loadConfig(func(k string) string { return env[k] }); err == nil {
			t.Errorf("%v: accepted", env)
		}
	}
}
