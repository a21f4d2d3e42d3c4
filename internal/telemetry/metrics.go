package telemetry

import (
	"crypto/subtle"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/waystation/waystation/internal/clientip"
)

// Metrics are the service's Prometheus metrics, in a registry of their own. The
// families the service reports itself are here; cmd adds those it reads on each
// scrape (Register, Gauge, State, Pool).
type Metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	inFlight prometheus.Gauge
	searches *prometheus.CounterVec
	embeds   *prometheus.HistogramVec
	probes   *prometheus.CounterVec

	// series holds the children of requests and duration resolved so far, by
	// route, method and status: read without a lock, replaced whole on a miss.
	series   atomic.Pointer[map[seriesKey]requestSeries]
	seriesMu sync.Mutex
}

type seriesKey struct {
	route, method string
	status        int
}

type requestSeries struct {
	count    prometheus.Counter
	duration prometheus.Observer
}

// Namespace prefixes every family of the service's own.
const Namespace = "waystation"

// NewMetrics makes the registry with the service's families and the Go runtime's and
// process's.
func NewMetrics() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "http_requests_total",
			Help: "HTTP requests answered, by route pattern, method and status code."}, []string{"route", "method", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace, Name: "http_request_duration_seconds",
			Help: "Time from a request's headers to the end of its answer, by route pattern and method (long polls and event streams included).",
			// From a snapshot hit (tens of microseconds) to a long poll's 30 s.
			Buckets: []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}},
			[]string{"route", "method"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: Namespace, Name: "http_requests_in_flight",
			Help: "HTTP requests being answered now."}),
		searches: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "search_queries_total",
			Help: "Searches, by outcome (exact, matched, unmatched, rate_limited, allowance_exhausted, unavailable, canceled) and the model that answered (empty when none did)."},
			[]string{"outcome", "model"}),
		embeds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace, Name: "embedding_duration_seconds",
			Help:    "Time to embed one novel query, by model and result (ok, error).",
			Buckets: []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}},
			[]string{"model", "result"}),
		probes: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "probe_outcomes_total",
			Help: "Probes of sellers' methods stored, by outcome (payment_required, no_payment_required, invalid_offer, http_error, timeout, redirect, error, ...)."},
			[]string{"outcome"}),
	}
	m.series.Store(&map[seriesKey]requestSeries{})
	m.reg.MustRegister(m.requests, m.duration, m.inFlight, m.searches, m.embeds, m.probes,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Init puts in every series the service knows of at start, at zero, so that a
// scrape shows each family before its first event and rates start from zero: the
// searches and embeddings of each model and the probes of each outcome.
func (m *Metrics) Init(models, searchOutcomes, probeOutcomes []string) {
	for _, o := range searchOutcomes {
		m.searches.WithLabelValues(o, "")
		for _, model := range models {
			m.searches.WithLabelValues(o, model)
		}
	}
	for _, model := range models {
		m.embeds.WithLabelValues(model, "ok")
		m.embeds.WithLabelValues(model, "error")
	}
	for _, o := range probeOutcomes {
		m.probes.WithLabelValues(o)
	}
}

func (m *Metrics) request(route, method string, status int, took time.Duration) {
	k := seriesKey{route, methodLabel(method), status}
	rs, ok := (*m.series.Load())[k]
	if !ok {
		rs = m.addSeries(k)
	}
	rs.count.Inc()
	rs.duration.Observe(took.Seconds())
}

// addSeries resolves the children of k once: routes are patterns, methods and
// statuses few, so the map stays small.
func (m *Metrics) addSeries(k seriesKey) requestSeries {
	m.seriesMu.Lock()
	defer m.seriesMu.Unlock()
	old := *m.series.Load()
	if rs, ok := old[k]; ok {
		return rs
	}
	rs := requestSeries{
		count:    m.requests.WithLabelValues(k.route, k.method, statusLabel(k.status)),
		duration: m.duration.WithLabelValues(k.route, k.method),
	}
	series := make(map[seriesKey]requestSeries, len(old)+1)
	for k, v := range old {
		series[k] = v
	}
	series[k] = rs
	m.series.Store(&series)
	return rs
}

// Searched counts a search's outcome (search.Observer).
func (m *Metrics) Searched(outcome, model string) { m.searches.WithLabelValues(outcome, model).Inc() }

// Embedded times a query's embedding (search.Observer).
func (m *Metrics) Embedded(model string, took time.Duration, err error) {
	result := "ok"
	if err != nil {
		result = "error"
	}
	m.embeds.WithLabelValues(model, result).Observe(took.Seconds())
}

// Probed counts a stored probe's outcome.
func (m *Metrics) Probed(outcome string) { m.probes.WithLabelValues(outcome).Inc() }

// Register adds collectors of cmd's own.
func (m *Metrics) Register(cs ...prometheus.Collector) error {
	for _, c := range cs {
		if err := m.reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// Gauge adds a gauge read on every scrape.
func (m *Metrics) Gauge(name, help string, read func() float64) error {
	return m.reg.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: Namespace, Name: name, Help: help}, read))
}

