package postgres_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waystation/waystation/internal/catalog"
	"github.com/waystation/waystation/internal/embedding"
	"github.com/waystation/waystation/internal/postgres/pgtest"
	"github.com/waystation/waystation/internal/search"
)

func TestEmbeddingsFollowMethodText(t *testing.T) {
	ctx := context.Background()
	store := pgtest.New(t)
	cat, _ := catalog.Demo()
	if _, err := store.LoadCatalog(ctx, cat, time.Now()); err != nil {
		t.Fatal(err)
	}
	m := search.ModelRecord{ID: embedding.BuiltinModel, Dimensions: embedding.BuiltinDimensions, Floor: 0.2, Margin: 0.1}
	if _, err := store.RegisterModel(ctx, m); err != nil {
		t.Fatal(err)
	}
	// Registering again keeps the stored band; other dimensions are refused.
	if got, err := store.RegisterModel(ctx, search.ModelRecord{ID: m.ID, Dimensions: m.Dimensions, Floor: 0.9, Margin: 0.9}); err != nil || got.Floor != float64(float32(0.2)) {
		t.Fatalf("re-register: %+v %v", got, err)
	}
	if _, err := store.RegisterModel(ctx, search.ModelRecord{ID: m.ID, Dimensions: 8}); err == nil {
		t.Fatal("registering a model with other dimensions must fail")
	}
	n, err := search.Sync(ctx, store, embedding.Lexhash{})
	if err != nil || n < 50 {
		t.Fatalf("first sync embedded %d: %v", n, err)
	}
	if n, _ := search.Sync(ctx, store, embedding.Lexhash{}); n != 0 {
		t.Fatalf("a sync without changes embedded %d", n)
	}
	cat.Providers[0].Methods[0].Description += " Now with hourly updates."
	if _, err := store.LoadCatalog(ctx, cat, time.Now()); err != nil {
		t.Fatal(err)
	}
	if n, _ := search.Sync(ctx, store, embedding.Lexhash{}); n != 1 {
		t.Fatalf("a changed description re-embedded %d methods, want 1", n)
	}
	slug := cat.Providers[0].Methods[0].Slug
	v := embedding.Lexhash{}.Vector(cat.Providers[0].Methods[0].Name + " " + cat.Providers[0].Methods[0].Description)
	near, err := store.Nearest(ctx, m, v, 3, nil)
	if err != nil || len(near) == 0 || near[0].Slug != slug {
		t.Fatalf("nearest: %+v %v", near, err)
	}
	only, err := store.Nearest(ctx, m, v, 3, []string{cat.Providers[1].Methods[0].Slug})
	if err != nil || len(only) != 1 || only[0].Slug != cat.Providers[1].Methods[0].Slug {
		t.Fatalf("nearest among one: %+v %v", only, err)
	}
}

func TestAllowanceIsSharedAndAtomic(t *testing.T) {
	ctx := context.Background()
	store := pgtest.New(t)
	now := time.Date(2026, 11, 21, 23, 59, 0, 0, time.UTC)
	var wg sync.WaitGroup
	var mu sync.Mutex
	granted := 0
	for range 20 {
		wg.Go(func() {
			ok, err := store.UseAllowance(ctx, now, 7)
			if err != nil {
				t.Error(err)
			}
			if ok {
				mu.Lock()
				granted++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if granted != 7 {
		t.Fatalf("%d of 20 concurrent uses granted, want 7", granted)
	}
	if ok, _ := store.UseAllowance(ctx, now.Add(2*time.Minute), 7); !ok {
		t.Fatal("a new UTC day must start a new allowance")
	}
}

// TestRegisteringReplacesAnIndexOfAnOlderRecipe: a model's index of an older recipe
// (vector, default parameters) gives way to the current one at registration.
func TestRegisteringReplacesAnIndexOfAnOlderRecipe(t *testing.T) {
	ctx := context.Background()
	store := pgtest.New(t)
	m := search.ModelRecord{ID: embedding.BuiltinModel, Dimensions: embedding.BuiltinDimensions, Floor: 0.2, Margin: 0.1}
	if _, err := store.Pool().Exec(ctx, `INSERT INTO embedding_models (id, dimensions, similarity_floor, similarity_margin) VALUES ($1, $2, 0.2, 0.1)`, m.ID, m.Dimensions); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Pool().Exec(ctx, `CREATE INDEX method_embeddings_hnsw_0123456789ab ON method_embeddings
		USING hnsw ((embedding::vector(1024)) vector_cosine_ops) WHERE model_id = '`+m.ID+`'`); err != nil {
		t.Fatal(err)
	}
	other := search.ModelRecord{ID: "test:other", Dimensions: 8}
	if _, err := store.RegisterModel(ctx, other); err != nil {
		t.Fatal(err)
	}
	if _, err := store.RegisterModel(ctx, m); err != nil {
		t.Fatal(err)
	}
	rows, _ := store.Pool().Query(ctx, `SELECT indexdef FROM pg_indexes WHERE indexname LIKE 'method_embeddings_hnsw_%' ORDER BY indexdef`)
	var defs []string
	for rows.Next() {
		var d string
		rows.Scan(&d)
		defs = append(defs, d)
	}
	if len(defs) != 2 || !strings.Contains(defs[0], "halfvec(1024)") || !strings.Contains(defs[0], "m='24'") || !strings.Contains(defs[1], "test:other") {
		t.Fatalf("indexes: %q", defs)
	}
}
