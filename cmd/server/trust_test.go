package main

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/waystation/waystation/internal/postgres/pgtest"
)

// TestOverrideAndProbeCommands runs the operator's commands on the demo catalog:
// an override is set with who and until when, removed, and a second removal fails;
// a probe round leaves the demo's reserved hostnames alone.
func TestOverrideAndProbeCommands(t *testing.T) {
	t.Parallel()
	env := map[string]string{"DATABASE_URL": pgtest.URL(t), "USER": "tester"}
	getenv := func(k string) string { return env[k] }
	ctx := context.Background()
	exec := func(args ...string) (string, error) {
		var out strings.Builder
		err := run(ctx, append([]string{"server"}, args...), getenv, &out, io.Discard)
		return out.String(), err
	}
	for _, cmd := range []string{"migrate", "demo"} {
		if _, err := exec(cmd); err != nil {
			t.Fatal(err)
		}
	}

	out, err := exec("override", "-by", "alice", "-expires", "2h", "API.Tidewatch.example", "AVOID", "under", "review")
	if err != nil || !strings.Contains(out, "avoid (under review), set by alice, until ") {
		t.Fatalf("override: %q %v", out, err)
	}
	if _, err := exec("override", "api.tidewatch.example", "avoid"); err == nil {
		t.Error("an override without a reason was accepted")
	}
	if _, err := exec("override", "-expires", "soon", "api.tidewatch.example", "avoid", "x"); err == nil {
		t.Error("an unreadable expiry was accepted")
	}
	if _, err := exec("override", "nowhere.example", "avoid", "x"); err == nil {
		t.Error("an override on an unknown hostname was accepted")
	}
	out, err = exec("override-remove", "api.tidewatch.example")
	if err != nil || !strings.Contains(out, "removed by tester") {
		t.Fatalf("override-remove: %q %v", out, err)
	}
	if _, err := exec("override-remove", "api.tidewatch.example"); err == nil {
		t.Error("removing a removed override succeeded")
	}

	out, err = exec("probe")
	if err != nil || !strings.Contains(out, "probed 0 methods") {
		t.Fatalf("probe: %q %v", out, err)
	}
}

func TestProbeConfig(t *testing.T) {
	t.Parallel()
	c, err := loadProbeConfig(func(string) string { return "" })
	if err != nil || c.Interval != 30*time.Minute || c.Concurrency != 0 || c.Timeout != 0 || // the prober's defaults
		c.PerHost != 10 || c.PerRound != 1000 {
		t.Fatalf("defaults: %+v %v", c, err)
	}
	env := map[string]string{"PROBE_INTERVAL": "0", "PROBE_CONCURRENCY": "3", "PROBE_TIMEOUT": "2s", "PROBE_PER_HOST": "0", "PROBE_PER_ROUND": "50"}
	c, err = loadProbeConfig(func(k string) string { return env[k] })
	if err != nil || c.Interval != 0 || c.Concurrency != 3 || c.Timeout != 2*time.Second || c.PerHost != 0 || c.PerRound != 50 {
		t.Fatalf("set: %+v %v", c, err)
	}
	for _, bad := range []map[string]string{
		{"PROBE_INTERVAL": "10s"}, {"PROBE_INTERVAL": "often"}, {"PROBE_CONCURRENCY": "0"},
		{"PROBE_CONCURRENCY": "many"}, {"PROBE_TIMEOUT": "1ms"}, {"PROBE_TIMEOUT": "1h"},
		{"PROBE_PER_HOST": "-1"}, {"PROBE_PER_HOST": "ten"}, {"PROBE_PER_ROUND": "2000000"},
	} {
		if _, err := loadProbeConfig(func(k string) string { return bad[k] }); err == nil {
			t.Errorf("%v: accepted", bad)
		}
	}
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	for v, want := range map[string]time.Time{
		"72h": now.Add(72 * time.Hour), "7d": now.AddDate(0, 0, 7), "2026-12-01T00:00:00Z": time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC),
	} {
		if got, err := parseExpiry(v, now); err != nil || !got.Equal(want) {
			t.Errorf("parseExpiry(%q) = %v, %v", v, got, err)
		}
	}
}
