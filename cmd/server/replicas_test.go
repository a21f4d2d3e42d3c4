package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gagliardetto/solana-go"
	"github.com/waystation/waystation/internal/seller"
	"github.com/waystation/waystation/internal/x402"
)

// TestAReplicaKilledAtEveryStepOfAPayment runs two replicas on one database and kills
// the one doing the work, with SIGKILL, at each step of a payment: after the ask,
// after the approval, with the payment taken but not signed (the executor re-reading
// the offer), signed and sent but never settled by the seller, settled by the seller
// but not answered, and answered but not recorded (its body still coming). The other
// replica must finish the payment within seconds (a payment left behind is taken up
// once its lease runs out): settled, exactly one transfer in the seller's ledger, the
// service's record in agreement with it, the request fulfilled and its receipt
// claimable, the agent's spend counting it once.
func TestAReplicaKilledAtEveryStepOfAPayment(t *testing.T) {
	t.Parallel()
	bin := buildServer(t)
	for _, step := range []string{"asked", "approved", "taken", "signed", "sent", "answered"} {
		t.Run(step, func(t *testing.T) { killAtStep(t, bin, step, payEVM) })
	}
}

// TestAReplicaKilledAtEveryStepOfAnUptoPayment kills the replica paying the local
// seller's metered route (upto on EVM, up to 0.05, the call using 0.003) at each step
// of the payment, as TestAReplicaKilledAtEveryStepOfAPayment does. The other replica
// sends the very same authorization again (its nonce and window were recorded before
// it left), or, when the seller refuses it as used, settles it from the chain: one
// payment for the approval, one transfer, of what the call used, and the record, the
// receipt and the agent's spend saying that amount, not the maximum.
func TestAReplicaKilledAtEveryStepOfAnUptoPayment(t *testing.T) {
	t.Parallel()
	bin := buildServer(t)
	for _, step := range []string{"asked", "approved", "taken", "signed", "sent", "answered"} {
		t.Run(step, func(t *testing.T) { killAtStep(t, bin, step, payEVMUpto) })
	}
}

// TestAReplicaKilledAtEveryStepOfASolanaUptoPayment kills the replica paying the
// Solana upto reference seller (up to 0.05, the call using 0.003) at each step of
// the payment, as TestAReplicaKilledAtEveryStepOfAPayment does. The other replica
// sends the very same open again (its nonce, blockhash and slot were recorded
// before it left, so it names the same channel), or, when the seller refuses it
// because the channel is open already, settles it from the chain: one payment for
// the approval, one channel opened, one settlement, of what the call used, and the
// record, the receipt and the agent's spend saying that amount, not the maximum.
func TestAReplicaKilledAtEveryStepOfASolanaUptoPayment(t *testing.T) {
	t.Parallel()
	bin := buildServer(t)
	for _, step := range []string{"asked", "approved", "taken", "signed", "sent", "answered"} {
		t.Run(step, func(t *testing.T) { killAtStep(t, bin, step, paySVMUpto) })
	}
}

// TestAReplicaKilledBetweenSigningAndSettlingASolanaPayment kills the replica paying
// on Solana once it signed and sent the transaction and before the seller answered
// (unsettled), and once the seller settled it but before its answer came back. The
// other replica sends the very same transaction again (the blockhash was recorded
// before it left): the seller, which would settle another transaction a second time,
// holds exactly one transfer.
func TestAReplicaKilledBetweenSigningAndSettlingASolanaPayment(t *testing.T) {
	t.Parallel()
	bin := buildServer(t)
	for _, step := range []string{"signed", "sent"} {
		t.Run(step, func(t *testing.T) { killAtStep(t, bin, step, paySVM) })
	}
}

// testSolanaPayerKey is the Solana payer the replicas pay with on Solana's devnet.
var testSolanaPayerKey = solana.PrivateKey(ed25519.NewKeyFromSeed(bytes.Repeat([]byte{0x77}, 32))).String()

// paymentLease is the lease the replicas run with: a payment left behind by a dead
// replica is taken up within it.
const paymentLease = 3 * time.Second

// What killAtStep pays: exact on EVM, exact on Solana, upto on EVM, or upto on
// Solana.
const (
	payEVM     = "evm"
	paySVM     = "svm"
	payEVMUpto = "evm-upto"
	paySVMUpto = "svm-upto"
)

// killedSeller is the seller a replica is killed paying: what serves the route,
// the route and its query, the agent's maximumDebit, the offer's amount, what
// moves (the upto call's use; "" when the offer's amount always does) and the
// agent's spend after, the replicas' settings for its chains, and its chain's
// transfers.
type killedSeller struct {
	handler                http.Handler
	route, query, maximum  string
	amount, settled, spent string
	env                    map[string]string
	ledger                 func() []referenceTransfer
	// channels, on Solana upto, are the channels the payments the seller received
	// open, each with its transactions on the chain.
	channels func() map[string]int
}

