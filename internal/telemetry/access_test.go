package telemetry

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// The access line formatted without slog is the line slog's handlers write for the
// same record, in both formats, whatever a caller puts in the path or user agent.
func TestAccessLineIsSlogs(t *testing.T) {
	odd := []string{"", "/plain/path", "/with space", "/a=b", `/quote"d`, `/back\\slash`, "/tab\there", "/nl\nx",
		"/ctl\x01\x1f\x7f", "/ünïcødé", "/bad\xff\xfeutf8", "/sep\u2028\u2029", "/zw\u200bsp\u00a0", "/emoji😀", "<script>&amp;"}
	now := time.Date(2026, 11, 25, 20, 1, 2, 345678901, time.UTC)
	for _, json := range []bool{false, true} {
		for i, s := range odd {
			for _, took := range []time.Duration{0, time.Microsecond, 999 * time.Microsecond, 12345678 * time.Microsecond, 90 * time.Second} {
				req := &Request{ID: "id-" + s, TraceID: "4bf92f3577b34da6a3ce929d0e0e4736", SpanID: "00f067aa0ba902b7"}
				if i%2 == 1 {
					req.ParentID = "b7ad6b7169203331"
				}
				l := &accessLine{method: "GET", path: s, route: "/things/{id}", status: 200 + i, bytes: int64(i) * 1000,
					took: took, remote: "192.0.2.1:" + s, req: req, userAgent: s}
				got := appendAccessLine(nil, json, now, l)

				var want bytes.Buffer
				var h slog.Handler = slog.NewTextHandler(&want, nil)
				if json {
					h = slog.NewJSONHandler(&want, nil)
				}
				rec := slog.NewRecord(now, slog.LevelInfo, "request", 0)
				rec.AddAttrs(slog.String("method", l.method), slog.String("path", l.path), slog.String("route", l.route),
					slog.Int("status", l.status), slog.Int64("bytes", l.bytes),
					slog.Float64("ms", float64(took.Microseconds())/1000), slog.String("remote", l.remote),
					slog.String("request_id", req.ID), slog.String("trace_id", req.TraceID), slog.String("span_id", req.SpanID))
				if req.ParentID != "" {
					rec.AddAttrs(slog.String("parent_id", req.ParentID))
				}
				if s != "" {
					rec.AddAttrs(slog.String("user_agent", s))
				}
				if err := h.Handle(context.Background(), rec); err != nil {
					t.Fatal(err)
				}
				if string(got) != want.String() {
					t.Errorf("json %v, %q, %v:\n got %s\nwant %s", json, s, took, got, want.String())
				}
			}
		}
	}
}

func TestAccessLineDoesNotAllocate(t *testing.T) {
	req := &Request{ID: "r-1", TraceID: "4bf92f3577b34da6a3ce929d0e0e4736", SpanID: "00f067aa0ba902b7"}
	l := &accessLine{method: "GET", path: "/functions/v1/api/api/public/v1/services", route: "/x", status: 200,
		bytes: 544000, took: 123 * time.Microsecond, remote: "127.0.0.1:5555", req: req, userAgent: "curl/8.5.0"}
	buf := make([]byte, 0, 4096)
	for _, json := range []bool{false, true} {
		if n := testing.AllocsPerRun(100, func() { buf = appendAccessLine(buf[:0], json, time.Now(), l) }); n != 0 {
			t.Errorf("json %v: %v allocations a line", json, n)
		}
	}
}

// syncBuffer is a destination safe for the timer's writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Access lines are held back, then written by the timer, before any other line, and
// at Flush: none is lost.
func TestAccessLinesAreBufferedAndNoneIsLost(t *testing.T) {
	out := &syncBuffer{}
	log, err := NewLogger(out, "text", slog.LevelInfo)
	if err != nil {
		t.Fatal(err)
	}
	lw := log.Handler().(contextHandler).lines
	access := func(path string) {
		lw.appendAccess(false, time.Now(), &accessLine{method: "GET", path: path, route: "r", status: 200,
			req: &Request{ID: "i", TraceID: "t", SpanID: "s"}})
	}

	access("/one")
	if strings.Contains(out.String(), "/one") {
		t.Fatal("an access line was written at once")
	}
	log.Info("after")
	if got := out.String(); !strings.Contains(got, "/one") || strings.Index(got, "/one") > strings.Index(got, "after") {
		t.Fatalf("a line logged after an access line came first: %q", got)
	}

	access("/two")
	deadline := time.Now().Add(10 * flushInterval)
	for !strings.Contains(out.String(), "/two") {
		if time.Now().After(deadline) {
			t.Fatalf("the timer did not write the access line within %v", 10*flushInterval)
		}
		time.Sleep(flushInterval / 4)
	}

	access("/three")
	if err := Flush(log); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "/three") {
		t.Fatal("Flush did not write the access line")
	}
	if n := strings.Count(out.String(), "\n"); n != 4 {
		t.Errorf("%d lines, want 4: %q", n, out.String())
	}
}
