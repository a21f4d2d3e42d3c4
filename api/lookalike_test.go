package api_test

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/waystation/waystation/api"
	"github.com/waystation/waystation/api/openapitest"
	"github.com/waystation/waystation/generator"
	"github.com/waystation/waystation/internal/directory"
	"github.com/waystation/waystation/internal/trust"
)

type heldSnapshot struct{ s *directory.Snapshot }

func (h heldSnapshot) Current() *directory.Snapshot { return h.s }

// lookalikeSnapshot is a brand listed half a year ago and, three days ago, a seller
// one letter off its registrable name, both answering valid offers.
func lookalikeSnapshot(t *testing.T) *directory.Snapshot {
	t.Helper()
	now := time.Now().UTC().Truncate(time.Second)
	amount := "1000"
	method := func(id int64, host, payee string) (trust.MethodRecord, []trust.Observation) {
		return trust.MethodRecord{ID: id, Method: directory.Method{Slug: "block-" + host[4:len(host)-8], Name: "Block number",
				Provider: "Chain data", Hostname: host, Category: "blockchain", Kind: "x402",
				Endpoint: directory.Endpoint{Method: "GET", URL: "https://" + host + "/v1/block"}}},
			[]trust.Observation{{ProbedAt: now.Add(-time.Hour), Outcome: trust.OutcomePaymentRequired, Scheme: "exact",
				Network: "eip155:8453", Asset: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913", PayTo: payee, Amount: &amount}}
	}
	brand, bp := method(1, "api.tidewatch.example", "0x2c7536E3605D9C16a7a3D7b1898e529396a65c23")
	other, op := method(2, "api.tidewatcb.example", "0x209693Bc6afc0C5328bA36FaF03C514EF312287C")
	snap, err := generator.Assemble(trust.Records{
		Methods: []trust.MethodRecord{brand, other},
		Probes:  map[int64][]trust.Observation{1: bp, 2: op},
		Listed:  map[string]time.Time{"api.tidewatch.example": now.AddDate(0, -6, 0), "api.tidewatcb.example": now.AddDate(0, 0, -3)},
	}, now, nil)
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

// TestALookalikesRecordShowsWhomItResembles reads the look-alike's merchant record
// and method through the routes, each valid against the document, and asks
// check_merchant: all three show the flag standing, whom it resembles and the verdict
// capped at caution; the brand's record carries no flag.
func TestALookalikesRecordShowsWhomItResembles(t *testing.T) {
	t.Parallel()
	doc := openapitest.Load(t, "openapi.json")
	e := &env{t: t, srv: api.NewServer(api.Config{}, slog.New(slog.DiscardHandler), heldSnapshot{lookalikeSnapshot(t)}, nil)}
	for _, target := range []string{
		base + "/api/public/v1/merchants/api.tidewatcb.example", base + "/api/public/v1/merchants/api.tidewatch.example",
	} {
		r := e.get(target)
		doc.CheckResponse(t, httptest.NewRequest(http.MethodGet, target, nil), r.Response, r.body)
	}
	var mr directory.Merchant
	e.get(base+"/api/public/v1/merchants/api.tidewatcb.example").json(t, &mr)
	if l := mr.Trust.Lookalike; mr.Trust.Verdict != directory.VerdictCaution || l == nil || l.Cleared != nil ||
		len(l.Resembles) != 1 || l.Resembles[0].Hostname != "api.tidewatch.example" {
		t.Errorf("the look-alike's record: %+v", mr.Trust)
	}
	var m directory.Method
	e.get(services+"/block-tidewatcb").json(t, &m)
	if m.Trust.Lookalike == nil || m.Trust.Verdict != directory.VerdictCaution {
		t.Errorf("the look-alike's method: %+v", m.Trust)
	}
	var brand directory.Merchant
	e.get(base+"/api/public/v1/merchants/api.tidewatch.example").json(t, &brand)
	if brand.Trust.Lookalike != nil || brand.Trust.Verdict != directory.VerdictProceed {
		t.Errorf("the brand's record: %+v", brand.Trust)
	}

	out, failure := e.tool(t, "check_merchant", map[string]string{"hostname": "api.tidewatcb.example"})
	l, _ := out["lookalike"].(map[string]any)
	res, _ := l["resembles"].([]any)
	if failure != "" || out["verdict"] != "caution" || len(res) != 1 || l["cleared"] != nil ||
		res[0].(map[string]any)["hostname"] != "api.tidewatch.example" || res[0].(map[string]any)["signal"] != "near_domain" {
		t.Errorf("check_merchant: %q %v", failure, out)
	}
	out, _ = e.tool(t, "check_merchant", map[string]string{"hostname": "api.tidewatch.example"})
	if _, ok := out["lookalike"]; ok || out["verdict"] != "proceed" {
		t.Errorf("check_merchant of the brand: %v", out)
	}
}
