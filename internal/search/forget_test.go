package search_test

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"weak"

	"github.com/waystation/waystation/internal/directory"
	"github.com/waystation/waystation/internal/search"
)

// TestEngineLetsGoOfASnapshotItSearched: once the directory serves another snapshot,
// nothing the engine built for the one before (its exact names, its text index, the
// vectors held in memory for it) keeps that snapshot alive, so that the collection
// after a swap frees it without waiting for the next search (at a hundred thousand
// methods a snapshot is about 175 MB).
func TestEngineLetsGoOfASnapshotItSearched(t *testing.T) {
	ctx := context.Background()
	snap, vs := vectorCatalog(t)
	var asked atomic.Int64
	e, err := search.NewEngine(search.Config{MemoryVectors: 100}, vectorStore{vs: vs, asked: &asked}, builtinModel(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.LoadVectors(ctx, snap); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"weather-now", "Token price", "forecast of the weather in paris"} {
		if _, err := e.Search(ctx, "", snap, q, directory.Filter{}); err != nil {
			t.Fatal(err)
		}
	}
	old := weak.Make(snap)
	snap = nil
	for range 3 {
		runtime.GC()
	}
	if old.Value() != nil {
		t.Error("the engine keeps the snapshot it searched alive after the directory let go of it")
	}
	runtime.KeepAlive(e)
}