// sellerToKillAt is kind's seller. Exact and upto on EVM and exact on Solana are
// the local seller, its facilitator at facilitator; a sending repeated after a
// settlement is refused, as the reference stack refuses a used nonce (and the
// metered route a used upto nonce), while on Solana the seller answers the same
// transaction again (as Solana lands it once) and would settle another one a second
// time. Upto on Solana is the reference seller built from @x402/svm's upto
// schemes: a payment sent again opens a channel already open, and is refused.
func sellerToKillAt(t *testing.T, kind, facilitator string) killedSeller {
	t.Helper()
	if kind == paySVMUpto {
		node := referenceTool(t, "Node.js", "WAYSTATION_NODE", "../../var/tools/node-*/node_modules/node-linux-*/bin/node")
		dir := referenceTool(t, "the x402 Solana reference packages", "WAYSTATION_X402_SVM_DIR", "../../var/tools/x402-svm-2.*")
		ref := startReferenceSeller(t, node, "x402-seller-svm-upto.mjs", dir, referenceSolanaPayTo)
		target, _ := url.Parse(strings.Replace(ref.base, "localhost", "127.0.0.1", 1))
		return killedSeller{handler: httputil.NewSingleHostReverseProxy(target), route: "/report", query: "?topic=tides&use=3000",
			maximum: "0.05", amount: "50000", settled: "3000", spent: "0.003",
			env:    map[string]string{"SOLANA_PAYER_KEY": testSolanaPayerKey, "SOLANA_PAYER_NETWORKS": "solana-devnet", "SOLANA_RPC_URL": ref.base + "/rpc"},
			ledger: func() []referenceTransfer { return ref.ledger(t) }, channels: func() map[string]int { return openedChannels(t, ref) }}
	}
	sel := seller.New(seller.Config{FacilitatorURL: facilitator})
	rpc := strings.TrimSuffix(facilitator, "/facilitator") + "/rpc"
	k := killedSeller{handler: sel, route: "/v2/report", query: "?topic=tides", maximum: "0.02", amount: "10000", spent: "0.01",
		env: map[string]string{"X402_RPC_URLS": seller.DefaultNetwork + "=" + rpc},
		ledger: func() []referenceTransfer {
			var l []referenceTransfer
			for _, tr := range sel.Ledger() {
				l = append(l, referenceTransfer{Transaction: tr.Transaction, From: tr.From, To: tr.To, Value: tr.Value, Nonce: tr.Nonce, Asset: tr.Asset})
			}
			return l
		}}
	switch kind {
	case paySVM:
		k.route = "/v2/solana"
		k.env["SOLANA_PAYER_KEY"], k.env["SOLANA_PAYER_NETWORKS"], k.env["SOLANA_RPC_URL"] = testSolanaPayerKey, "solana-devnet", rpc
		return k
	case payEVMUpto:
		k.route, k.query, k.maximum, k.amount, k.settled, k.spent = "/v2/metered", "?topic=tides&use=3000", "0.05", seller.UptoMaximum, "3000", "0.003"
		// The payer's one-time approval of Permit2 on the token, made beforehand.
		signer, err := x402.ParseSigner(testPayerKey)
		if err != nil {
			t.Fatal(err)
		}
		rec := httptest.NewRecorder()
		sel.ServeHTTP(rec, httptest.NewRequest("POST", "/approve?owner="+signer.Address(), nil))
		if rec.Code != 204 {
			t.Fatalf("approve Permit2: %d", rec.Code)
		}
	}
	if err := sel.SetMode(seller.ModeReplayRefused); err != nil {
		t.Fatal(err)
	}
	return k
}

