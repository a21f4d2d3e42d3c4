package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gagliardetto/solana-go"

	"github.com/waystation/waystation/internal/seller"
	"github.com/waystation/waystation/internal/x402"
)

// TestTheServicePaysASolanaUptoSellerBuiltFromTheX402ReferencePackages pays a seller
// that charges by use on Solana, made of the x402 reference packages: @x402/express
// with @x402/svm's upto server scheme, up to five cents, its facilitator
// @x402/core's with @x402/svm's upto facilitator scheme, on a chain faked in memory
// as far as the payment-channels program's open, settle_and_seal and distribute need
// (x402-seller-svm-upto.mjs). The person approves "up to" the maximum; the seller's
// verifier accepts the service's open, the facilitator sends it (the maximum leaves
// the payer's account for the channel), and settles what the call used with the
// seller's voucher: the payee gets that, once, and the rest comes back to the
// payer; the record, the receipt and the agent's spend show the settled amount. A
// replay of the very payment moves nothing: its channel is already open. A call
// whose use passes the maximum moves nothing to the payee, and its deposit, held in
// the channel, is counted at the maximum while the payment stays unknown.
func TestTheServicePaysASolanaUptoSellerBuiltFromTheX402ReferencePackages(t *testing.T) {
	t.Parallel()
	node := referenceTool(t, "Node.js", "WAYSTATION_NODE", "../../var/tools/node-*/node_modules/node-linux-*/bin/node")
	dir := referenceTool(t, "the x402 Solana reference packages", "WAYSTATION_X402_SVM_DIR", "../../var/tools/x402-svm-2.*")
	seller := startReferenceSeller(t, node, "x402-seller-svm-upto.mjs", dir, referenceSolanaPayTo)
	key, err := solana.PrivateKeyFromBase58(testSolanaPayerKey)
	if err != nil {
		t.Fatal(err)
	}
	payer := key.PublicKey().String()
	host := strings.TrimPrefix(seller.base, "http://")
	dbURL := demoDatabase(t)
	userKey, agentKey := apiKeys(t, dbURL)
	srv := serveLogged(t, map[string]string{"DATABASE_URL": dbURL, "LOOPBACK_HTTP": "true", "LOG_FORMAT": "json",
		"PAYMENT_ALLOW_HOSTS": host, "SOLANA_PAYER_KEY": testSolanaPayerKey, "SOLANA_PAYER_NETWORKS": "solana-devnet",
		"SOLANA_RPC_URL": seller.base + "/rpc"})
	agent := agentCall(t, srv.base, agentKey, nil)
	user := agentCall(t, srv.base, userKey, nil)

	var s struct{ ID string }
	if code := agent("POST", "/sessions", `{"type":"purchase","description":"Buy a metered report","clientSessionId":"svm-upto"}`, &s); code != 201 {
		t.Fatalf("session: %d", code)
	}
	type paid struct {
		Status, Payer, AgentID      string
		Failure, Transaction        *string
		SettledAmount, SettledValue *string
		Offer                       struct{ Scheme, Amount, Value string }
	}
	type asked struct {
		Request struct{ ID string }
		Payment struct{ ID string }
	}
	pay := func(id, query string) (asked, paid) {
		t.Helper()
		var a asked
		if code := agent("POST", "/sessions/"+s.ID+"/x402/payments", `{"clientRequestId":"`+id+`","maximumDebit":"0.05",
			"httpRequest":{"url":"`+seller.base+`/report?topic=tides`+query+`"}}`, &a); code != 201 {
			t.Fatalf("ask %s: %d\n%s\nseller:\n%s", id, code, srv.logs, seller.logs)
		}
		var req struct {
			Params struct{ Summary, Amount string }
		}
		agent("GET", "/sessions/"+s.ID+"/requests/"+a.Request.ID, "", &req)
		if !strings.HasPrefix(req.Params.Summary, "Pay up to 0.05 USDC to ") || req.Params.Amount != "0.05" {
			t.Errorf("the approval request says %+v, want up to 0.05 USDC", req.Params)
		}
		if code := user("POST", "/sessions/"+s.ID+"/requests/"+a.Request.ID+"/decision", `{"decision":"approve"}`, nil); code != 200 {
			t.Fatalf("approve: %d", code)
		}
		var p paid
		eventually(60*time.Second, func() bool {
			agent("GET", "/sessions/"+s.ID+"/x402/payments/"+a.Payment.ID, "", &p)
			return p.Status == "settled" || p.Status == "failed" || p.Status == "unknown"
		})
		return a, p
	}

	first, p := pay("metered", "&use=3000")
	if p.Status != "settled" || p.Offer.Scheme != "upto" || p.Offer.Amount != "50000" || p.Offer.Value != "0.05" || p.Payer != payer ||
		p.SettledAmount == nil || *p.SettledAmount != "3000" || p.SettledValue == nil || *p.SettledValue != "0.003" {
		t.Fatalf("the payment %+v (settled %v %v), want settled 3000 (0.003) of up to 50000\n%s\nseller:\n%s",
			p, deref(p.SettledAmount), deref(p.SettledValue), srv.logs, seller.logs)
	}
	ledger := seller.ledger(t)
	if len(ledger) != 1 || ledger[0].Value != "3000" || ledger[0].To != referenceSolanaPayTo || ledger[0].From != payer {
		t.Fatalf("the chain's transfers %+v, want one of 3000 from the payer to the payee", ledger)
	}
	if p.Transaction == nil || *p.Transaction != ledger[0].Transaction {
		t.Errorf("the payment names transaction %s, the chain %s", deref(p.Transaction), ledger[0].Transaction)
	}
	var art struct {
		Payment struct{ Amount, Value, SettledAmount, SettledValue, Status string }
	}
	if code := agent("POST", "/sessions/"+s.ID+"/requests/"+first.Request.ID+"/claim", "", &art); code != 200 ||
		art.Payment.Status != "settled" || art.Payment.Amount != "50000" || art.Payment.SettledAmount != "3000" || art.Payment.SettledValue != "0.003" {
		t.Fatalf("claim: %d %+v", code, art)
	}
	var lim struct {
		Spent struct{ Today string }
	}
	if code := user("GET", "/agents/"+p.AgentID+"/spending-limits", "", &lim); code != 200 || lim.Spent.Today != "0.003" {
		t.Errorf("the agent's spend today: %d %q, want 0.003 (what settled, not the maximum)", code, lim.Spent.Today)
	}

	// The very payment, sent again, moves nothing: its channel is open already.
	var headers []string
	getJSON(t, seller.base+"/payments", &headers)
	if len(headers) != 1 {
		t.Fatalf("the seller received %d payments, want 1", len(headers))
	}
	req, _ := http.NewRequest("GET", seller.base+"/report?topic=tides&use=3000", nil)
	req.Header.Set(x402.HeaderPaymentV2, headers[0])
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode == 200 || len(seller.ledger(t)) != 1 {
		t.Errorf("a replay answered %d and the chain holds %d transfers, want a refusal and 1", res.StatusCode, len(seller.ledger(t)))
	}

	// A call whose use passes the maximum: the facilitator refuses to settle more
	// than the deposit, so the payee gets nothing. But the open went before the call:
	// the maximum left the payer's account for the channel, where a voucher may
	// still settle it until the channel's expiresAt, and only a close after the
	// grace period returns it. The seller's error leaves the payment unknown; the
	// chain, read again, shows the open and no settlement, which before the channel
	// expires says only that none has come yet: the payment stays unknown, counted
	// at its maximum in the agent's spend, until the seller's facilitator's cleanup
	// may have returned the deposit (TestASolanaUptoDepositThatComesBackIsNotSpent).
	overAsked, over := pay("over", "&use=60000")
	time.Sleep(6 * time.Second) // the resolver's next look at the chain (every 5 s)
	agent("GET", "/sessions/"+s.ID+"/x402/payments/"+overAsked.Payment.ID, "", &over)
	if len(seller.ledger(t)) != 1 {
		t.Errorf("a settlement above the maximum: the chain holds %d transfers, want nothing moved to the payee", len(seller.ledger(t)))
	}
	if over.Status != "unknown" {
		t.Errorf("a deposit not settled before the channel expires: the payment is %s, settled %s, want unknown", over.Status, deref(over.SettledAmount))
	}
	if user("GET", "/agents/"+p.AgentID+"/spending-limits", "", &lim); lim.Spent.Today != "0.053" {
		t.Errorf("the agent's spend today: %q, want 0.053 (0.003 settled and the 0.05 deposit held)", lim.Spent.Today)
	}
}

