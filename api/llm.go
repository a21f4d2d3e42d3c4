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

// LLM is the upstream models the proxy forwards to: an OpenAI-compatible one (chat
// completions, responses, models) and an Anthropic one (messages).
type LLM struct {
	// URL is the OpenAI-compatible upstream's base URL (https://api.openai.com/v1);
	// empty: no proxy of OpenAI's routes.
	URL string
	// Key is sent as the upstream's Bearer key; it is never logged or answered.
	Key string
	// AnthropicURL is the Anthropic upstream's base URL (https://api.anthropic.com),
	// to which /v1/messages is added; empty: no proxy of the Messages route.
	AnthropicURL string
	// AnthropicKey is sent to it as x-api-key; it is never logged or answered.
	AnthropicKey string
	// Timeout bounds one upstream call, a stream included (default 120s).
	Timeout time.Duration
	// Client makes the calls (default a client without a timeout of its own).
	Client *http.Client
}

// EventLLMRedacted is the session event of a proxied call that had values blanked:
// the count only.
const EventLLMRedacted = "llm.redacted"

// protectedSet loads every protected value of userID; an error is
// redaction_unavailable, so that nothing unchecked goes on.
func (s *Server) protectedSet(ctx context.Context, userID string) (*redact.Set, error) {
	sets, err := s.auth.Guard.Sets(ctx, auth.Principal{UserID: userID})
	return sets.All, err
}

// modelRequest is the one rule for a request body the proxy forwards to a model:
// every string of it, member names and numbers included, is scanned for the user's
// protected values. Free text is blanked, as a model reads it the same with a value
// missing. What cannot be blanked without changing what the request means — a member
// name, a number, the value of a member that says what a part is rather than what it
// holds — is refused with protected_value_detected, and nothing is forwarded. Each
// upstream API the proxy speaks has its rule; they differ in the members they fix.
type modelRequest struct {
	// name is what the body must be, for the error of one that is not.
	name string
	// shape refuses a body that is not of the API, or holds a part that is not text:
	// the proxy forwards text only, which it can check for protected values.
	shape func(body map[string]any) error
	// fixed are the members whose string values (or arrays of them) say what a part
	// is, not what it holds: the model, a role, a part's type, an id.
	fixed map[string]bool
	// tokenMaps are the top-level members whose member names must be token ids
	// (decimal integers), since the upstream reads them as numbers.
	tokenMaps []string
}

// chatCompletions is the rule of OpenAI's chat completion requests.
var chatCompletions = modelRequest{
	name:      "an OpenAI chat completion request",
	shape:     textOnly,
	fixed:     map[string]bool{"model": true, "role": true, "type": true, "id": true, "tool_call_id": true},
	tokenMaps: []string{"logit_bias"},
}

// responses is the rule of OpenAI's Responses API requests. Besides the model, a
// role, a part's type and an id, an item's call_id pairs a tool call with its
// output, previous_response_id and conversation name what the upstream keeps, and a
// reasoning item's encrypted_content is the upstream's own ciphertext: a value there
// cannot be blanked without changing what the request means.
var responses = modelRequest{
	name:  "an OpenAI Responses API request",
	shape: responsesTextOnly,
	fixed: map[string]bool{"model": true, "role": true, "type": true, "id": true, "call_id": true,
		"previous_response_id": true, "conversation": true, "encrypted_content": true},
}