// openedChannels are the channels of the payments ref received, each with the
// number of its transactions on ref's chain.
func openedChannels(t *testing.T, ref referenceSeller) map[string]int {
	t.Helper()
	var headers []string
	getJSON(t, ref.base+"/payments", &headers)
	out := map[string]int{}
	for _, h := range headers {
		doc, _ := base64.StdEncoding.DecodeString(h)
		var sent struct{ Payload struct{ ChannelID string } }
		if err := json.Unmarshal(doc, &sent); err != nil {
			t.Fatalf("a payment the seller received: %v", err)
		}
		var rpc struct{ Result []struct{ Signature string } }
		body := `{"jsonrpc":"2.0","id":1,"method":"getSignaturesForAddress","params":["` + sent.Payload.ChannelID + `"]}`
		res, err := http.Post(ref.base+"/rpc", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		json.NewDecoder(res.Body).Decode(&rpc)
		res.Body.Close()
		out[sent.Payload.ChannelID] = len(rpc.Result)
	}
	return out
}

func killAtStep(t *testing.T, bin, step, kind string) {
	ts := httptest.NewUnstartedServer(nil)
	k := sellerToKillAt(t, kind, "http://"+ts.Listener.Addr().String()+"/facilitator")
	route := k.route
	var armed, fired atomic.Bool
	reached := make(chan string, 1) // the address of the replica at the step
	ts.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		paid := r.Header.Get(x402.HeaderPaymentV2) != "" || r.Header.Get(x402.HeaderPaymentV1) != ""
		hold := armed.Load() && r.URL.Path == route && (paid == (step != "taken")) && fired.CompareAndSwap(false, true)
		if !hold {
			k.handler.ServeHTTP(w, r)
			return
		}
		switch step {
		case "taken", "signed":
			// The offer's re-reading, or the paid call, is never answered: the
			// seller settles nothing.
		case "sent":
			k.handler.ServeHTTP(httptest.NewRecorder(), r) // settled; the answer never leaves
		case "answered":
			rec := httptest.NewRecorder()
			k.handler.ServeHTTP(rec, r)
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			w.Header().Del("Content-Length")
			w.WriteHeader(rec.Code)
			w.Write(rec.Body.Bytes()[:1]) // the settlement and the body's first byte
			w.(http.Flusher).Flush()
		}
		reached <- r.RemoteAddr
		<-r.Context().Done()
	})
	ts.Start()
	t.Cleanup(ts.Close)
	host := "localhost" + ts.URL[strings.LastIndex(ts.URL, ":"):]
	dbURL := demoDatabase(t)
	userKey, agentKey := apiKeys(t, dbURL)
	env := func() map[string]string {
		m := map[string]string{"DATABASE_URL": dbURL, "X402_PAYER_KEY": testPayerKey, "X402_PAYER_NETWORKS": "eip155:84532",
			"PAYMENT_ALLOW_HOSTS": host, "SITE_DIR": t.TempDir(), "PAYMENT_LEASE": paymentLease.String()}
		for name, v := range k.env {
			m[name] = v
		}
		return m
	}
	a, b := startChild(t, bin, env()), startChild(t, bin, env())
	kill := func(c *child) (survivor *child) {
		t.Helper()
		if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-c.done
		if c == a {
			return b
		}
		return a
	}

	agentA := agentCall(t, a.base, agentKey, nil)
	var s struct{ ID string }
	if code := agentA("POST", "/sessions", `{"type":"purchase","description":"Buy a report","clientSessionId":"kill-`+step+`"}`, &s); code != 201 {
		t.Fatalf("session: %d", code)
	}
	var asked struct {
		Request struct{ ID string }
		Payment struct{ ID string }
	}
	if code := agentA("POST", "/sessions/"+s.ID+"/x402/payments", `{"clientRequestId":"p1","maximumDebit":"`+k.maximum+`",
		"httpRequest":{"url":"http://`+host+route+k.query+`"}}`, &asked); code != 201 {
		t.Fatalf("ask: %d", code)
	}
	approve := func(c *child) {
		t.Helper()
		if code := agentCall(t, c.base, userKey, nil)("POST", "/sessions/"+s.ID+"/requests/"+asked.Request.ID+"/decision",
			`{"decision":"approve"}`, nil); code != 200 {
			t.Fatalf("approve: %d", code)
		}
	}
	var survivor *child
	var killed time.Time
	switch step {
	case "asked":
		survivor = kill(a)
		killed = time.Now()
		approve(survivor)
	case "approved":
		approve(a)
		survivor = kill(a)
		killed = time.Now()
	default:
		armed.Store(true)
		approve(a)
		var peer string
		select {
		case peer = <-reached:
		case <-time.After(30 * time.Second):
			t.Fatalf("no replica reached the step\nA:\n%s\nB:\n%s", a.logs, b.logs)
		}
		worker, err := childOfPeer(peer, a, b)
		if err != nil {
			t.Fatal(err)
		}
		survivor = kill(worker)
		killed = time.Now()
	}

	call := agentCall(t, survivor.base, agentKey, nil)
	var pay struct {
		Status        string
		Failure       *string
		Transaction   *string
		SettledAmount *string
	}
	if !eventually(30*time.Second, func() bool {
		call("GET", "/sessions/"+s.ID+"/x402/payments/"+asked.Payment.ID, "", &pay)
		return pay.Status == "settled" || pay.Status == "failed"
	}) || pay.Status != "settled" {
		t.Fatalf("payment %s %v 30s after the kill, want settled\n%s", pay.Status, pay.Failure, survivor.logs)
	}
	t.Logf("killed %s: the other replica settled the payment %s after the kill (lease %s)", step, time.Since(killed).Round(100*time.Millisecond), paymentLease)
	ledger := k.ledger()
	if len(ledger) != 1 {
		t.Fatalf("%d transfers, want 1", len(ledger))
	}
	if k.settled != "" && (ledger[0].Value != k.settled || pay.SettledAmount == nil || *pay.SettledAmount != k.settled) {
		t.Errorf("the chain moved %s, the record says settled %s: want %s both", ledger[0].Value, deref(pay.SettledAmount), k.settled)
	}
	if k.channels != nil {
		// One channel, whatever was sent again: its open and its settlement.
		if ch := k.channels(); len(ch) != 1 || slices.Collect(maps.Values(ch))[0] != 2 {
			t.Errorf("the payments sent open channels %v (with their transactions), want one, opened and settled", ch)
		}
	}
	if pay.Transaction != nil && *pay.Transaction != ledger[0].Transaction {
		t.Errorf("the record says transaction %s, the ledger %s", *pay.Transaction, ledger[0].Transaction)
	}
	var req struct{ Status string }
	call("GET", "/sessions/"+s.ID+"/requests/"+asked.Request.ID, "", &req)
	if req.Status != "fulfilled" {
		t.Errorf("request %s, want fulfilled", req.Status)
	}
	var art struct {
		Type    string
		Payment struct{ Status, Amount, SettledAmount string }
	}
	if code := call("POST", "/sessions/"+s.ID+"/requests/"+asked.Request.ID+"/claim", "", &art); code != 200 ||
		art.Type != "payment" || art.Payment.Status != "settled" || art.Payment.Amount != k.amount ||
		(k.settled != "" && art.Payment.SettledAmount != k.settled) {
		t.Errorf("claim: %d %+v", code, art)
	}
	var me struct {
		Limits struct {
			Spending struct{ Spent struct{ Today string } }
		}
	}
	call("GET", "/agent/me", "", &me)
	if got := me.Limits.Spending.Spent.Today; got != k.spent {
		t.Errorf("spent today %s, want %s", got, k.spent)
	}
}

