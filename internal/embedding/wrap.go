package embedding

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"slices"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/sony/gobreaker/v2"
)

func sqrt(x float64) float64 { return math.Sqrt(x) }

// BreakerConfig tunes the breaker around a provider.
type BreakerConfig struct {
	// Failures in a row that open the breaker; 3 when zero.
	Failures uint32
	// OpenFor is how long the breaker stays open before letting one call test the
	// provider; 30s when zero.
	OpenFor time.Duration
}

// Breaker is an Embedder behind a circuit breaker: after a run of failures it fails
// fast with ErrUnavailable instead of making every search wait for a timeout.
type Breaker struct {
	next Embedder
	cb   *gobreaker.CircuitBreaker[[][]float32]
}

var _ Embedder = (*Breaker)(nil)

// WithBreaker wraps next in a breaker.
func WithBreaker(next Embedder, cfg BreakerConfig) *Breaker {
	if cfg.Failures == 0 {
		cfg.Failures = 3
	}
	if cfg.OpenFor <= 0 {
		cfg.OpenFor = 30 * time.Second
	}
	return &Breaker{next: next, cb: gobreaker.NewCircuitBreaker[[][]float32](gobreaker.Settings{
		Name:        next.Model(),
		MaxRequests: 1,
		Timeout:     cfg.OpenFor,
		ReadyToTrip: func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= cfg.Failures },
		// A caller that gave up is not the provider's failure.
		IsSuccessful: func(err error) bool { return err == nil || errors.Is(err, context.Canceled) },
	})}
}

// Model is the wrapped model's.
func (b *Breaker) Model() string { return b.next.Model() }

// Dimensions is the wrapped model's.
func (b *Breaker) Dimensions() int { return b.next.Dimensions() }

// Embed calls the wrapped model unless the breaker is open.
func (b *Breaker) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	v, err := b.cb.Execute(func() ([][]float32, error) { return b.next.Embed(ctx, texts) })
	if errors.Is(err, gobreaker.ErrOpenState) || errors.Is(err, gobreaker.ErrTooManyRequests) {
		return nil, ErrUnavailable
	}
	return v, err
}

// Open reports whether the breaker refuses calls now.
func (b *Breaker) Open() bool { return b.cb.State() == gobreaker.StateOpen }

// State is the breaker's state: "closed", "half-open" or "open".
func (b *Breaker) State() string { return b.cb.State().String() }

// Cache is an Embedder that remembers the vectors of recent texts, keyed by model and
// normalised text, so a repeated query costs no embedding. It holds each vector's
// nonzero values alone (see packed): the builtin model's lexical part is nearly all
// zeros, so that a hybrid vector, 6 KB in full, is held in about 2.5 KB, and a
// lexical one, 4 KB in full, in a few hundred bytes.
type Cache struct {
	next  Embedder
	cache *lru.Cache[string, packed]
}

var _ Embedder = (*Cache)(nil)

// WithCache wraps next in a cache of at most size vectors.
func WithCache(next Embedder, size int) *Cache {
	if size <= 0 {
		size = 10000
	}
	c, _ := lru.New[string, packed](size)
	return &Cache{next: next, cache: c}
}

// Model is the wrapped model's.
func (c *Cache) Model() string { return c.next.Model() }

// Dimensions is the wrapped model's.
func (c *Cache) Dimensions() int { return c.next.Dimensions() }

func (c *Cache) key(text string) string { return c.next.Model() + "\x00" + NormalizeQuery(text) }

// Lookup returns the cached vector of a text, if any, without embedding it.
func (c *Cache) Lookup(text string) ([]float32, bool) {
	p, ok := c.cache.Get(c.key(text))
	if !ok {
		return nil, false
	}
	return p.vector(), true
}

// Embed answers cached texts from the cache and embeds the others in one call.
func (c *Cache) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	var missing []string
	var at []int
	for i, t := range texts {
		if p, ok := c.cache.Get(c.key(t)); ok {
			out[i] = p.vector()
			continue
		}
		missing = append(missing, NormalizeQuery(t))
		at = append(at, i)
	}
	if len(missing) == 0 {
		return out, nil
	}
	vs, err := c.next.Embed(ctx, missing)
	if err != nil {
		return nil, err
	}
	for j, i := range at {
		out[i] = vs[j]
		c.cache.Add(c.key(texts[i]), pack(vs[j]))
	}
	return out, nil
}

// packed is a vector as a Cache holds it: its nonzero values one after the other in
// values (a zero is +0: -0 is kept as a value), and in runs, for each run of them, the
// zeros before it and its length, as uvarints (a byte each but for long ones). Unpacked
// it is the same values, bit for bit.
type packed struct {
	dims   int
	runs   []byte
	values []float32
}

// pack is v as a Cache holds it, sharing nothing with v.
func pack(v []float32) packed {
	var runs []byte
	n, end := 0, 0
	for i := 0; i < len(v); {
		if math.Float32bits(v[i]) == 0 {
			i++
			continue
		}
		j := i
		for j < len(v) && math.Float32bits(v[j]) != 0 {
			j++
		}
		runs = binary.AppendUvarint(runs, uint64(i-end))
		runs = binary.AppendUvarint(runs, uint64(j-i))
		n, end, i = n+j-i, j, j
	}
	p := packed{dims: len(v), runs: slices.Clip(runs), values: make([]float32, 0, n)}
	for i := 0; i < len(v); i++ {
		if math.Float32bits(v[i]) != 0 {
			p.values = append(p.values, v[i])
		}
	}
	return p
}

// vector is the vector p holds, made anew.
func (p packed) vector() []float32 {
	v := make([]float32, p.dims)
	runs, values, at := p.runs, p.values, 0
	for len(runs) > 0 {
		gap, k := binary.Uvarint(runs)
		n, l := binary.Uvarint(runs[k:])
		runs = runs[k+l:]
		at += int(gap)
		at += copy(v[at:at+int(n)], values[:n])
		values = values[n:]
	}
	return v
}

// Purge drops every cached vector.
func (c *Cache) Purge() { c.cache.Purge() }

// Unwrap returns the wrapped model.
func (c *Cache) Unwrap() Embedder { return c.next }

// Uncached is e without the query caches on top of it. Method texts are documents,
// not queries: they go to the model as written (a query's normal form would flatten
// the fields a hybrid model reads apart) and are never cached as queries.
func Uncached(e Embedder) Embedder {
	for {
		c, ok := e.(*Cache)
		if !ok {
			return e
		}
		e = c.next
	}
}

// Unwrap returns the wrapped model.
func (b *Breaker) Unwrap() Embedder { return b.next }

// Find returns the first embedder in e's chain of wrappers (those with an Unwrap
// method) that is a T.
func Find[T any](e Embedder) (T, bool) {
	for e != nil {
		if t, ok := e.(T); ok {
			return t, true
		}
		u, ok := e.(interface{ Unwrap() Embedder })
		if !ok {
			break
		}
		e = u.Unwrap()
	}
	var zero T
	return zero, false
}
