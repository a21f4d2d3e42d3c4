package api

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/waystation/waystation/internal/problem"
	"github.com/waystation/waystation/internal/telemetry"
	"github.com/waystation/waystation/internal/trace"
)

// handleTraces takes an OTLP/HTTP trace export, protobuf or JSON, gzipped or not:
// each span goes to the session its workflow.session.id names, if the key may see
// it, cleaned of the user's protected values (in its text, numbers, ids and times)
// and of URL queries; the others are counted as rejected in the answer, OTLP's
// ExportTraceServiceResponse in the request's encoding. It answers at /traces and at
// /v1/traces, where an OTLP exporter given the API's base as its endpoint sends. A
// refused export is answered as OTLP/HTTP has it (see otlpError); a request whose
// encoding is not one of OTLP's gets problem+json, as it can be read in no other.
func (s *Server) handleTraces() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var enc trace.Encoding
		switch ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct {
		case "application/json":
			enc = trace.JSON
		case "application/x-protobuf", "application/protobuf":
			enc = trace.Protobuf
		default:
			s.error(w, r, problem.New(problem.UnsupportedMediaType, "Send an OTLP/HTTP export as protobuf (Content-Type: application/x-protobuf) or JSON (application/json)."))
			return
		}
		if err := s.exportTraces(w, r, enc); err != nil {
			s.otlpError(w, r, enc, err)
		}
	}
}

func (s *Server) exportTraces(w http.ResponseWriter, r *http.Request, enc trace.Encoding) error {
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	if body, err = s.unzip(r, body); err != nil {
		return err
	}
	rejected, err := s.svc.Traces.Export(r.Context(), principal(r), body, enc)
	if err != nil {
		return err
	}
	writeBody(w, http.StatusOK, enc.ContentType(), trace.Response(enc, rejected,
		"Spans whose workflow.session.id names no session this key may see, of a session full of spans, or whose ids or times cannot be kept, were rejected."))
	return nil
}

// otlpError answers a refused export as OTLP/HTTP's "Failures" has it: the
// problem's status, but 400 Bad Request for a body that cannot be read as an export
// (validation_failed), and a google.rpc.Status in the request's encoding, whose
// ErrorInfo carries the problem's stable code. Its detail is cleaned of the user's
// protected values as a problem's is, and failures are logged as problems are.
func (s *Server) otlpError(w http.ResponseWriter, r *http.Request, enc trace.Encoding, err error) {
	id := requestID(r)
	_, err = s.unechoed(r.Context(), s.keyOwner(r), r.URL.EscapedPath(), err)
	p, kind := knownProblem(r.Context(), s.log, id, []any{"method", r.Method, "path", telemetry.LoggedPath(r)}, err)
	status := kind.Status
	if p.Code == problem.ValidationFailed {
		status = http.StatusBadRequest
	}
	if rec, ok := w.(*recorded); ok {
		rec.code = p.Code // so that once knows a refusal that may pass
	}
	detail := cmp.Or(p.Detail, kind.Title)
	h := w.Header()
	h.Set("X-Request-Id", id)
	h.Del("ETag")
	h.Del("Content-Encoding")
	if p.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(p.RetryAfter))
	}
	writeBody(w, status, enc.ContentType(), trace.Failure(enc, status, p.Code, problem.Type(p.Code), detail))
}

// unzip undoes the body's Content-Encoding (gzip or none), to at most the body limit.
func (s *Server) unzip(r *http.Request, body []byte) ([]byte, error) {
	switch strings.ToLower(r.Header.Get("Content-Encoding")) {
	case "", "identity":
		return body, nil
	case "gzip":
	default:
		return nil, problem.New(problem.UnsupportedMediaType, "Content-Encoding must be gzip or none.")
	}
	zr, err := gzip.NewReader(bytes.NewReader(body))
	if err != nil {
		return nil, problem.Invalid("The body is not gzip.")
	}
	body, err = io.ReadAll(io.LimitReader(zr, s.svc.MaxBody+1))
	if err != nil {
		return nil, problem.Invalid("The body is not gzip.")
	}
	if int64(len(body)) > s.svc.MaxBody {
		return nil, problem.New(problem.PayloadTooLarge, "The body is larger than "+strconv.FormatInt(s.svc.MaxBody, 10)+" bytes once unzipped.")
	}
	return body, nil
}

type spanPage struct {
	Items      []trace.Span `json:"items"`
	NextCursor *string      `json:"nextCursor"`
}

// handleSessionTraces lists a session's spans by start time, cleaned again with the
// user's protected values of now: a value saved after a span was kept is not
// answered either.
func (s *Server) handleSessionTraces() http.HandlerFunc {
	return s.serve(func(w http.ResponseWriter, r *http.Request) error {
		id, err := sessionID(r)
		if err != nil {
			return err
		}
		q, err := queryParams(r, "limit", "cursor")
		if err != nil {
			return err
		}
		limit, err := intParam(q, "limit", trace.DefaultPage, 1, trace.MaxSpans)
		if err != nil {
			return err
		}
		var after *trace.Cursor
		if v, ok := q["cursor"]; ok {
			if after, err = trace.ParseCursor("cursor", v); err != nil {
				return err
			}
		}
		spans, next, err := s.svc.Traces.Spans(r.Context(), principal(r), id, after, int(limit))
		if err != nil {
			return err
		}
		out := spanPage{Items: spans}
		if out.Items == nil {
			out.Items = []trace.Span{}
		}
		if next != nil {
			c := next.Token()
			out.NextCursor = &c
		}
		writeJSON(w, http.StatusOK, out)
		return nil
	})
}
