package main

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gagliardetto/solana-go"
)

// referencePayTo is the payee the reference sellers are started with.
const referencePayTo = "0x209693Bc6afc0C5328bA36FaF03C514EF312287C"

// TestTheServicePaysSellersBuiltFromTheX402ReferencePackages pays a seller made of the
// x402 reference packages, once per protocol version: v2 (@x402/express with
// @x402/core's facilitator and @x402/evm's exact EVM scheme) and v1 (x402-express with
// x402's facilitator). Each seller runs on the pinned Node.js with its facilitator's
// own verify and settle; only the chain is faked, a USDC contract in memory that
// checks the authorization's signature, time window and nonce. The agent asks to pay,
// the person approves, the service pays and the agent claims: the seller's chain must
// hold exactly one transfer of the price to the payee from the service's payer, the
// service's record must say settled with that transaction, and the claim must carry
// the seller's answer.
func TestTheServicePaysSellersBuiltFromTheX402ReferencePackages(t *testing.T) {
	t.Parallel()
	node := referenceTool(t, "Node.js", "WAYSTATION_NODE", "../../var/tools/node-*/node_modules/node-linux-*/bin/node")
	for _, v := range []struct {
		name, script, dirEnv, dirGlob string
	}{
		{"v2", "x402-seller-v2.mjs", "WAYSTATION_X402_V2_DIR", "../../var/tools/x402-express-2.*"},
		{"v1", "x402-seller-v1.mjs", "WAYSTATION_X402_V1_DIR", "../../var/tools/x402-express-1.*"},
	} {
		t.Run(v.name, func(t *testing.T) {
			dir := referenceTool(t, "the x402 "+v.name+" reference packages", v.dirEnv, v.dirGlob)
			seller := startReferenceSeller(t, node, v.script, dir, referencePayTo)
			payReferenceSeller(t, seller, referencePayTo, map[string]string{"X402_PAYER_KEY": testPayerKey, "X402_PAYER_NETWORKS": "eip155:84532"})
		})
	}
}

// referenceSolanaPayTo is the payee the reference Solana seller is started with.
const referenceSolanaPayTo = "2wKupLR9q6wXYppw8Gr2NvWxKBUqm4PPJKkQfoxHDBg4"

// TestTheServicePaysASolanaSellerBuiltFromTheX402ReferencePackages pays a seller made
// of the x402 reference packages on Solana: @x402/express with @x402/svm's exact
// scheme, its facilitator @x402/core's with @x402/svm's exact facilitator scheme and
// signer, which verify the service's transaction as the reference does, sign it as
// fee payer and send it. Only the chain is faked: the Solana RPC the facilitator
// calls answers from a USDC token in memory that checks every signature, the
// blockhash and the balance, and lands a transaction once; the service reads its
// recent blockhash from the same RPC. The chain must hold exactly one transfer of the
// price to the payee from the service's Solana payer.
func TestTheServicePaysASolanaSellerBuiltFromTheX402ReferencePackages(t *testing.T) {
	t.Parallel()
	node := referenceTool(t, "Node.js", "WAYSTATION_NODE", "../../var/tools/node-*/node_modules/node-linux-*/bin/node")
	dir := referenceTool(t, "the x402 SVM reference packages", "WAYSTATION_X402_SVM_DIR", "../../var/tools/x402-svm-2.*")
	seller := startReferenceSeller(t, node, "x402-seller-svm.mjs", dir, referenceSolanaPayTo)
	key := solana.PrivateKey(ed25519.NewKeyFromSeed(bytes.Repeat([]byte{0x42}, 32))).String()
	payReferenceSeller(t, seller, referenceSolanaPayTo, map[string]string{"SOLANA_PAYER_KEY": key,
		"SOLANA_PAYER_NETWORKS": "solana-devnet", "SOLANA_RPC_URL": seller.base + "/rpc"})
}

