// Package llmecho is a stand-in for an OpenAI-compatible model and an Anthropic one, so
// that the LLM proxy can be tried offline: it lists one model and answers every chat
// completion, response and message, whole or streamed, with what it received, so that
// a person sees what the proxy let through (a protected value arrives as [redacted]).
// Offered tools, it calls the first one with what it received, until a tool's result
// comes back.
package llmecho

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
)

// Model is the one model the stand-in lists; it answers under any model's name.
const Model = "echo"

// maxBody bounds a request body.
const maxBody = 1 << 20

// Call is a request as it reached the stand-in.
type Call struct {
	Path   string
	Header http.Header
	Body   []byte
}

// Server answers GET /v1/models, POST /v1/chat/completions and POST /v1/responses as
// OpenAI does, and POST /v1/messages as Anthropic does.
type Server struct {
	// Received, when set, is told the echo of every call it answers.
	Received func(echo string)
	// Called, when set, is told every request it reads, as it came.
	Called func(Call)
	// Now is the clock (default time.Now).
	Now func() time.Time

	n   atomic.Int64
	mux *http.ServeMux
}

// New returns the stand-in.
func New() *Server {
	s := &Server{mux: http.NewServeMux()}
	s.mux.HandleFunc("GET /v1/models", s.handleModels)
	s.mux.HandleFunc("POST /v1/chat/completions", s.handleChat)
	s.mux.HandleFunc("POST /v1/responses", s.handleResponses)
	s.mux.HandleFunc("POST /v1/messages", s.handleMessages)
	return s
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

func (s *Server) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func (s *Server) handleModels(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []map[string]any{
		{"id": Model, "object": "model", "created": 0, "owned_by": "waystation"},
	}})
}

