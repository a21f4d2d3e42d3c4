package sentence

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"runtime"
	"slices"
	"sync"
	"testing"

	"golang.org/x/sys/cpu"
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

// BenchmarkVector embeds a short query, a sentence-long one (as the development set's
// tasks are) and a method-sized text.
func BenchmarkVector(b *testing.B) {
	e := encoder(b)
	for _, c := range []struct{ name, text string }{
		{"query", "how much is one bitcoin in dollars right now"},
		{"task", "I need to find out what the weather will be like in Paris tomorrow afternoon"},
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
		bw := newWeight(w, k, m)
		for b.Loop() {
			matmulAdd(c, a, &bw, n)
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
		bw := newWeight(w, k, m)
		matmulAdd(c1, a, &bw, n)
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

// BenchmarkEmbedPhrasings embeds four short phrasings of a query in one call, as
// search embeds the phrasings an agent sends beside its query.
func BenchmarkEmbedPhrasings(b *testing.B) {
	e := encoder(b)
	texts := []string{"weather forecast for a city", "city weather api", "find current weather in a city", "weather lookup"}
	for b.Loop() {
		e.Embed(texts)
	}
}

// vectorsSum is the SHA-256 of the bits of the vectors TestVectorsBitForBit makes, as
// the encoder computed them on amd64 with AVX2 and FMA when the catalog's stored
// vectors were embedded. A change to the arithmetic that moves any bit changes it:
// then every stored method vector must be embedded again (a new model id).
const vectorsSum = "26148e2c29d4ccb6e501e620f6baab8e1274327841b52d1b04c3c52edaab1778"

// TestVectorsBitForBit holds the encoder to the exact vectors it made before: the
// golden texts alone, and all of them together in batches of several sizes, which
// take the product kernels through every row count they treat apart.
func TestVectorsBitForBit(t *testing.T) {
	if runtime.GOARCH != "amd64" || !cpu.X86.HasAVX2 || !cpu.X86.HasFMA {
		t.Skip("the sum is of the vectors the AVX2 and FMA kernels make")
	}
	e := encoder(t)
	g := readGolden(t)
	h := sha256.New()
	write := func(v []float32) {
		for _, x := range v {
			binary.Write(h, binary.LittleEndian, math.Float32bits(x))
		}
	}
	var texts []string
	for _, c := range g.Single {
		texts = append(texts, c.Text)
		write(e.Vector(c.Text))
	}
	for _, n := range []int{2, 5, 14, 60} {
		var batch []string
		for i := range n {
			batch = append(batch, texts[(i*5)%len(texts)])
		}
		for _, v := range e.Embed(batch) {
			write(v)
		}
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != vectorsSum {
		t.Errorf("the vectors' sum is %s, not %s: the encoder's arithmetic changed", got, vectorsSum)
	}
}

// A server answering many novel queries at once embeds them on its processors, which
// no more at once would finish sooner: it holds the working memory of as many
// queries as it has processors, not of every query in flight (sixty-four at once
// under make bench's load, half a megabyte each).
func TestQueriesAtOnceHoldTheWorkingMemoryOfTheProcessorsOnly(t *testing.T) {
	e, err := Load(modelDir(t))
	if err != nil {
		t.Fatal(err)
	}
	want := e.Vector("flight prices from city 1 to 2")
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Go(func() {
			<-start
			for j := range 3 {
				v := e.Vector(fmt.Sprintf("flight prices from city %d to %d", i, j))
				if i == 1 && j == 2 && !slices.Equal(v, want) {
					t.Errorf("a query embedded among others: not the vector it has alone")
				}
			}
		})
	}
	close(start)
	wg.Wait()
	if most, procs := e.mostInUse.Load(), runtime.GOMAXPROCS(0); most > int64(procs) {
		t.Fatalf("64 queries at once held up to %d working memories, for %d processors", most, procs)
	}
}
