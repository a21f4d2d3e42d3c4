package telemetry_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/waystation/waystation/internal/telemetry"
)

// lines is a log destination safe for concurrent writes; flush, when set, writes
// out what the logger holds back before the lines are read.
type lines struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	flush func()
}

func (l *lines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// String is the lines written so far.
func (l *lines) String() string {
	if l.flush != nil {
		l.flush()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// records decodes the JSON log lines written so far.
func (l *lines) records(t *testing.T) []map[string]any {
	t.Helper()
	raw := l.String()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(raw))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("log line %q is not JSON: %v", sc.Text(), err)
		}
		out = append(out, m)
	}
	return out
}

// served is a chi router behind the middleware, as the service wires it, with a
// route that logs with its request's context and reports the traceparent it would
// pass on.
type served struct {
	h       http.Handler
	log     *lines
	metrics *telemetry.Metrics
}

func newServed(t *testing.T) served {
	t.Helper()
	out := &lines{}
	log, err := telemetry.NewLogger(out, "json", slog.LevelInfo)
	if err != nil {
		t.Fatal(err)
	}
	out.flush = func() { telemetry.Flush(log) }
	m := telemetry.NewMetrics()
	r := chi.NewRouter()
	r.Use(telemetry.ChiRoute)
	r.Get("/things/{id}", func(w http.ResponseWriter, r *http.Request) {
		log.InfoContext(r.Context(), "inside")
		w.Header().Set("Outgoing-Traceparent", telemetry.Traceparent(r.Context()))
		w.Header().Set("Upstream-Traceparent", telemetry.UpstreamTraceparent(r.Context()))
		w.Write([]byte("thing " + chi.URLParam(r, "id")))
	})
	mux := http.NewServeMux()
	mux.Handle("/metrics", m.Handler(telemetry.Access{Token: "s3cret"}))
	mux.Handle("/", r)
	return served{h: telemetry.HTTP{AccessLog: log, Metrics: m}.Wrap(mux), log: out, metrics: m}
}