// messages is the rule of Anthropic's Messages API requests. Besides the model, a
// role, a block's type and an id, a tool result's tool_use_id pairs it with its call,
// a container names one the upstream keeps, and a thinking block's signature and a
// redacted thinking block's data are the upstream's own, checked by it: a value there
// cannot be blanked.
var messages = modelRequest{
	name:  "an Anthropic Messages API request",
	shape: messagesTextOnly,
	fixed: map[string]bool{"model": true, "role": true, "type": true, "id": true, "tool_use_id": true,
		"signature": true, "data": true, "container": true},
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

// responsesTextOnly refuses a Responses API request whose input is not a string or
// an array of text items: messages of text parts, tool calls and their outputs as
// text, reasoning and references to items the upstream keeps.
func responsesTextOnly(body map[string]any) error {
	switch body["instructions"].(type) {
	case nil, string:
	default:
		return problem.Invalid("instructions must be a string.")
	}
	switch in := body["input"].(type) {
	case string:
		return nil
	case []any:
		for i, it := range in {
			at := "input[" + strconv.Itoa(i) + "]"
			item, ok := it.(map[string]any)
			if !ok {
				return problem.Invalid(at + " must be an object.")
			}
			typ, _ := item["type"].(string)
			if _, hasRole := item["role"]; typ == "" && hasRole {
				typ = "message"
			}
			switch typ {
			case "message":
				if err := textParts(item["content"], at+".content", "input_text", "output_text", "refusal"); err != nil {
					return err
				}
			case "function_call_output", "custom_tool_call_output":
				if err := textParts(item["output"], at+".output", "input_text", "output_text"); err != nil {
					return err
				}
			case "function_call", "custom_tool_call", "reasoning", "item_reference":
			default:
				return problem.Invalid(at + " is not a text item (a message, function_call, function_call_output, custom_tool_call, custom_tool_call_output, reasoning or item_reference): the proxy forwards text only, which it can check for protected values.")
			}
		}
		return nil
	case nil: // the upstream's: after a previous response, or a prompt's
	default:
		return problem.Invalid("input must be a string or an array of input items.")
	}
	if p, ok := body["prompt"]; ok {
		prompt, ok := p.(map[string]any)
		if !ok {
			return problem.Invalid("prompt must be an object.")
		}
		vars, ok := prompt["variables"].(map[string]any)
		if !ok && prompt["variables"] != nil {
			return problem.Invalid("prompt.variables must be an object.")
		}
		for _, v := range vars {
			if _, isText := v.(string); !isText {
				if err := textParts([]any{v}, "prompt.variables", "input_text"); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// messagesTextOnly refuses a Messages API request whose system or messages hold a
// block that is not text (text, a tool call, a tool result of text, thinking), or
// that lacks what Anthropic's API requires of every request: a model and max_tokens.
func messagesTextOnly(body map[string]any) error {
	if err := messagesText(body); err != nil {
		return err
	}
	if m, _ := body["model"].(string); m == "" {
		return problem.Invalid("model must be a model's name.")
	}
	if n, ok := body["max_tokens"].(json.Number); !ok || !tokenID.MatchString(n.String()) || n.String()[0] == '0' {
		return problem.Invalid("max_tokens must be a whole number of at least 1.")
	}
	return nil
}

func messagesText(body map[string]any) error {
	if sys, ok := body["system"]; ok {
		if err := textParts(sys, "system", "text"); err != nil {
			return err
		}
	}
	msgs, ok := body["messages"].([]any)
	if !ok || len(msgs) == 0 {
		return problem.Invalid("messages must be a non-empty array.")
	}
	for i, m := range msgs {
		at := "messages[" + strconv.Itoa(i) + "]"
		msg, ok := m.(map[string]any)
		if !ok {
			return problem.Invalid(at + " must be an object.")
		}
		if err := textParts(msg["content"], at+".content", "text", "tool_use", "tool_result", "thinking", "redacted_thinking"); err != nil {
			return err
		}
		blocks, _ := msg["content"].([]any)
		for j, b := range blocks {
			if b := b.(map[string]any); b["type"] == "tool_result" {
				if c, ok := b["content"]; ok {
					if err := textParts(c, at+".content["+strconv.Itoa(j)+"].content", "text"); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

// textParts refuses v, the content at, unless it is a string or an array of parts
// of the types given.
func textParts(v any, at string, types ...string) error {
	switch c := v.(type) {
	case string:
		return nil
	case []any:
		for _, part := range c {
			p, ok := part.(map[string]any)
			if !ok {
				return problem.Invalid(at + " must be a string or an array of objects.")
			}
			if typ, _ := p["type"].(string); !slices.Contains(types, typ) {
				return problem.Invalid(at + " holds a part that is not one of " + strings.Join(types, ", ") + ": the proxy forwards text only, which it can check for protected values.")
			}
		}
		return nil
	default:
		return problem.Invalid(at + " must be a string or an array of parts.")
	}
}

// handleLLMModels lists the upstream's models.
func (s *Server) handleLLMModels() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		up, err := s.auth.LLM.openAI()
		if err != nil {
			s.error(w, r, err)
			return
		}
		res, cancel, err := s.upstream(r, up, http.MethodGet, "/models", nil)
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
	return s.handleModelCall(chatCompletions, func(*http.Request) (endpoint, error) { return s.auth.LLM.openAI() }, "/chat/completions")
}

// handleResponses is handleChatCompletions for OpenAI's Responses API.
func (s *Server) handleResponses() http.HandlerFunc {
	return s.handleModelCall(responses, func(*http.Request) (endpoint, error) { return s.auth.LLM.openAI() }, "/responses")
}

// handleMessages is handleChatCompletions for Anthropic's Messages API, forwarded
// with the client's anthropic-version (2023-06-01 when it sends none).
func (s *Server) handleMessages() http.HandlerFunc {
	return s.handleModelCall(messages, s.auth.LLM.anthropic, "/v1/messages")
}

// handleModelCall is a proxied model call of the API whose rule is m, forwarded to
// path of the upstream that to picks for the request: the body checked and blanked,
// the answer passed back as it comes.
func (s *Server) handleModelCall(m modelRequest, to func(*http.Request) (endpoint, error), path string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		up, err := to(r)
		if err != nil {
			s.error(w, r, err)
			return
		}
		raw, body, err := s.readModelBody(w, r, m)
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
		count, err := s.cleanForModel(r.Context(), p, sessionID, m, raw, body, up)
		if err != nil {
			s.refuse(w, r, err)
			return
		}
		out, _ := json.Marshal(body)
		res, cancel, err := s.upstream(r, up, http.MethodPost, path, out)
		if err != nil {
			s.error(w, r, err)
			return
		}
		defer cancel()
		defer res.Body.Close()
		s.relay(w, r, res, count)
	}
}

// readModelBody reads a model request of the API whose rule is m: one JSON object
// (numbers kept as written) of text only.
func (s *Server) readModelBody(w http.ResponseWriter, r *http.Request, m modelRequest) ([]byte, map[string]any, error) {
	raw, err := s.readBody(w, r)
	if err != nil {
		return nil, nil, err
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var body map[string]any
	if err := d.Decode(&body); err != nil || d.More() || body == nil {
		return nil, nil, problem.Invalid("The body must be one JSON object: " + m.name + ".")
	}
	if err := m.shape(body); err != nil {
		return nil, nil, err
	}
	return raw, body, nil
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

// cleanForModel applies the rule of protect to a model request of agent p, raw as
// sent and body decoded from it, under rule m: a protected value the agent was never
// given, anywhere in the body or a header of the client's that goes to up, or a flood
// of strings of a value's shape, refuses the request and counts against the agent's
// budget. The values it was given are blanked out of body, refusing what cannot be
// blanked; session sessionID (when there is one) hears how many were, and so does the
// answer.
func (s *Server) cleanForModel(ctx context.Context, p auth.Principal, sessionID string, m modelRequest, raw []byte, body map[string]any, up endpoint) (int, error) {
	parts := jsonParts(raw, "")
	for _, h := range up.fromClient {
		parts = append(parts, up.header.Get(h))
	}
	sets, err := s.auth.Guard.Screen(ctx, p, routeOf(ctx), parts)
	if err != nil {
		return 0, err
	}
	set := sets.Given
	for _, h := range up.fromClient {
		if set.Contains(up.header.Get(h)) {
			return 0, problem.New(problem.ProtectedValueDetected, "The "+h+" header holds one of the user's protected values, in some written form; nothing was forwarded.")
		}
	}
	count, err := m.clean(set, body)
	if err != nil || count == 0 || sessionID == "" {
		return count, err
	}
	data, _ := json.Marshal(map[string]int{"count": count})
	_, err = s.auth.Sessions.AppendSystem(ctx, p, sessionID, EventLLMRedacted, data)
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

// endpoint is an upstream API the proxy forwards to: its base URL and the headers
// that go with every call (its key among them).
type endpoint struct {
	url    string
	header http.Header
	// fromClient names the headers whose values the client gave.
	fromClient []string
}

// openAI is the OpenAI-compatible upstream, whose key goes as a Bearer key.
func (l LLM) openAI() (endpoint, error) {
	if l.URL == "" {
		return endpoint{}, problem.New(problem.LLMNotConfigured, "No upstream language model is configured on this server.")
	}
	e := endpoint{url: l.URL, header: http.Header{}}
	if l.Key != "" {
		e.header.Set("Authorization", "Bearer "+l.Key)
	}
	return e, nil
}

// AnthropicVersion is the version of Anthropic's API a Messages request is
// forwarded with when its client names none.
const AnthropicVersion = "2023-06-01"

// apiVersion is what an anthropic-version must look like: a date.
var apiVersion = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}$`)

// anthropic is the Anthropic upstream, whose key goes as x-api-key, with the
// anthropic-version r names (a date, which is checked for protected values as the
// body is) or AnthropicVersion. No other header of the client's is forwarded:
// anthropic-beta neither, as a beta may take parts the proxy cannot check.
func (l LLM) anthropic(r *http.Request) (endpoint, error) {
	if l.AnthropicURL == "" {
		return endpoint{}, problem.New(problem.LLMNotConfigured, "No upstream Anthropic model is configured on this server.")
	}
	e := endpoint{url: l.AnthropicURL, header: http.Header{"Anthropic-Version": {AnthropicVersion}}}
	if vs := r.Header.Values("Anthropic-Version"); len(vs) > 0 {
		if len(vs) > 1 || !apiVersion.MatchString(vs[0]) {
			return endpoint{}, problem.Invalid("anthropic-version must be one version, a date such as " + AnthropicVersion + "; without it the proxy sends " + AnthropicVersion + ".")
		}
		e.header.Set("Anthropic-Version", vs[0])
		e.fromClient = []string{"anthropic-version"}
	}
	if l.AnthropicKey != "" {
		e.header.Set("X-Api-Key", l.AnthropicKey)
	}
	return e, nil
}

// upstream calls path of the upstream up; an answer other than 2xx is
// upstream_error, and nothing of it is passed on.
func (s *Server) upstream(r *http.Request, up endpoint, method, path string, body []byte) (*http.Response, context.CancelFunc, error) {
	l := s.auth.LLM
	ctx, cancel := context.WithTimeout(r.Context(), l.Timeout)
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(up.url, "/")+path, bytes.NewReader(body))
	if err != nil {
		cancel()
		return nil, nil, upstreamFailed(err)
	}
	maps.Copy(req.Header, up.header)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if tp := telemetry.UpstreamTraceparent(r.Context()); tp != "" { // never the caller's trace
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
