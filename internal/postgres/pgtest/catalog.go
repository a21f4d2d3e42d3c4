package pgtest

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/waystation/waystation/internal/catalog"
	"github.com/waystation/waystation/internal/postgres"
)

// RealCatalogPath is where the real catalog snapshot (x402 Bazaar listings) sits,
// relative to the repository root: beside the repository, never inside it.
const RealCatalogPath = "../shared/data/bazaar-2026-08.jsonl"

// RealCatalog parses the real catalog snapshot. Without the file the test is skipped,
// except under CI where that is a failure.
func RealCatalog(t testing.TB) catalog.Catalog {
	t.Helper()
	f, err := os.Open(filepath.Join(RepoRoot(t), RealCatalogPath))
	if os.IsNotExist(err) {
		if os.Getenv("CI") != "" {
			t.Fatalf("the real catalog snapshot is missing: %v", err)
		}
		t.Skip("the real catalog snapshot is not beside the repository")
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cat, skipped, err := catalog.ParseBazaar(f)
	if err != nil || len(skipped) != 0 {
		t.Fatalf("parse the real catalog: %v, skipped %v", err, skipped)
	}
	return cat
}

// LoadRealCatalog returns a store on a fresh database with the real catalog imported.
func LoadRealCatalog(t testing.TB) (*postgres.Store, catalog.Catalog) {
	t.Helper()
	cat := RealCatalog(t)
	store := New(t)
	if _, err := store.LoadCatalog(context.Background(), cat, time.Now()); err != nil {
		t.Fatal(err)
	}
	return store, cat
}

// LoadDemo returns a store on a fresh database with the demo catalog loaded as of now,
// and the catalog.
func LoadDemo(t testing.TB, now time.Time) (*postgres.Store, catalog.Catalog) {
	t.Helper()
	cat, err := catalog.Demo()
	if err != nil {
		t.Fatal(err)
	}
	store := New(t)
	if _, err := store.LoadCatalog(context.Background(), cat, now); err != nil {
		t.Fatal(err)
	}
	return store, cat
}

// RepoRoot finds the module root from the test's working directory, which the files
// kept beside the repository are found from.
func RepoRoot(t testing.TB) string {
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("pgtest: no go.mod above the working directory")
		}
		dir = parent
	}
}
