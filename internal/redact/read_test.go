package redact

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/waystation/waystation/internal/problem"
)

// JSON blanks values in strings, member names and numbers; two names that blank
// alike stay apart; what holds no value is answered byte for byte.
func TestJSONBlanksStringsNamesAndNumbers(t *testing.T) {
	set := New([]string{"4111111111111111", "Quartz_Canary_4417"})
	raw := json.RawMessage(`{"note":"saw Quartz_Canary_4417","Quartz_Canary_4417":1,"quartz canary 4417":2,"n":4111111111111111,"ok":[1,"fine"]}`)
	got, n := set.RawJSON(raw)
	var v map[string]any
	if err := json.Unmarshal(got, &v); err != nil {
		t.Fatal(err)
	}
	if n != 4 || v["note"] != "saw "+Placeholder || v["n"] != Placeholder || v[Placeholder] == nil || v[Placeholder+" (2)"] == nil {
		t.Errorf("%d %s", n, got)
	}
	clean := json.RawMessage(`{"b": 1, "a":"fine"}`)
	if got, n := set.RawJSON(clean); n != 0 || string(got) != string(clean) {
		t.Errorf("a body without values changed: %s", got)
	}
	desc, none := "pay Quartz_Canary_4417", (*string)(nil)
	if set.Strings(&desc, none) != 1 || desc != "pay "+Placeholder {
		t.Errorf("Strings: %q", desc)
	}
}

type failing struct{}

func (failing) Protected(context.Context, string) ([]string, error) { return nil, errors.New("sealed") }

// Load fails closed: without a source, or when it fails, redaction_unavailable.
func TestLoadFailsClosed(t *testing.T) {
	for _, src := range []Source{nil, failing{}} {
		if _, err := Load(context.Background(), src, "u", "nothing is answered"); problem.CodeOf(err) != problem.RedactionUnavailable {
			t.Errorf("%T: %v", src, err)
		}
	}
}
