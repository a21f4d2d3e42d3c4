package search

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"time"

	"github.com/waystation/waystation/internal/embedding"
	"github.com/waystation/waystation/internal/periodic"
)

// syncBatch is how many method texts go to a model in one call.
const syncBatch = 64

// Sync embeds every enabled method whose text changed since its vector under e was
// made (or that has none) and returns how many it embedded. Vectors of unchanged text
// are kept, so a sync after an import costs only what changed.
func Sync(ctx context.Context, store EmbeddingStore, e embedding.Embedder) (int, error) {
	texts, err := store.MethodTexts(ctx, e.Model())
	if err != nil {
		return 0, err
	}
	type stale struct {
		id   int64
		text string
		hash []byte
	}
	var todo []stale
	all := make([]string, len(texts))
	for i, t := range texts {
		text := embedding.MethodText(t.Name, t.Provider, t.Description, t.Category, t.Endpoint)
		all[i] = text
		sum := sha256.Sum256([]byte(text))
		if !bytes.Equal(sum[:], t.VectorHash) {
			todo = append(todo, stale{t.MethodID, text, sum[:]})
		}
	}
	setFrequencies(e, all)
	docs := embedding.Uncached(e)
	done := 0
	for start := 0; start < len(todo); start += syncBatch {
		part := todo[start:min(start+syncBatch, len(todo))]
		in := make([]string, len(part))
		for i, t := range part {
			in[i] = t.text
		}
		vecs, err := docs.Embed(ctx, in)
		if err != nil {
			return done, fmt.Errorf("search: embed methods under %s: %w", e.Model(), err)
		}
		es := make([]Embedding, len(part))
		for i, t := range part {
			es[i] = Embedding{MethodID: t.id, TextHash: t.hash, Vector: vecs[i]}
		}
		if err := store.SaveEmbeddings(ctx, e.Model(), es); err != nil {
			return done, err
		}
		done += len(part)
	}
	return done, nil
}

// setFrequencies gives a model that weighs query words by the catalog's frequencies
// (the hybrid) those of texts; when they changed, the query vectors cached under it
// are dropped, since they were weighed by the old ones.
func setFrequencies(e embedding.Embedder, texts []string) {
	h, ok := embedding.Find[interface {
		SetFrequencies(*embedding.Frequencies) bool
	}](e)
	if !ok || !h.SetFrequencies(embedding.NewFrequencies(texts)) {
		return
	}
	if c, ok := embedding.Find[interface{ Purge() }](e); ok {
		c.Purge()
	}
}

// Syncer keeps the methods' vectors in step with the catalog under every model.
type Syncer struct {
	Store  EmbeddingStore
	Models []embedding.Embedder
	// Every is the time between syncs.
	Every time.Duration
	Log   *slog.Logger
}

// Once syncs every model now; a model that fails is logged and retried next time.
func (s *Syncer) Once(ctx context.Context) {
	for _, e := range s.Models {
		n, err := Sync(ctx, s.Store, e)
		if err != nil {
			if ctx.Err() == nil {
				s.Log.Warn("embedding methods failed; retrying at the next sync", "model", e.Model(), "err", err)
			}
		} else if n > 0 {
			s.Log.Info("methods embedded", "model", e.Model(), "count", n)
		}
	}
}

// Run syncs every s.Every until ctx ends; the first sync is one interval away, since
// the server syncs once before it serves.
func (s *Syncer) Run(ctx context.Context) { periodic.Run(ctx, s.Every, s.Every, s.Once) }