// childOfPeer finds which of the children holds the TCP connection whose far end
// (seen from the seller) is peer: the socket bound to peer's port, among the
// children's open files.
func childOfPeer(peer string, children ...*child) (*child, error) {
	_, port, err := net.SplitHostPort(peer)
	if err != nil {
		return nil, err
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		return nil, fmt.Errorf("peer %q: %v", peer, err)
	}
	var inodes []string
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(table)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			// sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
			fields := strings.Fields(sc.Text())
			if len(fields) < 10 || !strings.HasSuffix(fields[1], fmt.Sprintf(":%04X", p)) {
				continue
			}
			inodes = append(inodes, fields[9])
		}
		f.Close()
	}
	for _, c := range children {
		dir := filepath.Join("/proc", strconv.Itoa(c.cmd.Process.Pid), "fd")
		fds, _ := os.ReadDir(dir)
		for _, fd := range fds {
			link, _ := os.Readlink(filepath.Join(dir, fd.Name()))
			for _, inode := range inodes {
				if link == "socket:["+inode+"]" {
					return c, nil
				}
			}
		}
	}
	return nil, fmt.Errorf("no child holds the connection from %s (sockets %v)", peer, inodes)
}

// TestLongPollsWakeAcrossReplicas: long polls and an event stream on one replica
// are woken by a change written through the other (within tens of milliseconds,
// logged): the session's events and a request's end are told to every replica
// through the database.
func TestLongPollsWakeAcrossReplicas(t *testing.T) {
	bin := buildServer(t)
	dbURL := demoDatabase(t)
	userKey, agentKey := apiKeys(t, dbURL)
	env := func() map[string]string { return map[string]string{"DATABASE_URL": dbURL, "SITE_DIR": t.TempDir()} }
	a, b := startChild(t, bin, env()), startChild(t, bin, env())
	agentA, agentB := agentCall(t, a.base, agentKey, nil), agentCall(t, b.base, agentKey, nil)
	var s struct{ ID string }
	if code := agentA("POST", "/sessions", `{"type":"task","description":"Wake-ups","clientSessionId":"wake"}`, &s); code != 201 {
		t.Fatalf("session: %d", code)
	}
	// Woken, an answer comes in tens of milliseconds (logged below); not woken, it
	// would come at the wait's end (20 s) or the request's expiry. The bound tells
	// the two apart on a busy machine, where the figure itself is not the test's.
	const slow = 5 * time.Second
	// An event appended on A wakes a long poll on B.
	for i := range 3 {
		type page struct {
			Items []struct{ Seq int64 }
		}
		var seen, woke page
		agentB("GET", "/sessions/"+s.ID+"/events?limit=200", "", &seen)
		last := int64(0)
		for _, e := range seen.Items {
			last = max(last, e.Seq)
		}
		done := make(chan time.Time, 1)
		go func() {
			agentB("GET", fmt.Sprintf("/sessions/%s/events?after=%d&wait=20", s.ID, last), "", &woke)
			done <- time.Now()
		}()
		time.Sleep(300 * time.Millisecond) // the poll is waiting
		start := time.Now()
		if code := agentA("POST", "/sessions/"+s.ID+"/events", fmt.Sprintf(`{"type":"runtime.step","clientEventId":"e%d"}`, i), nil); code != 201 {
			t.Fatalf("event: %d", code)
		}
		select {
		case at := <-done:
			took := at.Sub(start)
			t.Logf("event on A woke a long poll on B in %s", took.Round(time.Millisecond))
			if took > slow || len(woke.Items) == 0 {
				t.Errorf("the long poll on B answered %v after the event on A, with %d events", took, len(woke.Items))
			}
		case <-time.After(20 * time.Second):
			t.Fatal("the long poll on B was never woken")
		}
	}
	// An event stream on B carries an event appended on A.
	req, _ := http.NewRequest("GET", b.base+"/functions/v1/api/sessions/"+s.ID+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+agentKey)
	req.Header.Set("Accept", "text/event-stream")
	res, err := http.DefaultClient.Do(req)
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("stream on B: %v", err)
	}
	defer res.Body.Close()
	streamed := make(chan time.Time, 1)
	go func() {
		lines := bufio.NewScanner(res.Body)
		for lines.Scan() {
			if strings.Contains(lines.Text(), "streamed-e") {
				streamed <- time.Now()
				return
			}
		}
	}()
	time.Sleep(300 * time.Millisecond)
	sent := time.Now()
	if code := agentA("POST", "/sessions/"+s.ID+"/events", `{"type":"runtime.step","clientEventId":"streamed-e"}`, nil); code != 201 {
		t.Fatalf("event: %d", code)
	}
	select {
	case at := <-streamed:
		took := at.Sub(sent)
		t.Logf("event on A reached a stream on B in %s", took.Round(time.Millisecond))
		if took > slow {
			t.Errorf("the stream on B carried the event %v after it was appended on A", took)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the stream on B never carried the event")
	}

	// A request denied on A wakes the agent's long poll on B.
	var asked struct{ ID string }
	if code := agentA("POST", "/sessions/"+s.ID+"/requests", `{"clientRequestId":"r1","kind":"confirm","params":{"summary":"Go on?"}}`, &asked); code != 201 {
		t.Fatalf("request: %d", code)
	}
	done := make(chan time.Time, 1)
	var got struct{ Status string }
	go func() {
		agentB("GET", "/sessions/"+s.ID+"/requests/"+asked.ID+"?wait=20", "", &got)
		done <- time.Now()
	}()
	time.Sleep(300 * time.Millisecond)
	start := time.Now()
	if code := agentCall(t, a.base, userKey, nil)("POST", "/sessions/"+s.ID+"/requests/"+asked.ID+"/decision", `{"decision":"deny"}`, nil); code != 200 {
		t.Fatalf("deny: %d", code)
	}
	select {
	case at := <-done:
		took := at.Sub(start)
		t.Logf("a denial on A woke a long poll on B in %s", took.Round(time.Millisecond))
		if took > slow || got.Status != "denied" {
			t.Errorf("the long poll on B answered %q %v after the denial on A", got.Status, took)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the request's long poll on B was never woken")
	}
}

// TestTwoReplicasBehindNginx drives the whole flow only through nginx, with the
// repository's example configuration balancing two replicas in round robin: search,
// a session, an event, a request, its approval, a payment to the local seller and its
// claim, a webhook delivery, spans and an MCP call. Both replicas answer some of it,
// the payment is made once, and the webhook's receiver gets each event once.
func TestTwoReplicasBehindNginx(t *testing.T) {
	t.Parallel()
	bin := buildServer(t)
	ts := httptest.NewUnstartedServer(nil)
	sel := seller.New(seller.Config{FacilitatorURL: "http://" + ts.Listener.Addr().String() + "/facilitator"})
	ts.Config.Handler = sel
	ts.Start()
	t.Cleanup(ts.Close)
	sellerHost := "localhost" + ts.URL[strings.LastIndex(ts.URL, ":"):]

	type delivery struct{ ID, Type string }
	var mu sync.Mutex
	var delivered []delivery
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var d delivery
		json.NewDecoder(r.Body).Decode(&d)
		mu.Lock()
		delivered = append(delivered, d)
		mu.Unlock()
	}))
	t.Cleanup(receiver.Close)
	receiverHost := "localhost" + receiver.URL[strings.LastIndex(receiver.URL, ":"):]

	dbURL := demoDatabase(t)
	userKey, agentKey := apiKeys(t, dbURL)
	site := t.TempDir()
	env := func(siteDir string) map[string]string {
		return map[string]string{"DATABASE_URL": dbURL, "X402_PAYER_KEY": testPayerKey, "X402_PAYER_NETWORKS": "eip155:84532",
			"PAYMENT_ALLOW_HOSTS": sellerHost, "WEBHOOK_ALLOW_HOSTS": receiverHost, "SITE_DIR": siteDir,
			"LOG_LEVEL": "INFO", "ACCESS_LOG": "true", "LOOPBACK_HTTP": "true"}
	}
	a, b := startChild(t, bin, env(site)), startChild(t, bin, env(t.TempDir()))
	edge, _ := startNginx(t, site, strings.TrimPrefix(a.base, "http://"), strings.TrimPrefix(b.base, "http://"))
	agent, user := agentCall(t, edge, agentKey, nil), agentCall(t, edge, userKey, nil)

	var hook struct{ ID string }
	if code := user("POST", "/webhooks", `{"url":"http://`+receiverHost+`/hook","events":["request.waiting_user","request.fulfilled"]}`, &hook); code != 201 {
		t.Fatalf("webhook: %d", code)
	}
	var found struct{ Items []struct{ Slug string } }
	if code := agent("GET", "/api/public/v1/services?q=weather+forecast", "", &found); code != 200 {
		t.Fatalf("search: %d", code)
	}
	var s struct{ ID string }
	if code := agent("POST", "/sessions", `{"type":"purchase","description":"Buy a report","clientSessionId":"edge"}`, &s); code != 201 {
		t.Fatalf("session: %d", code)
	}
	if code := agent("POST", "/sessions/"+s.ID+"/events", `{"type":"runtime.step","clientEventId":"e1"}`, nil); code != 201 {
		t.Fatalf("event: %d", code)
	}
	var asked struct {
		Request struct{ ID string }
		Payment struct{ ID string }
	}
	if code := agent("POST", "/sessions/"+s.ID+"/x402/payments", `{"clientRequestId":"p1","maximumDebit":"0.02",
		"httpRequest":{"url":"http://`+sellerHost+`/v2/report?topic=tides"}}`, &asked); code != 201 {
		t.Fatalf("ask: %d", code)
	}
	var resolved struct{ Fields []any }
	if code := agent("POST", "/sessions/"+s.ID+"/resolve", `{"targetUrl":"http://`+sellerHost+`/v2/report","fields":[{"key":"email"}]}`, &resolved); code != 200 {
		t.Fatalf("resolve: %d", code)
	}
	approveInTheConsole(t, edge, userKey, asked.Request.ID)
	var req struct{ Status string }
	if code := agent("GET", "/sessions/"+s.ID+"/requests/"+asked.Request.ID+"?wait=25", "", &req); code != 200 || req.Status != "fulfilled" {
		t.Fatalf("the request's long poll: %d %s", code, req.Status)
	}
	var art struct {
		Type    string
		Payment struct{ Status string }
	}
	if code := agent("POST", "/sessions/"+s.ID+"/requests/"+asked.Request.ID+"/claim", "", &art); code != 200 || art.Payment.Status != "settled" {
		t.Fatalf("claim: %d %+v", code, art)
	}
	if n := len(sel.Ledger()); n != 1 {
		t.Errorf("%d transfers, want 1", n)
	}
	span := `{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"4bf92f3577b34da6a3ce929d0e0e4736","spanId":"00f067aa0ba902b7","name":"step",
		"attributes":[{"key":"workflow.session.id","value":{"stringValue":"` + s.ID + `"}}]}]}]}]}`
	if code := agent("POST", "/v1/traces", span, nil); code != 200 {
		t.Fatalf("traces: %d", code)
	}
	var spans struct{ Items []struct{ Name string } }
	if agent("GET", "/sessions/"+s.ID+"/traces", "", &spans); len(spans.Items) != 1 {
		t.Errorf("spans: %+v", spans)
	}
	mcp, err := connectMCP(t, edge, agentKey)
	if err != nil {
		t.Fatalf("MCP through nginx: %v", err)
	}
	if res, err := mcp.session.ListTools(context.Background(), nil); err != nil {
		t.Errorf("MCP tools through nginx: %v", err)
	} else if len(res.Tools) != 16 {
		t.Errorf("MCP tools through nginx: %d, want an agent's 16", len(res.Tools))
	}

	// Each event the webhook asked for reached its receiver once.
	if !eventually(15*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(delivered) >= 2
	}) {
		t.Fatalf("deliveries: %+v", delivered)
	}
	time.Sleep(2 * time.Second) // a second sending would come by now
	mu.Lock()
	ids := map[string]int{}
	for _, d := range delivered {
		ids[d.ID]++
	}
	mu.Unlock()
	for id, n := range ids {
		if n != 1 {
			t.Errorf("delivery %s sent %d times", id, n)
		}
	}
	if len(ids) != 2 {
		t.Errorf("deliveries %+v, want request.waiting_user and request.fulfilled", delivered)
	}
	// Both replicas answered calls the balancer sent them.
	for name, c := range map[string]*child{"A": a, "B": b} {
		if n := strings.Count(c.logs.String(), "path=/functions/v1/api/"); n < 3 {
			t.Errorf("replica %s answered %d calls through the balancer", name, n)
		}
	}
}

