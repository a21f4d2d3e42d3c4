package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/waystation/waystation/internal/seller"
	"github.com/waystation/waystation/internal/x402"
)

// TestAReplicaKilledWhileTheSellerWorksLeavesThePaymentSettled replays a crash with
// real processes: replica A takes the approved payment and sends it; the seller
// settles it and, while it still works on its answer, A is killed with SIGKILL.
// Replica B, on the same database, takes the payment up once A's lease runs out,
// sends the same authorization again and is refused with 402, as the reference stack
// refuses a used nonce. The payment must end settled (from the chain: the seller's
// ledger read through /rpc), counted once in the agent's spend, its request
// fulfilled and its receipt claimable, and the ledger must hold one transfer.
func TestAReplicaKilledWhileTheSellerWorksLeavesThePaymentSettled(t *testing.T) {
	bin := buildServer(t)
	ts := httptest.NewUnstartedServer(nil)
	sel := seller.New(seller.Config{FacilitatorURL: "http://" + ts.Listener.Addr().String() + "/facilitator"})
	if err := sel.SetMode(seller.ModeReplayRefused); err != nil {
		t.Fatal(err)
	}
	settled := make(chan struct{})
	var first atomic.Bool
	ts.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		paid := r.Header.Get(x402.HeaderPaymentV2) != "" || r.Header.Get(x402.HeaderPaymentV1) != ""
		if paid && first.CompareAndSwap(false, true) {
			// The first sending settles; its answer is still being made when the
			// replica that sent it dies, and never reaches it.
			sel.ServeHTTP(httptest.NewRecorder(), r)
			close(settled)
			<-r.Context().Done()
			return
		}
		sel.ServeHTTP(w, r)
	})
	ts.Start()
	t.Cleanup(ts.Close)
	host := "localhost" + ts.URL[strings.LastIndex(ts.URL, ":"):]
	dbURL := demoDatabase(t)
	userKey, agentKey := apiKeys(t, dbURL)
	env := map[string]string{"DATABASE_URL": dbURL, "X402_PAYER_KEY": testPayerKey, "X402_PAYER_NETWORKS": "eip155:84532",
		"PAYMENT_ALLOW_HOSTS": host, "X402_RPC_URLS": seller.DefaultNetwork + "=" + ts.URL + "/rpc", "SITE_DIR": t.TempDir()}

	a := startChild(t, bin, env)
	agentA := agentCall(t, a.base, agentKey, nil)
	var s struct{ ID string }
	if code := agentA("POST", "/sessions", `{"type":"purchase","description":"Buy a report","clientSessionId":"replica-kill"}`, &s); code != 201 {
		t.Fatalf("session: %d", code)
	}
	var asked struct {
		Request struct{ ID string }
		Payment struct{ ID string }
	}
	if code := agentA("POST", "/sessions/"+s.ID+"/x402/payments", `{"clientRequestId":"p1","maximumDebit":"0.02",
		"httpRequest":{"url":"http://`+host+`/v2/report?topic=tides"}}`, &asked); code != 201 {
		t.Fatalf("ask: %d", code)
	}
	if code := agentCall(t, a.base, userKey, nil)("POST", "/sessions/"+s.ID+"/requests/"+asked.Request.ID+"/decision",
		`{"decision":"approve"}`, nil); code != 200 {
		t.Fatalf("approve: %d", code)
	}
	select {
	case <-settled:
	case <-time.After(30 * time.Second):
		t.Fatalf("replica A did not send the payment\n%s", a.logs)
	}
	if err := a.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-a.done
	killed := time.Now()

	b := startChild(t, bin, env)
	agentB := agentCall(t, b.base, agentKey, nil)
	var pay struct {
		Status  string
		Failure *string
	}
	if !eventually(60*time.Second, func() bool {
		agentB("GET", "/sessions/"+s.ID+"/x402/payments/"+asked.Payment.ID, "", &pay)
		return pay.Status == "settled" || pay.Status == "failed"
	}) || pay.Status != "settled" {
		t.Fatalf("payment %s %v a minute after the kill, want settled\n%s", pay.Status, pay.Failure, b.logs)
	}
	t.Logf("replica B settled the payment %s after replica A was killed", time.Since(killed).Round(100*time.Millisecond))
	if n := len(sel.Ledger()); n != 1 {
		t.Errorf("%d transfers, want 1", n)
	}
	var req struct{ Status string }
	agentB("GET", "/sessions/"+s.ID+"/requests/"+asked.Request.ID, "", &req)
	if req.Status != "fulfilled" {
		t.Errorf("request %s, want fulfilled", req.Status)
	}
	var art struct {
		Type    string
		Payment struct{ Status, Amount string }
	}
	if code := agentB("POST", "/sessions/"+s.ID+"/requests/"+asked.Request.ID+"/claim", "", &art); code != 200 ||
		art.Type != "payment" || art.Payment.Status != "settled" || art.Payment.Amount != "10000" {
		t.Errorf("claim: %d %+v", code, art)
	}
	var me struct {
		Limits struct {
			Spending struct{ Spent struct{ Today string } }
		}
	}
	agentB("GET", "/agent/me", "", &me)
	if got := me.Limits.Spending.Spent.Today; got != "0.01" {
		t.Errorf("spent today %s, want 0.01", got)
	}
}
