package main

import (
	"bytes"
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

	"github.com/waystation/waystation/internal/seller"
	"github.com/waystation/waystation/internal/x402"
)

// TestTheServicePaysAnUptoSellerBuiltFromTheX402ReferencePackages pays a seller that
// charges by use, made of the x402 reference packages: @x402/express with @x402/evm's
// upto scheme, up to five cents, its facilitator @x402/core's with @x402/evm's upto
// facilitator scheme, paying through Permit2 and x402's upto proxy on a chain faked
// in memory that checks the payer's Permit2 signature, its allowance, the window, the
// nonce and the permitted amount. Before the payer approved Permit2 on the token the
// offer is refused, nothing signed. Once approved, the person approves "up to" the
// maximum; the seller's verifier accepts the service's payload and settles what the
// call used, once: one transfer of that amount on the chain, the record and the
// receipt showing it beside the maximum, the agent's spend counting it. A replay of
// the very payment moves nothing. A call that would settle more than the maximum
// moves nothing either: Permit2 refuses it.
func TestTheServicePaysAnUptoSellerBuiltFromTheX402ReferencePackages(t *testing.T) {
	t.Parallel()
	node := referenceTool(t, "Node.js", "WAYSTATION_NODE", "../../var/tools/node-*/node_modules/node-linux-*/bin/node")
	dir := referenceTool(t, "the x402 v2 reference packages", "WAYSTATION_X402_V2_DIR", "../../var/tools/x402-express-2.*")
	seller := startReferenceSeller(t, node, "x402-seller-upto.mjs", dir, referencePayTo)
	signer, err := x402.ParseSigner(testPayerKey)
	if err != nil {
		t.Fatal(err)
	}
	host := strings.TrimPrefix(seller.base, "http://")
	dbURL := demoDatabase(t)
	userKey, agentKey := apiKeys(t, dbURL)
	srv := serveLogged(t, map[string]string{"DATABASE_URL": dbURL, "LOOPBACK_HTTP": "true", "LOG_FORMAT": "json",
		"PAYMENT_ALLOW_HOSTS": host, "X402_PAYER_KEY": testPayerKey, "X402_PAYER_NETWORKS": "eip155:84532",
		"X402_RPC_URLS": "eip155:84532=" + seller.base + "/rpc"})
	agent := agentCall(t, srv.base, agentKey, nil)
	user := agentCall(t, srv.base, userKey, nil)

	var s struct{ ID string }
	if code := agent("POST", "/sessions", `{"type":"purchase","description":"Buy a metered report","clientSessionId":"upto"}`, &s); code != 201 {
		t.Fatalf("session: %d", code)
	}
	type asked struct {
		Request struct{ ID string }
		Payment struct{ ID string }
	}
	ask := func(id, query string) (asked, int, string) {
		var out struct {
			asked
			Code string
		}
		code := agent("POST", "/sessions/"+s.ID+"/x402/payments", `{"clientRequestId":"`+id+`","maximumDebit":"0.05",
			"httpRequest":{"url":"`+seller.base+`/report?topic=tides`+query+`"}}`, &out)
		return out.asked, code, out.Code
	}

	// Without the payer's one-time Permit2 approval nothing could move: refused
	// before the person is asked, and not remembered: the same ask passes once the
	// approval is made.
	if _, code, problem := ask("metered", "&use=3000"); code != 422 || problem != "permit2_approval_required" {
		t.Fatalf("ask before the Permit2 approval: %d %s, want 422 permit2_approval_required\n%s", code, problem, srv.logs)
	}
	res, err := http.Post(seller.base+"/approve?owner="+signer.Address(), "", nil)
	if err != nil || res.StatusCode != 204 {
		t.Fatalf("approve Permit2: %v %v", res, err)
	}
	res.Body.Close()

	type paid struct {
		Status, Payer, AgentID      string
		Failure, Transaction        *string
		SettledAmount, SettledValue *string
		Offer                       struct{ Scheme, Amount, Value string }
	}
	pay := func(id, query string) (asked, paid, string) {
		t.Helper()
		a, code, problem := ask(id, query)
		if code != 201 {
			t.Fatalf("ask %s: %d %s\n%s\nseller:\n%s", id, code, problem, srv.logs, seller.logs)
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
		return a, p, req.Params.Summary
	}

	first, p, _ := pay("metered", "&use=3000")
	if p.Status != "settled" || p.Offer.Scheme != "upto" || p.Offer.Amount != "50000" || p.Offer.Value != "0.05" ||
		p.SettledAmount == nil || *p.SettledAmount != "3000" || p.SettledValue == nil || *p.SettledValue != "0.003" {
		t.Fatalf("the payment %+v (settled %v %v), want settled 3000 (0.003) of up to 50000\n%s\nseller:\n%s",
			p, deref(p.SettledAmount), deref(p.SettledValue), srv.logs, seller.logs)
	}
	ledger := seller.ledger(t)
	if len(ledger) != 1 || ledger[0].Value != "3000" || !strings.EqualFold(ledger[0].To, referencePayTo) ||
		!strings.EqualFold(ledger[0].From, signer.Address()) {
		t.Fatalf("the chain's transfers %+v, want one of 3000 from the payer to the payee", ledger)
	}
	if p.Transaction == nil || !strings.EqualFold(*p.Transaction, ledger[0].Transaction) {
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

	// The very payment, sent again, moves nothing: its nonce is used.
	var headers []string
	getJSON(t, seller.base+"/payments", &headers)
	if len(headers) != 1 {
		t.Fatalf("the seller received %d payments, want 1", len(headers))
	}
	req, _ := http.NewRequest("GET", seller.base+"/report?topic=tides&use=3000", nil)
	req.Header.Set(x402.HeaderPaymentV2, headers[0])
	res, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode == 200 || len(seller.ledger(t)) != 1 {
		t.Errorf("a replay answered %d and the chain holds %d transfers, want a refusal and 1", res.StatusCode, len(seller.ledger(t)))
	}

	// A call whose use passes the maximum: the facilitator and Permit2 refuse to
	// settle more than was signed, so nothing moves. The seller's refusal leaves the
	// payment unknown until its deadline, counted at its maximum meanwhile.
	_, over, _ := pay("over", "&use=60000")
	if over.Status == "settled" || len(seller.ledger(t)) != 1 {
		t.Errorf("a settlement above the maximum: the payment is %s and the chain holds %d transfers, want nothing moved",
			over.Status, len(seller.ledger(t)))
	}
	user("GET", "/agents/"+p.AgentID+"/spending-limits", "", &lim)
	t.Logf("above the maximum: the payment is %s, the agent's spend today %s", over.Status, lim.Spent.Today)
	if over.Status == "unknown" && lim.Spent.Today != "0.053" {
		t.Errorf("the agent's spend today with a payment open: %q, want 0.053 (0.003 settled and the 0.05 maximum open)", lim.Spent.Today)
	}
}

func getJSON(t *testing.T, url string, out any) {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if err := json.NewDecoder(res.Body).Decode(out); err != nil {
		t.Fatalf("%s: %v", url, err)
	}
}

// TestAnUptoSellerThatSettlesAndThenAnswers402IsRecordedPaid puts a hostile proxy
// (seller.Liar) in front of the upto reference seller: the seller's facilitator
// settles what the call used, and the proxy answers 402 with the offer again. The
// payment is left unknown, then settled from the chain: Permit2's nonce bitmap says
// that it moved, and a bounded query of the token's Transfer logs from the payer to
// the payee, over the blocks of the authorization's window, finds the transaction
// carrying its nonce and what it moved. Settled once, not delivered, one transfer on
// the chain, recorded at what moved (3000), not at the maximum.
func TestAnUptoSellerThatSettlesAndThenAnswers402IsRecordedPaid(t *testing.T) {
	t.Parallel()
	p, ledger, spent, logs := payUptoThroughLiar(t, seller.LieRefused, 3000)
	if p.Status != "settled" || p.Delivered == nil || *p.Delivered || p.SettledAmount == nil || *p.SettledAmount != "3000" {
		t.Fatalf("the payment %s, delivered %v, settled %s: want settled, not delivered, at 3000, what moved\n%s",
			p.Status, p.Delivered, deref(p.SettledAmount), logs)
	}
	if len(ledger) != 1 || ledger[0].Value != "3000" {
		t.Fatalf("the chain's transfers %+v, want one of 3000", ledger)
	}
	if p.Transaction == nil || !strings.EqualFold(*p.Transaction, ledger[0].Transaction) {
		t.Errorf("the payment names transaction %s, the chain %s", deref(p.Transaction), ledger[0].Transaction)
	}
	if spent != "0.003" {
		t.Errorf("the agent's spend today %q, want 0.003, what moved", spent)
	}
}

// TestAnUptoSellerThatUnderstatesWhatItSettledIsRecordedAtWhatTheChainShows puts a
// hostile proxy in front of the upto reference seller that settles 40000 of the
// 50000 maximum and answers, with the report, a settlement claiming 4000. The chain's
// word wins: the settlement transaction's receipt shows 40000 leaving the payer for
// the payee, so the record, the receipt and the agent's spend say 40000, and the
// seller's misstatement is recorded as a lie is: paid, not delivered as answered.
func TestAnUptoSellerThatUnderstatesWhatItSettledIsRecordedAtWhatTheChainShows(t *testing.T) {
	t.Parallel()
	p, ledger, spent, logs := payUptoThroughLiar(t, seller.LieUnderstated, 40000)
	if len(ledger) != 1 || ledger[0].Value != "40000" {
		t.Fatalf("the chain's transfers %+v, want one of 40000", ledger)
	}
	if p.Status != "settled" || p.SettledAmount == nil || *p.SettledAmount != "40000" || p.SettledValue == nil || *p.SettledValue != "0.04" {
		t.Fatalf("the payment %s, settled %s (%s): want settled at 40000 (0.04), what the chain shows\n%s",
			p.Status, deref(p.SettledAmount), deref(p.SettledValue), logs)
	}
	if spent != "0.04" {
		t.Errorf("the agent's spend today %q, want 0.04, what moved", spent)
	}
	if p.Delivered == nil || *p.Delivered {
		t.Errorf("delivered %v: want the seller's misstatement recorded as a lie, not delivered as answered", p.Delivered)
	}
	if p.Transaction == nil || !strings.EqualFold(*p.Transaction, ledger[0].Transaction) {
		t.Errorf("the payment names transaction %s, the chain %s", deref(p.Transaction), ledger[0].Transaction)
	}
}

// uptoPayment is an upto payment as the API shows it.
type uptoPayment struct {
	Status                                   string
	Delivered                                *bool
	SettledAmount, SettledValue, Transaction *string
}

// payUptoThroughLiar pays the upto reference seller, behind a seller.Liar telling
// lie, for a call using use atomic units of its 50000 maximum, and answers the
// payment once it is settled or failed, the chain's transfers, the agent's spend
// today and the server's and the seller's logs.
func payUptoThroughLiar(t *testing.T, lie string, use int) (uptoPayment, []referenceTransfer, string, string) {
	t.Helper()
	r := payUpto(t, lie, nil, use)
	return r.payment, r.ledger, r.spent, r.logs
}

// uptoPaid is what payUpto answers: the payment once settled or failed, the chain's
// transfers, the agent's spend today, the server's and the seller's logs, and the
// agent's claim of the request's artifact.
type uptoPaid struct {
	payment     uptoPayment
	ledger      []referenceTransfer
	spent, logs string
	claim       func(out any) int
}

// payUpto is payUptoThroughLiar with the seller reached directly when lie is "",
// and the service reading the chain through rpc, when not nil, given the chain's RPC.
func payUpto(t *testing.T, lie string, rpc func(chain http.Handler) http.Handler, use int) uptoPaid {
	t.Helper()
	node := referenceTool(t, "Node.js", "WAYSTATION_NODE", "../../var/tools/node-*/node_modules/node-linux-*/bin/node")
	dir := referenceTool(t, "the x402 v2 reference packages", "WAYSTATION_X402_V2_DIR", "../../var/tools/x402-express-2.*")
	ref := startReferenceSeller(t, node, "x402-seller-upto.mjs", dir, referencePayTo)
	signer, _ := x402.ParseSigner(testPayerKey)
	if res, err := http.Post(ref.base+"/approve?owner="+signer.Address(), "", nil); err != nil || res.StatusCode != 204 {
		t.Fatalf("approve Permit2: %v %v", res, err)
	}
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
		"PAYMENT_ALLOW_HOSTS": host, "X402_PAYER_KEY": testPayerKey, "X402_PAYER_NETWORKS": "eip155:84532",
		"X402_RPC_URLS": "eip155:84532=" + chain})
	agent := agentCall(t, srv.base, agentKey, nil)
	user := agentCall(t, srv.base, userKey, nil)
	var s struct{ ID string }
	if code := agent("POST", "/sessions", `{"type":"purchase","description":"Buy a metered report","clientSessionId":"upto-liar"}`, &s); code != 201 {
		t.Fatalf("session: %d", code)
	}
	var a struct {
		Request struct{ ID string }
		Payment struct{ ID string }
	}
	if code := agent("POST", "/sessions/"+s.ID+"/x402/payments", `{"clientRequestId":"lied-to","maximumDebit":"0.05",
		"httpRequest":{"url":"http://`+host+`/report?topic=tides&use=`+strconv.Itoa(use)+`"}}`, &a); code != 201 {
		t.Fatalf("ask: %d\n%s", code, srv.logs)
	}
	if code := user("POST", "/sessions/"+s.ID+"/requests/"+a.Request.ID+"/decision", `{"decision":"approve"}`, nil); code != 200 {
		t.Fatalf("approve: %d", code)
	}
	var p uptoPayment
	var agentID struct{ AgentID string }
	eventually(60*time.Second, func() bool {
		agent("GET", "/sessions/"+s.ID+"/x402/payments/"+a.Payment.ID, "", &p)
		return p.Status == "settled" || p.Status == "failed"
	})
	agent("GET", "/sessions/"+s.ID+"/x402/payments/"+a.Payment.ID, "", &agentID)
	var lim struct {
		Spent struct{ Today string }
	}
	if code := user("GET", "/agents/"+agentID.AgentID+"/spending-limits", "", &lim); code != 200 {
		t.Fatalf("spending limits: %d", code)
	}
	return uptoPaid{payment: p, ledger: ref.ledger(t), spent: lim.Spent.Today, logs: srv.logs.String() + "\nseller:\n" + ref.logs.String(),
		claim: func(out any) int { return agent("POST", "/sessions/"+s.ID+"/requests/"+a.Request.ID+"/claim", "", out) }}
}