func (s served) do(t *testing.T, method, path string, header ...string) *http.Response {
	t.Helper()
	req := httptest.NewRequest(method, path, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Add(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	s.h.ServeHTTP(w, req)
	return w.Result()
}

var randomID = regexp.MustCompile(`^[0-9a-f]{32}$`)

// X-Request-Id is on every answer: the caller's when well formed, else 128 random
// bits, never a counter.
func TestEveryAnswerHasARequestIDTheCallersWhenWellFormed(t *testing.T) {
	s := newServed(t)
	for _, id := range []string{"5f0c2b4e-0000-4000-8000-000000000001", strings.Repeat("a", 32)} {
		if got := s.do(t, "GET", "/things/1", "X-Request-Id", id).Header.Get("X-Request-Id"); got != id {
			t.Errorf("%q came back as %q", id, got)
		}
	}
	seen := map[string]bool{}
	for _, bad := range [][]string{
		nil,
		{"X-Request-Id", ""},
		{"X-Request-Id", "has space"},
		{"X-Request-Id", "line\nbreak"},
		{"X-Request-Id", `quote"d`},
		{"X-Request-Id", strings.Repeat("a", 129)},
		{"X-Request-Id", "one", "X-Request-Id", "two"},
	} {
		for _, path := range []string{"/things/1", "/nowhere"} {
			got := s.do(t, "GET", path, bad...).Header.Get("X-Request-Id")
			if !randomID.MatchString(got) || seen[got] {
				t.Errorf("%v on %s: id %q", bad, path, got)
			}
			seen[got] = true
		}
	}
}

// A valid traceparent's trace goes into the log lines and on to what the request
// calls, under this service's own span; an invalid one starts a new trace.
func TestTraceparentIsHonouredAndPassedOn(t *testing.T) {
	s := newServed(t)
	const trace, parent = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	const requestID = "5f0c2b4e-0000-4000-8000-000000000001"
	res := s.do(t, "GET", "/things/7", "Traceparent", "00-"+trace+"-"+parent+"-01", "X-Request-Id", requestID)
	out := res.Header.Get("Outgoing-Traceparent")
	m := regexp.MustCompile(`^00-([0-9a-f]{32})-([0-9a-f]{16})-01$`).FindStringSubmatch(out)
	if m == nil || m[1] != trace || m[2] == parent {
		t.Fatalf("passed on %q", out)
	}
	recs := s.log.records(t)
	if len(recs) != 2 {
		t.Fatalf("%d log lines: %v", len(recs), recs)
	}
	inside, access := recs[0], recs[1]
	if inside["msg"] != "inside" || inside["trace_id"] != trace || inside["request_id"] != requestID {
		t.Errorf("a line logged inside the request: %v", inside)
	}
	if access["msg"] != "request" || access["trace_id"] != trace || access["parent_id"] != parent || access["span_id"] != m[2] ||
		access["request_id"] != requestID || access["route"] != "/things/{id}" || access["status"] != float64(200) ||
		access["bytes"] != float64(len("thing 7")) || access["method"] != "GET" || access["path"] != "/things/{id}" {
		t.Errorf("access line: %v", access)
	}

	for _, bad := range []string{
		"ff-" + trace + "-" + parent + "-01",                   // version ff
		"00-" + strings.Repeat("0", 32) + "-" + parent + "-01", // no trace
		"00-" + trace + "-" + strings.Repeat("0", 16) + "-01",  // no parent
		"00-" + strings.ToUpper(trace) + "-" + parent + "-01",  // upper case
		"00-" + trace + "-" + parent + "-01-extra",             // version 00 is exact
		"00-" + trace[:31] + "-" + parent + "-01",              // short
		"00_" + trace + "-" + parent + "-01",                   // separator
		"0g-" + trace + "-" + parent + "-01",                   // not hex
	} {
		out := s.do(t, "GET", "/things/7", "Traceparent", bad).Header.Get("Outgoing-Traceparent")
		if strings.Contains(out, trace) || !regexp.MustCompile(`^00-[0-9a-f]{32}-[0-9a-f]{16}-00$`).MatchString(out) {
			t.Errorf("%q: passed on %q", bad, out)
		}
	}
	// Sent twice, it is not one trace context.
	out = s.do(t, "GET", "/things/7", "Traceparent", "00-"+trace+"-"+parent+"-01", "Traceparent", "00-"+trace+"-"+parent+"-01").Header.Get("Outgoing-Traceparent")
	if strings.Contains(out, trace) {
		t.Errorf("two traceparents: passed on %q", out)
	}
}

// The access log never holds the Authorization header or a cookie.
func TestAccessLogHoldsNoCredentials(t *testing.T) {
	s := newServed(t)
	s.do(t, "GET", "/things/1", "Authorization", "Bearer sk_agent_0123_secretsecret", "Cookie", "__Host-waystation_session=tok3n")
	raw := s.log.String()
	if strings.Contains(raw, "secretsecret") || strings.Contains(raw, "tok3n") {
		t.Errorf("a credential was logged: %s", raw)
	}
}

// /metrics asks for its token, and counts requests by route pattern, never by path,
// and methods only from the list of methods there are.
func TestMetricsCountRequestsByRouteBehindTheToken(t *testing.T) {
	s := newServed(t)
	for _, path := range []string{"/things/1", "/things/2", "/things/3"} {
		s.do(t, "GET", path)
	}
	s.do(t, "BREW", "/things/1")
	s.do(t, "GET", "/nowhere/at/all")

	for _, auth := range []string{"", "Bearer wrong", "s3cret", "Basic s3cret"} {
		res := s.do(t, "GET", "/metrics", "Authorization", auth)
		if res.StatusCode != http.StatusUnauthorized || res.Header.Get("WWW-Authenticate") == "" {
			t.Errorf("%q: %d", auth, res.StatusCode)
		}
	}
	res := s.do(t, "GET", "/metrics", "Authorization", "Bearer s3cret")
	raw, _ := io.ReadAll(res.Body)
	body := string(raw)
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/plain") || res.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("metrics: %d %s", res.StatusCode, res.Header)
	}
	for _, want := range []string{
		`waystation_http_requests_total{code="200",method="GET",route="/things/{id}"} 3`,
		`waystation_http_requests_total{code="405",method="other",route="unmatched"} 1`,
		`waystation_http_requests_total{code="404",method="GET",route="unmatched"} 1`,
		`waystation_http_requests_total{code="401",method="GET",route="/metrics"} 4`,
		`waystation_http_request_duration_seconds_count{method="GET",route="/things/{id}"} 3`,
		`waystation_http_requests_in_flight 1`,
		"go_goroutines", "process_resident_memory_bytes",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s in\n%s", want, grep(body, "waystation_http_requests_total"))
		}
	}
	if strings.Contains(body, "/things/1") || strings.Contains(body, "BREW") {
		t.Error("a path or an invented method became a label")
	}

	// The hooks of search and the prober, and the series Init puts in at zero.
	s.metrics.Init([]string{"builtin:hybrid-v1"}, []string{"matched", "rate_limited"}, []string{"timeout"})
	s.metrics.Searched("matched", "builtin:hybrid-v1")
	s.metrics.Embedded("builtin:hybrid-v1", 3*time.Millisecond, nil)
	s.metrics.Embedded("builtin:hybrid-v1", time.Second, errors.New("down"))
	s.metrics.Probed("payment_required")
	raw, _ = io.ReadAll(s.do(t, "GET", "/metrics", "Authorization", "Bearer s3cret").Body)
	for _, want := range []string{
		`waystation_search_queries_total{model="builtin:hybrid-v1",outcome="matched"} 1`,
		`waystation_search_queries_total{model="",outcome="rate_limited"} 0`,
		`waystation_embedding_duration_seconds_count{model="builtin:hybrid-v1",result="ok"} 1`,
		`waystation_embedding_duration_seconds_count{model="builtin:hybrid-v1",result="error"} 1`,
		`waystation_probe_outcomes_total{outcome="timeout"} 0`,
		`waystation_probe_outcomes_total{outcome="payment_required"} 1`,
	} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

// The middleware keeps what handlers need of the writer: flushing, and write
// deadlines through http.ResponseController (event streams use both).
func TestMiddlewareKeepsFlushAndWriteDeadlines(t *testing.T) {
	h := telemetry.HTTP{}.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		if err := rc.SetWriteDeadline(time.Now().Add(time.Second)); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Write([]byte("data: 1\n\n"))
		if err := rc.Flush(); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	}))
	srv := httptest.NewServer(h)
	defer srv.Close()
	res, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK || string(raw) != "data: 1\n\n" {
		t.Errorf("%d %q", res.StatusCode, raw)
	}
}

