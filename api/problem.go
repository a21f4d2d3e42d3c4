package api

import (
	"cmp"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/waystation/waystation/internal/llm"
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
	p, kind := knownProblem(r.Context(), log, id, []any{"method", r.Method, "path", telemetry.LoggedPath(r)}, err)
	var contentType string
	var body []byte
	api := llmProvider(r)
	if api != nil {
		contentType, body = hdrJSON[0], api.ErrorBody(llm.Error{Status: kind.Status, Message: cmp.Or(p.Detail, kind.Title), Code: p.Code, Param: p.Parameter})
		w.Header().Set(api.RequestIDHeader(), id)
	} else {
		contentType, body = "application/problem+json", problemJSON(kind, p, instance, id)
	}
	if rec, ok := w.(*recorded); ok {
		rec.code = p.Code // so that once knows a refusal that may pass
	}
	h := w.Header()
	h.Set("X-Request-Id", id)
	h.Set("Content-Type", contentType)
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

// knownProblem is err as a problem of a known kind, as writeError answers it,
// logged when it is a failure; where names the call in the log. The log lines of a
// request carry its ids through the context (telemetry's logger adds them); served
// without it, id is named too.
func knownProblem(ctx context.Context, log *slog.Logger, id string, where []any, err error) (*problem.Error, problem.Kind) {
	p, ok := problem.As(err)
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
	return p, kind
}

// problemJSON is p, of kind, as problem+json.
func problemJSON(kind problem.Kind, p *problem.Error, instance, id string) []byte {
	body, _ := json.Marshal(problemBody{
		Status: kind.Status, Code: p.Code, Title: kind.Title, Type: problem.Type(p.Code),
		Detail: p.Detail, Instance: instance, Parameter: p.Parameter, RequestID: id,
	})
	return body
}

// LLMPath is where the LLM gateway answers, under the API's base path.
const LLMPath = "/llm/v1"

// llmProvider is the model provider whose clients call r's path, which read errors
// in its shape, not as problem+json; nil outside the LLM gateway.
func llmProvider(r *http.Request) llm.Provider {
	route, ok := strings.CutPrefix(r.URL.Path, BasePath+LLMPath)
	if !ok || !strings.HasPrefix(route, "/") {
		return nil
	}
	return llm.ProviderOf(route)
}

func mustKind(code string) problem.Kind {
	k, _ := problem.Lookup(code)
	return k
}
