package api_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"strings"
	"testing"
	"time"

	"github.com/gagliardetto/solana-go"

	"github.com/waystation/waystation/internal/payment"
	"github.com/waystation/waystation/internal/seller"
	"github.com/waystation/waystation/internal/x402"
)

// solanaSeed makes the test's Solana payer key.
var solanaSeed = bytes.Repeat([]byte{0x31}, 32)

// devnetHashes answer the seller's recent blockhash for Solana's devnet, as an RPC
// node would, and count the reads.
type devnetHashes struct{ reads *counter }

func (devnetHashes) Has(network string) bool {
	return x402.NormalizeNetwork(network) == seller.DefaultSolanaNetwork
}
func (h devnetHashes) LatestBlockhash(context.Context, string) (string, error) {
	h.reads.add()
	return seller.DefaultSolanaBlockhash, nil
}

func withSolanaPayer(t *testing.T, reads *counter) func(*payment.Service) {
	return func(s *payment.Service) {
		signer, err := x402.ParseSolanaSigner(solana.PrivateKey(ed25519.NewKeyFromSeed(solanaSeed)).String())
		if err != nil {
			t.Fatal(err)
		}
		s.Payer.Solana, s.Payer.SolanaNetworks, s.Payer.Blockhashes = signer, payment.Networks{seller.DefaultSolanaNetwork}, devnetHashes{reads}
	}
}