// TestASolanaUptoSellerThatSettlesAndThenAnswers402IsRecordedPaid puts a hostile
// proxy (seller.Liar) in front of the Solana upto reference seller: its facilitator
// opens the channel and settles what the call used, and the proxy answers 402 with
// the offer again. The payment is left unknown, then settled from the chain (the
// open found among the payer's transactions, the distribute among the channel's):
// settled once, not delivered, one transfer to the payee, and recorded at what the
// distribute kept of the deposit (3000), not at the maximum.
func TestASolanaUptoSellerThatSettlesAndThenAnswers402IsRecordedPaid(t *testing.T) {
	t.Parallel()
	ps, ledger, spent, logs := paySolanaUptoThroughLiar(t, seller.LieRefused, 3000)
	p := ps[0]
	if p.Status != "settled" || p.Delivered == nil || *p.Delivered || p.SettledAmount == nil || *p.SettledAmount != "3000" {
		t.Fatalf("the payment %s, delivered %v, settled %s: want settled, not delivered, at 3000, what moved\n%s",
			p.Status, p.Delivered, deref(p.SettledAmount), logs)
	}
	if len(ledger) != 1 || ledger[0].Value != "3000" {
		t.Fatalf("the chain's transfers %+v, want one of 3000", ledger)
	}
	if p.Transaction == nil || *p.Transaction != ledger[0].Transaction || spent != "0.003" {
		t.Errorf("the payment names transaction %s, the chain %s; the agent's spend %q, want 0.003",
			deref(p.Transaction), ledger[0].Transaction, spent)
	}
}