// State adds a gauge of one series per state under label, read on every scrape:
// 1 for the state current returns, 0 for the others (states lists them all).
func (m *Metrics) State(name, help, label string, states []string, current func() string) error {
	return m.reg.Register(&stateCollector{
		desc: prometheus.NewDesc(prometheus.BuildFQName(Namespace, "", name), help, []string{label}, nil), states: states, current: current})
}

type stateCollector struct {
	desc    *prometheus.Desc
	states  []string
	current func() string
}

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	now := c.current()
	for _, s := range c.states {
		v := 0.0
		if s == now {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, v, s)
	}
}

// Pool adds the database pool's figures, read on every scrape.
func (m *Metrics) Pool(stat func() *pgxpool.Stat) error {
	return m.reg.Register(&poolCollector{stat: stat})
}

var (
	poolAcquired = prometheus.NewDesc(Namespace+"_db_pool_acquired_connections", "Connections of the database pool in use now.", nil, nil)
	poolIdle     = prometheus.NewDesc(Namespace+"_db_pool_idle_connections", "Connections of the database pool idle now.", nil, nil)
	poolTotal    = prometheus.NewDesc(Namespace+"_db_pool_connections", "Connections of the database pool open now, in use, idle or being opened.", nil, nil)
	poolMax      = prometheus.NewDesc(Namespace+"_db_pool_max_connections", "The most connections the database pool opens.", nil, nil)
	poolAcquires = prometheus.NewDesc(Namespace+"_db_pool_acquires_total", "Connections taken from the database pool.", nil, nil)
	poolWaited   = prometheus.NewDesc(Namespace+"_db_pool_empty_acquires_total", "Connections taken from the database pool that had to wait for one.", nil, nil)
	poolWait     = prometheus.NewDesc(Namespace+"_db_pool_acquire_seconds_total", "Time spent taking connections from the database pool.", nil, nil)
	poolCanceled = prometheus.NewDesc(Namespace+"_db_pool_canceled_acquires_total", "Waits for a connection of the database pool given up by their caller.", nil, nil)
)

type poolCollector struct{ stat func() *pgxpool.Stat }

func (c *poolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{poolAcquired, poolIdle, poolTotal, poolMax, poolAcquires, poolWaited, poolWait, poolCanceled} {
		ch <- d
	}
}

func (c *poolCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.stat()
	ch <- prometheus.MustNewConstMetric(poolAcquired, prometheus.GaugeValue, float64(s.AcquiredConns()))
	ch <- prometheus.MustNewConstMetric(poolIdle, prometheus.GaugeValue, float64(s.IdleConns()))
	ch <- prometheus.MustNewConstMetric(poolTotal, prometheus.GaugeValue, float64(s.TotalConns()))
	ch <- prometheus.MustNewConstMetric(poolMax, prometheus.GaugeValue, float64(s.MaxConns()))
	ch <- prometheus.MustNewConstMetric(poolAcquires, prometheus.CounterValue, float64(s.AcquireCount()))
	ch <- prometheus.MustNewConstMetric(poolWaited, prometheus.CounterValue, float64(s.EmptyAcquireCount()))
	ch <- prometheus.MustNewConstMetric(poolWait, prometheus.CounterValue, s.AcquireDuration().Seconds())
	ch <- prometheus.MustNewConstMetric(poolCanceled, prometheus.CounterValue, float64(s.CanceledAcquireCount()))
}

// Access is who may scrape the metrics, which say much about the service and its
// callers: with a Token, whoever sends it as a Bearer token; else, with Public,
// anyone; else only a client on a loopback address that no proxy forwarded.
type Access struct {
	Token  string
	Public bool
}

// Handler serves the metrics in Prometheus's text format (or OpenMetrics, when
// asked), to the scrapes access lets in: a missing or wrong token gets 401, a client
// that is not on loopback 403.
func (m *Metrics) Handler(access Access) http.Handler {
	h := promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{EnableOpenMetrics: true})
	want := []byte("Bearer " + access.Token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		SetRoute(r.Context(), "/metrics")
		w.Header().Set("Cache-Control", "no-store")
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, r.Method+" is not allowed here.", http.StatusMethodNotAllowed)
			return
		}
		switch {
		case access.Token != "":
			if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
				w.Header().Set("WWW-Authenticate", `Bearer realm="metrics"`)
				http.Error(w, "The metrics need the bearer token METRICS_TOKEN names.", http.StatusUnauthorized)
				return
			}
		case !access.Public && !fromLoopback(r):
			http.Error(w, "The metrics answer clients on loopback only, unless METRICS_TOKEN or METRICS_PUBLIC says otherwise.", http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// fromLoopback tells whether r came from a loopback address and through no proxy: a
// proxy on the same machine would otherwise pass on anyone's scrape as its own.
func fromLoopback(r *http.Request) bool {
	for _, h := range []string{"Forwarded", "X-Forwarded-For", "X-Real-Ip"} {
		if _, ok := r.Header[h]; ok {
			return false
		}
	}
	return clientip.Loopback(r.RemoteAddr)
}
