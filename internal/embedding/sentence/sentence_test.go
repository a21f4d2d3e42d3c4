package sentence

import (
	"encoding/json"
	"math"
	"os"
	"slices"
	"testing"
)

// modelDir is where make puts the model's files; tests that need them skip without.
func modelDir(t testing.TB) string {
	dir := os.Getenv("WAYSTATION_SENTENCE_MODEL")
	if dir == "" {
		t.Skip("WAYSTATION_SENTENCE_MODEL is not set (make test sets it)")
	}
	return dir
}

var loaded struct {
	enc *Encoder
	err error
}

func encoder(t testing.TB) *Encoder {
	dir := modelDir(t)
	if loaded.enc == nil && loaded.err == nil {
		loaded.enc, loaded.err = Load(dir)
	}
	if loaded.err != nil {
		t.Fatal(loaded.err)
	}
	return loaded.enc
}

type golden struct {
	Single []struct {
		Text   string    `json:"text"`
		Tokens []int     `json:"tokens"`
		Vector []float64 `json:"vector"`
	} `json:"single"`
}

func readGolden(t *testing.T) golden {
	raw, err := os.ReadFile("testdata/golden.json")
	if err != nil {
		t.Fatal(err)
	}
	var g golden
	if err := json.Unmarshal(raw, &g); err != nil {
		t.Fatal(err)
	}
	return g
}

// TestGolden holds the encoder to the reference implementation's pieces and vectors
// (testdata/golden.js made them).
func TestGolden(t *testing.T) {
	e := encoder(t)
	g := readGolden(t)
	for _, c := range g.Single {
		if got := e.Tokens(c.Text); !slices.Equal(got, c.Tokens) {
			t.Errorf("%q: pieces %v, want %v", c.Text, got, c.Tokens)
			continue
		}
		v := e.Vector(c.Text)
		worst := 0.0
		for i, want := range c.Vector {
			worst = max(worst, math.Abs(float64(v[i])-want))
		}
		if worst > 1e-4 {
			t.Errorf("%q: differs from the reference by %g", c.Text, worst)
		}
		t.Logf("%-50.50q %3d pieces, max difference %.2g", c.Text, len(c.Tokens), worst)
	}
}

// BenchmarkVector embeds a short query and a method-sized text.
func BenchmarkVector(b *testing.B) {
	e := encoder(b)
	for _, c := range []struct{ name, text string }{
		{"query", "how much is one bitcoin in dollars right now"},
		{"method", "Weather forecast\nExample Weather\nHourly and daily forecasts for any city: temperature, rain, wind and humidity for the next ten days, with alerts.\nweather\napi.example.com /v1/forecast"},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportMetric(float64(len(e.Tokens(c.text))), "pieces")
			for b.Loop() {
				e.Vector(c.text)
			}
		})
	}
}