// payReferenceSeller drives one payment to the seller at base, which pays payTo,
// through the service with the payer env configures, and checks its one settlement.
func payReferenceSeller(t *testing.T, seller referenceSeller, payTo string, payer map[string]string) {
	host := strings.TrimPrefix(seller.base, "http://")
	dbURL := demoDatabase(t)
	userKey, agentKey := apiKeys(t, dbURL)
	env := map[string]string{"DATABASE_URL": dbURL, "LOOPBACK_HTTP": "true", "LOG_FORMAT": "json", "PAYMENT_ALLOW_HOSTS": host}
	maps.Copy(env, payer)
	srv := serveLogged(t, env)
	agent := agentCall(t, srv.base, agentKey, nil)
	endpoint := seller.base + "/report?topic=tides"

	var s struct{ ID string }
	if code := agent("POST", "/sessions", `{"type":"purchase","description":"Buy a report on tides","clientSessionId":"reference"}`, &s); code != 201 {
		t.Fatalf("session: %d", code)
	}
	var asked struct {
		Request struct{ ID string }
		Payment struct{ ID string }
	}
	if code := agent("POST", "/sessions/"+s.ID+"/x402/payments", `{"clientRequestId":"p1","maximumDebit":"0.02",
		"httpRequest":{"url":"`+endpoint+`"},"reason":"The report on tides you asked for"}`, &asked); code != 201 {
		t.Fatalf("ask: %d\n%s\nseller:\n%s", code, srv.logs, seller.logs)
	}
	if code := agentCall(t, srv.base, userKey, nil)("POST", "/sessions/"+s.ID+"/requests/"+asked.Request.ID+"/decision",
		`{"decision":"approve"}`, nil); code != 200 {
		t.Fatalf("approve: %d", code)
	}
	var r struct{ Status string }
	for deadline := time.Now().Add(60 * time.Second); r.Status != "fulfilled" && time.Now().Before(deadline); {
		agent("GET", "/sessions/"+s.ID+"/requests/"+asked.Request.ID+"?wait=5", "", &r)
		if r.Status == "failed" {
			break
		}
	}
	var pay struct {
		Status, Payer string
		Failure       *string
		Transaction   *string
		Offer         struct{ PayTo, Amount string }
	}
	agent("GET", "/sessions/"+s.ID+"/x402/payments/"+asked.Payment.ID, "", &pay)
	if r.Status != "fulfilled" {
		t.Fatalf("request %s, payment %s (%v)\nservice:\n%s\nseller:\n%s", r.Status, pay.Status, deref(pay.Failure), srv.logs, seller.logs)
	}
	var art struct {
		Type    string
		Payment struct {
			Status, Amount, PayTo string
			Transaction           *string
			Response              struct {
				Status int
				Body   string
			}
		}
	}
	if code := agent("POST", "/sessions/"+s.ID+"/requests/"+asked.Request.ID+"/claim", "", &art); code != 200 ||
		art.Type != "payment" || art.Payment.Status != "settled" || art.Payment.Response.Status != 200 ||
		!strings.Contains(art.Payment.Response.Body, "On tides: the reference seller's report.") {
		t.Fatalf("claim: %d %+v", code, art)
	}

	// Exactly one transfer on the seller's chain: the price, to the payee, from the
	// service's payer, and the service's record names its transaction.
	ledger := seller.ledger(t)
	if len(ledger) != 1 {
		t.Fatalf("%d transfers on the seller's chain, want 1: %+v", len(ledger), ledger)
	}
	l := ledger[0]
	if l.Value != "10000" || !strings.EqualFold(l.To, payTo) || !strings.EqualFold(l.From, pay.Payer) || pay.Payer == "" {
		t.Errorf("the transfer %+v, want 10000 from the payer %s to %s", l, pay.Payer, payTo)
	}
	if pay.Status != "settled" || pay.Transaction == nil || !strings.EqualFold(*pay.Transaction, l.Transaction) {
		t.Errorf("the payment is %s with transaction %v, want settled with %s", pay.Status, deref(pay.Transaction), l.Transaction)
	}
	if pay.Offer.Amount != "10000" || !strings.EqualFold(pay.Offer.PayTo, payTo) {
		t.Errorf("the payment's offer %+v", pay.Offer)
	}
	t.Logf("settled once: %s, %s atomic units to %s", l.Transaction, l.Value, l.To)
	if art.Payment.Transaction != nil && !strings.EqualFold(*art.Payment.Transaction, l.Transaction) {
		t.Errorf("the claim names the transaction %s, the chain %s", *art.Payment.Transaction, l.Transaction)
	}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

// referenceTool finds what make installs for the reference sellers: the path in the
// environment variable env (which make test sets), else the one match of glob under
// the repository's var/tools. Outside CI a missing one skips the test; under CI=true
// it fails it, since make test installs them.
func referenceTool(t *testing.T, what, env, glob string) string {
	t.Helper()
	if p := os.Getenv(env); p != "" {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%s: %s=%s: %v", what, env, p, err)
		}
		abs, err := filepath.Abs(p)
		if err != nil {
			t.Fatal(err)
		}
		return abs
	}
	if m, _ := filepath.Glob(glob); len(m) == 1 {
		abs, err := filepath.Abs(m[0])
		if err != nil {
			t.Fatal(err)
		}
		return abs
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s: not installed (make test installs it into var/tools with make x402-reference; or set %s)", what, env)
	}
	t.Skipf("%s: not installed; run make x402-reference (or set %s)", what, env)
	return ""
}

// referenceSeller is a seller made of the x402 reference packages, run by Node.js as
// a child process on a free loopback port.
type referenceSeller struct {
	base string // http://localhost:port
	logs *lockedBuffer
}

// referenceTransfer is one transfer on a reference seller's fake chain.
type referenceTransfer struct {
	Transaction, From, To, Value, Nonce, Asset string
}

func (s referenceSeller) ledger(t *testing.T) []referenceTransfer {
	t.Helper()
	res, err := http.Get(s.base + "/ledger")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var l []referenceTransfer
	if err := json.NewDecoder(res.Body).Decode(&l); err != nil || res.StatusCode != 200 {
		t.Fatalf("ledger: %d %v", res.StatusCode, err)
	}
	return l
}

// startReferenceSeller runs testdata/script with node, its packages in dir, payTo
// and args, and returns once it listens. It is killed by its pid when the test ends.
func startReferenceSeller(t *testing.T, node, script, dir, payTo string, args ...string) referenceSeller {
	t.Helper()
	s := referenceSeller{logs: &lockedBuffer{}}
	cmd := exec.Command(node, append([]string{filepath.Join("testdata", script), dir, "0", payTo}, args...)...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "NODE_ENV=production"}
	cmd.Stderr = s.logs
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		select {
		case <-done:
		default:
			cmd.Process.Kill()
			<-done
		}
	})
	lines := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		lines <- line
		io.Copy(s.logs, stdout)
	}()
	select {
	case line := <-lines:
		i := strings.Index(line, "http://127.0.0.1:")
		if i < 0 {
			t.Fatalf("%s: start line %q\n%s", script, line, s.logs)
		}
		// Reached as localhost, as the other local sellers are.
		s.base = "http://localhost:" + strings.Fields(line[i+len("http://127.0.0.1:"):])[0]
	case <-done:
		t.Fatalf("%s exited before listening\n%s", script, s.logs)
	case <-time.After(60 * time.Second):
		t.Fatalf("%s did not listen within 60s\n%s", script, s.logs)
	}
	return s
}
