package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/waystation/waystation/internal/auth"
	"github.com/waystation/waystation/internal/problem"
	"github.com/waystation/waystation/internal/redact"
	"github.com/waystation/waystation/internal/session"
	"github.com/waystation/waystation/internal/telemetry"
)

// LLM is the upstream OpenAI-compatible model the proxy forwards to.
type LLM struct {
	// URL is the upstream's base URL (https://api.openai.com/v1); empty: no proxy.
	URL string
	// Key is sent as the upstream's Bearer key; it is never logged or answered.
	Key string
	// Timeout bounds one upstream call, a stream included (default 120s).
	Timeout time.Duration
	// Client makes the calls (default a client without a timeout of its own).
	Client *http.Client
}

// EventLLMRedacted is the session event of a proxied call that had values blanked:
// the count only.
const EventLLMRedacted = "llm.redacted"

// protectedSet loads the user's protected values; an error is redaction_unavailable,
// so that nothing unchecked goes on.
func (s *Server) protectedSet(ctx context.Context, userID string) (*redact.Set, error) {
	if s.auth.Protected == nil {
		return nil, unavailableRedaction(errors.New("no source of protected values"))
	}
	vs, err := s.auth.Protected.Protected(ctx, userID)
	if err != nil {
		return nil, unavailableRedaction(err)
	}
	return redact.New(vs), nil
}

func unavailableRedaction(err error) error {
	p := problem.Wrap(problem.RedactionUnavailable, "The user's protected values could not be loaded, so nothing was forwarded or stored.", err)
	p.RetryAfter = 5
	return p
}

// modelRequest is the one rule for a request body the proxy forwards to a model:
// every string of it, member names and numbers included, is scanned for the user's
// protected values. Free text is blanked, as a model reads it the same with a value
// missing. What cannot be blanked without changing what the request means — a member
// name, a number, the value of a member that says what a part is rather than what it
// holds — is refused with protected_value_detected, and nothing is forwarded. Each
// upstream API the proxy speaks has its rule; they differ in the members they fix.
type modelRequest struct {
	// fixed are the members whose string values (or arrays of them) say what a part
	// is, not what it holds: the model, a role, a part's type, an id.
	fixed map[string]bool
	// tokenMaps are the top-level members whose member names must be token ids
	// (decimal integers), since the upstream reads them as numbers.
	tokenMaps []string
}

// chatCompletions is the rule of OpenAI's chat completion requests.
var chatCompletions = modelRequest{
	fixed:     map[string]bool{"model": true, "role": true, "type": true, "id": true, "tool_call_id": true},
	tokenMaps: []string{"logit_bias"},
}

// tokenID is what a member name of a token map must be.
var tokenID = regexp.MustCompile(`^[0-9]{1,10}$`)

// clean blanks the protected values in the free text of body, a decoded JSON object
// whose numbers are json.Number, and returns how many it blanked; an error, and a
// body to drop, when a value sits where it cannot be blanked or a token map holds a
// member name that is not a token id.
func (m modelRequest) clean(set *redact.Set, body map[string]any) (int, error) {
	n, err := m.walk(set, body, "")
	if err != nil {
		return 0, err
	}
	for _, name := range m.tokenMaps {
		switch x := body[name].(type) {
		case nil:
		case map[string]any:
			for k := range x {
				if !tokenID.MatchString(k) {
					return 0, problem.Invalid(name + " must map token ids, decimal integers, to numbers.")
				}
			}
		default:
			return 0, problem.Invalid(name + " must be an object.")
		}
	}
	return n, nil
}

// walk blanks the free text of v, the value of member (or of an element of its
// array), in place, and counts what it blanked.
func (m modelRequest) walk(set *redact.Set, v any, member string) (int, error) {
	n := 0
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if set.Contains(k) {
				return 0, m.refusal()
			}
			if str, ok := e.(string); ok && !m.fixed[k] {
				r, c := set.Redact(str)
				x[k], n = r, n+c
				continue
			}
			c, err := m.walk(set, e, k)
			if err != nil {
				return 0, err
			}
			n += c
		}
	case []any:
		for i, e := range x {
			if str, ok := e.(string); ok && !m.fixed[member] {
				r, c := set.Redact(str)
				x[i], n = r, n+c
				continue
			}
			c, err := m.walk(set, e, member)
			if err != nil {
				return 0, err
			}
			n += c
		}
	case string: // a fixed member's
		if set.Contains(x) {
			return 0, m.refusal()
		}
	case json.Number:
		if set.Contains(x.String()) {
			return 0, m.refusal()
		}
	}
	return n, nil
}

