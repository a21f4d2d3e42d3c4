package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/waystation/waystation/internal/postgres"
	"github.com/waystation/waystation/internal/postgres/pgtest"
)

// fakeBazaar is a discovery endpoint on loopback: its listing, paged by limit and
// offset, and one offset it fails on when asked to.
type fakeBazaar struct {
	mu     sync.Mutex
	items  []string
	failAt int
	pages  int
}

func (f *fakeBazaar) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pages++
	if r.Header.Get("Authorization") != "" || r.Header.Get("Cookie") != "" {
		http.Error(w, "credentials sent", http.StatusBadRequest)
		return
	}
	limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
	offset, _ := strconv.Atoi(r.URL.Query().Get("offset"))
	if offset == f.failAt {
		http.Error(w, "try later", http.StatusServiceUnavailable)
		return
	}
	end := min(offset+limit, len(f.items))
	fmt.Fprintf(w, `{"x402Version":2,"items":[%s],"pagination":{"limit":%d,"offset":%d,"total":%d}}`,
		strings.Join(f.items[min(offset, end):end], ","), limit, offset, len(f.items))
}

func bazaarItem(i int) string {
	return fmt.Sprintf(`{"resource":"https://seller%d.example/v1/report","type":"http","x402Version":2,`+
		`"description":"Report number %d","serviceName":"Seller %d","tags":["weather"],`+
		`"quality":{"l30DaysTotalCalls":%d,"l30DaysUniquePayers":2},"lastUpdated":"2026-08-01T00:00:00Z",`+
		`"accepts":[{"scheme":"exact","network":"eip155:8453","amount":"1000","asset":"0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913","payTo":"0x1"}],`+
		`"extensions":{"bazaar":{"info":{"input":{"type":"http","method":"GET","queryParams":{"city":"Oslo"}},"output":{"type":"json","example":{"ok":true}}}}}}`, i, i, i, 10*i)
}

