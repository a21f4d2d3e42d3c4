package postgres_test

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/waystation/waystation/internal/catalog"
	"github.com/waystation/waystation/internal/postgres"
	"github.com/waystation/waystation/internal/postgres/pgtest"
	"github.com/waystation/waystation/internal/trust"
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

// listed parses Bazaar items, one a line, into the catalog the importer makes.
func listed(t *testing.T, lines ...string) catalog.Catalog {
	t.Helper()
	cat, skipped, err := catalog.ParseBazaar(strings.NewReader(strings.Join(lines, "\n")))
	if err != nil || len(skipped) != 0 {
		t.Fatalf("parse: %v, skipped %v", err, skipped)
	}
	return cat
}

func enabledKeys(t *testing.T, store *postgres.Store) map[string]bool {
	t.Helper()
	rows, _ := store.Pool().Query(context.Background(), `
		SELECT coalesce(source_key, slug) || CASE WHEN tool_name <> '' THEN '#' || tool_name ELSE '' END, enabled
		FROM provider_methods`)
	out := map[string]bool{}
	var key string
	var enabled bool
	_, err := pgx.ForEachRow(rows, []any{&key, &enabled}, func() error { out[key] = enabled; return nil })
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestSyncDisablesOnlyWhatTheListingDropped(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	store, demo := pgtest.LoadDemo(t, now)
	a := `{"resource":"https://a.example/one","description":"One"}`
	b := `{"resource":"https://b.example/two","description":"Two"}`
	c := `{"resource":"https://mcp.c.example/mcp","type":"mcp","extensions":{"bazaar":{"info":{"input":{"type":"mcp","toolName":"three","inputSchema":{"type":"object"}}}}}}`
	d := `{"resource":"https://mcp.c.example/mcp","type":"mcp","extensions":{"bazaar":{"info":{"input":{"type":"mcp","toolName":"four","inputSchema":{"type":"object"}}}}}}`
	res, err := store.SyncCatalog(ctx, listed(t, a, b, c, d), catalog.SourceBazaar, now)
	if err != nil || res.Inserted != 4 || res.Disabled != 0 {
		t.Fatalf("first sync: %+v, %v", res, err)
	}
	before := enabledKeys(t, store)

	// b and the tool four vanished; a file import of one item disables nothing.
	if res, err := store.LoadCatalog(ctx, listed(t, a), now); err != nil || res.Unchanged != 1 {
		t.Fatalf("file import: %+v, %v", res, err)
	}
	res, err = store.SyncCatalog(ctx, listed(t, a, c), catalog.SourceBazaar, now)
	if err != nil || res.Unchanged != 2 || res.Disabled != 2 {
		t.Fatalf("second sync: %+v, %v", res, err)
	}
	after := enabledKeys(t, store)
	for key, was := range before {
		want := was && key != "https://b.example/two" && key != "https://mcp.c.example/mcp#four"
		if after[key] != want {
			t.Errorf("%s: enabled %v, want %v", key, after[key], want)
		}
	}
	if !after["https://mcp.c.example/mcp#three"] || len(after) != len(before) {
		t.Errorf("after %v", after)
	}

	// An empty listing is refused and changes nothing; a vanished method that comes
	// back is enabled again.
	if _, err := store.SyncCatalog(ctx, catalog.Catalog{}, catalog.SourceBazaar, now); err == nil {
		t.Error("an empty listing was synced")
	}
	if _, err := store.SyncCatalog(ctx, demo, catalog.SourceBazaar, now); err == nil {
		t.Error("a catalog without a method of the source was synced")
	}
	res, err = store.SyncCatalog(ctx, listed(t, a, b, c), catalog.SourceBazaar, now)
	if err != nil || res.Updated != 1 || res.Disabled != 0 {
		t.Fatalf("third sync: %+v, %v", res, err)
	}
	if got := enabledKeys(t, store); !got["https://b.example/two"] || got["https://mcp.c.example/mcp#four"] {
		t.Errorf("after the third sync %v", got)
	}
	// The demo catalog's methods are as the demo left them, its own disabled ones
	// included.
	got := enabledKeys(t, store)
	demoSeen := 0
	for _, p := range demo.Providers {
		for _, m := range p.Methods {
			demoSeen++
			if got[m.Slug] != !m.Disabled {
				t.Errorf("demo method %s: enabled %v", m.Slug, got[m.Slug])
			}
		}
	}
	if demoSeen < 50 {
		t.Errorf("%d demo methods", demoSeen)
	}
}

func TestMCPToolsAtOneURLLoadAsMethodsOfTheirOwn(t *testing.T) {
	ctx := context.Background()
	store := pgtest.New(t)
	tool := func(name string) string {
		return `{"resource":"https://mcp.tools.example/mcp","type":"mcp","extensions":{"bazaar":{"info":{"input":{"type":"mcp","toolName":"` + name + `","inputSchema":{"type":"object"}}}}}}`
	}
	cat := listed(t, tool("alpha"), tool("beta"))
	now := time.Now()
	if res, err := store.LoadCatalog(ctx, cat, now); err != nil || res.Inserted != 2 {
		t.Fatalf("load: %+v, %v", res, err)
	}
	if res, err := store.LoadCatalog(ctx, cat, now); err != nil || res.Unchanged != 2 {
		t.Fatalf("reload: %+v, %v", res, err)
	}
	rows, _ := store.Pool().Query(ctx, `SELECT slug, tool_name, endpoint_method FROM provider_methods ORDER BY tool_name`)
	var got []string
	var slug, tname, method string
	pgx.ForEachRow(rows, []any{&slug, &tname, &method}, func() error {
		got = append(got, slug+" "+tname+" "+method)
		return nil
	})
	if strings.Join(got, ", ") != "mcp-tools-mcp-alpha alpha POST, mcp-tools-mcp-beta beta POST" {
		t.Errorf("rows %q", got)
	}
}

func TestDirectoryRecordsCarryTheListingApartFromStats(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	store, _ := pgtest.LoadDemo(t, now)
	cat := listed(t,
		`{"resource":"https://q.example/a","quality":{"l30DaysTotalCalls":1200,"l30DaysUniquePayers":40,"lastCalledAt":"2026-08-01T10:00:00.5Z"},"lastUpdated":"2026-08-02T00:00:00Z"}`,
		`{"resource":"https://q.example/b"}`)
	if _, err := store.LoadCatalog(ctx, cat, now); err != nil {
		t.Fatal(err)
	}
	rec, err := store.DirectoryRecords(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, r := range rec.Methods {
		m := r.Method
		switch m.Endpoint.URL {
		case "https://q.example/a":
			seen++
			l := m.SourceListing
			if l == nil || l.Source != catalog.SourceBazaar || *l.Calls30d != 1200 || *l.Payers30d != 40 ||
				l.LastCalledAt.Format(time.RFC3339Nano) != "2026-08-01T10:00:00.5Z" || l.UpdatedAt.Format(time.RFC3339) != "2026-08-02T00:00:00Z" {
				t.Errorf("listing %+v", l)
			}
			if rec.Payments[m.Hostname].Settled != 0 {
				t.Error("the listing's calls became settled payments")
			}
			if len(m.Guidance) == 0 || string(m.Guidance) == "{}" {
				t.Error("no guidance")
			}
		case "https://q.example/b":
			seen++
			if l := m.SourceListing; l == nil || l.Calls30d != nil || l.Payers30d != nil || l.LastCalledAt != nil || l.UpdatedAt != nil {
				t.Errorf("empty listing %+v", l)
			}
		default:
			if m.SourceListing != nil {
				t.Errorf("%s: a demo method has a listing", m.Slug)
			}
		}
	}
	if seen != 2 {
		t.Errorf("%d imported methods in the records", seen)
	}
}

// TestDirectoryRecordsAfterReadOnlyWhatChanged changes a catalog (a description, a
// provider's name, a method disabled, one deleted, one added) and reads it again after
// the first read: every record must be the one a whole read gives, and those of the
// methods whose rows did not change must be the earlier read's, not read again.
func TestDirectoryRecordsAfterReadOnlyWhatChanged(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	store, _ := pgtest.LoadDemo(t, now)
	first, err := store.DirectoryRecords(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Methods) < 7 {
		t.Fatalf("%d methods", len(first.Methods))
	}
	ids := func(n int) int64 { return first.Methods[n].ID }
	for _, q := range []struct {
		sql string
		arg any
	}{
		{`UPDATE provider_methods SET description = description || ' Revised.' WHERE id = $1`, ids(0)},
		{`UPDATE providers SET name = name || ' Renamed' WHERE id = (SELECT provider_id FROM provider_methods WHERE id = $1)`, ids(1)},
		{`UPDATE provider_methods SET enabled = false WHERE id = $1`, ids(2)},
		{`DELETE FROM provider_methods WHERE id = $1`, ids(3)},
		{`INSERT INTO provider_methods (provider_id, slug, name, description, category, kind, hostname, endpoint_url)
			SELECT provider_id, slug || '-again', name, description, category, kind, hostname, endpoint_url || '/again'
			FROM provider_methods WHERE id = $1`, ids(4)},
	} {
		if _, err := store.Pool().Exec(ctx, q.sql, q.arg); err != nil {
			t.Fatalf("%s: %v", q.sql, err)
		}
	}
	want, err := store.DirectoryRecords(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	var provider string
	store.Pool().QueryRow(ctx, `SELECT p.name FROM providers p JOIN provider_methods m ON m.provider_id = p.id WHERE m.id = $1`, ids(1)).Scan(&provider)
	// Read after the whole earlier read, whose array holds the records (they are
	// merged into it), and after it less two methods that did not change, which do
	// not fit (they are merged into another).
	for _, drop := range [][]int{nil, {5, 6}} {
		// The earlier read's records marked, to tell them when they come back.
		var prev []trust.MethodRecord
		inPrev := map[int64]bool{}
		for i, r := range first.Methods {
			if !slices.Contains(drop, i) {
				r.Method.Name = "kept: " + r.Method.Name
				prev = append(prev, r)
				inPrev[r.ID] = true
			}
		}
		prev = slices.Clip(prev)
		array := &prev[0]
		got, err := store.DirectoryRecordsAfter(ctx, now, prev)
		if err != nil {
			t.Fatal(err)
		}
		if inPlace := &got.Methods[0] == array; inPlace != (drop == nil) {
			t.Errorf("dropped %v: merged into the array given: %v", drop, inPlace)
		}
		if len(got.Methods) != len(want.Methods) {
			t.Fatalf("dropped %v: %d methods read after, %d read whole", drop, len(got.Methods), len(want.Methods))
		}
		kept := 0
		for i, r := range got.Methods {
			w := want.Methods[i]
			if r.ID != w.ID {
				t.Fatalf("dropped %v: method %d is %d, read whole %d", drop, i, r.ID, w.ID)
			}
			changed := r.ID == ids(0) || r.Method.Provider == provider || r.Method.Slug == first.Methods[4].Method.Slug+"-again" || !inPrev[r.ID]
			if name, ok := strings.CutPrefix(r.Method.Name, "kept: "); ok {
				if changed {
					t.Errorf("dropped %v: %s changed and was not read again", drop, r.Method.Slug)
				}
				r.Method.Name = name
				kept++
			} else if !changed {
				t.Errorf("dropped %v: %s did not change and was read again", drop, r.Method.Slug)
			}
			if !reflect.DeepEqual(r, w) {
				t.Errorf("dropped %v: %s read after differs from its whole read:\n%+v\n%+v", drop, r.Method.Slug, r, w)
			}
		}
		if kept == 0 {
			t.Errorf("dropped %v: nothing was kept", drop)
		}
		whole := want
		got.Methods, whole.Methods = nil, nil
		if !reflect.DeepEqual(got, whole) {
			t.Errorf("dropped %v: the facts beside the methods differ from a whole read's", drop)
		}
	}
}

func TestImportLoadsTheEventLogAndReimportsInPlace(t *testing.T) {
	ctx := context.Background()
	store := pgtest.New(t)
	events := pgtest.EventLog(t)
	listings := 0
	for _, p := range events.Providers {
		listings += len(p.Methods)
	}
	now := time.Now()
	res, err := store.LoadCatalog(ctx, events, now)
	if err != nil || res.Inserted != listings || res.Disabled != 0 {
		t.Fatalf("first import: %+v, %v (%d listings)", res, err, listings)
	}
	var enabled, withOffer int
	store.Pool().QueryRow(ctx, `SELECT count(*) FILTER (WHERE enabled), count(*) FILTER (WHERE offers <> '[]')
		FROM provider_methods`).Scan(&enabled, &withOffer)
	if enabled != listings || withOffer != 0 {
		t.Errorf("%d enabled, %d with an offer", enabled, withOffer)
	}
	if res, err := store.LoadCatalog(ctx, events, now); err != nil || res.Unchanged != listings || res.Providers != 0 {
		t.Errorf("second import: %+v, %v", res, err)
	}
	rec, err := store.DirectoryRecords(ctx, now)
	if err != nil || len(rec.Methods) != listings {
		t.Fatalf("%d records, %v", len(rec.Methods), err)
	}
	for _, r := range rec.Methods {
		if l := r.Method.SourceListing; l == nil || l.Source != catalog.SourceBazaar || l.UpdatedAt == nil {
			t.Fatalf("%s: listing %+v", r.Method.Slug, l)
		}
	}
}

// TestTheEventLogOverTheSnapshotDisablesTheDelistedAndKeepsOffers loads the real
// snapshot, then the event log: the snapshot's methods the log delists are disabled
// (kept, with their probes), those it lists keep their offers and call details.
func TestTheEventLogOverTheSnapshotDisablesTheDelistedAndKeepsOffers(t *testing.T) {
	ctx := context.Background()
	store, snapshot := pgtest.LoadRealCatalog(t)
	events := pgtest.EventLog(t)
	kept := map[string]catalog.Method{}
	for _, p := range snapshot.Providers {
		for _, m := range p.Methods {
			kept[m.SourceKey] = m
		}
	}
	delisted, probed := 0, ""
	for _, d := range events.Delisted {
		if _, ok := kept[d.SourceKey]; ok {
			delisted++
			probed = d.SourceKey
		}
	}
	var relisted []catalog.Method
	for _, p := range events.Providers {
		for _, m := range p.Methods {
			if _, ok := kept[m.SourceKey]; ok {
				relisted = append(relisted, m)
			}
		}
	}
	if delisted == 0 || len(relisted) == 0 {
		t.Fatalf("the files share %d delisted and %d listed resources", delisted, len(relisted))
	}
	var probes int
	store.Pool().QueryRow(ctx, `
		INSERT INTO probes (method_id, hostname, probed_at, outcome)
		SELECT id, hostname, now(), 'timeout' FROM provider_methods WHERE source_key = ANY($1)
		RETURNING 1`, []string{probed}).Scan(&probes)

	res, err := store.LoadCatalog(ctx, events, time.Now())
	if err != nil || res.Disabled != delisted {
		t.Fatalf("import: %+v, %v; want %d disabled", res, err, delisted)
	}
	var disabled, total, left int
	store.Pool().QueryRow(ctx, `SELECT count(*) FILTER (WHERE NOT enabled), count(*) FROM provider_methods`).Scan(&disabled, &total)
	store.Pool().QueryRow(ctx, `SELECT count(*) FROM probes`).Scan(&left)
	if disabled != delisted || total != 639+res.Inserted || probes != 1 || left != probes {
		t.Errorf("%d disabled, %d methods, %d probes (had %d)", disabled, total, left, probes)
	}
	for _, m := range relisted {
		before := kept[m.SourceKey]
		var desc, method string
		var offers []byte
		var calls *int64
		err := store.Pool().QueryRow(ctx, `SELECT description, endpoint_method, offers, listed_calls_30d
			FROM provider_methods WHERE source_key = $1 AND enabled`, m.SourceKey).Scan(&desc, &method, &offers, &calls)
		if err != nil {
			t.Fatalf("%s: %v", m.SourceKey, err)
		}
		var got []catalog.Offer
		json.Unmarshal(offers, &got)
		if len(got) != len(before.Offers) || method != before.Endpoint.Method ||
			(before.Listing.Calls30d != nil) != (calls != nil) || len(desc) < len(m.Description)-len("…") {
			t.Errorf("%s: %d offers (had %d), method %s, calls %v", m.SourceKey, len(got), len(before.Offers), method, calls)
		}
	}
	// Again: nothing changes.
	if res, err := store.LoadCatalog(ctx, events, time.Now()); err != nil || res.Inserted+res.Updated+res.Disabled != 0 {
		t.Errorf("again: %+v, %v", res, err)
	}
}

func TestADelistedMethodComesBackWithItsSlug(t *testing.T) {
	ctx := context.Background()
	store := pgtest.New(t)
	listed := `{"resource":"https://a.example/x","description":"Tide tables","last_event":"LISTED","last_date":"2026-08-27"}`
	delisted := `{"resource":"https://a.example/x","description":"Tide tables","last_event":"DELISTED","last_date":"2026-08-28"}`
	other := `{"resource":"https://a.example/y","description":"Y","accepts":[]}`
	now := time.Now()
	if res, err := store.LoadCatalog(ctx, listedCatalog(t, listed, other), now); err != nil || res.Inserted != 2 {
		t.Fatalf("load: %+v, %v", res, err)
	}
	var slug string
	store.Pool().QueryRow(ctx, `SELECT slug FROM provider_methods WHERE source_key = 'https://a.example/x'`).Scan(&slug)
	if res, err := store.LoadCatalog(ctx, listedCatalog(t, delisted), now); err != nil || res.Disabled != 1 {
		t.Fatalf("delist: %+v, %v", res, err)
	}
	if got := enabledKeys(t, store); got["https://a.example/x"] || !got["https://a.example/y"] {
		t.Errorf("after the delisting %v", got)
	}
	// A delisting of what was never kept, and one of a method of no listing, change nothing.
	cat := listedCatalog(t, strings.Replace(delisted, "/x", "/never", 1))
	cat.Delisted = append(cat.Delisted, catalog.Delisting{Source: catalog.SourceBazaar, SourceKey: ""})
	if res, err := store.LoadCatalog(ctx, cat, now); err != nil || res.Disabled != 0 {
		t.Fatalf("unknown delisting: %+v, %v", res, err)
	}
	reappeared := strings.Replace(listed, "LISTED", "REAPPEARED", 1)
	if res, err := store.LoadCatalog(ctx, listedCatalog(t, reappeared), now); err != nil || res.Updated != 1 {
		t.Fatalf("reappear: %+v, %v", res, err)
	}
	var again string
	var enabled bool
	store.Pool().QueryRow(ctx, `SELECT slug, enabled FROM provider_methods WHERE source_key = 'https://a.example/x'`).Scan(&again, &enabled)
	if again != slug || !enabled {
		t.Errorf("came back as %s (was %s), enabled %v", again, slug, enabled)
	}
}

// listedCatalog parses lines, an event log's or the discovery format's, whatever they
// list or delist.
func listedCatalog(t *testing.T, lines ...string) catalog.Catalog {
	t.Helper()
	cat, skipped, err := catalog.ParseBazaar(strings.NewReader(strings.Join(lines, "\n")))
	if err != nil || len(skipped) != 0 {
		t.Fatalf("parse: %v, skipped %v", err, skipped)
	}
	return cat
}
