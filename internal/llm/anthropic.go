package llm

import (
	"cmp"
	"encoding/json"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"github.com/waystation/waystation/internal/problem"
)

// Anthropic is the Anthropic upstream: its clients send their key as x-api-key (or
// as a Bearer key) and read errors as {"type": "error", "error": {"type",
// "message"}}; the key goes upstream as x-api-key, with an anthropic-version.
var Anthropic Provider = anthropic{}

type anthropic struct{}

// AnthropicVersion is the version of Anthropic's API a request is forwarded with
// when its client names none.
const AnthropicVersion = "2023-06-01"

// apiVersion is what an anthropic-version must look like: a date.
var apiVersion = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}$`)

func (anthropic) Name() string      { return "Anthropic" }
func (anthropic) KeyHeader() string { return "X-Api-Key" }

// Endpoint goes with the anthropic-version h names (a date, which is checked for
// protected values as the body is) or AnthropicVersion. No other header of the
// client's is forwarded: anthropic-beta neither, as a beta may take parts the
// gateway cannot check.
func (anthropic) Endpoint(c Config, h http.Header) (Endpoint, error) {
	if c.AnthropicURL == "" {
		return Endpoint{}, problem.New(problem.LLMNotConfigured, "No upstream Anthropic model is configured on this server.")
	}
	e := Endpoint{Provider: Anthropic, URL: c.AnthropicURL, Header: http.Header{"Anthropic-Version": {AnthropicVersion}}}
	if vs := h.Values("Anthropic-Version"); len(vs) > 0 {
		if len(vs) > 1 || !apiVersion.MatchString(vs[0]) {
			return Endpoint{}, problem.Invalid("anthropic-version must be one version, a date such as " + AnthropicVersion + "; without it the proxy sends " + AnthropicVersion + ".")
		}
		e.Header.Set("Anthropic-Version", vs[0])
		e.FromClient = []string{"anthropic-version"}
	}
	if c.AnthropicKey != "" {
		e.Header.Set("X-Api-Key", c.AnthropicKey)
	}
	return e, nil
}

// anthropicError is an error in Anthropic's shape: type and message as its clients
// read them, and a code.
type anthropicError struct {
	Type  string `json:"type"`
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
		Code    string `json:"code,omitempty"`
	} `json:"error"`
}

func (anthropic) ErrorBody(e Error) []byte {
	b := anthropicError{Type: "error"}
	b.Error.Type, b.Error.Message, b.Error.Code = cmp.Or(e.Type, ErrorType(e.Status)), e.Message, e.Code
	if e.Type == "" && e.Status == http.StatusRequestEntityTooLarge {
		b.Error.Type = "request_too_large"
	}
	out, _ := json.Marshal(b)
	return out
}

// UpstreamError reads {"type": "error", "error": {"type", "message"}}; the message
// is required, the type defaults to the status's.
func (anthropic) UpstreamError(status int, body []byte) (Error, bool) {
	var b struct {
		Type  string
		Error struct {
			Type    any
			Message string
		}
	}
	if json.Unmarshal(body, &b) != nil || b.Type != "error" || b.Error.Message == "" {
		return Error{}, false
	}
	return Error{Status: status, Message: upstreamText(b.Error.Message), Type: cmp.Or(upstreamWord(b.Error.Type), ErrorType(status))}, true
}

// PassesHeader passes Retry-After, retry-after-ms and the anthropic-ratelimit-*
// headers, which Anthropic's clients read to wait before trying again.
func (anthropic) PassesHeader(name string) bool {
	return name == "Retry-After" || name == "Retry-After-Ms" || strings.HasPrefix(name, "Anthropic-Ratelimit-")
}

// RequestIDHeader is request-id, where Anthropic's clients read a request's id.
func (anthropic) RequestIDHeader() string { return "Request-Id" }

// Messages is Anthropic's Messages API. Besides the model, a role, a block's type
// and an id, a tool result's tool_use_id pairs it with its call, a container names
// one the upstream keeps, and a thinking block's signature and a redacted thinking
// block's data are the upstream's own, checked by it: a value there cannot be
// blanked.
var Messages = &API{
	Provider: Anthropic, Route: "/messages", Upstream: "/v1/messages",
	Request: Rule{
		Name:  "an Anthropic Messages API request",
		Shape: messagesTextOnly,
		Fixed: map[string]bool{"model": true, "role": true, "type": true, "id": true, "tool_use_id": true,
			"signature": true, "data": true, "container": true},
	},
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