// TestASolanaPaymentIsApprovedAndPaidOnce walks the flow on Solana: the person
// approves the payee, amount, mint and network; the service reads a blockhash, signs
// the transfer and sends it once; a lost answer or a stop between signing and sending
// sends the very same transaction again, which the seller settles once; spend counts
// each payment once; the key is nowhere.
func TestASolanaPaymentIsApprovedAndPaidOnce(t *testing.T) {
	t.Parallel()
	reads := &counter{}
	p := newPayEnv(t, withSolanaPayer(t, reads))
	ctx := context.Background()
	solanaPayer := p.svc.Payer.AddressOn(seller.DefaultSolanaNetwork)

	var c created
	p.ask("sol-1", "/v2/solana?topic=tides", "0.05").want(t, 201).into(t, &c)
	if o := c.Payment.Offer; o.Network != seller.DefaultSolanaNetwork || o.PayTo != seller.DefaultSolanaPayTo || o.Amount != "10000" ||
		o.Value != "0.01" || o.Symbol != "USDC" || c.Request.Kind != "authorize_payment" {
		t.Fatalf("created %+v", c)
	}
	var pay struct{ Payer, Status string }
	p.call("GET", "/sessions/"+p.sid+"/x402/payments/"+c.Payment.ID, p.agentKey, "").want(t, 200).into(t, &pay)
	if pay.Payer != solanaPayer {
		t.Fatalf("the payment's payer is %q, want the Solana key %s", pay.Payer, solanaPayer)
	}
	p.run()
	if reads.get() != 0 || len(p.seller.Ledger()) != 0 {
		t.Fatal("something was signed before the approval")
	}
	p.approve(c.Request.ID).want(t, 200)
	p.run()
	if st, f := p.payment(c.Payment.ID); st != "settled" {
		t.Fatalf("payment %s %v", st, f)
	}
	ledger := p.seller.Ledger()
	if len(ledger) != 1 || ledger[0].From != solanaPayer || ledger[0].To != seller.DefaultSolanaPayTo || ledger[0].Value != "10000" ||
		ledger[0].Network != seller.DefaultSolanaNetwork || reads.get() != 1 {
		t.Fatalf("ledger %+v, %d blockhash reads", ledger, reads.get())
	}

	// The seller settles and the answer is lost: taken again, the same transaction
	// goes out (a new one would carry another memo and settle a second transfer).
	lossy := &payment.Service{Store: p.store, Payer: p.svc.Payer, Log: p.svc.Log, Lease: time.Millisecond, Sender: dropAnswer{p.svc.Sender}}
	var lost created
	p.ask("sol-lost", "/v2/solana", "0.05").want(t, 201).into(t, &lost)
	p.approve(lost.Request.ID).want(t, 200)
	if did, err := lossy.Execute(ctx); !did || err != nil {
		t.Fatalf("lossy execute: %v %v", did, err)
	}
	if n := len(p.seller.Ledger()); n != 2 {
		t.Fatalf("%d transfers after the lost answer, want 2", n)
	}
	time.Sleep(5 * time.Millisecond)
	retry := &payment.Service{Store: p.store, Payer: p.svc.Payer, Log: p.svc.Log, Lease: time.Millisecond, Sender: p.svc.Sender}
	if did, err := retry.Execute(ctx); !did || err != nil {
		t.Fatalf("retry: %v %v", did, err)
	}
	if st, f := p.payment(lost.Payment.ID); st != "settled" {
		t.Fatalf("after the retry: %s %v", st, f)
	}
	if n := len(p.seller.Ledger()); n != 2 || reads.get() != 2 {
		t.Fatalf("%d transfers and %d blockhash reads after the retry, want 2 and 2", n, reads.get())
	}

	// Stopped after recording the signing, before sending: taken again, the payment
	// is signed over the recorded blockhash and goes out once.
	var stopped created
	p.ask("sol-stopped", "/v2/solana", "0.05").want(t, 201).into(t, &stopped)
	p.approve(stopped.Request.ID).want(t, 200)
	taken, err := p.store.Take(ctx, time.Minute)
	if err != nil || taken == nil || taken.ID != stopped.Payment.ID {
		t.Fatalf("take: %+v %v", taken, err)
	}
	now := time.Now().Unix()
	// The store keeps what it was signed with, a slot read beside the blockhash too.
	if err := p.store.MarkSigned(ctx, taken.ID, payment.Window{ValidAfter: now, ValidBefore: now + 120, Blockhash: seller.DefaultSolanaBlockhash, Slot: 345678901}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond)
	if again, err := p.store.Take(ctx, time.Millisecond); err != nil || again == nil || again.Slot != 345678901 || again.Blockhash != seller.DefaultSolanaBlockhash ||
		again.ValidBefore != now+120 {
		t.Fatalf("taken again: %+v %v", again, err)
	}
	time.Sleep(5 * time.Millisecond)
	if did, err := retry.Execute(ctx); !did || err != nil {
		t.Fatalf("after the stop: %v %v", did, err)
	}
	if st, f := p.payment(stopped.Payment.ID); st != "settled" {
		t.Fatalf("after the stop: %s %v", st, f)
	}
	if n := len(p.seller.Ledger()); n != 3 || reads.get() != 2 {
		t.Fatalf("%d transfers and %d blockhash reads, want 3 and 2", n, reads.get())
	}

	var me struct {
		Limits struct {
			Spending struct {
				Spent struct{ Today, ThisMonth string }
			}
		}
	}
	p.call("GET", "/agent/me", p.agentKey, "").want(t, 200).into(t, &me)
	if s := me.Limits.Spending.Spent; s.Today != "0.03" || s.ThisMonth != "0.03" {
		t.Errorf("spent %+v, want 0.03", s)
	}
	// Limits and the host list hold on Solana as on EVM.
	p.limits(`{"perPayment":"0.005","daily":"5","monthly":"50"}`)
	p.ask("sol-over", "/v2/solana", "0.05").want(t, 403, "spending_limit_exceeded")
	p.limits(`{"perPayment":"1","daily":"5","monthly":"50","paused":true}`)
	p.ask("sol-paused", "/v2/solana", "0.05").want(t, 403, "agent_paused")
	p.limits(`{"perPayment":"1","daily":"5","monthly":"50","hostsMode":"deny","hosts":["seller.test"]}`)
	p.ask("sol-denied", "/v2/solana", "0.05").want(t, 403, "host_not_allowed")

	secret := solana.PrivateKey(ed25519.NewKeyFromSeed(solanaSeed)).String()
	for _, a := range p.answers {
		if strings.Contains(a.body, secret[:16]) {
			t.Errorf("%s answered the Solana key", a.path)
		}
	}
	if strings.Contains(p.logs.String(), secret[:16]) || strings.Contains(tableText(t, p.store, "payments"), secret[:16]) {
		t.Error("the Solana key is in the log or the payments table")
	}
}
