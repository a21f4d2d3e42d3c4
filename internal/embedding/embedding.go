// Package embedding turns text into vectors for search: the Embedder interface, the
// builtin offline model, an OpenAI-compatible client, and the breaker and cache that
// wrap a model so that a slow or failing provider never takes search down with it.
package embedding

import (
	"context"
	"errors"
	"strings"
	"unicode"
)

// Embedder embeds texts with one model. Vectors have Dimensions() elements and are
// L2-normalised, so cosine similarity is their dot product.
type Embedder interface {
	// Model names the model; vectors of different models are never compared.
	Model() string
	Dimensions() int
	// Embed returns one vector per text, in order.
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// ErrUnavailable reports that a model cannot answer now (its breaker is open).
var ErrUnavailable = errors.New("embedding: model unavailable")

// NormalizeQuery is the text a query is cached and matched by: lower case, with every
// run of white space collapsed to one space and the ends trimmed.
func NormalizeQuery(q string) string {
	var b strings.Builder
	b.Grow(len(q))
	space := false
	for _, r := range q {
		if unicode.IsSpace(r) {
			space = b.Len() > 0
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}
