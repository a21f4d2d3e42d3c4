package trace

import (
	"encoding/json"
	"testing"

	"github.com/waystation/waystation/internal/redact"
	"github.com/waystation/waystation/internal/redact/redacttest"
)

// TestCleanBlanksKeysAsValues: an attribute key holding a protected value, at any
// depth and in any written form, is blanked; keys that blank alike are numbered
// apart, and the count holds every blanked key and value.
func TestCleanBlanksKeysAsValues(t *testing.T) {
	const canary = "Quartz-Canary-4417"
	set := redact.New([]string{canary})
	forms := redacttest.Forms(canary)
	s := Span{Name: "x", Attributes: map[string]any{
		forms["plain"]:   "a",
		forms["base64"]:  "b",
		"list":           []any{map[string]any{forms["full-width"]: "c"}},
		"nested":         map[string]any{forms["percent"]: forms["base64url"]},
		"[redacted] (2)": "kept",
		"service.name":   "shopper",
		"url.full":       "https://shop.example/pay?code=" + canary,
		"url.query":      "code=" + canary,
		"note " + canary: "d",
	}}
	if n := s.Clean(set); n != 6 {
		t.Errorf("count %d", n)
	}
	got, _ := json.Marshal(s.Attributes)
	want := `{"[redacted]":"a","[redacted] (2)":"kept","[redacted] (3)":"b","list":[{"[redacted]":"c"}],"nested":{"[redacted]":"[redacted]"},` +
		`"note [redacted]":"d","service.name":"shopper","url.full":"https://shop.example/pay"}`
	if string(got) != want {
		t.Errorf("cleaned:\n%s\nwant\n%s", got, want)
	}
}
