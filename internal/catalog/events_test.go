package catalog

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"
)

// eventsFile is the Bazaar's event log beside the repository: third-party data, read
// in place, nothing of it copied into the repository.
const eventsFile = "../../../shared/data/bazaar-events-2026-09.jsonl"

func TestParseBazaarReadsTheRealEventLog(t *testing.T) {
	data, err := os.ReadFile(eventsFile)
	if errors.Is(err, os.ErrNotExist) {
		t.Skip("the Bazaar's event log is not beside the repository")
	}
	if err != nil {
		t.Fatal(err)
	}
	cat, skipped, err := ParseBazaar(bytes.NewReader(data))
	if err != nil || len(skipped) != 0 {
		t.Fatalf("parse: %v, skipped %v", err, skipped)
	}
	// What the file says of itself, counted from its lines.
	events := map[string]int{}
	for line := range strings.SplitSeq(strings.TrimSpace(string(data)), "\n") {
		var e struct {
			LastEvent string `json:"last_event"`
		}
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatal(err)
		}
		events[e.LastEvent]++
	}
	methods := allMethods(cat)
	if len(methods) != events[EventListed]+events[EventReappeared] || len(cat.Delisted) != events[EventDelisted] {
		t.Fatalf("%d methods and %d delisted from %v", len(methods), len(cat.Delisted), events)
	}
	if len(methods)+len(cat.Delisted) != 7126 {
		t.Errorf("%d resources, want 7126", len(methods)+len(cat.Delisted))
	}
	slugs := map[string]bool{}
	for _, m := range methods {
		checkMethod(t, m)
		if slugs[m.Slug] {
			t.Errorf("slug %q twice", m.Slug)
		}
		slugs[m.Slug] = true
		if !m.Sparse || len(m.Offers) != 0 || m.Source != SourceBazaar || m.Endpoint.Method != "GET" {
			t.Errorf("%s: sparse %v, %d offers, source %q, method %s", m.SourceKey, m.Sparse, len(m.Offers), m.Source, m.Endpoint.Method)
		}
		if l := m.Listing; l == nil || l.UpdatedAt == nil || l.Calls30d != nil || l.Payers30d != nil {
			t.Errorf("%s: listing %+v", m.SourceKey, l)
		}
	}
	for _, d := range cat.Delisted {
		if d.Source != SourceBazaar || !strings.HasPrefix(d.SourceKey, "https://") {
			t.Errorf("delisting %+v", d)
		}
	}
	t.Logf("%d providers, %d methods, %d delisted", len(cat.Providers), len(methods), len(cat.Delisted))
}

