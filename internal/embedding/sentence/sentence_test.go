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

// FuzzTokenizer holds any text to ids of the vocabulary, with no two unknown pieces in
// a row, and the encoder to a unit vector.
func FuzzTokenizer(f *testing.F) {
	e := encoder(f)
	for _, s := range []string{"hello world", "naïve café", "🚀🚀 x", "", " ", "\u2581", "a\u0301"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ids := e.Tokens(s)
		for i, id := range ids {
			if id < 0 || id >= len(e.tok.pieces) || (id == 0 && i > 0 && ids[i-1] == 0) {
				t.Fatalf("%q: ids %v", s, ids)
			}
		}
		if len(ids) == 0 {
			return
		}
		var n float64
		for _, x := range e.Vector(s) {
			n += float64(x) * float64(x)
		}
		if math.Abs(n-1) > 1e-3 {
			t.Fatalf("%q: norm² %f", s, n)
		}
	})
}
