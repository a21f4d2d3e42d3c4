package web

import (
	"testing"
	"time"

	"github.com/waystation/waystation/internal/payment"
	"github.com/waystation/waystation/internal/x402"
)

// TestAnUptoPaymentShowsItsMaximumAndWhatSettled: the person approves "up to" the
// maximum, and once the seller settled, the page and the spend ledger show what moved
// beside it, and the ledger's total counts what moved, not the maximum.
func TestAnUptoPaymentShowsItsMaximumAndWhatSettled(t *testing.T) {
	lim := &payment.LimitsAndSpend{Limits: payment.DefaultLimits}
	o := payment.Offer{Scheme: x402.SchemeUpto, Symbol: "USDC", Value: 50_000}
	if v := paymentView(&payment.Payment{Status: payment.StatusPending, Offer: o}, lim); v.Amount != "up to 0.05 USDC" {
		t.Errorf("open: %q", v.Amount)
	}
	settled := payment.Micros(3_000)
	if v := paymentView(&payment.Payment{Status: payment.StatusSettled, Offer: o, SettledValue: &settled}, lim); v.Amount != "0.003 USDC paid, of up to 0.05 USDC" {
		t.Errorf("settled: %q", v.Amount)
	}
	if v := paymentView(&payment.Payment{Status: payment.StatusPending, Offer: payment.Offer{Scheme: x402.SchemeExact, Symbol: "USDC", Value: 10_000}}, lim); v.Amount != "0.01 USDC" {
		t.Errorf("exact: %q", v.Amount)
	}
	rows, total := ledgerRows([]payment.LedgerEntry{
		{Value: 50_000, Settled: &settled, UpTo: true, Symbol: "USDC", Status: payment.StatusSettled},
		{Value: 50_000, UpTo: true, Symbol: "USDC", Status: payment.StatusUnknown},
		{Value: 10_000, Symbol: "USDC", Status: payment.StatusSettled},
	}, time.Now())
	if rows[0].Amount != "0.003 USDC of up to 0.05 USDC" || rows[1].Amount != "up to 0.05 USDC" || rows[2].Amount != "0.01 USDC" || total != 13_000 {
		t.Errorf("ledger %q %q %q, total %s", rows[0].Amount, rows[1].Amount, rows[2].Amount, total)
	}
}
