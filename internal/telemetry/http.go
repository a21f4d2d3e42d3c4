package telemetry

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"
)

// HTTP wraps the service's handler: every request gets its id (in X-Request-Id on
// every answer) and trace context, is counted and timed by route, and gets one
// access log line, which holds no text a caller chose (see loggedPath and
// loggedUserAgent; the ids are the service's or in the shapes callerID and
// parseTraceparent keep).
type HTTP struct {
	// AccessLog gets one line per request; nil logs none.
	AccessLog *slog.Logger
	// Metrics counts and times requests; nil counts none.
	Metrics *Metrics
}

// Wrap serves next with what h adds.
func (h HTTP) Wrap(next http.Handler) http.Handler {
	// A logger of NewLogger's has its access lines formatted here, without slog, into
	// its buffer; any other goes through slog.
	var lines *logWriter
	var json bool
	if h.AccessLog != nil {
		if ch, ok := h.AccessLog.Handler().(contextHandler); ok && ch.access {
			lines, json = ch.lines, ch.json
		}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		// One allocation holds what the middleware keeps of the request.
		st := &observed{}
		st.req.init(r.Header["X-Request-Id"], r.Header["Traceparent"], &st.hex)
		st.id[0] = st.req.ID
		w.Header()["X-Request-Id"] = st.id[:]
		st.rec.ResponseWriter = w
		st.ctx = requestContext{Context: r.Context(), req: &st.req}
		if h.Metrics != nil {
			h.Metrics.inFlight.Inc()
			defer h.Metrics.inFlight.Dec()
		}
		next.ServeHTTP(&st.rec, r.WithContext(&st.ctx))

		took := time.Since(start)
		status := st.rec.status
		if status == 0 {
			status = http.StatusOK // nothing written: net/http answers 200
		}
		route := st.req.Route
		if route == "" {
			route = "unmatched"
		}
		if h.Metrics != nil {
			h.Metrics.request(route, r.Method, status, took)
		}
		if h.AccessLog == nil || !h.AccessLog.Enabled(r.Context(), slog.LevelInfo) {
			return
		}
		if lines != nil {
			lines.appendAccess(json, start.Add(took), &accessLine{method: r.Method, path: loggedPath(route, r.URL.Path), route: route,
				status: status, bytes: st.rec.bytes, took: took, remote: r.RemoteAddr, req: &st.req, userAgent: loggedUserAgent(r.UserAgent())})
			return
		}
		req := &st.req
		attrs := []slog.Attr{
			slog.String("method", r.Method), slog.String("path", loggedPath(route, r.URL.Path)), slog.String("route", route),
			slog.Int("status", status), slog.Int64("bytes", st.rec.bytes),
			slog.Float64("ms", float64(took.Microseconds())/1000), slog.String("remote", r.RemoteAddr),
			slog.String("request_id", req.ID), slog.String("trace_id", req.TraceID), slog.String("span_id", req.SpanID),
		}
		if req.ParentID != "" {
			attrs = append(attrs, slog.String("parent_id", req.ParentID))
		}
		if ua := loggedUserAgent(r.UserAgent()); ua != "" {
			attrs = append(attrs, slog.String("user_agent", ua))
		}
		h.AccessLog.LogAttrs(context.Background(), slog.LevelInfo, "request", attrs...)
	})
}

// observed is what the middleware keeps of a request while it is served.
type observed struct {
	req Request
	ctx requestContext
	rec recorder
	id  [1]string // the X-Request-Id header's value
	hex [80]byte  // the random ids' text
}

// ChiRoute is chi middleware that records, once the router matched, the pattern of
// the route that answered (SetRoute).
func ChiRoute(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r)
		if rc := chi.RouteContext(r.Context()); rc != nil {
			SetRoute(r.Context(), rc.RoutePattern())
		}
	})
}

// recorder notes an answer's status and size on its way out. It flushes and
// unwraps (http.ResponseController), so event streams keep their write deadlines.
type recorder struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (w *recorder) WriteHeader(code int) {
	if w.status == 0 && (code >= 200 || code == http.StatusSwitchingProtocols) {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *recorder) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	return n, err
}

// ReadFrom passes a body read from a file on to the connection, which sends it with
// sendfile(2) (see resource.FromFiles).
func (w *recorder) ReadFrom(src io.Reader) (int64, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	var n int64
	var err error
	if rf, ok := w.ResponseWriter.(io.ReaderFrom); ok {
		n, err = rf.ReadFrom(src)
	} else {
		n, err = io.Copy(w.ResponseWriter, src)
	}
	w.bytes += n
	return n, err
}

func (w *recorder) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		if w.status == 0 {
			w.status = http.StatusOK
		}
		f.Flush()
	}
}

func (w *recorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// methodLabel keeps the metrics' method label to the methods there are, so that a
// client cannot add series by inventing methods.
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions:
		return m
	}
	return "other"
}

var statusLabels = func() map[int]string {
	m := map[int]string{}
	for code := 100; code < 600; code++ {
		if http.StatusText(code) != "" {
			m[code] = strconv.Itoa(code)
		}
	}
	return m
}()

func statusLabel(code int) string {
	if s, ok := statusLabels[code]; ok {
		return s
	}
	return strconv.Itoa(code)
}
