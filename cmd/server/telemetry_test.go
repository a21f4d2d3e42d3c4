package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// The running server names every answer with X-Request-Id, logs one JSON line per
// request under that id, and serves its metrics at /metrics behind METRICS_TOKEN with
// every family docs/operations.md lists, the directory's snapshot routes counted by pattern.
func TestServerLogsEveryRequestAndServesItsMetrics(t *testing.T) {
	t.Parallel()
	srv := serveLogged(t, map[string]string{"DATABASE_URL": demoDatabase(t), "LOG_FORMAT": "json", "METRICS_TOKEN": "scrape-me"})
	api := srv.base + "/functions/v1/api"
	get := func(url string, header ...string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", url, nil)
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		raw, _ := io.ReadAll(res.Body)
		return res, string(raw)
	}

	ids := map[string]int{} // request id -> status
	for _, c := range []struct {
		url    string
		header []string
	}{
		{api + "/api/public/v1/services", nil},
		{api + "/api/public/v1/services?q=weather+forecast+for+a+city", nil},
		{api + "/api/public/v1/services/no-such-method", nil},
		{srv.base + "/", nil},
		{srv.base + "/app/requests", nil},
		{api + "/sessions", []string{"X-Request-Id", "5f0c2b4e-0000-4000-8000-0000000000c1"}},
	} {
		res, _ := get(c.url, c.header...)
		id := res.Header.Get("X-Request-Id")
		if id == "" {
			t.Errorf("%s: no X-Request-Id", c.url)
		}
		ids[id] = res.StatusCode
	}
	if _, ok := ids["5f0c2b4e-0000-4000-8000-0000000000c1"]; !ok {
		t.Error("the caller's X-Request-Id was not kept")
	}

	if res, _ := get(srv.base + "/metrics"); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("metrics without the token: %d", res.StatusCode)
	}
	res, body := get(srv.base+"/metrics", "Authorization", "Bearer scrape-me")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("metrics: %d", res.StatusCode)
	}
	for _, family := range []string{
		"waystation_http_requests_total", "waystation_http_request_duration_seconds", "waystation_http_requests_in_flight",
		"waystation_search_queries_total", "waystation_embedding_duration_seconds", "waystation_search_status",
		"waystation_search_allowance_remaining", "waystation_snapshot_age_seconds", "waystation_snapshot_methods",
		"waystation_probe_outcomes_total", "waystation_db_pool_acquired_connections", "waystation_db_pool_idle_connections",
		"waystation_db_pool_connections", "waystation_db_pool_max_connections", "waystation_db_pool_acquires_total",
		"waystation_db_pool_empty_acquires_total", "waystation_db_pool_acquire_seconds_total", "go_goroutines",
		"process_resident_memory_bytes",
	} {
		if !strings.Contains(body, "# TYPE "+family+" ") {
			t.Errorf("no family %s", family)
		}
	}
	for _, want := range []string{
		`waystation_http_requests_total{code="200",method="GET",route="/functions/v1/api/api/public/v1/services"} 2`,
		`waystation_http_requests_total{code="404",method="GET",route="/functions/v1/api/api/public/v1/services/{slug}"} 1`,
		`waystation_http_requests_total{code="200",method="GET",route="/"} 1`,
		`waystation_http_requests_total{code="401",method="GET",route="/functions/v1/api/sessions"} 1`,
		`waystation_search_status{status="ok"} 1`,
		`waystation_search_queries_total{model="builtin:`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}

	// One access line per request, in JSON, under the id its answer carried. Access
	// lines are written out in batches (every 200 ms): wait for the requests' lines.
	var logged map[string]float64
	read := func() {
		logged = map[string]float64{}
		sc := bufio.NewScanner(strings.NewReader(srv.logs.String()))
		for sc.Scan() {
			var line struct {
				Msg       string
				RequestID string `json:"request_id"`
				TraceID   string `json:"trace_id"`
				Status    float64
			}
			if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
				t.Fatalf("a log line is not JSON: %q", sc.Text())
			}
			if line.Msg == "request" {
				if line.TraceID == "" {
					t.Errorf("access line without a trace id: %s", sc.Text())
				}
				logged[line.RequestID] = line.Status
			}
		}
	}
	eventually(5*time.Second, func() bool {
		read()
		for id := range ids {
			if _, ok := logged[id]; !ok {
				return false
			}
		}
		return true
	})
	for id, status := range ids {
		if logged[id] != float64(status) {
			t.Errorf("request %s (%d) logged as %v", id, status, logged[id])
		}
	}
}