// TestRollingRestartsBehindNginx restarts two replicas behind nginx one after the
// other (SIGTERM, then a new process on the same socket, the binary migrating first)
// while agents write and read through the balancer: no answer is a 5xx or a lost
// connection, and every write that was acknowledged is there afterwards. The test
// holds each replica's listening socket for its whole length and passes it to each
// process in turn, as systemd's socket units do: the port never closes, and the
// connections nginx opens as one process stops wait for the next.
func TestRollingRestartsBehindNginx(t *testing.T) {
	t.Parallel()
	bin := buildServer(t)
	dbURL := demoDatabase(t)
	_, agentKey := apiKeys(t, dbURL)
	site := t.TempDir()
	ports := make([]string, 2)
	sockets := make([]*os.File, 2)
	for i := range ports {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		ports[i] = ln.Addr().String()
		if sockets[i], err = ln.(*net.TCPListener).File(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sockets[i].Close() })
	}
	start := func(i int) *child {
		// The drain ends once nginx holds none of the replica's connections: it closes
		// the ones it leaves idle after the example upstream's keepalive_timeout (2 s).
		// Ten seconds is only its bound.
		return startActivated(t, bin, map[string]string{"DATABASE_URL": dbURL, "SITE_DIR": site, "SHUTDOWN_DRAIN": "10s",
			"LOG_LEVEL": "INFO", "ACCESS_LOG": "false"}, sockets[i])
	}
	replicas := []*child{start(0), start(1)}
	edge, errorLog := startNginx(t, site, ports...)
	api := edge + "/functions/v1/api"

	type ack struct{ session, event string }
	var (
		mu      sync.Mutex
		acked   []ack
		bad     []string
		calls   atomic.Int64
		slowest time.Duration
	)
	client := &http.Client{Timeout: 30 * time.Second}
	do := func(method, path, body string) (int, []byte) {
		req, _ := http.NewRequest(method, api+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+agentKey)
		req.Header.Set("Content-Type", "application/json")
		calls.Add(1)
		sent := time.Now()
		res, err := client.Do(req)
		if err != nil {
			mu.Lock()
			bad = append(bad, method+" "+path+": "+err.Error())
			mu.Unlock()
			return 0, nil
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		mu.Lock()
		slowest = max(slowest, time.Since(sent))
		if res.StatusCode >= 500 {
			bad = append(bad, fmt.Sprintf("%s %s: %d %s", method, path, res.StatusCode, b))
		}
		mu.Unlock()
		return res.StatusCode, b
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			var s struct{ ID string }
			code, b := do("POST", "/sessions", fmt.Sprintf(`{"type":"task","description":"Rolling","clientSessionId":"roll-%d"}`, w))
			if code != 201 || json.Unmarshal(b, &s) != nil {
				t.Errorf("worker %d: session %d %s", w, code, b)
				return
			}
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				id := fmt.Sprintf("w%d-%d", w, i)
				if code, _ := do("POST", "/sessions/"+s.ID+"/events", `{"type":"runtime.step","clientEventId":"`+id+`"}`); code == 201 {
					mu.Lock()
					acked = append(acked, ack{s.ID, id})
					mu.Unlock()
				}
				do("GET", "/sessions/"+s.ID, "")
			}
		})
	}
	time.Sleep(2 * time.Second)
	// The new binary migrates first, then each replica is restarted in turn.
	migrate := exec.Command(bin, "migrate")
	migrate.Env = append(os.Environ(), "DATABASE_URL="+dbURL, "AUTH_PEPPER="+testPepper, "SECRETS_KEY="+testSecretsKey)
	if out, err := migrate.CombinedOutput(); err != nil {
		t.Fatalf("migrate: %v\n%s", err, out)
	}
	var timeline []string
	for i, c := range replicas {
		// A connection of the test's own, open when the drain begins, holds the drain
		// until it is used: the replica answers on it, and closes it after.
		direct := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{}}
		if res, err := direct.Get("http://" + ports[i] + "/functions/v1/api/health"); err != nil {
			t.Fatalf("replica %d: %v", i, err)
		} else {
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
		}
		timeline = append(timeline, fmt.Sprintf("%s SIGTERM to replica %d", time.Now().Format("15:04:05.000"), i))
		c.cmd.Process.Signal(syscall.SIGTERM)
		time.Sleep(300 * time.Millisecond)
		if res, err := direct.Get("http://" + ports[i] + "/functions/v1/api/health"); err != nil {
			t.Errorf("replica %d draining: %v", i, err)
		} else {
			res.Body.Close()
			if res.StatusCode != 200 || !res.Close {
				t.Errorf("replica %d draining: %d, Connection %q; want 200 and close", i, res.StatusCode, res.Header.Get("Connection"))
			}
		}
		<-c.done
		timeline = append(timeline, fmt.Sprintf("%s replica %d stopped; its log:\n%s", time.Now().Format("15:04:05.000"), i, c.logs))
		if c.err != nil {
			t.Errorf("replica %d stopped with %v\n%s", i, c.err, c.logs)
		}
		replicas[i] = start(i)
		time.Sleep(2 * time.Second)
	}
	close(stop)
	wg.Wait()
	t.Logf("%d calls through nginx across two rolling restarts, %d events acknowledged, %d answers 5xx or lost, the slowest in %s",
		calls.Load(), len(acked), len(bad), slowest.Round(time.Millisecond))
	for _, b := range bad {
		t.Error(b)
	}
	if len(bad) > 0 || testing.Verbose() {
		t.Logf("the restarts:\n%s", strings.Join(timeline, "\n"))
	}
	// The connections to a replica nginx found closed or reset, which it passed on to
	// the other replica when it could (a GET), are logged.
	log, _ := os.ReadFile(errorLog)
	for line := range strings.Lines(string(log)) {
		if strings.Contains(line, "upstream") && !strings.Contains(line, "buffered to a temporary file") {
			t.Logf("nginx: %s", line)
		}
	}
	// Every acknowledged event is kept.
	kept := map[string]bool{}
	sessions := map[string]bool{}
	for _, a := range acked {
		sessions[a.session] = true
	}
	for sid := range sessions {
		for after := 0; ; {
			_, b := do("GET", fmt.Sprintf("/sessions/%s/events?after=%d&limit=200", sid, after), "")
			var p struct {
				Items []struct {
					Seq           int
					ClientEventID string `json:"clientEventId"`
				}
			}
			json.Unmarshal(b, &p)
			for _, e := range p.Items {
				kept[sid+"/"+e.ClientEventID] = true
				after = e.Seq
			}
			if len(p.Items) < 200 {
				break
			}
		}
	}
	for _, a := range acked {
		if !kept[a.session+"/"+a.event] {
			t.Errorf("acknowledged event %s of session %s is lost", a.event, a.session)
		}
	}
}

