package search

import (
	"github.com/waystation/waystation/internal/directory"
	"github.com/waystation/waystation/internal/embedding"
)

// exactIndex maps the normalised slugs, method names and provider names of one
// snapshot to list positions, built once per snapshot.
type exactIndex struct {
	snap     *directory.Snapshot
	slug     map[string][]int
	method   map[string][]int
	provider map[string][]int
}

func (e *Engine) exactIndex(snap *directory.Snapshot) *exactIndex {
	if x := e.exact.Load(); x != nil && x.snap == snap {
		return x
	}
	x := &exactIndex{snap: snap, slug: map[string][]int{}, method: map[string][]int{}, provider: map[string][]int{}}
	for i, m := range snap.Methods() {
		x.slug[embedding.NormalizeQuery(m.Slug)] = append(x.slug[embedding.NormalizeQuery(m.Slug)], i)
		x.method[embedding.NormalizeQuery(m.Name)] = append(x.method[embedding.NormalizeQuery(m.Name)], i)
		x.provider[embedding.NormalizeQuery(m.Provider)] = append(x.provider[embedding.NormalizeQuery(m.Provider)], i)
	}
	e.exact.Store(x)
	return x
}

// lookup returns the kind of match and the positions, in list order; a slug wins
// over a method name, which wins over a provider name.
func (x *exactIndex) lookup(norm string) (string, []int) {
	if p, ok := x.slug[norm]; ok {
		return MatchSlug, p
	}
	if p, ok := x.method[norm]; ok {
		return MatchMethod, p
	}
	if p, ok := x.provider[norm]; ok {
		return MatchProvider, p
	}
	return "", nil
}