// TestASolanaUptoSellerThatMisstatesWhatMovedIsRecordedAtWhatTheChainShows puts a
// hostile proxy in front of the Solana upto reference seller that passes its report
// on with a settlement answer that lies: a tenth of what settled, ten times it, or
// (on the second of two payments) the transaction of the first, another channel's.
// The chain's word wins: the distribute of the payment's own channel, read from
// the chain, shows what the payer kept back of its deposit, so the record, the
// receipt and the agent's spend say what moved, the transaction is the channel's
// settlement, and the seller's misstatement is recorded as a lie is: paid, not
// delivered as answered.
func TestASolanaUptoSellerThatMisstatesWhatMovedIsRecordedAtWhatTheChainShows(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		lie   string
		uses  []int
		spent string
	}{
		{seller.LieUnderstated, []int{40000}, "0.04"},
		{seller.LieOverstated, []int{3000}, "0.003"},
		{seller.LieOtherTransaction, []int{3000, 7000}, "0.01"},
	} {
		t.Run(c.lie, func(t *testing.T) {
			t.Parallel()
			ps, ledger, spent, logs := paySolanaUptoThroughLiar(t, c.lie, c.uses...)
			if len(ledger) != len(c.uses) {
				t.Fatalf("the chain's transfers %+v, want %d", ledger, len(c.uses))
			}
			for i, p := range ps {
				use := strconv.Itoa(c.uses[i])
				lied := c.lie != seller.LieOtherTransaction || i > 0 // its first settlement is passed on as it is
				if ledger[i].Value != use {
					t.Errorf("payment %d: the chain moved %s, want %s", i, ledger[i].Value, use)
				}
				if p.Status != "settled" || p.SettledAmount == nil || *p.SettledAmount != use {
					t.Fatalf("payment %d: %s, settled %s: want settled at %s, what the chain shows\n%s", i, p.Status, deref(p.SettledAmount), use, logs)
				}
				if p.Transaction == nil || *p.Transaction != ledger[i].Transaction {
					t.Errorf("payment %d names transaction %s, the chain's settlement %s", i, deref(p.Transaction), ledger[i].Transaction)
				}
				if p.Delivered == nil || *p.Delivered == lied {
					t.Errorf("payment %d: delivered %v, want %v (a misstatement is recorded as a lie)", i, p.Delivered != nil && *p.Delivered, !lied)
				}
			}
			if spent != c.spent {
				t.Errorf("the agent's spend today %q, want %s, what moved", spent, c.spent)
			}
		})
	}
}

