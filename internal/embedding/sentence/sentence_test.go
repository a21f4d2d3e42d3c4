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

// BenchmarkMatmul compares the tiled kernel with the row by row product on a
// feed-forward layer's shapes (12 pieces, 512 to 1536).
func BenchmarkMatmul(b *testing.B) {
	n, k, m := 12, 512, 1536
	a, w, c := make([]float32, n*k), make([]float32, k*m), make([]float32, n*m)
	for i := range a {
		a[i] = float32(i%7) - 3
	}
	for i := range w {
		w[i] = float32(i%5) - 2
	}
	b.Run("tiled", func(b *testing.B) {
		for b.Loop() {
			matmulAdd(c, a, w, n, k, m)
		}
	})
	b.Run("rows", func(b *testing.B) {
		for b.Loop() {
			matmulAddRows(c, a, w, n, k, m)
		}
	})
}

func TestTiledProductIsTheRowByRowOne(t *testing.T) {
	for _, n := range []int{1, 5, 6, 7, 13} {
		k, m := 37, 48
		a, w := make([]float32, n*k), make([]float32, k*m)
		for i := range a {
			a[i] = float32(i%11)/7 - 0.5
		}
		for i := range w {
			w[i] = float32(i%13)/5 - 1
		}
		c1, c2 := make([]float32, n*m), make([]float32, n*m)
		for i := range c1 {
			c1[i], c2[i] = float32(i), float32(i)
		}
		matmulAdd(c1, a, w, n, k, m)
		matmulAddRows(c2, a, w, n, k, m)
		for i := range c1 {
			// The sums run in another order: equal to float32 rounding.
			if d := math.Abs(float64(c1[i] - c2[i])); d > 1e-5*max(1, math.Abs(float64(c2[i]))) {
				t.Fatalf("n=%d: element %d differs by %g", n, i, d)
			}
		}
	}
}

// TestBatchesEqualSingleTexts holds texts embedded together to their vectors alone:
// attention and pooling must not reach across texts.
func TestBatchesEqualSingleTexts(t *testing.T) {
	e := encoder(t)
	g := readGolden(t)
	var texts []string
	for range 30 { // more pieces than one batch holds
		for _, c := range g.Single {
			texts = append(texts, c.Text)
		}
	}
	vs := e.Embed(texts)
	for i, text := range texts {
		want := g.Single[i%len(g.Single)].Vector
		for j := range want {
			if d := math.Abs(float64(vs[i][j]) - want[j]); d > 1e-4 {
				t.Fatalf("%q in a batch differs from the reference by %g", text, d)
			}
		}
	}
}

// BenchmarkEmbedMethods embeds method-sized texts in batches, as a sync does.
func BenchmarkEmbedMethods(b *testing.B) {
	e := encoder(b)
	text := "Weather forecast. Hourly and daily forecasts for any city: temperature, rain, wind and humidity for the next ten days, with alerts."
	texts := make([]string, 64)
	for i := range texts {
		texts[i] = text
	}
	for b.Loop() {
		e.Embed(texts)
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*len(texts)), "µs/text")
}
