package generator

import (
	"encoding/json"
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