// paySolanaUptoThroughLiar pays the Solana upto reference seller, behind a
// seller.Liar telling lie, once for each of uses (atomic units of its 50000
// maximum), and answers the payments once each is settled or failed, the chain's
// transfers, the agent's spend today and the server's and the seller's logs.
func paySolanaUptoThroughLiar(t *testing.T, lie string, uses ...int) ([]uptoPayment, []referenceTransfer, string, string) {
	t.Helper()
	return paySolanaUpto(t, lie, nil, uses...)
}

// paySolanaUpto is paySolanaUptoThroughLiar with the seller reached directly when
// lie is "", and the service reading the chain through rpc, when not nil, given
// the chain's RPC.
func paySolanaUpto(t *testing.T, lie string, rpc func(chain http.Handler) http.Handler, uses ...int) ([]uptoPayment, []referenceTransfer, string, string) {
	t.Helper()
	node := referenceTool(t, "Node.js", "WAYSTATION_NODE", "../../var/tools/node-*/node_modules/node-linux-*/bin/node")
	dir := referenceTool(t, "the x402 Solana reference packages", "WAYSTATION_X402_SVM_DIR", "../../var/tools/x402-svm-2.*")
	ref := startReferenceSeller(t, node, "x402-seller-svm-upto.mjs", dir, referenceSolanaPayTo)
	target, _ := url.Parse(strings.Replace(ref.base, "localhost", "127.0.0.1", 1))
	host := strings.TrimPrefix(ref.base, "http://")
	if lie != "" {
		proxy := httptest.NewServer(seller.NewLiar(target, lie))
		t.Cleanup(proxy.Close)
		host = "localhost" + proxy.URL[strings.LastIndex(proxy.URL, ":"):]
	}
	chain := ref.base + "/rpc"
	if rpc != nil {
		front := httptest.NewServer(rpc(httputil.NewSingleHostReverseProxy(target)))
		t.Cleanup(front.Close)
		chain = front.URL + "/rpc"
	}
	dbURL := demoDatabase(t)
	userKey, agentKey := apiKeys(t, dbURL)
	srv := serveLogged(t, map[string]string{"DATABASE_URL": dbURL, "LOOPBACK_HTTP": "true", "LOG_FORMAT": "json",
		"PAYMENT_ALLOW_HOSTS": host, "SOLANA_PAYER_KEY": testSolanaPayerKey, "SOLANA_PAYER_NETWORKS": "solana-devnet",
		"SOLANA_RPC_URL": chain})
	agent := agentCall(t, srv.base, agentKey, nil)
	user := agentCall(t, srv.base, userKey, nil)
	var s struct{ ID string }
	if code := agent("POST", "/sessions", `{"type":"purchase","description":"Buy a metered report","clientSessionId":"svm-upto-liar"}`, &s); code != 201 {
		t.Fatalf("session: %d", code)
	}
	var out []uptoPayment
	var agentID struct{ AgentID string }
	for i, use := range uses {
		var a struct {
			Request struct{ ID string }
			Payment struct{ ID string }
		}
		if code := agent("POST", "/sessions/"+s.ID+"/x402/payments", `{"clientRequestId":"lied-to-`+strconv.Itoa(i)+`","maximumDebit":"0.05",
			"httpRequest":{"url":"http://`+host+`/report?topic=tides&use=`+strconv.Itoa(use)+`"}}`, &a); code != 201 {
			t.Fatalf("ask: %d\n%s", code, srv.logs)
		}
		if code := user("POST", "/sessions/"+s.ID+"/requests/"+a.Request.ID+"/decision", `{"decision":"approve"}`, nil); code != 200 {
			t.Fatalf("approve: %d", code)
		}
		var p uptoPayment
		eventually(60*time.Second, func() bool {
			agent("GET", "/sessions/"+s.ID+"/x402/payments/"+a.Payment.ID, "", &p)
			return p.Status == "settled" || p.Status == "failed"
		})
		agent("GET", "/sessions/"+s.ID+"/x402/payments/"+a.Payment.ID, "", &agentID)
		out = append(out, p)
	}
	var lim struct {
		Spent struct{ Today string }
	}
	if code := user("GET", "/agents/"+agentID.AgentID+"/spending-limits", "", &lim); code != 200 {
		t.Fatalf("spending limits: %d", code)
	}
	return out, ref.ledger(t), lim.Spent.Today, srv.logs.String() + "\nseller:\n" + ref.logs.String()
}

