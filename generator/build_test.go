package generator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/waystation/waystation/internal/directory"
	"github.com/waystation/waystation/internal/trust"
)

// TestAssembleMakesMethodsPayableOnlyThroughThePayer checks that payable follows the
// payer's capabilities: nothing without a payer, and with one, the methods whose
// newest offer is a valid exact price in a network and asset it pays, in the listing
// and in the merchant record alike.
func TestAssembleMakesMethodsPayableOnlyThroughThePayer(t *testing.T) {
	now := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	amount := "1000"
	offer := func(network, asset string) []trust.Observation {
		return []trust.Observation{{ProbedAt: now.Add(-time.Hour), Outcome: trust.OutcomePaymentRequired,
			Scheme: "exact", Network: network, Asset: asset, PayTo: "0x209693Bc6afc0C5328bA36FaF03C514EF312287C", Amount: &amount}}
	}
	method := func(id int64, slug string) trust.MethodRecord {
		return trust.MethodRecord{ID: id, Method: directory.Method{Slug: slug, Name: slug, Provider: "P",
			Hostname: "api.seller.example", Category: "data", Kind: "x402",
			Endpoint: directory.Endpoint{Method: "GET", URL: "https://api.seller.example/" + slug}}}
	}
	rec := trust.Records{
		Methods: []trust.MethodRecord{method(1, "on-base"), method(2, "on-sepolia")},
		Probes: map[int64][]trust.Observation{
			1: offer("eip155:8453", "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"),
			2: offer("eip155:84532", "0x036CbD53842c5426634e7929541eC2318f3dCF7e"),
		},
	}
	payable := func(payer trust.Payer) map[string]bool {
		t.Helper()
		snap, err := Assemble(rec, now, payer)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]bool{}
		for _, m := range snap.Methods() {
			got[m.Slug] = m.Payable
		}
		res, _ := snap.Merchant("api.seller.example")
		var mr directory.Merchant
		if err := json.Unmarshal(res.Body, &mr); err != nil {
			t.Fatal(err)
		}
		for _, e := range mr.Methods {
			if e.Payable != got[e.Slug] {
				t.Errorf("%s: merchant record says payable %v, listing %v", e.Slug, e.Payable, got[e.Slug])
			}
		}
		return got
	}
	if got := payable(nil); got["on-base"] || got["on-sepolia"] {
		t.Errorf("payable without a payer: %v", got)
	}
	baseOnly := trust.PayerFunc(func(network, asset string) bool { return network == "eip155:8453" })
	if got := payable(baseOnly); !got["on-base"] || got["on-sepolia"] {
		t.Errorf("payable with a payer on Base: %v", got)
	}
}

