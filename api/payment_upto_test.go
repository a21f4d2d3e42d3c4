package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/waystation/waystation/internal/seller"
	"github.com/waystation/waystation/internal/x402"
)

// TestTheServicePaysTheLocalSellersMeteredRouteWhatItsChainShows pays the local
// seller's upto route (GET /v2/metered), reading its chain through its /rpc as a
// node: refused with permit2_approval_required until the payer approved Permit2, then
// approved "up to" 0.05 and settled at what the call used, as the chain's receipt of
// the settlement shows, the spend counting that.
func TestTheServicePaysTheLocalSellersMeteredRouteWhatItsChainShows(t *testing.T) {
	t.Parallel()
	p := newPayEnv(t)
	rpc := strings.Replace(p.base, "seller.test", "127.0.0.1", 1) + "/rpc"
	c, err := x402.ParseChains(seller.DefaultNetwork+"="+rpc, nil)
	if err != nil {
		t.Fatal(err)
	}
	p.svc.Chain = c
	p.ask("metered-1", "/v2/metered?use=4000", "0.05").want(t, 422, "permit2_approval_required")
	signer, _ := x402.ParseSigner(payerKey)
	res, err := http.Post(strings.TrimSuffix(rpc, "/rpc")+"/approve?owner="+signer.Address(), "", nil)
	if err != nil || res.StatusCode != 204 {
		t.Fatalf("approve Permit2: %v %v", res, err)
	}
	var a created
	p.ask("metered-1", "/v2/metered?use=4000", "0.05").want(t, 201).into(t, &a)
	if a.Payment.Offer.Amount != seller.UptoMaximum || a.Payment.Offer.Value != "0.05" {
		t.Fatalf("the offer %+v, want up to 50000 (0.05)", a.Payment.Offer)
	}
	p.approve(a.Request.ID).want(t, 200)
	p.run()
	var got struct {
		Status                      string
		Delivered                   *bool
		SettledAmount, SettledValue *string
		Transaction                 *string
	}
	p.call("GET", "/sessions/"+p.sid+"/x402/payments/"+a.Payment.ID, p.agentKey, "").want(t, 200).into(t, &got)
	ledger := p.seller.Ledger()
	if got.Status != "settled" || got.SettledAmount == nil || *got.SettledAmount != "4000" || got.SettledValue == nil ||
		*got.SettledValue != "0.004" || got.Delivered == nil || !*got.Delivered {
		t.Fatalf("the payment %+v (settled %v), want settled and delivered at 4000", got, got.SettledAmount)
	}
	if len(ledger) != 1 || ledger[0].Value != "4000" || got.Transaction == nil || !strings.EqualFold(*got.Transaction, ledger[0].Transaction) {
		t.Errorf("the ledger %+v, the payment's transaction %v", ledger, got.Transaction)
	}
	if spent := p.spentToday(); spent != "0.004" {
		t.Errorf("spent today %q, want 0.004", spent)
	}
}
