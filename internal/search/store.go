package search

import (
	"context"
	"time"
)

// ModelRecord is an embedding model as registered in the store: its vector size and
// its similarity band.
type ModelRecord struct {
	ID         string
	Dimensions int
	// Floor is the least similarity a search result may have; Margin is how far below
	// the best result's similarity the others may fall.
	Floor  float64
	Margin float64
	// Calibration, when the model has one (make calibrate, or the builtin hybrid's
	// default), is the band instead of Floor and Margin: a learned model of whether
	// the catalog answers a query, over the query's Evidence.
	Calibration *Calibration
}

// Neighbour is a method near a query vector.
type Neighbour struct {
	Slug       string
	Similarity float64
	// Vector is the method's vector, as Nearest returns it; the engine reads what it
	// needs from it and drops it before caching the neighbours.
	Vector []float32
	// Parts tells that Semantic and Lexical hold the similarity's two parts, under a
	// model made of two (the builtin hybrid).
	Parts             bool
	Semantic, Lexical float64
	// Score is what a ranking orders it by, when one reranked it (Rerank): its
	// similarity and the weight of the query's concepts it holds; 0 when none did.
	Score float64
}

// score is what n is ranked by: its Score when a ranking set one, else its
// similarity.
func (n Neighbour) score() float64 {
	if n.Score != 0 {
		return n.Score
	}
	return n.Similarity
}

// Store is the vector store and the shared allowance counter.
type Store interface {
	// Nearest returns the k enabled methods nearest to v under model m, most similar
	// first; with only set, among those slugs alone.
	Nearest(ctx context.Context, m ModelRecord, v []float32, k int, only []string) ([]Neighbour, error)
	// UseAllowance takes one novel embedding from the allowance of now's UTC day,
	// shared by every replica, and, when caller is named and share positive, from the
	// at most share of it that caller may spend that day; it reports whether both had
	// one to take (and takes from neither when one has not).
	UseAllowance(ctx context.Context, now time.Time, limit int, caller string, share int) (bool, error)
}

// ModelStore registers models.
type ModelStore interface {
	// RegisterModel records m with its band if it is new and makes its index ready;
	// a model already registered keeps the band it has, so an operator's tuning
	// survives restarts.
	RegisterModel(ctx context.Context, m ModelRecord) (ModelRecord, error)
}

// MethodText is what an enabled method is embedded from, with the hash of the text
// its vector under some model was last made from (nil when it has none).
type MethodText struct {
	MethodID    int64
	Name        string
	Provider    string
	Description string
	Category    string
	Endpoint    string
	VectorHash  []byte
}

// Embedding is a method's vector under a model, with the hash of its text.
type Embedding struct {
	MethodID int64
	TextHash []byte
	Vector   []float32
}

// EmbeddingStore keeps the methods' vectors.
type EmbeddingStore interface {
	// MethodTexts lists every enabled method with the text hash of its vector under
	// model.
	MethodTexts(ctx context.Context, model string) ([]MethodText, error)
	// SaveEmbeddings stores vectors under model, replacing older ones.
	SaveEmbeddings(ctx context.Context, model string, es []Embedding) error
}
