package api

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/waystation/waystation/internal/problem"
	"github.com/waystation/waystation/internal/trace"
)

// maxSpansPerSession bounds what one session keeps of traces.
const maxSpansPerSession = 10000

// handleTraces takes an OTLP/HTTP trace export, protobuf or JSON, gzipped or not:
// each span goes to the session its workflow.session.id names, if the key may see
// it, cleaned of the user's protected values and of URL queries; the others are
// counted as rejected in the answer, OTLP's ExportTraceServiceResponse in the
// request's encoding. It answers at /traces and at /v1/traces, where an OTLP
// exporter given the API's base as its endpoint sends.
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
		body, err := s.readBody(w, r)
		if err != nil {
			s.error(w, r, err)
			return
		}
		if body, err = s.unzip(r, body); err != nil {
			s.error(w, r, err)
			return
		}
		spans, err := trace.Parse(body, enc)
		if err != nil {
			s.error(w, r, err)
			return
		}
		p := principal(r)
		set, err := s.protectedSet(r.Context(), p.UserID)
		if err != nil {
			s.error(w, r, err)
			return
		}
		for i := range spans {
			spans[i].Clean(set)
		}
		_, rejected, err := s.auth.Traces.SaveSpans(r.Context(), p, spans, maxSpansPerSession)
		if err != nil {
			s.error(w, r, err)
			return
		}
		writeBody(w, http.StatusOK, enc.ContentType(), trace.Response(enc, rejected,
			"Spans whose workflow.session.id names no session this key may see, or a session full of spans, were rejected."))
	}
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
	body, err = io.ReadAll(io.LimitReader(zr, s.auth.MaxBody+1))
	if err != nil {
		return nil, problem.Invalid("The body is not gzip.")
	}
	if int64(len(body)) > s.auth.MaxBody {
		return nil, problem.New(problem.PayloadTooLarge, "The body is larger than "+strconv.FormatInt(s.auth.MaxBody, 10)+" bytes once unzipped.")
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
	return func(w http.ResponseWriter, r *http.Request) {
		id, err := sessionID(r)
		if err != nil {
			s.error(w, r, err)
			return
		}
		q, err := queryParams(r, "limit", "cursor")
		if err != nil {
			s.error(w, r, err)
			return
		}
		limit, err := intParam(q, "limit", 200, 1, trace.MaxSpans)
		if err != nil {
			s.error(w, r, err)
			return
		}
		var after *trace.Cursor
		if v, ok := q["cursor"]; ok {
			if after, err = decodeSpanCursor(v); err != nil {
				s.error(w, r, err)
				return
			}
		}
		spans, next, err := trace.Reader{Store: s.auth.Traces, Protected: s.auth.Protected}.Spans(r.Context(), principal(r), id, after, int(limit))
		if err != nil {
			s.error(w, r, err)
			return
		}
		out := spanPage{Items: spans}
		if out.Items == nil {
			out.Items = []trace.Span{}
		}
		if next != nil {
			b, _ := json.Marshal([]any{strconv.FormatUint(next.Start, 10), next.SpanID})
			c := base64.RawURLEncoding.EncodeToString(b)
			out.NextCursor = &c
		}
		writeJSON(w, http.StatusOK, out)
	}
}

func decodeSpanCursor(v string) (*trace.Cursor, error) {
	bad := problem.Param(problem.InvalidParameter, "cursor", "cursor must be a nextCursor this route gave.")
	b, err := base64.RawURLEncoding.DecodeString(v)
	if err != nil {
		return nil, bad
	}
	var parts []string
	if json.Unmarshal(b, &parts) != nil || len(parts) != 2 {
		return nil, bad
	}
	start, err := strconv.ParseUint(parts[0], 10, 64)
	if err != nil || len(parts[1]) != 16 {
		return nil, bad
	}
	return &trace.Cursor{Start: start, SpanID: parts[1]}, nil
}
