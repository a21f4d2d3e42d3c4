package telemetry

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"
)

// NewLogger logs at level to w, as text (format "" or "text") or as one JSON object
// a line ("json"). Every line logged with a request's context carries its
// request_id and trace_id.
//
// The access lines (HTTP.AccessLog) of a logger made here are buffered: they reach w
// at the latest flushInterval later, before any other line the logger writes after
// them, and at Flush, which the server calls once it stopped.
func NewLogger(w io.Writer, format string, level slog.Level) (*slog.Logger, error) {
	lw := &logWriter{w: w}
	opts := &slog.HandlerOptions{Level: level}
	h := contextHandler{lines: lw}
	switch format {
	case "", "text":
		h.Handler = slog.NewTextHandler(lw, opts)
	case "json":
		h.Handler, h.json = slog.NewJSONHandler(lw, opts), true
	default:
		return nil, fmt.Errorf("LOG_FORMAT %q: want text or json", format)
	}
	h.access = true
	return slog.New(h), nil
}

// Flush writes out the access lines l holds back; a logger NewLogger did not make
// holds none.
func Flush(l *slog.Logger) error {
	if h, ok := l.Handler().(contextHandler); ok && h.lines != nil {
		return h.lines.Flush()
	}
	return nil
}

// contextHandler adds the ids of the request a record's context carries.
type contextHandler struct {
	slog.Handler
	// lines is where the handler writes; json its format. access says that the
	// access line can be formatted without slog into lines's buffer: the handler is
	// NewLogger's own, without attributes or groups of its own that would change the
	// line.
	lines  *logWriter
	json   bool
	access bool
}

func (h contextHandler) Handle(ctx context.Context, rec slog.Record) error {
	if r := From(ctx); r != nil {
		rec.AddAttrs(slog.String("request_id", r.ID), slog.String("trace_id", r.TraceID))
	}
	return h.Handler.Handle(ctx, rec)
}

func (h contextHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return contextHandler{Handler: h.Handler.WithAttrs(as), lines: h.lines, json: h.json}
}

func (h contextHandler) WithGroup(name string) slog.Handler {
	return contextHandler{Handler: h.Handler.WithGroup(name), lines: h.lines, json: h.json}
}

// flushInterval is the longest an access line waits in the buffer.
const flushInterval = 200 * time.Millisecond

// maxBuffered is how much of the access lines is held back at most: more is written
// out at once.
const maxBuffered = 64 << 10

// logWriter is a logger's destination: the lines slog formats go straight through;
// access lines are appended to a buffer written out by a timer, when it fills, and
// before any other line, so that the lines keep their order.
type logWriter struct {
	w     io.Writer
	mu    sync.Mutex
	buf   []byte
	timer *time.Timer // armed while buf holds lines
}

// Write writes p after the lines held back.
func (lw *logWriter) Write(p []byte) (int, error) {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	if err := lw.flushLocked(); err != nil {
		return 0, err
	}
	return lw.w.Write(p)
}

// Flush writes out the lines held back.
func (lw *logWriter) Flush() error {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	return lw.flushLocked()
}

func (lw *logWriter) flushLocked() error {
	if len(lw.buf) == 0 {
		return nil
	}
	_, err := lw.w.Write(lw.buf)
	lw.buf = lw.buf[:0]
	if lw.timer != nil {
		lw.timer.Stop()
	}
	return err
}

// appendAccess adds an access line to the buffer.
func (lw *logWriter) appendAccess(json bool, now time.Time, l *accessLine) {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	empty := len(lw.buf) == 0
	lw.buf = appendAccessLine(lw.buf, json, now, l)
	if len(lw.buf) >= maxBuffered {
		lw.flushLocked() // as slog's handlers do, a line that cannot be written is dropped
		return
	}
	if empty {
		if lw.timer == nil {
			lw.timer = time.AfterFunc(flushInterval, func() { lw.Flush() })
		} else {
			lw.timer.Reset(flushInterval)
		}
	}
}