// TestAReplicaKilledMidDeliveryLeavesTheWebhookToTheOther: the replica sending a
// webhook delivery is killed while the receiver holds the request; the other replica
// sends it again once the delivery's lease runs out, with the same id, which the
// receiver drops repeats by; the delivery ends delivered.
func TestAReplicaKilledMidDeliveryLeavesTheWebhookToTheOther(t *testing.T) {
	t.Parallel()
	bin := buildServer(t)
	var mu sync.Mutex
	var ids []string
	var held atomic.Bool
	reached := make(chan string, 1)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var d struct{ ID string }
		json.NewDecoder(r.Body).Decode(&d)
		mu.Lock()
		ids = append(ids, d.ID)
		mu.Unlock()
		if held.CompareAndSwap(false, true) {
			reached <- r.RemoteAddr
			<-r.Context().Done() // the sender dies before it hears back
		}
	}))
	t.Cleanup(receiver.Close)
	receiverHost := "localhost" + receiver.URL[strings.LastIndex(receiver.URL, ":"):]
	dbURL := demoDatabase(t)
	userKey, agentKey := apiKeys(t, dbURL)
	env := func() map[string]string {
		return map[string]string{"DATABASE_URL": dbURL, "WEBHOOK_ALLOW_HOSTS": receiverHost, "SITE_DIR": t.TempDir()}
	}
	a, b := startChild(t, bin, env()), startChild(t, bin, env())
	var hook struct{ ID string }
	if code := agentCall(t, a.base, userKey, nil)("POST", "/webhooks", `{"url":"http://`+receiverHost+`/hook","events":["request.waiting_user"]}`, &hook); code != 201 {
		t.Fatalf("webhook: %d", code)
	}
	agent := agentCall(t, a.base, agentKey, nil)
	var s struct{ ID string }
	if code := agent("POST", "/sessions", `{"type":"task","description":"Hooks","clientSessionId":"hook-kill"}`, &s); code != 201 {
		t.Fatalf("session: %d", code)
	}
	if code := agent("POST", "/sessions/"+s.ID+"/requests", `{"clientRequestId":"r1","kind":"confirm","params":{"summary":"Go on?"}}`, nil); code != 201 {
		t.Fatalf("request: %d", code)
	}
	var peer string
	select {
	case peer = <-reached:
	case <-time.After(30 * time.Second):
		t.Fatal("no replica sent the delivery")
	}
	sender, err := childOfPeer(peer, a, b)
	if err != nil {
		t.Fatal(err)
	}
	sender.cmd.Process.Signal(syscall.SIGKILL)
	<-sender.done
	killed := time.Now()
	survivor := a
	if sender == a {
		survivor = b
	}
	if !eventually(60*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(ids) >= 2
	}) {
		t.Fatalf("the delivery was not sent again after its sender died\n%s", survivor.logs)
	}
	t.Logf("the other replica sent the delivery again %s after the kill", time.Since(killed).Round(100*time.Millisecond))
	var deliveries struct {
		Items []struct {
			Status   string
			Attempts int
		}
	}
	if !eventually(10*time.Second, func() bool {
		agentCall(t, survivor.base, userKey, nil)("GET", "/webhooks/"+hook.ID+"/deliveries", "", &deliveries)
		return len(deliveries.Items) == 1 && deliveries.Items[0].Status == "delivered"
	}) {
		t.Errorf("deliveries: %+v", deliveries)
	}
	time.Sleep(2 * time.Second) // a third sending would come by now
	mu.Lock()
	defer mu.Unlock()
	if len(ids) != 2 || ids[0] != ids[1] || ids[0] == "" {
		t.Errorf("the receiver got %v: want the same delivery twice", ids)
	}
}

// csrfField is a form's CSRF token in a console page.
var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// approveInTheConsole signs the person in on request id's page with their key and
// approves it with the page's form, as a browser without scripts does, through base
// (a balancer: each step may reach another replica).
func approveInTheConsole(t *testing.T, base, userKey, id string) {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar, Timeout: 30 * time.Second}
	page := func(res *http.Response, err error) string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("%s %s: %d %.300s", res.Request.Method, res.Request.URL.Path, res.StatusCode, b)
		}
		return string(b)
	}
	csrf := func(body string) string {
		t.Helper()
		m := csrfField.FindStringSubmatch(body)
		if m == nil {
			t.Fatalf("no form in the page: %.400s", body)
		}
		return html.UnescapeString(m[1])
	}
	signIn := page(client.Get(base + "/app/requests/" + id))
	approval := page(client.PostForm(base+"/app/sign-in", url.Values{"csrf": {csrf(signIn)}, "key": {userKey}, "request": {id}}))
	if !strings.Contains(approval, `value="approve"`) {
		approval = page(client.Get(base + "/app/requests/" + id))
	}
	page(client.PostForm(base+"/app/requests/"+id+"/decision", url.Values{"csrf": {csrf(approval)}, "decision": {"approve"}}))
}