// TestAssembleSumsTheListingsDemandAndSaysWhatWasNeverProbed checks the merchant
// record: the listing's 30-day calls and payers summed over the hostname's methods
// that report them, absent when none does; and a method never probed marked so in
// its trust block and its merchant entry, the merchant too while none of its
// methods was.
func TestAssembleSumsTheListingsDemandAndSaysWhatWasNeverProbed(t *testing.T) {
	now := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	n := func(v int64) *int64 { return &v }
	method := func(id int64, host string, l *directory.Listing) trust.MethodRecord {
		slug := host + "-" + string(rune('a'+id))
		return trust.MethodRecord{ID: id, Method: directory.Method{Slug: slug, Name: slug, Provider: "P",
			Hostname: host, Category: "data", Kind: "x402", SourceListing: l,
			Endpoint: directory.Endpoint{Method: "GET", URL: "https://" + host + "/" + slug}}}
	}
	rec := trust.Records{
		Methods: []trust.MethodRecord{
			method(1, "a.example", &directory.Listing{Source: "x402-bazaar", Calls30d: n(1000), Payers30d: n(40)}),
			method(2, "a.example", &directory.Listing{Source: "x402-bazaar", Calls30d: n(20), Payers30d: n(3)}),
			method(3, "a.example", &directory.Listing{Source: "x402-bazaar"}),
			method(4, "b.example", &directory.Listing{Source: "x402-bazaar"}),
			method(5, "c.example", nil),
		},
		Probes: map[int64][]trust.Observation{
			1: {{ProbedAt: now.Add(-time.Hour), Outcome: trust.OutcomeTimeout}},
		},
	}
	snap, err := Assemble(rec, now, nil)
	if err != nil {
		t.Fatal(err)
	}
	merchant := func(host string) (directory.Merchant, []byte) {
		res, _ := snap.Merchant(host)
		var mr directory.Merchant
		if err := json.Unmarshal(res.Body, &mr); err != nil {
			t.Fatal(err)
		}
		return mr, res.Body
	}
	a, body := merchant("a.example")
	if d := a.ListingDemand; d == nil || *d != (directory.Demand{Calls30d: 1020, Payers30d: 43, Methods: 2}) {
		t.Errorf("a.example demand %+v", d)
	}
	if !bytes.Contains(body, []byte(`"listing_demand":{"calls_30d":1020,"unique_payers_30d":43,"methods":2}`)) {
		t.Errorf("a.example record %s", body)
	}
	if a.Trust.NotYetProbed {
		t.Error("a.example has a probed method but reads as never probed")
	}
	for _, e := range a.Methods {
		if e.NotYetProbed != (e.Slug != "a.example-b") {
			t.Errorf("%s: not yet probed %v", e.Slug, e.NotYetProbed)
		}
	}
	for _, host := range []string{"b.example", "c.example"} {
		mr, body := merchant(host)
		if mr.ListingDemand != nil || bytes.Contains(body, []byte("listing_demand")) || !mr.Trust.NotYetProbed {
			t.Errorf("%s record %s", host, body)
		}
	}
	for _, m := range snap.Methods() {
		if m.Trust.NotYetProbed != (m.Slug != "a.example-b") {
			t.Errorf("%s: trust %+v", m.Slug, m.Trust)
		}
	}
}

// TestAssembleGivesEachMethodItsSellersOwnDemand: the use the service saw of a
// seller is on its merchant record and on each of its methods, where search reads
// it to break ties, and on no other seller's; it moves no score.
func TestAssembleGivesEachMethodItsSellersOwnDemand(t *testing.T) {
	now := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	method := func(id int64, host string) trust.MethodRecord {
		slug := fmt.Sprintf("%s-%d", host, id)
		return trust.MethodRecord{ID: id, Method: directory.Method{Slug: slug, Name: slug, Provider: "P",
			Hostname: host, Category: "data", Kind: "x402", Endpoint: directory.Endpoint{Method: "GET", URL: "https://" + host + "/" + slug}}}
	}
	rec := trust.Records{
		Methods: []trust.MethodRecord{method(1, "a.example"), method(2, "a.example"), method(3, "b.example")},
		Demand:  map[string]*directory.ServiceDemand{"a.example": directory.NewServiceDemand(7, 3, 2)},
	}
	without, err := Assemble(trust.Records{Methods: rec.Methods}, now, nil)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := Assemble(rec, now, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := directory.ServiceDemand{Settled: 7, Payers: 3, Repeat: 2, Organic: 2}
	for i, m := range snap.Methods() {
		if d := m.Trust.Demand; (m.Hostname == "a.example") != (d != nil && *d == want) {
			t.Errorf("%s: service demand %+v", m.Slug, d)
		}
		if was := without.Methods()[i]; was.Slug != m.Slug || scoreOf(was.Trust.Score) != scoreOf(m.Trust.Score) || was.Trust.Verdict != m.Trust.Verdict {
			t.Errorf("%s: the demand moved the trust from %+v to %+v", m.Slug, was.Trust, m.Trust)
		}
	}
	res, _ := snap.Merchant("a.example")
	if !bytes.Contains(res.Body, []byte(`"service_demand":{"settled_30d":7,"payers_30d":3,"repeat_payers_30d":2,"organic_payers_30d":2}`)) {
		t.Errorf("a.example record %s", res.Body)
	}
}

func scoreOf(n *int) int {
	if n == nil {
		return -1
	}
	return *n
}
