package telemetry

import (
	"context"
	"fmt"
	"io"
	"log/slog"
)

// NewLogger logs at level to w, as text (format "" or "text") or as one JSON object
// a line ("json"). Every line logged with a request's context carries its
// request_id and trace_id.
func NewLogger(w io.Writer, format string, level slog.Level) (*slog.Logger, error) {
	opts := &slog.HandlerOptions{Level: level}
	var h slog.Handler
	switch format {
	case "", "text":
		h = slog.NewTextHandler(w, opts)
	case "json":
		h = slog.NewJSONHandler(w, opts)
	default:
		return nil, fmt.Errorf("LOG_FORMAT %q: want text or json", format)
	}
	return slog.New(contextHandler{h}), nil
}

// contextHandler adds the ids of the request a record's context carries.
type contextHandler struct{ slog.Handler }

func (h contextHandler) Handle(ctx context.Context, rec slog.Record) error {
	if r := From(ctx); r != nil {
		rec.AddAttrs(slog.String("request_id", r.ID), slog.String("trace_id", r.TraceID))
	}
	return h.Handler.Handle(ctx, rec)
}

func (h contextHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return contextHandler{h.Handler.WithAttrs(as)}
}

func (h contextHandler) WithGroup(name string) slog.Handler {
	return contextHandler{h.Handler.WithGroup(name)}
}