// refusal says where a value cannot be blanked, without saying which value or
// member held it.
func (m modelRequest) refusal() error {
	fixed := slices.Sorted(maps.Keys(m.fixed))
	return problem.New(problem.ProtectedValueDetected, "A member name, a number or the value of "+strings.Join(fixed, ", ")+
		" holds one of the user's protected values, in some written form; the proxy cannot blank those, so nothing was forwarded. Refer to values by handle.")
}

// containsJSON tells whether any string, member name or number of v holds a
// protected value.
func containsJSON(set *redact.Set, v any) bool {
	switch x := v.(type) {
	case string:
		return set.Contains(x)
	case json.Number:
		return set.Contains(x.String())
	case float64:
		return set.Contains(strconv.FormatFloat(x, 'f', -1, 64))
	case map[string]any:
		for k, e := range x {
			if set.Contains(k) || containsJSON(set, e) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if containsJSON(set, e) {
				return true
			}
		}
	}
	return false
}

// textOnly refuses a message part that is not text: the proxy can check text only.
func textOnly(body map[string]any) error {
	msgs, ok := body["messages"].([]any)
	if !ok || len(msgs) == 0 {
		return problem.Invalid("messages must be a non-empty array.")
	}
	for i, m := range msgs {
		msg, ok := m.(map[string]any)
		if !ok {
			return problem.Invalid("messages[" + strconv.Itoa(i) + "] must be an object.")
		}
		switch c := msg["content"].(type) {
		case nil, string:
		case []any:
			for _, part := range c {
				p, ok := part.(map[string]any)
				if !ok || (p["type"] != "text" && p["type"] != "refusal") {
					return problem.Invalid("messages[" + strconv.Itoa(i) + "].content holds a part that is not text: the proxy forwards text only, which it can check for protected values.")
				}
			}
		default:
			return problem.Invalid("messages[" + strconv.Itoa(i) + "].content must be a string or an array of text parts.")
		}
	}
	return nil
}

// handleLLMModels lists the upstream's models.
func (s *Server) handleLLMModels() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		res, cancel, err := s.upstream(r, http.MethodGet, "/models", nil)
		if err != nil {
			s.error(w, r, err)
			return
		}
		defer cancel()
		defer res.Body.Close()
		body, err := io.ReadAll(io.LimitReader(res.Body, 4<<20))
		if err != nil || !json.Valid(body) {
			s.error(w, r, upstreamFailed(err))
			return
		}
		writeBody(w, http.StatusOK, hdrJSON[0], body)
	}
}

// handleChatCompletions blanks the user's protected values out of the request, in
// every form, forwards it, and passes the answer back as it comes (a stream chunk by
// chunk). X-Redactions counts what was blanked; with X-Session-Id naming one of the
// agent's open sessions, so does an llm.redacted event.
func (s *Server) handleChatCompletions() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.auth.LLM.URL == "" {
			s.error(w, r, problem.New(problem.LLMNotConfigured, "No upstream language model is configured on this server."))
			return
		}
		body, err := s.readModelBody(w, r)
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
		count, err := s.cleanForModel(r.Context(), p, sessionID, chatCompletions, body)
		if err != nil {
			s.error(w, r, err)
			return
		}
		out, _ := json.Marshal(body)
		res, cancel, err := s.upstream(r, http.MethodPost, "/chat/completions", out)
		if err != nil {
			s.error(w, r, err)
			return
		}
		defer cancel()
		defer res.Body.Close()
		s.relay(w, r, res, count)
	}
}

