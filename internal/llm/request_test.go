package llm

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/waystation/waystation/internal/problem"
)

// A model request is one JSON object of text parts, its numbers kept as written.
func TestReadModelBody(t *testing.T) {
	read := func(body string) (map[string]any, error) {
		return ChatCompletions.Request.Decode([]byte(body))
	}
	body, err := read(`{"model":"m","temperature":0.70,"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}`)
	if err != nil {
		t.Fatal(err)
	}
	if n, ok := body["temperature"].(json.Number); !ok || n.String() != "0.70" {
		t.Errorf("temperature = %#v, want the number as written", body["temperature"])
	}
	for name, c := range map[string]struct{ body, want string }{
		"two objects": {`{"messages":[{"content":"a"}]} {}`, "one JSON object"},
		"an array":    {`[{"messages":[]}]`, "one JSON object"},
		"no messages": {`{"model":"m"}`, "messages must be a non-empty array"},
		"an image":    {`{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:"}}]}]}`, "not text"},
		"a number":    {`{"messages":[{"role":"user","content":7}]}`, "a string or an array of text parts"},
	} {
		_, err := read(c.body)
		if p, ok := problem.As(err); !ok || p.Code != problem.ValidationFailed || !strings.Contains(p.Detail, c.want) {
			t.Errorf("%s: %v, want validation_failed saying %q", name, err, c.want)
		}
	}
}

// A Responses API request and a Messages API request are read as chat completions
// are, each of the parts its API has that the proxy can check: text, tool calls and
// their results, and nothing else.
func TestReadModelBodyOfResponsesAndMessages(t *testing.T) {
	read := func(m Rule, body string) error {
		_, err := m.Decode([]byte(body))
		return err
	}
	responses, messages := Responses.Request, Messages.Request
	for _, body := range []string{
		`{"model":"m","input":"hi"}`,
		`{"model":"m","previous_response_id":"resp_1"}`,
		`{"model":"m","input":[{"role":"user","content":"hi"},{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]},
			{"type":"function_call","call_id":"c1","name":"pay","arguments":"{}"},{"type":"function_call_output","call_id":"c1","output":"ok"},
			{"type":"function_call_output","call_id":"c2","output":[{"type":"input_text","text":"ok"}]},{"type":"reasoning","id":"rs_1","summary":[]},
			{"type":"item_reference","id":"msg_1"}]}`,
		`{"model":"m","prompt":{"id":"p1","variables":{"a":"x","b":{"type":"input_text","text":"y"}}}}`,
	} {
		if err := read(responses, body); err != nil {
			t.Errorf("responses %s: %v", body, err)
		}
	}
	for _, body := range []string{
		`{"model":"m","max_tokens":8,"messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"m","max_tokens":8,"system":[{"type":"text","text":"be brief"}],"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]},
			{"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"s"},{"type":"tool_use","id":"tu_1","name":"pay","input":{"a":1}}]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"tu_1","content":[{"type":"text","text":"ok"}]},{"type":"tool_result","tool_use_id":"tu_1","content":"ok"}]}]}`,
	} {
		if err := read(messages, body); err != nil {
			t.Errorf("messages %s: %v", body, err)
		}
	}
	for name, c := range map[string]struct {
		m          Rule
		body, want string
	}{
		"responses: not an object":    {responses, `[]`, "an OpenAI Responses API request"},
		"responses: null":             {responses, `null`, "one JSON object"},
		"responses: input a number":   {responses, `{"input":7}`, "input must be a string or an array"},
		"responses: instructions":     {responses, `{"instructions":[{"role":"user","content":[{"type":"input_image"}]}],"input":"hi"}`, "instructions must be a string"},
		"responses: an image":         {responses, `{"input":[{"role":"user","content":[{"type":"input_image","image_url":"data:"}]}]}`, "not one of input_text"},
		"responses: a file item":      {responses, `{"input":[{"type":"computer_call_output","call_id":"c","output":{}}]}`, "not a text item"},
		"responses: an item a string": {responses, `{"input":["hi"]}`, "input[0] must be an object"},
		"responses: an image output":  {responses, `{"input":[{"type":"function_call_output","call_id":"c","output":[{"type":"input_image"}]}]}`, "input[0].output"},
		"responses: a prompt file":    {responses, `{"prompt":{"id":"p","variables":{"f":{"type":"input_file","file_data":"x"}}}}`, "prompt.variables"},
		"messages: no messages":       {messages, `{"model":"m"}`, "messages must be a non-empty array"},
		"messages: not an object":     {messages, `"x"`, "an Anthropic Messages API request"},
		"messages: an image":          {messages, `{"messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","data":"x"}}]}]}`, "not one of text"},
		"messages: a document result": {messages, `{"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"document"}]}]}]}`, "messages[0].content[0].content"},
		"messages: a system image":    {messages, `{"system":[{"type":"image"}],"messages":[{"role":"user","content":"hi"}]}`, "system holds a part"},
		"messages: a number":          {messages, `{"messages":[{"role":"user","content":7}]}`, "a string or an array of parts"},
		"messages: no model":          {messages, `{"max_tokens":8,"messages":[{"role":"user","content":"hi"}]}`, "model must be"},
		"messages: no max_tokens":     {messages, `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, "max_tokens must be"},
		"messages: max_tokens 0":      {messages, `{"model":"m","max_tokens":0,"messages":[{"role":"user","content":"hi"}]}`, "max_tokens must be"},
		"messages: max_tokens 1.5":    {messages, `{"model":"m","max_tokens":1.5,"messages":[{"role":"user","content":"hi"}]}`, "max_tokens must be"},
		"messages: max_tokens text":   {messages, `{"model":"m","max_tokens":"8","messages":[{"role":"user","content":"hi"}]}`, "max_tokens must be"},
	} {
		err := read(c.m, c.body)
		if p, ok := problem.As(err); !ok || p.Code != problem.ValidationFailed || !strings.Contains(p.Detail, c.want) {
			t.Errorf("%s: %v, want validation_failed saying %q", name, err, c.want)
		}
	}
}
