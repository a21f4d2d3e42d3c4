package eval

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/waystation/waystation/internal/catalog"
	"github.com/waystation/waystation/internal/postgres/pgtest"
	"github.com/waystation/waystation/internal/search"
)

// TestOwnQueriesFile checks the own labelled queries (NewSetPath) without a database:
// every line parses, the ids run n001, n002, … with no gap or repeat, no query is
// written twice, every kind is one the development set uses, and every label names a
// method of the real catalog or the demo, the catalog make run serves.
func TestOwnQueriesFile(t *testing.T) {
	f, err := os.Open(NewSetPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	qs, err := search.ReadQueries(f)
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	demo, err := catalog.Demo()
	if err != nil {
		t.Fatal(err)
	}
	for _, cat := range []catalog.Catalog{pgtest.RealCatalog(t), demo} {
		for _, p := range cat.Providers {
			for _, m := range p.Methods {
				known[search.EndpointKey(m.Endpoint.URL)] = true
			}
		}
	}
	kinds := map[string]bool{"paraphrase": true, "task": true, "keyword": true, search.KindOffTopic: true}
	texts := map[string]string{}
	for i, q := range qs {
		if want := fmt.Sprintf("n%03d", i+1); q.ID != want {
			t.Fatalf("query %d has id %s, want %s: ids run n001, n002, … with no gap or repeat", i+1, q.ID, want)
		}
		if !kinds[q.Kind] {
			t.Errorf("%s: kind %q", q.ID, q.Kind)
		}
		text := strings.ToLower(strings.Join(strings.Fields(q.Text), " "))
		if other, ok := texts[text]; ok {
			t.Errorf("%s repeats %s: %q", q.ID, other, q.Text)
		}
		texts[text] = q.ID
		for _, u := range q.Relevant {
			if !known[search.EndpointKey(u)] {
				t.Errorf("%s %q: label %s names no method of the catalog", q.ID, q.Text, u)
			}
		}
	}
	if !upTo(lastOlderQuery, lastFittedQuery) || !upTo(lastFittedQuery, qs[len(qs)-1].ID) {
		t.Errorf("the own set's origins are out of order: older to %s, fitted to %s, last %s", lastOlderQuery, lastFittedQuery, qs[len(qs)-1].ID)
	}
}
