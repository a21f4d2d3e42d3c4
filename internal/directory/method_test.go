package directory

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

// TestListingItemCarriesTheSourceListingApartFromStats pins where the listing's own
// figures go on the wire: an object of their own after stats, with null for what the
// listing does not say, absent for a method of no listing; and that they come back
// from JSON to the same bytes, as a published site is reloaded.
func TestListingItemCarriesTheSourceListingApartFromStats(t *testing.T) {
	calls := int64(1018)
	updated := time.Date(2026, 8, 7, 0, 0, 0, 0, time.UTC)
	m := Method{
		Slug: "a-thing", Name: "A thing", Provider: "A", Hostname: "a.example", Category: "data", Kind: "x402",
		Trust:         Trust{Verdict: VerdictUnknown, Advisory: true},
		SourceListing: &Listing{Source: "x402-bazaar", Calls30d: &calls, UpdatedAt: &updated},
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	want := `"stats":null,"source_listing":{"source":"x402-bazaar","calls_30d":1018,"unique_payers_30d":null,"last_called_at":null,"updated_at":"2026-08-07T00:00:00Z"}}`
	if !bytes.HasSuffix(b, []byte(want)) {
		t.Errorf("item %s\nwant it to end with %s", b, want)
	}
	var back Method
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	again, _ := json.Marshal(back)
	if !bytes.Equal(again, b) {
		t.Errorf("round trip\n%s\n%s", b, again)
	}
	m.SourceListing = nil
	if b, _ := json.Marshal(m); bytes.Contains(b, []byte("source_listing")) {
		t.Errorf("a method of no listing: %s", b)
	}
}

func TestDemandIsTheListingsCallsAndPayers(t *testing.T) {
	calls, payers := int64(1200), int64(40)
	for _, c := range []struct {
		name          string
		l             *Listing
		calls, payers int64
	}{
		{"no listing", nil, 0, 0},
		{"no figures", &Listing{Source: "x402-bazaar"}, 0, 0},
		{"calls alone", &Listing{Calls30d: &calls}, 1200, 0},
		{"both", &Listing{Calls30d: &calls, Payers30d: &payers}, 1200, 40},
	} {
		m := Method{SourceListing: c.l}
		if gc, gp := m.Demand(); gc != c.calls || gp != c.payers {
			t.Errorf("%s: %d calls, %d payers", c.name, gc, gp)
		}
		var d Demand
		d.Add(&m)
		if want := c.l != nil && (c.l.Calls30d != nil || c.l.Payers30d != nil); (d.Methods == 1) != want || d.Calls30d != c.calls {
			t.Errorf("%s: demand %+v", c.name, d)
		}
	}
}