// TestImportSyncsFromADiscoveryEndpoint runs the import command against a discovery
// endpoint that pages: a complete sync loads the listing, a later complete one
// disables what vanished from it (and never a demo method), and one whose page fails
// loads what it read and disables nothing.
func TestImportSyncsFromADiscoveryEndpoint(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbURL := pgtest.URL(t)
	fake := &fakeBazaar{failAt: -1}
	for i := range 7 {
		fake.items = append(fake.items, bazaarItem(i))
	}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	env := map[string]string{"DATABASE_URL": dbURL, "BAZAAR_URL": srv.URL + "/discovery/resources", "BAZAAR_PAGE_SIZE": "3"}
	getenv := func(k string) string { return env[k] }
	run1 := func(args ...string) (string, error) {
		var out strings.Builder
		err := run(ctx, append([]string{"server"}, args...), getenv, &out, io.Discard)
		return out.String(), err
	}
	for _, cmd := range []string{"migrate", "demo"} {
		if out, err := run1(cmd); err != nil {
			t.Fatalf("%s: %v\n%s", cmd, err, out)
		}
	}
	store, err := postgres.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	count := func(where string) int {
		var n int
		if err := store.Pool().QueryRow(ctx, `SELECT count(*) FROM provider_methods WHERE `+where).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	demoEnabled := count(`source IS NULL AND enabled`)

	out, err := run1("import")
	if err != nil {
		t.Fatalf("first sync: %v\n%s", err, out)
	}
	if fake.pages != 3 || !strings.Contains(out, "7 methods inserted, 0 updated, 0 unchanged, 0 disabled") {
		t.Fatalf("first sync: %d pages\n%s", fake.pages, out)
	}
	if n := count(`source = 'x402-bazaar' AND enabled AND listed_calls_30d IS NOT NULL AND category = 'weather'`); n != 7 {
		t.Fatalf("%d imported methods enabled with their listing and category", n)
	}
	var provider string
	store.Pool().QueryRow(ctx, `SELECT p.name FROM provider_methods m JOIN providers p ON p.id = m.provider_id
		WHERE m.source_key = 'https://seller3.example/v1/report'`).Scan(&provider)
	if provider != "Seller 3" {
		t.Errorf("provider %q", provider)
	}

	// The same listing again changes nothing.
	fake.pages = 0
	if out, err := run1("import"); err != nil || !strings.Contains(out, "0 methods inserted, 0 updated, 7 unchanged, 0 disabled") {
		t.Fatalf("second sync: %v\n%s", err, out)
	}

	// Seller 4 leaves the listing: the next complete sync disables its method.
	fake.items = append(fake.items[:4:4], fake.items[5:]...)
	if out, err := run1("import"); err != nil || !strings.Contains(out, "6 unchanged, 1 disabled") {
		t.Fatalf("third sync: %v\n%s", err, out)
	}
	if count(`source_key = 'https://seller4.example/v1/report' AND NOT enabled`) != 1 || count(`source = 'x402-bazaar' AND enabled`) != 6 {
		t.Error("the vanished method is not the one disabled")
	}

	// Seller 5 leaves too, but the second page fails: what was read is loaded, nothing
	// is disabled, and the command says so.
	fake.items = append(fake.items[:4:4], fake.items[5:]...)
	fake.failAt = 3
	out, err = run1("import")
	if err == nil || !strings.Contains(err.Error(), "HTTP 503") || !strings.Contains(err.Error(), "nothing disabled") {
		t.Fatalf("failing sync: %v\n%s", err, out)
	}
	if count(`source = 'x402-bazaar' AND enabled`) != 6 || count(`source IS NULL AND enabled`) != demoEnabled {
		t.Error("a failed sync disabled methods")
	}

	// A file still imports as before, and a file import disables nothing.
	file := filepath.Join(t.TempDir(), "page.json")
	os.WriteFile(file, []byte(`{"x402Version":2,"items":[`+bazaarItem(0)+`],"pagination":{"limit":1,"offset":0,"total":9}}`), 0o600)
	if out, err := run1("import", file); err != nil || !strings.Contains(out, "1 unchanged; 0 items skipped; read and loaded in") {
		t.Fatalf("file import: %v\n%s", err, out)
	}
	if count(`source = 'x402-bazaar' AND enabled`) != 6 {
		t.Error("a file import changed what is enabled")
	}

	// The Bazaar's event log imports as it is: a listed resource is a method with no
	// offer, a delisted one disables the method kept for it, a bad line is reported.
	events := filepath.Join(t.TempDir(), "events.jsonl")
	os.WriteFile(events, []byte(strings.Join([]string{
		`{"resource":"https://tides.example/v1/high-water","description":"High water times for a harbour…","truncated":true,"first_date":"2026-08-27","last_event":"LISTED","last_date":"2026-08-29"}`,
		`{"resource":"https://seller0.example/v1/report","description":"Report","truncated":false,"first_date":"2026-08-27","last_event":"DELISTED","last_date":"2026-08-30"}`,
		`{"resource":"https://tides.example/v1/low-water","last_event":"MOVED"}`,
	}, "\n")), 0o600)
	out, err = run1("import", events)
	if err != nil || !strings.Contains(out, "1 methods inserted, 0 updated, 0 unchanged; 1 items skipped; read and loaded in") ||
		!strings.Contains(out, "1 resources delisted, 1 methods disabled") || !strings.Contains(out, `last_event "MOVED"`) {
		t.Fatalf("event log import: %v\n%s", err, out)
	}
	if count(`source_key = 'https://tides.example/v1/high-water' AND enabled AND offers = '[]'`) != 1 ||
		count(`source_key = 'https://seller0.example/v1/report' AND NOT enabled`) != 1 {
		t.Error("the event log's listing and delisting are not as it says")
	}

	env["BAZAAR_URL"] = ""
	if _, err := run1("import"); err == nil {
		t.Error("import without a file or BAZAAR_URL ran")
	}
}

func TestBazaarConfigRefusesBadValues(t *testing.T) {
	t.Parallel()
	for _, env := range []map[string]string{
		{"BAZAAR_URL": "ftp://a.example/x"},
		{"BAZAAR_URL": "https://user:pw@a.example/discovery/resources"},
		{"BAZAAR_PAGE_SIZE": "0"},
		{"BAZAAR_PAGE_SIZE": "5000"},
		{"BAZAAR_MAX_PAGES": "many"},
		{"BAZAAR_TIMEOUT": "1ms"},
	} {
		env["DATABASE_URL"] = "x"
		if _, err := loadConfig(func(k string) string { return env[k] }); err == nil {
			t.Errorf("%v: accepted", env)
		}
	}
	c, err := loadBazaarConfig(func(k string) string {
		return map[string]string{"BAZAAR_URL": "https://facilitator.example/discovery/resources", "BAZAAR_PAGE_SIZE": "50", "BAZAAR_TIMEOUT": "5s"}[k]
	})
	if err != nil || c.PageSize != 50 || c.MaxPages != 1000 || c.Timeout.Seconds() != 5 {
		t.Errorf("config %+v, %v", c, err)
	}
}
