package embedding_test

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"
	"runtime"
	"testing"

	"github.com/waystation/waystation/internal/embedding"
)

// shaped embeds texts as the builtin hybrid's vectors are shaped: a dense part of
// sentence.Dimensions values, then the lexical model's vector, nearly all zeros. It
// counts its calls; extra, when set, gives a text a vector of its own.
type shaped struct {
	calls int
	extra map[string][]float32
}

func (*shaped) Model() string   { return "test:shaped" }
func (*shaped) Dimensions() int { return embedding.HybridDimensions }

func (s *shaped) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	s.calls++
	lex, err := embedding.Lexhash{}.Embed(ctx, texts)
	if err != nil {
		return nil, err
	}
	out := make([][]float32, len(texts))
	for i, t := range texts {
		if v, ok := s.extra[t]; ok {
			out[i] = append([]float32(nil), v...)
			continue
		}
		h := fnv.New64a()
		h.Write([]byte(t))
		x := h.Sum64()
		dense := embedding.HybridDimensions - embedding.BuiltinDimensions
		v := make([]float32, 0, embedding.HybridDimensions)
		for range dense {
			x = x*6364136223846793005 + 1442695040888963407
			v = append(v, float32(int32(x>>33))/(1<<31))
		}
		out[i] = append(v, lex[i]...)
	}
	return out, nil
}

// The query cache holds up to ten thousand vectors, for as long as the server runs: a
// vector of the hybrid's is 1,536 values (6 KB), of which the lexical model's 1,024
// are nearly all zeros, and the lexical builtin's alone is 1,024 (4 KB). The cache
// holds the values that are not zeros: of the hybrid's under two thirds of the
// vector whole, of the lexical model's under half, its key and entry included.
func TestCacheHoldsAVectorsNonzeroValues(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		model embedding.Embedder
		most  float64 // of the vector whole
	}{{&shaped{}, 2.0 / 3}, {embedding.Lexhash{}, 1.0 / 2}} {
		c := embedding.WithCache(tc.model, 10000)
		const n = 2000
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for i := range n {
			if _, err := c.Embed(ctx, []string{fmt.Sprintf("weather forecast for city %d in celsius", i)}); err != nil {
				t.Fatal(err)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		per := (int64(after.HeapAlloc) - int64(before.HeapAlloc)) / n
		full := int64(4 * tc.model.Dimensions())
		if float64(per) > tc.most*float64(full) {
			t.Errorf("%s: the cache holds %d bytes a query vector, where the vector whole is %d", tc.model.Model(), per, full)
		}
		runtime.KeepAlive(c)
		t.Logf("%s: %d bytes a query vector cached (%d whole)", tc.model.Model(), per, full)
	}
}

// What the cache answers is what the model made, bit for bit: zeros where it made
// zeros, -0, NaN and runs at either end kept; and a text cached costs no embedding.
func TestCacheAnswersTheVectorItWasGiven(t *testing.T) {
	ctx := context.Background()
	negZero := float32(math.Copysign(0, -1))
	odd := make([]float32, embedding.HybridDimensions)
	odd[0], odd[1], odd[7], odd[8], odd[100] = 1, -2, negZero, float32(math.NaN()), 3
	odd[len(odd)-1] = 5
	m := &shaped{extra: map[string][]float32{"odd": odd, "zero": make([]float32, embedding.HybridDimensions)}}
	c := embedding.WithCache(m, 100)
	for _, text := range []string{"odd", "zero", "ethereum block height"} {
		first, err := c.Embed(ctx, []string{text})
		if err != nil {
			t.Fatal(err)
		}
		calls := m.calls
		again, err := c.Embed(ctx, []string{text})
		if err != nil {
			t.Fatal(err)
		}
		looked, ok := c.Lookup(text)
		if m.calls != calls || !ok {
			t.Fatalf("%q: embedded again (%d calls, then %d), looked up %v", text, calls, m.calls, ok)
		}
		for _, got := range [][]float32{again[0], looked} {
			if len(got) != len(first[0]) {
				t.Fatalf("%q: %d values cached, %d made", text, len(got), len(first[0]))
			}
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(first[0][i]) {
					t.Fatalf("%q: value %d is %v cached, %v made", text, i, got[i], first[0][i])
				}
			}
		}
		// What a caller does with an answer is not the cache's.
		again[0][0] = 42
		if v, _ := c.Lookup(text); math.Float32bits(v[0]) != math.Float32bits(first[0][0]) {
			t.Fatalf("%q: a caller's write reached the cache", text)
		}
	}
}