// read decodes the body of r into v, telling Called what came; false, and the
// answer sent, when it is not JSON.
func (s *Server) read(w http.ResponseWriter, r *http.Request, v any, fail func(string)) bool {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if s.Called != nil {
		s.Called(Call{Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
	}
	if err != nil || json.Unmarshal(body, v) != nil {
		fail("The body must be one JSON object.")
		return false
	}
	return true
}

func (s *Server) heard(echo string) {
	if s.Received != nil {
		s.Received(echo)
	}
}

// tool is an offered tool as the three APIs name it: {"type":"function","function":
// {"name"}} in chat completions, {"type":"function","name"} in responses, {"name"} in
// messages.
type tool struct {
	Type     string `json:"type"`
	Name     string `json:"name"`
	Function struct {
		Name string `json:"name"`
	} `json:"function"`
}

// firstFunction is the name of the first function tool offered; "" for none.
func firstFunction(tools []tool) string {
	for _, t := range tools {
		if t.Function.Name != "" {
			return t.Function.Name
		}
		if t.Name != "" && (t.Type == "" || t.Type == "function" || t.Type == "custom") {
			return t.Name
		}
	}
	return ""
}

// arguments is the call of a tool with the echo: {"echo": echo}.
func arguments(echo string) string {
	b, _ := json.Marshal(map[string]string{"echo": echo})
	return string(b)
}

// chatRequest is what the stand-in reads of a chat completion request.
type chatRequest struct {
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
	Tools    []tool `json:"tools"`
	Messages []struct {
		Role      string          `json:"role"`
		Content   json.RawMessage `json:"content"`
		ToolCalls []struct {
			Function struct{ Name, Arguments string }
		} `json:"tool_calls"`
	} `json:"messages"`
}

// echo is the answer to c: each message as "role: text", a line each.
func (c chatRequest) echo() string {
	var b strings.Builder
	for i, m := range c.Messages {
		if i > 0 {
			b.WriteByte('\n')
		}
		parts := []string{text(m.Content, "text")}
		if parts[0] == "" {
			parts = nil
		}
		for _, call := range m.ToolCalls {
			parts = append(parts, call.Function.Name+call.Function.Arguments)
		}
		b.WriteString(m.Role + ": " + strings.Join(parts, " "))
	}
	return b.String()
}

// text is a content as text: a string, or its parts of the types given joined.
func text(content json.RawMessage, types ...string) string {
	var s string
	if json.Unmarshal(content, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	json.Unmarshal(content, &parts)
	var out []string
	for _, p := range parts {
		for _, t := range types {
			if p.Type == t {
				out = append(out, p.Text)
			}
		}
	}
	return strings.Join(out, " ")
}

func (s *Server) handleChat(w http.ResponseWriter, r *http.Request) {
	var req chatRequest
	fail := func(msg string) {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": map[string]any{"message": msg, "type": "invalid_request_error"}})
	}
	if !s.read(w, r, &req, fail) {
		return
	}
	if len(req.Messages) == 0 {
		fail("The body must be a chat completion request with messages.")
		return
	}
	model := req.Model
	if model == "" {
		model = Model
	}
	echo := req.echo()
	s.heard(echo)
	id := fmt.Sprintf("chatcmpl-echo-%d", s.n.Add(1))
	created := s.now().Unix()
	call := ""
	if req.Messages[len(req.Messages)-1].Role != "tool" {
		call = firstFunction(req.Tools)
	}
	callID := "call_" + strings.TrimPrefix(id, "chatcmpl-")
	if !req.Stream {
		words := len(strings.Fields(echo))
		msg, finish := map[string]any{"role": "assistant", "content": echo}, "stop"
		if call != "" {
			msg = map[string]any{"role": "assistant", "content": nil, "tool_calls": []map[string]any{
				{"id": callID, "type": "function", "function": map[string]any{"name": call, "arguments": arguments(echo)}}}}
			finish = "tool_calls"
		}
		writeJSON(w, http.StatusOK, map[string]any{
			"id": id, "object": "chat.completion", "created": created, "model": model,
			"choices": []map[string]any{{"index": 0, "finish_reason": finish, "message": msg}},
			"usage":   map[string]int{"prompt_tokens": words, "completion_tokens": words, "total_tokens": 2 * words},
		})
		return
	}
	// Streamed: the role, then the echo a word at a time (or the call, its arguments
	// in pieces), then the end.
	sse := newStream(w)
	chunk := func(delta map[string]any, finish any) {
		sse.data(map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": model,
			"choices": []map[string]any{{"index": 0, "delta": delta, "finish_reason": finish}}})
	}
	if call != "" {
		chunk(map[string]any{"role": "assistant", "content": nil, "tool_calls": []map[string]any{
			{"index": 0, "id": callID, "type": "function", "function": map[string]any{"name": call, "arguments": ""}}}}, nil)
		for _, piece := range pieces(arguments(echo)) {
			chunk(map[string]any{"tool_calls": []map[string]any{{"index": 0, "function": map[string]any{"arguments": piece}}}}, nil)
		}
		chunk(map[string]any{}, "tool_calls")
	} else {
		chunk(map[string]any{"role": "assistant", "content": ""}, nil)
		for _, piece := range strings.SplitAfter(echo, " ") {
			chunk(map[string]any{"content": piece}, nil)
		}
		chunk(map[string]any{}, "stop")
	}
	sse.raw("data: [DONE]\n\n")
}

// pieces cuts s in pieces of up to 16 bytes, as a stream sends a tool call's
// arguments.
func pieces(s string) []string {
	var out []string
	for len(s) > 16 {
		out, s = append(out, s[:16]), s[16:]
	}
	return append(out, s)
}

// responsesRequest is what the stand-in reads of a Responses API request.
type responsesRequest struct {
	Model        string          `json:"model"`
	Stream       bool            `json:"stream"`
	Instructions string          `json:"instructions"`
	Input        json.RawMessage `json:"input"`
	Tools        []tool          `json:"tools"`
}

// responseItem is what the stand-in reads of an input item.
type responseItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	Name      string          `json:"name"`
	Arguments string          `json:"arguments"`
	Output    json.RawMessage `json:"output"`
}

// echo is the answer to c: its instructions and each input item, a line each; and
// whether the last item is a tool's output.
func (c responsesRequest) echo() (string, bool, error) {
	var lines []string
	if c.Instructions != "" {
		lines = append(lines, "instructions: "+c.Instructions)
	}
	var s string
	if json.Unmarshal(c.Input, &s) == nil {
		return strings.Join(append(lines, "user: "+s), "\n"), false, nil
	}
	var items []responseItem
	if err := json.Unmarshal(c.Input, &items); err != nil || len(items) == 0 {
		return "", false, fmt.Errorf("input must be a string or an array of input items")
	}
	for _, it := range items {
		switch {
		case it.Type == "function_call" || it.Type == "custom_tool_call":
			lines = append(lines, it.Type+": "+it.Name+it.Arguments)
		case strings.HasSuffix(it.Type, "_output"):
			lines = append(lines, it.Type+": "+text(it.Output, "input_text", "output_text"))
		case it.Role != "":
			lines = append(lines, it.Role+": "+text(it.Content, "input_text", "output_text"))
		default:
			lines = append(lines, it.Type)
		}
	}
	return strings.Join(lines, "\n"), strings.HasSuffix(items[len(items)-1].Type, "_output"), nil
}

func (s *Server) handleResponses(w http.ResponseWriter, r *http.Request) {
	var req responsesRequest
	fail := func(msg string) {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": map[string]any{"message": msg, "type": "invalid_request_error"}})
	}
	if !s.read(w, r, &req, fail) {
		return
	}
	echo, answered, err := req.echo()
	if err != nil {
		fail(err.Error())
		return
	}
	s.heard(echo)
	model := req.Model
	if model == "" {
		model = Model
	}
	n := s.n.Add(1)
	id := fmt.Sprintf("resp_echo%d", n)
	words := len(strings.Fields(echo))
	response := func(status string, output []any) map[string]any {
		res := map[string]any{
			"id": id, "object": "response", "created_at": s.now().Unix(), "status": status, "model": model,
			"output": output, "error": nil, "incomplete_details": nil, "instructions": nil, "metadata": map[string]any{},
			"parallel_tool_calls": true, "temperature": nil, "top_p": nil, "tool_choice": "auto", "tools": []any{},
		}
		if status == "completed" {
			res["usage"] = map[string]any{"input_tokens": words, "output_tokens": words, "total_tokens": 2 * words,
				"input_tokens_details": map[string]int{"cached_tokens": 0}, "output_tokens_details": map[string]int{"reasoning_tokens": 0}}
		}
		return res
	}
	call := ""
	if !answered {
		call = firstFunction(req.Tools)
	}
	var item map[string]any
	if call != "" {
		item = map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_echo%d", n), "call_id": fmt.Sprintf("call_echo%d", n),
			"name": call, "arguments": arguments(echo), "status": "completed"}
	} else {
		item = map[string]any{"type": "message", "id": fmt.Sprintf("msg_echo%d", n), "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": echo, "annotations": []any{}}}}
	}
	if !req.Stream {
		writeJSON(w, http.StatusOK, response("completed", []any{item}))
		return
	}
	// Streamed: created, the item added, its text (or arguments) in pieces, done.
	sse := newStream(w)
	seq := 0
	event := func(typ string, v map[string]any) {
		v["type"], v["sequence_number"] = typ, seq
		seq++
		sse.event(typ, v)
	}
	event("response.created", map[string]any{"response": response("in_progress", []any{})})
	event("response.in_progress", map[string]any{"response": response("in_progress", []any{})})
	itemID := item["id"]
	if call != "" {
		added := map[string]any{}
		for k, v := range item {
			added[k] = v
		}
		added["arguments"], added["status"] = "", "in_progress"
		event("response.output_item.added", map[string]any{"output_index": 0, "item": added})
		for _, piece := range pieces(arguments(echo)) {
			event("response.function_call_arguments.delta", map[string]any{"item_id": itemID, "output_index": 0, "delta": piece})
		}
		event("response.function_call_arguments.done", map[string]any{"item_id": itemID, "output_index": 0, "name": call, "arguments": arguments(echo)})
	} else {
		event("response.output_item.added", map[string]any{"output_index": 0, "item": map[string]any{
			"type": "message", "id": itemID, "role": "assistant", "status": "in_progress", "content": []any{}}})
		part := func() map[string]any {
			return map[string]any{"type": "output_text", "text": "", "annotations": []any{}}
		}
		event("response.content_part.added", map[string]any{"item_id": itemID, "output_index": 0, "content_index": 0, "part": part()})
		for _, piece := range strings.SplitAfter(echo, " ") {
			event("response.output_text.delta", map[string]any{"item_id": itemID, "output_index": 0, "content_index": 0, "delta": piece, "logprobs": []any{}})
		}
		event("response.output_text.done", map[string]any{"item_id": itemID, "output_index": 0, "content_index": 0, "text": echo, "logprobs": []any{}})
		done := part()
		done["text"] = echo
		event("response.content_part.done", map[string]any{"item_id": itemID, "output_index": 0, "content_index": 0, "part": done})
	}
	event("response.output_item.done", map[string]any{"output_index": 0, "item": item})
	event("response.completed", map[string]any{"response": response("completed", []any{item})})
}

