package main

import (
	"bytes"
	"crypto/ed25519"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gagliardetto/solana-go"

	"github.com/waystation/waystation/internal/seller"
	"github.com/waystation/waystation/internal/x402"
)

// TestAReferenceSellerThatSettlesAndThenAnswers402IsRecordedPaid puts a hostile proxy
// in front of sellers built from the x402 reference packages (v2 and v1 on EVM, and
// Solana): the seller's own facilitator settles the service's payment, and the proxy
// answers 402 with the offer again. The replica that paid records the lie and is
// killed; another, started afterwards, settles the payment from the chain (the token's
// authorizationState on EVM, the payer's transactions on Solana): settled once, one
// transfer on the seller's chain, one authorization signed, the spend counted once,
// and the record and the receipt the agent claims saying the seller did not
// deliver. On Solana a payment the seller never settled stays unknown while its
// blockhash may still land it, and fails, its spend released, once it expired.
func TestAReferenceSellerThatSettlesAndThenAnswers402IsRecordedPaid(t *testing.T) {
	t.Parallel()
	node := referenceTool(t, "Node.js", "WAYSTATION_NODE", "../../var/tools/node-*/node_modules/node-linux-*/bin/node")
	solanaKey := solana.PrivateKey(ed25519.NewKeyFromSeed(bytes.Repeat([]byte{0x42}, 32))).String()
	bin := buildServer(t)
	for _, v := range []struct {
		name, script, dirEnv, dirGlob, payTo string
		svm                                  bool
	}{
		{"v2", "x402-seller-v2.mjs", "WAYSTATION_X402_V2_DIR", "../../var/tools/x402-express-2.*", referencePayTo, false},
		{"v1", "x402-seller-v1.mjs", "WAYSTATION_X402_V1_DIR", "../../var/tools/x402-express-1.*", referencePayTo, false},
		{"solana", "x402-seller-svm.mjs", "WAYSTATION_X402_SVM_DIR", "../../var/tools/x402-svm-2.*", referenceSolanaPayTo, true},
	} {
		t.Run(v.name, func(t *testing.T) {
			dir := referenceTool(t, "the x402 "+v.name+" reference packages", v.dirEnv, v.dirGlob)
			ref := startReferenceSeller(t, node, v.script, dir, v.payTo)
			target, _ := url.Parse(strings.Replace(ref.base, "localhost", "127.0.0.1", 1))
			liar := seller.NewLiar(target, seller.LieRefused)
			lied := make(chan struct{}, 1)
			proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				liar.ServeHTTP(w, r)
				if r.Header.Get(x402.HeaderPaymentV2)+r.Header.Get(x402.HeaderPaymentV1) != "" {
					select {
					case lied <- struct{}{}:
					default:
					}
				}
			}))
			t.Cleanup(proxy.Close)
			host := "localhost" + proxy.URL[strings.LastIndex(proxy.URL, ":"):]
			dbURL := demoDatabase(t)
			userKey, agentKey := apiKeys(t, dbURL)
			// The first replica reads no chain (on EVM), so that only the second can
			// settle the payment.
			env := func(chain bool) map[string]string {
				m := map[string]string{"DATABASE_URL": dbURL, "PAYMENT_ALLOW_HOSTS": host, "PAYMENT_LEASE": paymentLease.String(),
					"SITE_DIR": t.TempDir(), "LOOPBACK_HTTP": "true"}
				switch {
				case v.svm:
					m["SOLANA_PAYER_KEY"], m["SOLANA_PAYER_NETWORKS"], m["SOLANA_RPC_URL"] = solanaKey, "solana-devnet", ref.base+"/rpc"
				default:
					m["X402_PAYER_KEY"], m["X402_PAYER_NETWORKS"] = testPayerKey, "eip155:84532"
					if chain {
						m["X402_RPC_URLS"] = "eip155:84532=" + ref.base + "/rpc"
					}
				}
				return m
			}
			a := startChild(t, bin, env(false))
			agentA := agentCall(t, a.base, agentKey, nil)
			var s struct{ ID string }
			if code := agentA("POST", "/sessions", `{"type":"purchase","description":"Buy a report","clientSessionId":"liar"}`, &s); code != 201 {
				t.Fatalf("session: %d", code)
			}
			type asked struct {
				Request struct{ ID string }
				Payment struct{ ID string }
			}
			ask := func(agent func(method, path, body string, out any) int, id string) asked {
				t.Helper()
				var out asked
				if code := agent("POST", "/sessions/"+s.ID+"/x402/payments", `{"clientRequestId":"`+id+`","maximumDebit":"0.02",
					"httpRequest":{"url":"http://`+host+`/report?topic=tides"}}`, &out); code != 201 {
					t.Fatalf("ask: %d\n%s\nseller:\n%s", code, a.logs, ref.logs)
				}
				return out
			}
			approve := func(base, id string) {
				t.Helper()
				if code := agentCall(t, base, userKey, nil)("POST", "/sessions/"+s.ID+"/requests/"+id+"/decision",
					`{"decision":"approve"}`, nil); code != 200 {
					t.Fatalf("approve: %d", code)
				}
			}
			first := ask(agentA, "lied-to")
			approve(a.base, first.Request.ID)
			select {
			case <-lied:
			case <-time.After(60 * time.Second):
				t.Fatalf("the payment never reached the seller\n%s\nseller:\n%s", a.logs, ref.logs)
			}
			// The replica that heard the lie records what it makes of it, and dies.
			var heard struct{ Status string }
			if !eventually(30*time.Second, func() bool {
				agentA("GET", "/sessions/"+s.ID+"/x402/payments/"+first.Payment.ID, "", &heard)
				return heard.Status != "executing"
			}) {
				t.Fatalf("the lie was not recorded\n%s", a.logs)
			}
			if err := a.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			<-a.done
			b := startChild(t, bin, env(true))
			agent := agentCall(t, b.base, agentKey, nil)
			type paid struct {
				Status      string
				Failure     *string
				Delivered   *bool
				Transaction *string
			}
			await := func(id string, want ...string) paid {
				t.Helper()
				var pay paid
				eventually(60*time.Second, func() bool {
					agent("GET", "/sessions/"+s.ID+"/x402/payments/"+id, "", &pay)
					for _, w := range want {
						if pay.Status == w {
							return true
						}
					}
					return false
				})
				return pay
			}
			pay := await(first.Payment.ID, "settled", "failed")
			if pay.Status != "settled" || pay.Delivered == nil || *pay.Delivered {
				t.Fatalf("payment %s (%s, delivered %v), want settled and not delivered\n%s\nseller:\n%s", pay.Status, deref(pay.Failure),
					pay.Delivered, b.logs, ref.logs)
			}
			ledger := ref.ledger(t)
			if len(ledger) != 1 || liar.Payments() != 1 {
				t.Fatalf("%d transfers on the seller's chain and %d authorizations signed, want 1 and 1", len(ledger), liar.Payments())
			}
			if v.svm && (pay.Transaction == nil || *pay.Transaction != ledger[0].Transaction) {
				t.Errorf("the payment names transaction %s, the chain %s", deref(pay.Transaction), ledger[0].Transaction)
			}
			var art struct {
				Type    string
				Payment struct {
					Status    string
					Delivered *bool
					Response  *struct {
						Status int
						Body   string
					}
				}
			}
			if code := agent("POST", "/sessions/"+s.ID+"/requests/"+first.Request.ID+"/claim", "", &art); code != 200 ||
				art.Payment.Status != "settled" || art.Payment.Delivered == nil || *art.Payment.Delivered ||
				art.Payment.Response == nil || art.Payment.Response.Status != 402 || strings.Contains(art.Payment.Response.Body, "the reference seller's report") {
				t.Errorf("claim: %d %+v, want a settled receipt, not delivered, with the seller's 402", code, art)
			}
			spent := func() string {
				var me struct {
					Limits struct {
						Spending struct{ Spent struct{ Today string } }
					}
				}
				agent("GET", "/agent/me", "", &me)
				return me.Limits.Spending.Spent.Today
			}
			if got := spent(); got != "0.01" {
				t.Errorf("spent %s, want 0.01", got)
			}
			if !v.svm {
				return
			}
			// A refusal without a settlement: unknown while the blockhash may still
			// land the transaction, failed once it expired.
			liar.SetLie(seller.LieWithheld)
			second := ask(agent, "refused")
			approve(b.base, second.Request.ID)
			if pay := await(second.Payment.ID, "unknown", "settled", "failed"); pay.Status != "unknown" {
				t.Fatalf("payment %s (%s) while its blockhash is valid, want unknown", pay.Status, deref(pay.Failure))
			}
			if got := spent(); got != "0.02" {
				t.Errorf("spent %s while the second payment is unknown, want 0.02", got)
			}
			time.Sleep(6 * time.Second) // a check or two
			if pay := await(second.Payment.ID, "unknown", "settled", "failed"); pay.Status != "unknown" {
				t.Fatalf("payment %s (%s) while its blockhash is valid, want unknown", pay.Status, deref(pay.Failure))
			}
			res, err := http.Post(ref.base+"/expire", "application/json", nil)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if pay := await(second.Payment.ID, "settled", "failed"); pay.Status != "failed" || deref(pay.Failure) != "not_settled" {
				t.Fatalf("payment %s (%s) once its blockhash expired, want failed not_settled\n%s", pay.Status, deref(pay.Failure), b.logs)
			}
			if got := spent(); got != "0.01" {
				t.Errorf("spent %s once the second payment failed, want 0.01", got)
			}
			if n := len(ref.ledger(t)); n != 1 {
				t.Errorf("%d transfers, want 1", n)
			}
		})
	}
}