// TestASolanaUptoPaymentWhoseChainIsBehindIsRecordedAtWhatMovedOnceItShowsIt pays
// the Solana upto reference seller, which answers its report and the settlement,
// with the service's RPC a few slots behind the seller's facilitator: its first
// read after the answer shows neither the settlement the seller named nor any
// transaction of the channel. That is not "nothing moved": the payment is left
// unknown, and once the chain shows the settlement it is recorded at what moved
// (3000, not the maximum), delivered.
func TestASolanaUptoPaymentWhoseChainIsBehindIsRecordedAtWhatMovedOnceItShowsIt(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	lagged := 0
	behind := func(chain http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			var call struct {
				ID     json.RawMessage
				Method string
			}
			json.Unmarshal(body, &call)
			mu.Lock()
			lag := lagged == 0 && (call.Method == "getTransaction" || call.Method == "getSignaturesForAddress")
			if lag && call.Method == "getSignaturesForAddress" {
				lagged++ // the chain catches up after its first listing of the channel
			}
			mu.Unlock()
			if lag {
				result := "null"
				if call.Method == "getSignaturesForAddress" {
					result = "[]"
				}
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(call.ID)+`,"result":`+result+`}`)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			chain.ServeHTTP(w, r)
		})
	}
	ps, ledger, spent, logs := paySolanaUpto(t, "", behind, 3000)
	mu.Lock()
	if lagged != 1 {
		t.Errorf("the chain was behind for %d listings of the channel, want 1", lagged)
	}
	mu.Unlock()
	p := ps[0]
	if len(ledger) != 1 || ledger[0].Value != "3000" {
		t.Fatalf("the chain's transfers %+v, want one of 3000", ledger)
	}
	if p.Status != "settled" || p.SettledAmount == nil || *p.SettledAmount != "3000" || p.Delivered == nil || !*p.Delivered ||
		p.Transaction == nil || *p.Transaction != ledger[0].Transaction || spent != "0.003" {
		t.Fatalf("the payment %s, settled %s, delivered %v, transaction %s, the agent's spend %q: want settled at 3000, delivered, in %s, 0.003 spent\n%s",
			p.Status, deref(p.SettledAmount), p.Delivered != nil && *p.Delivered, deref(p.Transaction), spent, ledger[0].Transaction, logs)
	}
}

