package llm

import (
	"cmp"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/waystation/waystation/internal/problem"
)

// OpenAI is the OpenAI-compatible upstream: its key goes as a Bearer key, and its
// clients read errors as {"error": {"message", "type", "param", "code"}}.
var OpenAI Provider = openAI{}

type openAI struct{}

func (openAI) Name() string      { return "OpenAI" }
func (openAI) KeyHeader() string { return "" }

func (openAI) Endpoint(c Config, _ http.Header) (Endpoint, error) {
	if c.URL == "" {
		return Endpoint{}, problem.New(problem.LLMNotConfigured, "No upstream language model is configured on this server.")
	}
	e := Endpoint{Provider: OpenAI, URL: c.URL, Header: http.Header{}}
	if c.Key != "" {
		e.Header.Set("Authorization", "Bearer "+c.Key)
	}
	return e, nil
}

// openAIError is an error in OpenAI's shape: message, type and param as its clients
// read them, and a code (null for an upstream's error without one).
type openAIError struct {
	Error struct {
		Message string `json:"message"`
		Type    string `json:"type"`
		Param   string `json:"param,omitempty"`
		Code    any    `json:"code"`
	} `json:"error"`
}

func (openAI) ErrorBody(e Error) []byte {
	var b openAIError
	b.Error.Message, b.Error.Param = e.Message, e.Param
	if e.Code != "" {
		b.Error.Code = e.Code
	}
	b.Error.Type = cmp.Or(e.Type, ErrorType(e.Status))
	out, _ := json.Marshal(b)
	return out
}

// UpstreamError reads {"error": {"message", "type", "param", "code"}}; the message
// is required, the type defaults to the status's.
func (openAI) UpstreamError(status int, body []byte) (Error, bool) {
	var b struct {
		Error struct {
			Message           string
			Type, Code, Param any
		}
	}
	if json.Unmarshal(body, &b) != nil || b.Error.Message == "" {
		return Error{}, false
	}
	return Error{Status: status, Message: upstreamText(b.Error.Message), Type: cmp.Or(upstreamWord(b.Error.Type), ErrorType(status)),
		Code: upstreamWord(b.Error.Code), Param: upstreamWord(b.Error.Param)}, true
}

// PassesHeader passes Retry-After, retry-after-ms and the x-ratelimit-* headers,
// which OpenAI's clients read to wait before trying again.
func (openAI) PassesHeader(name string) bool {
	return name == "Retry-After" || name == "Retry-After-Ms" || strings.HasPrefix(name, "X-Ratelimit-")
}

func (openAI) RequestIDHeader() string { return "X-Request-Id" }

// Models is OpenAI's list of models, a read.
var Models = &API{Provider: OpenAI, Route: "/models", Upstream: "/models"}

// ChatCompletions is OpenAI's chat completion API.
var ChatCompletions = &API{
	Provider: OpenAI, Route: "/chat/completions", Upstream: "/chat/completions",
	Request: Rule{
		Name:      "an OpenAI chat completion request",
		Shape:     textOnly,
		Fixed:     map[string]bool{"model": true, "role": true, "type": true, "id": true, "tool_call_id": true},
		TokenMaps: []string{"logit_bias"},
	},
}

// Responses is OpenAI's Responses API. Besides the model, a role, a part's type and
// an id, an item's call_id pairs a tool call with its output, previous_response_id
// and conversation name what the upstream keeps, and a reasoning item's
// encrypted_content is the upstream's own ciphertext: a value there cannot be
// blanked without changing what the request means.
var Responses = &API{
	Provider: OpenAI, Route: "/responses", Upstream: "/responses",
	Request: Rule{
		Name:  "an OpenAI Responses API request",
		Shape: responsesTextOnly,
		Fixed: map[string]bool{"model": true, "role": true, "type": true, "id": true, "call_id": true,
			"previous_response_id": true, "conversation": true, "encrypted_content": true},
	},
}

// textOnly refuses a message part that is not text: the gateway can check text only.
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