func TestLoggerFormats(t *testing.T) {
	var text, js bytes.Buffer
	for format, out := range map[string]*bytes.Buffer{"": &text, "json": &js} {
		log, err := telemetry.NewLogger(out, format, slog.LevelInfo)
		if err != nil {
			t.Fatal(err)
		}
		log.Info("hello", "n", 1)
	}
	if !strings.Contains(text.String(), "msg=hello n=1") {
		t.Errorf("text: %q", text.String())
	}
	var m map[string]any
	if err := json.Unmarshal(js.Bytes(), &m); err != nil || m["msg"] != "hello" {
		t.Errorf("json: %q %v", js.String(), err)
	}
	if _, err := telemetry.NewLogger(io.Discard, "xml", slog.LevelInfo); err == nil {
		t.Error("xml accepted")
	}
}

// grep is the lines of s that hold sub.
func grep(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// Without a token, /metrics answers a client on loopback that no proxy forwarded,
// and refuses everyone else unless the metrics are made public.
func TestMetricsWithoutATokenAnswerLoopbackAlone(t *testing.T) {
	scrape := func(access telemetry.Access, remote string, header ...string) int {
		req := httptest.NewRequest("GET", "/metrics", nil)
		req.RemoteAddr = remote
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		rec := httptest.NewRecorder()
		telemetry.NewMetrics().Handler(access).ServeHTTP(rec, req)
		return rec.Code
	}
	for _, c := range []struct {
		name   string
		access telemetry.Access
		remote string
		header []string
		want   int
	}{
		{"IPv4 loopback", telemetry.Access{}, "127.0.0.1:5000", nil, http.StatusOK},
		{"IPv6 loopback", telemetry.Access{}, "[::1]:5000", nil, http.StatusOK},
		{"IPv4 in IPv6 loopback", telemetry.Access{}, "[::ffff:127.0.0.1]:5000", nil, http.StatusOK},
		{"another host", telemetry.Access{}, "192.0.2.7:5000", nil, http.StatusForbidden},
		{"a proxy on loopback", telemetry.Access{}, "127.0.0.1:5000", []string{"X-Forwarded-For", "203.0.113.9"}, http.StatusForbidden},
		{"a proxy saying Forwarded", telemetry.Access{}, "127.0.0.1:5000", []string{"Forwarded", "for=203.0.113.9"}, http.StatusForbidden},
		{"a Unix socket", telemetry.Access{}, "@", nil, http.StatusForbidden},
		{"public", telemetry.Access{Public: true}, "192.0.2.7:5000", nil, http.StatusOK},
		{"a token asked of loopback too", telemetry.Access{Token: "t"}, "127.0.0.1:5000", nil, http.StatusUnauthorized},
		{"a token from anywhere", telemetry.Access{Token: "t"}, "192.0.2.7:5000", []string{"Authorization", "Bearer t"}, http.StatusOK},
	} {
		if got := scrape(c.access, c.remote, c.header...); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
}
