package search

import (
	"context"
	"strings"
	"testing"

	"github.com/waystation/waystation/internal/embedding"
)

// textStore is an EmbeddingStore of one model in memory.
type textStore struct {
	texts []MethodText
	saved map[int64]Embedding
}

func (s *textStore) MethodTexts(context.Context, string) ([]MethodText, error) {
	out := make([]MethodText, len(s.texts))
	for i, t := range s.texts {
		out[i] = t
		out[i].VectorHash = s.saved[t.MethodID].TextHash
	}
	return out, nil
}

func (s *textStore) SaveEmbeddings(_ context.Context, _ string, es []Embedding) error {
	for _, e := range es {
		s.saved[e.MethodID] = e
	}
	return nil
}

// seenTexts is a model that remembers the texts it was asked to embed.
type seenTexts struct{ texts []string }

func (*seenTexts) Model() string   { return "test:seen" }
func (*seenTexts) Dimensions() int { return 2 }
func (s *seenTexts) Embed(_ context.Context, texts []string) ([][]float32, error) {
	s.texts = append(s.texts, texts...)
	out := make([][]float32, len(texts))
	for i := range texts {
		out[i] = []float32{1, 0}
	}
	return out, nil
}

// A method's text reaches the model as written, fields apart and case kept, though
// the server's models sit behind the query cache, which normalises what it keys; and it
// is not kept as a query.
func TestSyncEmbedsMethodTextsAsWrittenPastTheQueryCache(t *testing.T) {
	store := &textStore{saved: map[int64]Embedding{}, texts: []MethodText{
		{MethodID: 1, Name: "Latest Block", Provider: "OneSource", Description: "Returns the  latest block.", Category: "blockchain", Endpoint: "https://api.onesource.io/v1/block"},
	}}
	model := &seenTexts{}
	cached := embedding.WithCache(model, 10)
	n, err := Sync(context.Background(), store, cached)
	if err != nil || n != 1 {
		t.Fatalf("Sync = %d, %v", n, err)
	}
	want := embedding.MethodText("Latest Block", "OneSource", "Returns the  latest block.", "blockchain", "https://api.onesource.io/v1/block")
	if len(model.texts) != 1 || model.texts[0] != want {
		t.Fatalf("the model was asked to embed %q, want %q", model.texts, want)
	}
	if _, ok := embedding.MethodFields(model.texts[0]); !ok {
		t.Errorf("the text the model got has lost its fields: %q", model.texts[0])
	}
	if _, ok := cached.Lookup(want); ok {
		t.Errorf("a method's text was cached as a query")
	}
	if _, ok := cached.Lookup(strings.ToLower(want)); ok {
		t.Errorf("a method's normalised text was cached as a query")
	}
	// Nothing changed: nothing is embedded again.
	if n, err := Sync(context.Background(), store, cached); err != nil || n != 0 {
		t.Errorf("second Sync = %d, %v; want 0", n, err)
	}
}
