package web

import (
	"strings"
	"testing"

	"github.com/waystation/waystation/internal/payment"
	"github.com/waystation/waystation/internal/request"
)

// A payment the chain shows paid while the seller answered 402 is shown to its
// person as paid and not delivered, with what the seller answered; an unknown one
// says what the person can do while it stays unknown.
func TestThePersonSeesAPaidCallTheSellerDidNotDeliver(t *testing.T) {
	lim := &payment.LimitsAndSpend{Limits: payment.DefaultLimits}
	no := false
	v := paymentView(&payment.Payment{Status: payment.StatusSettled, Delivered: &no,
		Answer: &request.SellerResponse{Status: 402, ContentType: "application/json", Bytes: 321}}, lim)
	for _, want := range []string{"Paid, and the seller did not deliver", "402 Payment Required (application/json, 321 bytes)", "not delivered"} {
		if !strings.Contains(v.StatusLabel, want) {
			t.Errorf("the label %q lacks %q", v.StatusLabel, want)
		}
	}
	if v := paymentView(&payment.Payment{Status: payment.StatusSettled, Delivered: &no}, lim); !strings.Contains(v.StatusLabel, "sent no answer") {
		t.Errorf("the label %q, for a payment whose answer never came", v.StatusLabel)
	}
	yes := true
	if v := paymentView(&payment.Payment{Status: payment.StatusSettled, Delivered: &yes}, lim); v.StatusLabel != paymentWords["settled"] {
		t.Errorf("a delivered payment reads %q", v.StatusLabel)
	}
	if v := paymentView(&payment.Payment{Status: payment.StatusUnknown}, lim); !strings.Contains(v.StatusLabel, "block explorer") ||
		!strings.Contains(v.StatusLabel, "X402_RPC_URLS") {
		t.Errorf("an unknown payment reads %q, without what the person can do", v.StatusLabel)
	}
}
