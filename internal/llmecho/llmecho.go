// Package llmecho is a stand-in for an OpenAI-compatible model, so that the LLM proxy
// can be tried offline: it lists one model and answers every chat completion, whole
// or streamed, with the messages it received, so that a person sees what the proxy
// let through (a protected value arrives as [redacted]).
package llmecho

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
)

// Model is the one model the stand-in lists; it answers under any model's name.
const Model = "echo"

// maxBody bounds a request body.
const maxBody = 1 << 20

// Server answers GET /v1/models and POST /v1/chat/completions.
type Server struct {
	// Received, when set, is told the echo of every chat completion it answers.
	Received func(echo string)
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

// chatRequest is what the stand-in reads of a chat completion request.
type chatRequest struct {
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
}

// echo is the answer to c: each message as "role: text", a line each.
func (c chatRequest) echo() string {
	var b strings.Builder
	for i, m := range c.Messages {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(m.Role + ": " + text(m.Content))
	}
	return b.String()
}

// text is a message's content as text: a string, or its text parts joined.
func text(content json.RawMessage) string {
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
		if p.Type == "text" {
			out = append(out, p.Text)
		}
	}
	return strings.Join(out, " ")
}

func (s *Server) handleChat(w http.ResponseWriter, r *http.Request) {
	var req chatRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody)).Decode(&req); err != nil || len(req.Messages) == 0 {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": map[string]any{
			"message": "The body must be a chat completion request with messages.", "type": "invalid_request_error"}})
		return
	}
	model := req.Model
	if model == "" {
		model = Model
	}
	echo := req.echo()
	if s.Received != nil {
		s.Received(echo)
	}
	id := fmt.Sprintf("chatcmpl-echo-%d", s.n.Add(1))
	created := s.now().Unix()
	if !req.Stream {
		words := len(strings.Fields(echo))
		writeJSON(w, http.StatusOK, map[string]any{
			"id": id, "object": "chat.completion", "created": created, "model": model,
			"choices": []map[string]any{{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": echo}}},
			"usage": map[string]int{"prompt_tokens": words, "completion_tokens": words, "total_tokens": 2 * words},
		})
		return
	}
	// Streamed: the role, then the echo a word at a time, then the end.
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	flusher, _ := w.(http.Flusher)
	chunk := func(delta map[string]any, finish any) {
		b, _ := json.Marshal(map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": model,
			"choices": []map[string]any{{"index": 0, "delta": delta, "finish_reason": finish}}})
		fmt.Fprintf(w, "data: %s\n\n", b)
		if flusher != nil {
			flusher.Flush()
		}
	}
	chunk(map[string]any{"role": "assistant", "content": ""}, nil)
	for _, piece := range strings.SplitAfter(echo, " ") {
		chunk(map[string]any{"content": piece}, nil)
	}
	chunk(map[string]any{}, "stop")
	fmt.Fprint(w, "data: [DONE]\n\n")
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}