// readModelBody reads a model request: one JSON object (numbers kept as written) of
// text only.
func (s *Server) readModelBody(w http.ResponseWriter, r *http.Request) (map[string]any, error) {
	raw, err := s.readBody(w, r)
	if err != nil {
		return nil, err
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var body map[string]any
	if err := d.Decode(&body); err != nil || d.More() {
		return nil, problem.Invalid("The body must be one JSON object: an OpenAI chat completion request.")
	}
	if err := textOnly(body); err != nil {
		return nil, err
	}
	return body, nil
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
	sess, err := s.auth.Sessions.Session(r.Context(), p, strings.ToLower(v))
	if err == nil && sess.Status != session.StatusOpen {
		err = session.ErrClosed
	}
	return sess.ID, err
}

// cleanForModel blanks user p's protected values out of body under rule m, refusing
// what cannot be blanked, and tells session sessionID (when there is one) how many
// were; it answers that count.
func (s *Server) cleanForModel(ctx context.Context, p auth.Principal, sessionID string, m modelRequest, body map[string]any) (int, error) {
	set, err := s.protectedSet(ctx, p.UserID)
	if err != nil {
		return 0, err
	}
	count, err := m.clean(set, body)
	if err != nil || count == 0 || sessionID == "" {
		return count, err
	}
	data, _ := json.Marshal(map[string]int{"count": count})
	_, err = s.auth.Sessions.AppendEvent(ctx, p, sessionID, session.Append{Type: EventLLMRedacted, Actor: session.ActorSystem, Data: data}, 0)
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
	http.NewResponseController(w).SetWriteDeadline(time.Now().Add(s.auth.LLM.Timeout + 5*time.Second))
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
				s.log.WarnContext(r.Context(), "llm stream ended early", "err", upstreamFailed(err))
			}
			return
		}
	}
}

func (s *Server) upstream(r *http.Request, method, path string, body []byte) (*http.Response, context.CancelFunc, error) {
	l := s.auth.LLM
	if l.URL == "" {
		return nil, nil, problem.New(problem.LLMNotConfigured, "No upstream language model is configured on this server.")
	}
	ctx, cancel := context.WithTimeout(r.Context(), l.Timeout)
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(l.URL, "/")+path, bytes.NewReader(body))
	if err != nil {
		cancel()
		return nil, nil, upstreamFailed(err)
	}
	if l.Key != "" {
		req.Header.Set("Authorization", "Bearer "+l.Key)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if tp := telemetry.Traceparent(r.Context()); tp != "" {
		req.Header.Set("Traceparent", tp)
	}
	client := l.Client
	if client == nil {
		client = http.DefaultClient
	}
	res, err := client.Do(req)
	if err != nil {
		cancel()
		return nil, nil, upstreamFailed(err)
	}
	if res.StatusCode/100 != 2 {
		res.Body.Close()
		cancel()
		return nil, nil, upstreamFailed(errors.New("upstream answered " + res.Status))
	}
	return res, cancel, nil
}

// upstreamFailed is upstream_error; the cause is logged, and holds no key (the
// client's errors name the URL, never a header).
func upstreamFailed(err error) error {
	return problem.Wrap(problem.UpstreamError, "The upstream language model failed; nothing of its answer is passed on.", err)
}

// refuseProtected answers protected_value_detected when any string of v (decoded
// JSON) holds one of the user's protected values, and redaction_unavailable when they
// cannot be loaded; true when it answered.
func (s *Server) refuseProtected(w http.ResponseWriter, r *http.Request, v any) bool {
	if err := s.checkProtected(r, v); err != nil {
		s.error(w, r, err)
		return true
	}
	return false
}

// checkProtected is protected_value_detected when any string, member name or number
// of v (decoded JSON) holds one of the user's protected values, in some written form,
// and redaction_unavailable when they cannot be loaded. Values too short to be a
// protected value spare the lookup.
func (s *Server) checkProtected(r *http.Request, v any) error {
	if !hasText(v) {
		return nil
	}
	set, err := s.protectedSet(r.Context(), principal(r).UserID)
	if err != nil {
		return err
	}
	if containsJSON(set, v) {
		return problem.New(problem.ProtectedValueDetected, "It holds one of the user's protected values, in some written form; refer to values by handle. Nothing was stored.")
	}
	return nil
}

// hasText tells whether v holds a string, member name or number of four letters or
// digits or more: anything shorter matches no protected value.
func hasText(v any) bool {
	long := func(s string) bool {
		n := 0
		for _, c := range s {
			if c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c > 127 {
				if n++; n >= 4 {
					return true
				}
			}
		}
		return false
	}
	switch x := v.(type) {
	case string:
		return long(x)
	case json.Number:
		return long(x.String())
	case float64:
		return long(strconv.FormatFloat(x, 'f', -1, 64))
	case map[string]any:
		for k, e := range x {
			if long(k) || hasText(e) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if hasText(e) {
				return true
			}
		}
	}
	return false
}
