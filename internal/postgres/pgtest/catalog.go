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

// EventLogPath is where the Bazaar's event log (listings without offers, and
// delistings) sits, relative to the repository root, beside the repository.
const EventLogPath = "../shared/data/bazaar-events-2026-09.jsonl"

// RealCatalog parses the real catalog snapshot. Without the file the test is skipped,
// except under CI where that is a failure.
func RealCatalog(t testing.TB) catalog.Catalog {
	t.Helper()
	return parseReal(t, RealCatalogPath)
}

// EventLog parses the Bazaar's event log, as RealCatalog parses the snapshot.
func EventLog(t testing.TB) catalog.Catalog {
	t.Helper()
	return parseReal(t, EventLogPath)
}

func parseReal(t testing.TB, path string) catalog.Catalog {
	t.Helper()
	f, err := os.Open(filepath.Join(RepoRoot(t), path))
	if os.IsNotExist(err) {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is missing: %v", path, err)
		}
		t.Skipf("%s is not beside the repository", path)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cat, skipped, err := catalog.ParseBazaar(f)
	if err != nil || len(skipped) != 0 {
		t.Fatalf("parse %s: %v, skipped %v", path, err, skipped)
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
