package generator

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/waystation/waystation/internal/directory"
	"github.com/waystation/waystation/internal/trust"
)

// TestAssembleCapsALookalikeUntilTheOwnerProvesBothOrAnOperatorClearsIt seeds an
// established brand and, a month later, a seller one letter off its registrable
// name, both answering valid offers. The look-alike's methods and merchant record
// carry the flag, name the brand, and are held at caution (60); the brand is not
// flagged. The flag clears, the score back, when one payee proves both origins, or
// when an operator's override is in force on the look-alike.
func TestAssembleCapsALookalikeUntilTheOwnerProvesBothOrAnOperatorClearsIt(t *testing.T) {
	now := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	amount := "1000"
	const brandPayee, otherPayee = "0x2c7536E3605D9C16a7a3D7b1898e529396a65c23", "0x209693Bc6afc0C5328bA36FaF03C514EF312287C"
	brand, other := "api.tidewatch.example", "api.tidewatcb.example"
	method := func(id int64, host string) trust.MethodRecord {
		return trust.MethodRecord{ID: id, Method: directory.Method{Slug: host + "-m", Name: "Block number", Provider: "P " + host,
			Hostname: host, Category: "blockchain", Kind: "x402",
			Endpoint: directory.Endpoint{Method: "GET", URL: "https://" + host + "/v1/block"}}}
	}
	offer := func(payee string) []trust.Observation {
		return []trust.Observation{{ProbedAt: now.Add(-time.Hour), Outcome: trust.OutcomePaymentRequired, Scheme: "exact",
			Network: "eip155:8453", Asset: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913", PayTo: payee, Amount: &amount}}
	}
	records := func(otherPays string, proven bool, override *directory.Override) trust.Records {
		rec := trust.Records{
			Methods:   []trust.MethodRecord{method(1, brand), method(2, other)},
			Probes:    map[int64][]trust.Observation{1: offer(brandPayee), 2: offer(otherPays)},
			Overrides: map[string]*directory.Override{},
			Listed:    map[string]time.Time{brand: now.AddDate(0, -6, 0), other: now.AddDate(0, 0, -3)},
		}
		if proven {
			rec.Methods[0].Owner, rec.Methods[0].Origin = brandPayee, "https://"+brand
			rec.Methods[1].Owner, rec.Methods[1].Origin = otherPays, "https://"+other
		}
		if override != nil {
			rec.Overrides[other] = override
		}
		return rec
	}
	assemble := func(rec trust.Records) (map[string]directory.Trust, map[string]directory.Merchant, map[string]string) {
		t.Helper()
		snap, err := Assemble(rec, now, nil)
		if err != nil {
			t.Fatal(err)
		}
		methods := map[string]directory.Trust{}
		for _, m := range snap.Methods() {
			methods[m.Hostname] = m.Trust
		}
		merchants, bodies := map[string]directory.Merchant{}, map[string]string{}
		for _, h := range []string{brand, other} {
			res, _ := snap.Merchant(h)
			var mr directory.Merchant
			if err := json.Unmarshal(res.Body, &mr); err != nil {
				t.Fatal(err)
			}
			merchants[h], bodies[h] = mr, string(res.Body)
		}
		return methods, merchants, bodies
	}

	methods, merchants, bodies := assemble(records(otherPayee, true, nil))
	if b := methods[brand]; b.Verdict != directory.VerdictProceed || b.Lookalike != nil || strings.Contains(bodies[brand], "lookalike") {
		t.Errorf("the brand: %+v", b)
	}
	for what, tr := range map[string]directory.Trust{"method": methods[other], "merchant": merchants[other].Trust} {
		l := tr.Lookalike
		if tr.Verdict != directory.VerdictCaution || *tr.Score != trust.LookalikeCap || l == nil || l.Cleared != nil ||
			len(l.Resembles) != 1 || l.Resembles[0].Hostname != brand || l.Resembles[0].Signal != directory.SignalNearDomain {
			t.Errorf("the look-alike's %s trust: %+v (look-alike %+v)", what, tr, l)
		}
	}
	if !strings.Contains(bodies[other], `"lookalike":{"resembles":[{"hostname":"api.tidewatch.example","signal":"near_domain","mine":"tidewatcb","theirs":"tidewatch"}],"cleared":null}`) {
		t.Errorf("the look-alike's merchant record: %s", bodies[other])
	}

	methods, _, _ = assemble(records(brandPayee, true, nil))
	if tr := methods[other]; tr.Verdict != directory.VerdictProceed || tr.Lookalike == nil || tr.Lookalike.Cleared == nil ||
		*tr.Lookalike.Cleared != directory.ClearedByOwnerProof {
		t.Errorf("one payee proving both origins: %+v", tr)
	}
	methods, _, _ = assemble(records(brandPayee, false, nil))
	if tr := methods[other]; tr.Verdict != directory.VerdictCaution || tr.Lookalike.Cleared != nil {
		t.Errorf("the brand's payee named but proven by neither origin: %+v", tr)
	}
	methods, merchants, _ = assemble(records(otherPayee, false, &directory.Override{Verdict: directory.VerdictProceed, Reason: "a sister brand", SetAt: now}))
	for what, tr := range map[string]directory.Trust{"method": methods[other], "merchant": merchants[other].Trust} {
		if tr.Verdict != directory.VerdictProceed || tr.Lookalike == nil || tr.Lookalike.Cleared == nil || *tr.Lookalike.Cleared != directory.ClearedByOverride {
			t.Errorf("an override, the %s trust: %+v", what, tr)
		}
	}
}
