package api

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/waystation/waystation/internal/problem"
	"github.com/waystation/waystation/internal/telemetry"
)

// problemBody is a problem as RFC 9457 problem+json. Code is stable: clients branch
// on it, and each has a human page at its type URL.
type problemBody struct {
	Status    int    `json:"status"`
	Code      string `json:"code"`
	Title     string `json:"title"`
	Type      string `json:"type"`
	Detail    string `json:"detail,omitempty"`
	Instance  string `json:"instance,omitempty"`
	Parameter string `json:"parameter,omitempty"`
	RequestID string `json:"requestId,omitempty"`
}

// writeError answers err as problem+json: its status, title and type from the one
// table of codes. The store and the domain return problems already; anything else is
// an internal error, logged with the request id and its text not shown. A problem
// caused by a failure underneath (a database that cannot be reached) is logged too.
func writeError(w http.ResponseWriter, r *http.Request, log *slog.Logger, id, instance string, err error) {
	p, ok := problem.As(err)
	ctx := r.Context()
	// The log lines of a request carry its ids through the context (telemetry's
	// logger adds them); served without it, the id is named here.
	where := []any{"method", r.Method, "path", r.URL.Path}
	if telemetry.From(ctx) == nil {
		where = append(where, "request_id", id)
	}
	switch {
	case ctx.Err() != nil && (!ok || problem.Status(p.Code) >= 500):
		// The client left: nothing failed here, and nobody reads the answer.
		log.DebugContext(ctx, "request ended by the client", append(where, "err", err)...)
		p = problem.New(problem.Internal, "")
	case !ok:
		log.ErrorContext(ctx, "internal error", append(where, "err", err)...)
		p = problem.New(problem.Internal, "")
	case p.Err != nil && problem.Status(p.Code) >= 500:
		log.WarnContext(ctx, p.Code, append(where, "err", p.Err)...)
	}
	kind, known := problem.Lookup(p.Code)
	if !known {
		log.ErrorContext(ctx, "unknown problem code", append(where, "code", p.Code)...)
		p, kind = problem.New(problem.Internal, ""), mustKind(problem.Internal)
	}
	body, _ := json.Marshal(problemBody{
		Status: kind.Status, Code: p.Code, Title: kind.Title, Type: problem.Type(p.Code),
		Detail: p.Detail, Instance: instance, Parameter: p.Parameter, RequestID: id,
	})
	if rec, ok := w.(*recorded); ok {
		rec.code = p.Code // so that once knows a refusal that may pass
	}
	h := w.Header()
	h.Set("X-Request-Id", id)
	h.Set("Content-Type", "application/problem+json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Del("ETag")
	h.Del("Content-Encoding")
	switch {
	case kind.Status == http.StatusTooManyRequests || kind.Status >= 500:
		h.Set("Cache-Control", "no-store")
	case kind.Status >= 400 && h.Get("Cache-Control") == "":
		h.Set("Cache-Control", "no-store")
	}
	if p.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(p.RetryAfter))
	}
	w.WriteHeader(kind.Status)
	if r.Method != http.MethodHead {
		w.Write(body)
	}
}

func mustKind(code string) problem.Kind {
	k, _ := problem.Lookup(code)
	return k
}
