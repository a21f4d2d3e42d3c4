package api

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/waystation/waystation/internal/problem"
)

// A model request is one JSON object of text parts, its numbers kept as written.
func TestReadModelBody(t *testing.T) {
	s := NewServer(Config{}, nil, nil, nil)
	read := func(body string) (map[string]any, error) {
		return s.readModelBody(httptest.NewRecorder(), httptest.NewRequest("POST", "/", strings.NewReader(body)))
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