// TestAnUptoPaymentWhoseChainIsSilentAtFirstIsRecordedAtWhatMovedOnceItAnswers pays
// the upto reference seller with the chain's RPC failing the first time the
// settlement the seller named is read, right after its success answer. What moved
// is not known then: the payment is left unknown, counted at its maximum, with the
// seller's answer kept; once the chain answers, it is recorded at what moved (3000,
// not the maximum), delivered, the report given to the agent.
func TestAnUptoPaymentWhoseChainIsSilentAtFirstIsRecordedAtWhatMovedOnceItAnswers(t *testing.T) {
	t.Parallel()
	// The chain's RPC, failing the first read of a transaction.
	var mu sync.Mutex
	failed := 0
	r := payUpto(t, "", func(chain http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			var call struct{ Method string }
			json.Unmarshal(body, &call)
			mu.Lock()
			fail := call.Method == "eth_getTransactionByHash" && failed == 0
			if fail {
				failed++
			}
			mu.Unlock()
			if fail {
				http.Error(w, "unavailable", http.StatusServiceUnavailable)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			r.ContentLength = int64(len(body))
			chain.ServeHTTP(w, r)
		})
	}, 3000)
	p, ledger := r.payment, r.ledger
	mu.Lock()
	if failed != 1 {
		t.Errorf("the chain failed %d reads of a transaction, want 1", failed)
	}
	mu.Unlock()
	if len(ledger) != 1 || ledger[0].Value != "3000" {
		t.Fatalf("the chain's transfers %+v, want one of 3000", ledger)
	}
	if p.Status != "settled" || p.SettledAmount == nil || *p.SettledAmount != "3000" || p.Delivered == nil || !*p.Delivered ||
		p.Transaction == nil || !strings.EqualFold(*p.Transaction, ledger[0].Transaction) {
		t.Fatalf("the payment %s, settled %s, delivered %v, transaction %s: want settled at 3000, delivered, in %s\n%s",
			p.Status, deref(p.SettledAmount), p.Delivered != nil && *p.Delivered, deref(p.Transaction), ledger[0].Transaction, r.logs)
	}
	var art struct {
		Payment struct{ SettledAmount string }
	}
	if code := r.claim(&art); code != 200 || art.Payment.SettledAmount != "3000" {
		t.Errorf("claim: %d %+v", code, art)
	}
	if r.spent != "0.003" {
		t.Errorf("the agent's spend today %q, want 0.003, what moved", r.spent)
	}
}
