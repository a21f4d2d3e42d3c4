package api

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/waystation/waystation/internal/auth"
	"github.com/waystation/waystation/internal/llm"
	"github.com/waystation/waystation/internal/problem"
	"github.com/waystation/waystation/internal/redact"
	"github.com/waystation/waystation/internal/session"
)

// protectedSet loads every protected value of userID; an error is
// redaction_unavailable, so that nothing unchecked goes on.
func (s *Server) protectedSet(ctx context.Context, userID string) (*redact.Set, error) {
	sets, err := s.svc.Guard.Sets(ctx, auth.Principal{UserID: userID})
	return sets.All, err
}

// handleLLMModels lists the models of a's upstream.
func (s *Server) handleLLMModels(a *llm.API) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		up, err := a.Provider.Endpoint(s.svc.LLM, r.Header)
		if err != nil {
			s.error(w, r, err)
			return
		}
		identify(w, r, a.Provider)
		res, cancel, err := s.svc.LLM.Call(r.Context(), up, http.MethodGet, a.Upstream, nil)
		if err != nil {
			s.callFailed(w, r, a.Provider, err)
			return
		}
		defer cancel()
		defer res.Body.Close()
		body, err := io.ReadAll(io.LimitReader(res.Body, 4<<20))
		if err != nil || !json.Valid(body) {
			s.error(w, r, llm.UpstreamFailed(err))
			return
		}
		writeBody(w, http.StatusOK, hdrJSON[0], body)
	}
}

// handleModelCall is a proxied call of the model API a: the user's protected values
// blanked out of the request, in every form, the request forwarded to a's upstream,
// and the answer passed back as it comes (a stream chunk by chunk). X-Redactions
// counts what was blanked; with X-Session-Id naming one of the agent's open
// sessions, so does an llm.redacted event.
func (s *Server) handleModelCall(a *llm.API) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		up, err := a.Provider.Endpoint(s.svc.LLM, r.Header)
		if err != nil {
			s.error(w, r, err)
			return
		}
		raw, err := s.readBody(w, r)
		if err != nil {
			s.error(w, r, err)
			return
		}
		body, err := a.Request.Decode(raw)
		if err != nil {
			s.error(w, r, err)
			return
		}
		p := principal(r)
		sessionID, err := s.llmSession(r, p)
		if err != nil {
			s.error(w, r, err)
			return
		}
		count, err := s.cleanForModel(r.Context(), p, sessionID, a.Request, raw, body, up)
		if err != nil {
			s.refuse(w, r, err)
			return
		}
		out, _ := json.Marshal(body)
		identify(w, r, a.Provider)
		res, cancel, err := s.svc.LLM.Call(r.Context(), up, http.MethodPost, a.Upstream, out)
		if err != nil {
			s.callFailed(w, r, a.Provider, err)
			return
		}
		defer cancel()
		defer res.Body.Close()
		s.relay(w, r, res, count)
	}
}

// identify names r's answer by its id, in X-Request-Id and where the clients of
// provider p read it (Anthropic's: request-id).
func identify(w http.ResponseWriter, r *http.Request, p llm.Provider) {
	id := requestID(r)
	w.Header().Set("X-Request-Id", id)
	w.Header().Set(p.RequestIDHeader(), id)
}

