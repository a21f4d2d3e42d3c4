package pgtest_test

import (
	"context"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/waystation/waystation/internal/postgres"
	"github.com/waystation/waystation/internal/postgres/pgtest"
)

// TestGrowingAGrownCatalogAddsOnlyWhatItLacks grows the real catalog in steps (a few
// variants, many more, as many again, fewer) and holds it to the catalog grown once
// to the most asked: the same methods, in the same order. No real method reads as a
// variant made before: each step leaves exactly the methods it asked for.
func TestGrowingAGrownCatalogAddsOnlyWhatItLacks(t *testing.T) {
	ctx := context.Background()
	stepped, cat := pgtest.LoadRealCatalog(t)
	real := 0
	for _, p := range cat.Providers {
		real += len(p.Methods)
	}
	most := 0
	for _, grow := range []int{7, 300, 300, 40} {
		if err := pgtest.GrowCatalog(ctx, stepped, real+grow); err != nil {
			t.Fatal(err)
		}
		most = max(most, grow)
		if got := len(methods(t, stepped)); got != real+most {
			t.Fatalf("grown to %d methods: it holds %d, want %d", real+grow, got, real+most)
		}
	}
	once, _ := pgtest.LoadRealCatalog(t)
	if err := pgtest.GrowCatalog(ctx, once, real+300); err != nil {
		t.Fatal(err)
	}
	if a, b := methods(t, stepped), methods(t, once); !slices.Equal(a, b) {
		t.Errorf("grown in steps, %d methods; grown once, %d, not the same", len(a), len(b))
	}
}

// method is what a catalog's method is, apart from its row's id and times.
type method struct {
	Provider, Slug, Name, Description, Category, Kind, Hostname, EndpointURL string
}

// methods reads the catalog of store in the order of its rows.
func methods(t *testing.T, store *postgres.Store) []method {
	t.Helper()
	rows, _ := store.Pool().Query(context.Background(), `
		SELECT p.name AS provider, m.slug, m.name, m.description, m.category, m.kind, m.hostname, m.endpoint_url
		FROM provider_methods m JOIN providers p ON p.id = m.provider_id ORDER BY m.id`)
	ms, err := pgx.CollectRows(rows, pgx.RowToStructByName[method])
	if err != nil {
		t.Fatal(err)
	}
	return ms
}