// TestTheServicePaysASolanaUptoSellerThatNamesNoSlot pays the Solana upto reference
// seller run as the reference server runs without an rpcUrl: its offer names no
// extra.recentSlot. The service reads the slot beside the blockhash and opens the
// channel there; the seller's facilitator, reading its own slot, accepts the open,
// and settles what the call used, once.
func TestTheServicePaysASolanaUptoSellerThatNamesNoSlot(t *testing.T) {
	t.Parallel()
	node := referenceTool(t, "Node.js", "WAYSTATION_NODE", "../../var/tools/node-*/node_modules/node-linux-*/bin/node")
	dir := referenceTool(t, "the x402 Solana reference packages", "WAYSTATION_X402_SVM_DIR", "../../var/tools/x402-svm-2.*")
	seller := startReferenceSeller(t, node, "x402-seller-svm-upto.mjs", dir, referenceSolanaPayTo, "no-slot")
	host := strings.TrimPrefix(seller.base, "http://")
	dbURL := demoDatabase(t)
	userKey, agentKey := apiKeys(t, dbURL)
	srv := serveLogged(t, map[string]string{"DATABASE_URL": dbURL, "LOOPBACK_HTTP": "true", "LOG_FORMAT": "json",
		"PAYMENT_ALLOW_HOSTS": host, "SOLANA_PAYER_KEY": testSolanaPayerKey, "SOLANA_PAYER_NETWORKS": "solana-devnet",
		"SOLANA_RPC_URL": seller.base + "/rpc"})
	agent := agentCall(t, srv.base, agentKey, nil)
	var s struct{ ID string }
	if code := agent("POST", "/sessions", `{"type":"purchase","description":"Buy a metered report","clientSessionId":"svm-upto-no-slot"}`, &s); code != 201 {
		t.Fatalf("session: %d", code)
	}
	var a struct {
		Request struct{ ID string }
		Payment struct{ ID string }
	}
	if code := agent("POST", "/sessions/"+s.ID+"/x402/payments", `{"clientRequestId":"no-slot","maximumDebit":"0.05",
		"httpRequest":{"url":"`+seller.base+`/report?topic=tides&use=3000"}}`, &a); code != 201 {
		t.Fatalf("ask: %d\n%s\nseller:\n%s", code, srv.logs, seller.logs)
	}
	if code := agentCall(t, srv.base, userKey, nil)("POST", "/sessions/"+s.ID+"/requests/"+a.Request.ID+"/decision",
		`{"decision":"approve"}`, nil); code != 200 {
		t.Fatalf("approve: %d", code)
	}
	var p struct {
		Status        string
		SettledAmount *string
	}
	eventually(60*time.Second, func() bool {
		agent("GET", "/sessions/"+s.ID+"/x402/payments/"+a.Payment.ID, "", &p)
		return p.Status == "settled" || p.Status == "failed" || p.Status == "unknown"
	})
	if p.Status != "settled" || p.SettledAmount == nil || *p.SettledAmount != "3000" {
		t.Fatalf("the payment %s, settled %s: want settled 3000\n%s\nseller:\n%s", p.Status, deref(p.SettledAmount), srv.logs, seller.logs)
	}
	if ledger := seller.ledger(t); len(ledger) != 1 || ledger[0].Value != "3000" || ledger[0].To != referenceSolanaPayTo {
		t.Fatalf("the chain's transfers %+v, want one of 3000 to the payee", ledger)
	}
	var headers []string
	getJSON(t, seller.base+"/payments", &headers)
	if len(headers) != 1 {
		t.Fatalf("the seller received %d payments, want 1", len(headers))
	}
	doc, _ := base64.StdEncoding.DecodeString(headers[0])
	var sent struct {
		Accepted struct{ Extra map[string]any }
		Payload  struct{ OpenSlot string }
	}
	if err := json.Unmarshal(doc, &sent); err != nil || sent.Accepted.Extra["recentSlot"] != nil || sent.Payload.OpenSlot != "345678901" {
		t.Errorf("the offer paid named slot %v, the open is at %q: want none named and the chain's 345678901 (%v)",
			sent.Accepted.Extra["recentSlot"], sent.Payload.OpenSlot, err)
	}
}