func TestEventLogLinesAreListingsWithoutAnOffer(t *testing.T) {
	cat, skipped := parseBazaarString(t, strings.Join([]string{
		`{"resource":"https://api.tides.example/v1/tides/:station","description":"Tide tables for a harbour station: heights and times of high and low water for the next w…","truncated":true,"first_date":"2026-08-27","last_event":"LISTED","last_date":"2026-08-27"}`,
		`{"resource":"https://api.tides.example/v1/moon","description":"Moon phase today","truncated":false,"first_date":"2026-08-27","last_event":"REAPPEARED","last_date":"2026-09-02"}`,
		`{"resource":"https://gone.example/old","description":"An endpoint that left","truncated":false,"first_date":"2026-08-27","last_event":"DELISTED","last_date":"2026-08-30"}`,
		// A discovery item beside them, read as it always was.
		`{"resource":"https://api.tides.example/v1/currents","description":"Currents","accepts":[{"scheme":"exact","network":"base","maxAmountRequired":"1000","asset":"0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913","payTo":"0x1111111111111111111111111111111111111111","resource":"https://api.tides.example/v1/currents","description":"Currents","mimeType":"application/json","maxTimeoutSeconds":60,"extra":{"name":"USD Coin","version":"2"}}]}`,
	}, "\n"))
	if len(skipped) != 0 {
		t.Fatalf("skipped %v", skipped)
	}
	if len(cat.Providers) != 1 || cat.Providers[0].Name != "tides.example" {
		t.Fatalf("providers %+v", cat.Providers)
	}
	ms := byKey(t, cat)
	station := ms["https://api.tides.example/v1/tides/:station"]
	checkMethod(t, station)
	if !station.Sparse || len(station.Offers) != 0 || station.Kind != KindX402 || station.Endpoint.Method != "GET" ||
		station.Slug != "tides-tides" ||
		station.Name != "Tide tables for a harbour station" ||
		!strings.HasSuffix(station.Description, "next w…") {
		t.Errorf("station %+v", station)
	}
	if u := station.Listing.UpdatedAt; u == nil || !u.Equal(time.Date(2026, 8, 27, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("listing %+v", station.Listing)
	}
	if g := decodeGuidance(t, station); g.Request.URL != station.Endpoint.URL || !strings.Contains(g.Payment, "names no price") {
		t.Errorf("guidance %+v", g)
	}
	if moon := ms["https://api.tides.example/v1/moon"]; !moon.Sparse || moon.Listing.UpdatedAt.Day() != 2 {
		t.Errorf("a reappeared resource: %+v", moon)
	}
	if cur := ms["https://api.tides.example/v1/currents"]; cur.Sparse || len(cur.Offers) != 1 {
		t.Errorf("a discovery item: %+v", cur)
	}
	if _, ok := ms["https://gone.example/old"]; ok || len(cat.Delisted) != 1 ||
		cat.Delisted[0] != (Delisting{Source: SourceBazaar, SourceKey: "https://gone.example/old"}) {
		t.Errorf("delisted %+v", cat.Delisted)
	}
}

func TestEventLogTheLaterLineOfAResourceDecides(t *testing.T) {
	listed := `{"resource":"https://a.example/x","description":"X","last_event":"LISTED","last_date":"2026-08-27"}`
	delisted := `{"resource":"https://a.example/x","description":"X","last_event":"DELISTED","last_date":"2026-08-28"}`
	cat, _ := parseBazaarString(t, listed+"\n"+delisted)
	if len(allMethods(cat)) != 0 || len(cat.Delisted) != 1 {
		t.Errorf("listed then delisted: %d methods, delisted %v", len(allMethods(cat)), cat.Delisted)
	}
	cat, _ = parseBazaarString(t, delisted+"\n"+listed)
	if len(allMethods(cat)) != 1 || len(cat.Delisted) != 0 {
		t.Errorf("delisted then listed: %d methods, delisted %v", len(allMethods(cat)), cat.Delisted)
	}
}

func TestEventLogBadLinesAreSkippedWithTheirReason(t *testing.T) {
	cat, skipped := parseBazaarString(t, strings.Join([]string{
		`{"resource":"https://a.example/x","description":"X","last_event":"RENAMED"}`,
		`{"resource":"https://a.example/y","description":"Y","last_event":7}`,
		`{"resource":"ftp://a.example/z","last_event":"DELISTED"}`,
		`{"description":"no resource","last_event":"LISTED"}`,
		`{"resource":"https://a.example/ok","description":"OK","last_event":"LISTED"}`,
	}, "\n"))
	if len(allMethods(cat)) != 1 || len(cat.Delisted) != 0 {
		t.Errorf("%d methods, delisted %v", len(allMethods(cat)), cat.Delisted)
	}
	want := []string{
		`line 1: event log: last_event "RENAMED": want LISTED, DELISTED or REAPPEARED`,
		`line 2: event log: last_event is not a string`,
		`line 3: resource URL: scheme "ftp" is not http or https`,
		`line 4: no resource URL`,
	}
	if len(skipped) != len(want) {
		t.Fatalf("skipped %v", skipped)
	}
	for i, s := range skipped {
		if s.Error() != want[i] {
			t.Errorf("skipped %q, want %q", s.Error(), want[i])
		}
	}
}

func TestASparseListingKeepsWhatAFullerImportKnew(t *testing.T) {
	full := onlyMethod(t, `{"resource":"https://api.tides.example/v1/tides","description":"Tide tables for a harbour station: heights and times of high and low water for the next week.","method":"POST","tags":["weather"],"quality":{"l30DaysTotalCalls":900,"l30DaysUniquePayers":30},"lastUpdated":"2026-08-01T00:00:00Z","accepts":[{"scheme":"exact","network":"eip155:8453","amount":"1000","asset":"0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913","payTo":"0x1111111111111111111111111111111111111111","maxTimeoutSeconds":60,"extra":{"name":"USD Coin","version":"2"}}]}`)
	cut := onlyMethod(t, `{"resource":"https://api.tides.example/v1/tides","description":"Tide tables for a harbour station: heights and times of hi…","last_event":"LISTED","last_date":"2026-09-03"}`)
	got := cut.Over(full)
	if got.Description != full.Description || got.Name != full.Name || got.Category != full.Category ||
		got.Endpoint.Method != "POST" || len(got.Offers) != 1 || string(got.Guidance) == "" {
		t.Errorf("kept %+v", got)
	}
	if g := decodeGuidance(t, got); g.Summary != full.Description || g.Request.Method != "POST" || !strings.Contains(g.Payment, "0.001") {
		t.Errorf("guidance %+v", g)
	}
	l := got.Listing
	if *l.Calls30d != 900 || *l.Payers30d != 30 || !l.UpdatedAt.Equal(time.Date(2026, 9, 3, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("listing %+v", l)
	}

	// A description that says something new replaces the old, its name and
	// summary with it; the offer and the call details stay.
	changed := onlyMethod(t, `{"resource":"https://api.tides.example/v1/tides","description":"Harbour tides and currents, now with surge warnings","last_event":"REAPPEARED","last_date":"2026-09-03"}`)
	got = changed.Over(full)
	if got.Description != changed.Description || got.Name != changed.Name || len(got.Offers) != 1 || got.Endpoint.Method != "POST" {
		t.Errorf("changed %+v", got)
	}
	if g := decodeGuidance(t, got); g.Summary != changed.Description {
		t.Errorf("summary %q", g.Summary)
	}

	// A full record replaces whatever was kept; a sparse one over a sparse one is
	// itself.
	if got := full.Over(cut); got.Description != full.Description || got.Sparse {
		t.Errorf("full over sparse %+v", got)
	}
	if got := cut.Over(cut); got.Description != cut.Description || len(got.Offers) != 0 {
		t.Errorf("sparse over sparse %+v", got)
	}
}