// messagesRequest is what the stand-in reads of an Anthropic Messages API request.
type messagesRequest struct {
	Model    string          `json:"model"`
	Stream   bool            `json:"stream"`
	System   json.RawMessage `json:"system"`
	Tools    []tool          `json:"tools"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
}

// block is what the stand-in reads of a content block.
type block struct {
	Type    string          `json:"type"`
	Text    string          `json:"text"`
	Name    string          `json:"name"`
	Input   json.RawMessage `json:"input"`
	Content json.RawMessage `json:"content"`
}

// echo is the answer to c: its system prompt and each message as "role: blocks", a
// line each; and whether the last message holds a tool's result.
func (c messagesRequest) echo() (string, bool) {
	var lines []string
	if sys := text(c.System, "text"); sys != "" {
		lines = append(lines, "system: "+sys)
	}
	answered := false
	for _, m := range c.Messages {
		var blocks []block
		var s string
		if json.Unmarshal(m.Content, &s) == nil {
			blocks = []block{{Type: "text", Text: s}}
		} else {
			json.Unmarshal(m.Content, &blocks)
		}
		var parts []string
		answered = false
		for _, b := range blocks {
			switch b.Type {
			case "text":
				parts = append(parts, b.Text)
			case "tool_use":
				parts = append(parts, "tool_use "+b.Name+string(b.Input))
			case "tool_result":
				parts = append(parts, "tool_result: "+text(b.Content, "text"))
				answered = true
			}
		}
		lines = append(lines, m.Role+": "+strings.Join(parts, " "))
	}
	return strings.Join(lines, "\n"), answered
}

func (s *Server) handleMessages(w http.ResponseWriter, r *http.Request) {
	var req messagesRequest
	fail := func(msg string) {
		writeJSON(w, http.StatusBadRequest, map[string]any{"type": "error", "error": map[string]any{"type": "invalid_request_error", "message": msg}})
	}
	if !s.read(w, r, &req, fail) {
		return
	}
	if len(req.Messages) == 0 {
		fail("messages: the body must be a Messages API request with messages.")
		return
	}
	echo, answered := req.echo()
	s.heard(echo)
	model := req.Model
	if model == "" {
		model = Model
	}
	n := s.n.Add(1)
	id := fmt.Sprintf("msg_echo%d", n)
	words := len(strings.Fields(echo))
	call := ""
	if !answered {
		call = firstFunction(req.Tools)
	}
	content, stop := map[string]any{"type": "text", "text": echo}, "end_turn"
	if call != "" {
		content, stop = map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_echo%d", n), "name": call, "input": map[string]string{"echo": echo}}, "tool_use"
	}
	message := func(content []any, stop any, out int) map[string]any {
		return map[string]any{"id": id, "type": "message", "role": "assistant", "model": model, "content": content,
			"stop_reason": stop, "stop_sequence": nil, "usage": map[string]any{"input_tokens": words, "output_tokens": out}}
	}
	if !req.Stream {
		writeJSON(w, http.StatusOK, message([]any{content}, stop, words))
		return
	}
	// Streamed: the message, its one block started, filled in pieces, stopped, the
	// message's end.
	sse := newStream(w)
	event := func(typ string, v map[string]any) {
		v["type"] = typ
		sse.event(typ, v)
	}
	event("message_start", map[string]any{"message": message([]any{}, nil, 0)})
	if call != "" {
		started := map[string]any{"type": "tool_use", "id": content["id"], "name": call, "input": map[string]any{}}
		event("content_block_start", map[string]any{"index": 0, "content_block": started})
		for _, piece := range pieces(arguments(echo)) {
			event("content_block_delta", map[string]any{"index": 0, "delta": map[string]any{"type": "input_json_delta", "partial_json": piece}})
		}
	} else {
		event("content_block_start", map[string]any{"index": 0, "content_block": map[string]any{"type": "text", "text": ""}})
		for _, piece := range strings.SplitAfter(echo, " ") {
			event("content_block_delta", map[string]any{"index": 0, "delta": map[string]any{"type": "text_delta", "text": piece}})
		}
	}
	event("content_block_stop", map[string]any{"index": 0})
	event("message_delta", map[string]any{"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": words}})
	event("message_stop", map[string]any{})
}

// stream writes server-sent events, each flushed as it is written.
type stream struct {
	w       http.ResponseWriter
	flusher http.Flusher
}

func newStream(w http.ResponseWriter) stream {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	flusher, _ := w.(http.Flusher)
	return stream{w, flusher}
}

func (s stream) raw(text string) {
	io.WriteString(s.w, text)
	if s.flusher != nil {
		s.flusher.Flush()
	}
}

func (s stream) data(v any) {
	b, _ := json.Marshal(v)
	s.raw("data: " + string(b) + "\n\n")
}

func (s stream) event(name string, v any) {
	b, _ := json.Marshal(v)
	s.raw("event: " + name + "\ndata: " + string(b) + "\n\n")
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}