// callFailed answers err, a failed call to the upstream of provider p: a refusal
// the client should read (see llm.Passed) with the upstream's status, its error in
// p's shape and the headers that say when to try again, its strings cleaned of the
// user's protected values as everything read back is (an upstream's message may
// quote the prompt); anything else as s.error does.
func (s *Server) callFailed(w http.ResponseWriter, r *http.Request, p llm.Provider, err error) {
	var refusal *llm.UpstreamError
	if !errors.As(err, &refusal) {
		s.error(w, r, err)
		return
	}
	e := refusal.Answer
	set, serr := s.protectedSet(r.Context(), principal(r).UserID)
	if serr != nil {
		e.Message, e.Code, e.Param = "The upstream refused the request; its message could not be checked for the user's protected values, so it is not shown.", "", ""
	} else {
		set.Strings(&e.Message, &e.Type, &e.Code, &e.Param)
	}
	s.log.InfoContext(r.Context(), "llm upstream refused", "status", e.Status, "type", e.Type)
	h := w.Header()
	for name, vs := range refusal.Header {
		if set != nil && !set.Contains(vs[0]) {
			h[name] = vs
		}
	}
	body := p.ErrorBody(e)
	identify(w, r, p)
	h.Set("Content-Type", hdrJSON[0])
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h["Cache-Control"] = hdrNoStore
	w.WriteHeader(e.Status)
	if r.Method != http.MethodHead {
		w.Write(body)
	}
}

// llmSession is the open session of agent p that X-Session-Id names, which hears how
// many values were blanked out; "" when the header is absent.
func (s *Server) llmSession(r *http.Request, p auth.Principal) (string, error) {
	v := r.Header.Get("X-Session-Id")
	if v == "" {
		return "", nil
	}
	if !uuidPattern.MatchString(v) {
		return "", session.ErrNotFound
	}
	sess, err := s.svc.Sessions.Session(r.Context(), p, strings.ToLower(v))
	if err == nil && sess.Status != session.StatusOpen {
		err = session.ErrClosed
	}
	return sess.ID, err
}

// cleanForModel applies the rule of protect to a model request of agent p, raw as
// sent and body decoded from it, under rule m: a protected value the agent was never
// given, anywhere in the body or a header of the client's that goes to up, or a flood
// of strings of a value's shape, refuses the request and counts against the agent's
// budget. The values it was given are blanked out of body, refusing what cannot be
// blanked; session sessionID (when there is one) hears how many were, and so does the
// answer.
func (s *Server) cleanForModel(ctx context.Context, p auth.Principal, sessionID string, m llm.Rule, raw []byte, body map[string]any, up llm.Endpoint) (int, error) {
	parts := jsonParts(raw, "")
	for _, h := range up.FromClient {
		parts = append(parts, up.Header.Get(h))
	}
	sets, err := s.svc.Guard.Screen(ctx, p, routeOf(ctx), parts)
	if err != nil {
		return 0, err
	}
	set := sets.Given
	for _, h := range up.FromClient {
		if set.Contains(up.Header.Get(h)) {
			return 0, problem.New(problem.ProtectedValueDetected, "The "+h+" header holds one of the user's protected values, in some written form; nothing was forwarded.")
		}
	}
	count, err := m.Clean(set, body)
	if err != nil || count == 0 || sessionID == "" {
		return count, err
	}
	data, _ := json.Marshal(map[string]int{"count": count})
	_, err = s.svc.Sessions.AppendSystem(ctx, p, sessionID, llm.EventRedacted, data)
	return count, err
}

// relay answers the upstream's answer as it comes, a stream included, with how many
// values were blanked out of the request.
func (s *Server) relay(w http.ResponseWriter, r *http.Request, res *http.Response, redactions int) {
	h := w.Header()
	h.Set("X-Redactions", strconv.Itoa(redactions))
	h["Cache-Control"] = hdrNoStore
	ct := res.Header.Get("Content-Type")
	if ct == "" {
		ct = hdrJSON[0]
	}
	h.Set("Content-Type", ct)
	// A stream may outlast the server's write timeout: it ends with the upstream's.
	http.NewResponseController(w).SetWriteDeadline(time.Now().Add(s.svc.LLM.Timeout + 5*time.Second))
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	buf := make([]byte, 32<<10)
	for {
		n, err := res.Body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
			if flusher != nil {
				flusher.Flush()
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				s.log.WarnContext(r.Context(), "llm stream ended early", "err", llm.UpstreamFailed(err))
			}
			return
		}
	}
}
