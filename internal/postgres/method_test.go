package postgres_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/waystation/waystation/internal/catalog"
	"github.com/waystation/waystation/internal/postgres/pgtest"
)

func TestImportLoadsEveryBazaarLineAndReimportsInPlace(t *testing.T) {
	ctx := context.Background()
	store := pgtest.New(t)
	cat := pgtest.RealCatalog(t)
	now := time.Now()
	res, err := store.LoadCatalog(ctx, cat, now)
	if err != nil {
		t.Fatal(err)
	}
	if res.Inserted != 639 || res.Updated != 0 {
		t.Fatalf("first import: %+v", res)
	}
	var methods, unknownPrice int
	store.Pool().QueryRow(ctx, `SELECT count(*) FROM provider_methods`).Scan(&methods)
	store.Pool().QueryRow(ctx, `SELECT count(*) FROM provider_methods
		WHERE offers = '[]' OR EXISTS (SELECT 1 FROM jsonb_array_elements(offers) o WHERE o->'amount' = 'null')`).Scan(&unknownPrice)
	if methods != 639 || unknownPrice < 33+16 {
		t.Fatalf("%d methods, %d with unknown price", methods, unknownPrice)
	}

	// The same file again changes nothing; a changed description updates in place.
	res, err = store.LoadCatalog(ctx, cat, now)
	if err != nil || res.Unchanged != 639 {
		t.Fatalf("second import: %+v %v", res, err)
	}
	var slugBefore string
	store.Pool().QueryRow(ctx, `SELECT slug FROM provider_methods WHERE source_key = $1`, cat.Providers[0].Methods[0].SourceKey).Scan(&slugBefore)
	cat.Providers[0].Methods[0].Description += " (revised)"
	res, err = store.LoadCatalog(ctx, cat, now)
	if err != nil || res.Updated != 1 || res.Inserted != 0 {
		t.Fatalf("third import: %+v %v", res, err)
	}
	var slugAfter, desc string
	store.Pool().QueryRow(ctx, `SELECT slug, description FROM provider_methods WHERE source_key = $1`,
		cat.Providers[0].Methods[0].SourceKey).Scan(&slugAfter, &desc)
	store.Pool().QueryRow(ctx, `SELECT count(*) FROM provider_methods`).Scan(&methods)
	if slugAfter != slugBefore || !strings.HasSuffix(desc, "(revised)") || methods != 639 {
		t.Fatalf("update in place: slug %q -> %q, %d methods", slugBefore, slugAfter, methods)
	}
}

func TestDemoLoadsWithMerchantFacts(t *testing.T) {
	ctx := context.Background()
	store := pgtest.New(t)
	empty, err := store.Empty(ctx)
	if err != nil || !empty {
		t.Fatalf("fresh database empty = %v, %v", empty, err)
	}
	cat, err := catalog.Demo()
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if _, err := store.LoadCatalog(ctx, cat, now); err != nil {
		t.Fatal(err)
	}
	rec, err := store.DirectoryRecords(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Methods) < 50 || len(rec.Probes) == 0 || len(rec.Overrides) != 1 || len(rec.Payments) == 0 {
		t.Fatalf("records: %d methods, %d probed, %d overrides, %d paid", len(rec.Methods), len(rec.Probes), len(rec.Overrides), len(rec.Payments))
	}
	for id, ps := range rec.Probes {
		for i := 1; i < len(ps); i++ {
			if ps[i].ProbedAt.After(ps[i-1].ProbedAt) {
				t.Fatalf("method %d: probes not newest first", id)
			}
		}
	}
	if empty, _ := store.Empty(ctx); empty {
		t.Fatal("loaded catalog reads as empty")
	}
}
