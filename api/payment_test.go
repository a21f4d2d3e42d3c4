package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waystation/waystation/api"
	"github.com/waystation/waystation/internal/captcha"
	"github.com/waystation/waystation/internal/catalog"
	"github.com/waystation/waystation/internal/outbound"
	"github.com/waystation/waystation/internal/payment"
	"github.com/waystation/waystation/internal/postgres"
	"github.com/waystation/waystation/internal/seller"
	"github.com/waystation/waystation/internal/trust"
	"github.com/waystation/waystation/internal/x402"
)

const payerKey = "4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318"

// payEnv is the API with a payer, and a local seller at seller.test (a loopback
// address the operator allowed by name).
type payEnv struct {
	*authEnv
	svc      *payment.Service
	seller   *seller.Seller
	base     string // http://seller.test:port
	calls    *counter
	agentID  string
	userKey  string
	agentKey string
	sid      string
}

type counter struct {
	mu sync.Mutex
	n  int
}

func (c *counter) add() { c.mu.Lock(); c.n++; c.mu.Unlock() }
func (c *counter) get() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

func newPayEnv(t *testing.T, opts ...func(*payment.Service)) *payEnv {
	t.Helper()
	ts := httptest.NewUnstartedServer(nil)
	sel := seller.New(seller.Config{FacilitatorURL: "http://" + ts.Listener.Addr().String() + "/facilitator"})
	calls := &counter{}
	ts.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/facilitator") {
			calls.add()
		}
		sel.ServeHTTP(w, r)
	})
	ts.Start()
	t.Cleanup(ts.Close)
	port := ts.URL[strings.LastIndex(ts.URL, ":"):]
	client := outbound.New(outbound.Config{Timeout: 5 * time.Second, AllowHosts: []string{"seller.test"},
		LookupHost: func(_ context.Context, host string) ([]netip.Addr, error) {
			if host == "seller.test" || host == "private.test" {
				return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
			}
			return nil, errors.New("no such host")
		}})
	signer, err := x402.ParseSigner(payerKey)
	if err != nil {
		t.Fatal(err)
	}
	svc := &payment.Service{Payer: &payment.Payer{Signer: signer, Networks: payment.Networks{seller.DefaultNetwork}},
		Sender: client, Log: slog.New(slog.DiscardHandler)}
	for _, o := range opts {
		o(svc)
	}
	captchas := &captcha.Service{Log: slog.New(slog.DiscardHandler)}
	prober := trust.NewProber(trust.ProberConfig{HostSpacing: -1, Client: client}, nil)
	e := newAuthEnv(t, func(a *api.Authenticated) { a.Prober, a.Payments, a.Captchas = prober, svc, captchas })
	svc.Store, svc.Reports, captchas.Store = e.store, e.store, e.store
	uid, userKey := e.user("ada")
	agentID, agentKey := e.agent(uid, "scout")
	p := &payEnv{authEnv: e, svc: svc, seller: sel, base: "http://seller.test" + port, calls: calls,
		agentID: agentID, userKey: userKey, agentKey: agentKey}
	p.sid = e.openSession(agentKey, "pay-1")
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(e.logs.String())
		}
	})
	return p
}

// ask asks to pay for GET path at the seller.
func (p *payEnv) ask(clientID, path, maxDebit string) response {
	p.t.Helper()
	return p.call("POST", "/sessions/"+p.sid+"/x402/payments", p.agentKey,
		fmt.Sprintf(`{"clientRequestId":%q,"maximumDebit":%q,"httpRequest":{"url":%q},"reason":"the report"}`, clientID, maxDebit, p.base+path))
}

type created struct {
	Request struct{ ID, Kind, Status string }
	Payment struct {
		ID, Status, Hostname, MaximumDebit string
		Failure                            *string
		Offer                              struct{ PayTo, Amount, Value, Network, Symbol string }
		Merchant                           struct{ Verdict string }
	}
}

func (p *payEnv) approve(rid string, extra ...string) response {
	p.t.Helper()
	body := `{"decision":"approve"` + strings.Join(extra, "") + `}`
	return p.call("POST", "/sessions/"+p.sid+"/requests/"+rid+"/decision", p.userKey, body)
}

// run carries out every approved payment.
func (p *payEnv) run() {
	p.t.Helper()
	for {
		did, err := p.svc.Execute(context.Background())
		if err != nil {
			p.t.Fatal(err)
		}
		if !did {
			return
		}
	}
}

func (p *payEnv) payment(id string) (status string, failure *string) {
	p.t.Helper()
	var pay struct {
		Status  string
		Failure *string
	}
	p.call("GET", "/sessions/"+p.sid+"/x402/payments/"+id, p.agentKey, "").want(p.t, 200).into(p.t, &pay)
	return pay.Status, pay.Failure
}

func (p *payEnv) limits(body string) {
	p.t.Helper()
	p.call("PUT", "/agents/"+p.agentID+"/spending-limits", p.userKey, body).want(p.t, 200)
}

// signature is what a 65-byte signature looks like in hex: none may leave the service.
var signature = regexp.MustCompile(`(?i)0x[0-9a-f]{130}`)

// TestAPaymentIsApprovedPaidOnceAndClaimed walks the whole flow for both x402
// versions: the ask, the person's approval, the service's payment, the claim of the
// seller's answer, the seller's ledger, the agent's spend and the seller's stats.
func TestAPaymentIsApprovedPaidOnceAndClaimed(t *testing.T) {
	t.Parallel()
	p := newPayEnv(t)
	ctx := context.Background()
	// The seller is in the directory, so that its stats move.
	listing := fmt.Sprintf(`{"resource":%q,"type":"http","x402Version":2,"accepts":[{"scheme":"exact","network":"eip155:84532","amount":"10000","asset":%q,"payTo":%q,"maxTimeoutSeconds":60,"extra":{"name":"USDC","version":"2"}}]}`,
		p.base+"/v2/report", seller.DefaultAsset, seller.DefaultPayTo)
	cat, _, err := catalog.ParseBazaar(strings.NewReader(listing))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.store.LoadCatalog(ctx, cat, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := p.snaps.Refresh(ctx, p.store, nil); err != nil {
		t.Fatal(err)
	}
	settledBefore := settledPayments(t, p.store, "seller.test")

	for i, path := range []string{"/v1/weather?city=Lyon", "/v2/report?topic=tides"} {
		var c created
		p.ask(fmt.Sprintf("pay-%d", i), path, "0.05").want(t, 201).into(t, &c)
		if c.Request.Kind != "authorize_payment" || c.Request.Status != "waiting_user" || c.Payment.Status != "awaiting_approval" ||
			c.Payment.Offer.Amount != "10000" || c.Payment.Offer.Value != "0.01" || c.Payment.Offer.Symbol != "USDC" ||
			!strings.EqualFold(c.Payment.Offer.PayTo, seller.DefaultPayTo) || c.Payment.Hostname != "seller.test" || c.Payment.MaximumDebit != "0.05" {
			t.Fatalf("%s: created %+v", path, c)
		}
		// A retry of the ask replays it; nothing is asked twice.
		var again created
		p.ask(fmt.Sprintf("pay-%d", i), path, "0.05").want(t, 200).into(t, &again)
		if again.Payment.ID != c.Payment.ID {
			t.Errorf("%s: the retry made payment %s, want %s", path, again.Payment.ID, c.Payment.ID)
		}
		p.run() // nothing approved: nothing paid
		if n := len(p.seller.Ledger()); n != i {
			t.Fatalf("%s: %d transfers before the approval", path, n)
		}
		// An agent cannot approve, even with the link.
		p.call("POST", "/sessions/"+p.sid+"/requests/"+c.Request.ID+"/decision", p.agentKey, `{"decision":"approve"}`).want(t, 403)
		p.approve(c.Request.ID).want(t, 200)
		p.run()
		if st, f := p.payment(c.Payment.ID); st != "settled" {
			t.Fatalf("%s: payment %s %v", path, st, f)
		}
		var art struct {
			Type    string
			Payment struct {
				Status, Amount, PayTo string
				Transaction           *string
				Response              struct {
					Status                 int
					Body, Encoding, SHA256 string
					Bytes                  int64
				}
			}
		}
		p.call("POST", "/sessions/"+p.sid+"/requests/"+c.Request.ID+"/claim", p.agentKey, "").want(t, 200).into(t, &art)
		if art.Type != "payment" || art.Payment.Status != "settled" || art.Payment.Amount != "10000" || art.Payment.Transaction == nil ||
			art.Payment.Response.Status != 200 || !strings.Contains(art.Payment.Response.Body, `"answer"`) ||
			art.Payment.Response.Encoding != "text" || len(art.Payment.Response.SHA256) != 64 || art.Payment.Response.Bytes == 0 {
			t.Errorf("%s: artifact %+v", path, art)
		}
		p.call("POST", "/sessions/"+p.sid+"/requests/"+c.Request.ID+"/claim", p.agentKey, "").want(t, 409, "artifact_already_claimed")
		ledger := p.seller.Ledger()
		if len(ledger) != i+1 {
			t.Fatalf("%s: %d transfers, want %d", path, len(ledger), i+1)
		}
		if tr := ledger[i]; tr.Value != "10000" || !strings.EqualFold(tr.To, seller.DefaultPayTo) || tr.From != p.svc.Payer.Address() {
			t.Errorf("%s: transfer %+v", path, tr)
		}
	}
	var me struct {
		Limits struct {
			Spending struct {
				PerPayment string
				Spent      struct{ Today, ThisMonth string }
			}
		}
	}
	p.call("GET", "/agent/me", p.agentKey, "").want(t, 200).into(t, &me)
	if s := me.Limits.Spending; s.PerPayment != "1" || s.Spent.Today != "0.02" || s.Spent.ThisMonth != "0.02" {
		t.Errorf("spending %+v", s)
	}
	if got := settledPayments(t, p.store, "seller.test"); got != settledBefore+2 {
		t.Errorf("settled payments for the seller: %d, want %d", got, settledBefore+2)
	}
	// Neither the key nor a signature is in any answer or log.
	for _, a := range p.answers {
		if strings.Contains(strings.ToLower(a.body), payerKey[:16]) || signature.MatchString(a.body) {
			t.Errorf("%s answered key or signature material: %.300s", a.path, a.body)
		}
	}
	if l := p.logs.String(); strings.Contains(l, payerKey[:16]) || signature.MatchString(l) {
		t.Errorf("the log holds key or signature material")
	}
	if dump := tableText(t, p.store, "payments"); strings.Contains(dump, payerKey[:16]) || signature.MatchString(dump) {
		t.Errorf("the payments table holds key or signature material")
	}
}

func settledPayments(t *testing.T, s *postgres.Store, host string) int {
	t.Helper()
	var n int
	if err := s.Pool().QueryRow(context.Background(), `SELECT count(*) FROM settled_payments WHERE hostname = $1`, host).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func tableText(t *testing.T, s *postgres.Store, table string) string {
	t.Helper()
	var out string
	if err := s.Pool().QueryRow(context.Background(), `SELECT coalesce(string_agg(t::text, E'\n'), '') FROM `+table+` t`).Scan(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestEveryRefusalOfAPayment: over the maximum, over each budget, a paused agent, a
// denied host, an avoid verdict without the override, a changed payee or price
// between the ask and the payment, limits lowered after the approval, a replay with
// another body, and no payer at all. None moves money.
func TestEveryRefusalOfAPayment(t *testing.T) {
	t.Parallel()
	p := newPayEnv(t)
	ctx := context.Background()

	p.ask("max", "/v2/report", "0.005").want(t, 422, "price_above_maximum")
	p.limits(`{"perPayment":"0.005","daily":"5","monthly":"50"}`)
	p.ask("per", "/v2/report", "0.05").want(t, 403, "spending_limit_exceeded")
	p.limits(`{"perPayment":"1","daily":"5","monthly":"50","paused":true}`)
	before := p.calls.get()
	p.ask("paused", "/v2/report", "0.05").want(t, 403, "agent_paused")
	p.limits(`{"perPayment":"1","daily":"5","monthly":"50","hostsMode":"deny","hosts":["seller.test"]}`)
	p.ask("denied", "/v2/report", "0.05").want(t, 403, "host_not_allowed")
	p.limits(`{"perPayment":"1","daily":"5","monthly":"50","hostsMode":"allow","hosts":["other.example"]}`)
	p.ask("not-allowed", "/v2/report", "0.05").want(t, 403, "host_not_allowed")
	if p.calls.get() != before {
		t.Error("the seller heard of asks its host list or the pause refused")
	}
	// A refusal that may pass is not remembered: the same ask passes once allowed.
	p.limits(`{"perPayment":"1","daily":"0.015","monthly":"50"}`)
	var first created
	p.ask("denied", "/v2/report", "0.05").want(t, 201).into(t, &first)
	p.approve(first.Request.ID).want(t, 200)
	p.run()
	if st, _ := p.payment(first.Payment.ID); st != "settled" {
		t.Fatalf("first payment %s", st)
	}
	p.ask("daily", "/v2/report", "0.05").want(t, 403, "spending_limit_exceeded")
	p.limits(`{"perPayment":"1","daily":"5","monthly":"0.015"}`)
	p.ask("monthly", "/v2/report", "0.05").want(t, 403, "spending_limit_exceeded")
	p.limits(`{"perPayment":"1","daily":"5","monthly":"50"}`)
	p.call("POST", "/sessions/"+p.sid+"/x402/payments", p.agentKey,
		`{"clientRequestId":"denied","maximumDebit":"0.06","httpRequest":{"url":"`+p.base+`/v2/report"}}`).want(t, 409, "idempotency_conflict")

	// Bad asks.
	for _, body := range []string{
		`{"clientRequestId":"b1","maximumDebit":"0.05","httpRequest":{"url":"ftp://seller.test/x"}}`,
		`{"clientRequestId":"b2","maximumDebit":"0.05","httpRequest":{"url":"` + p.base + `/x","method":"TRACE"}}`,
		`{"clientRequestId":"b3","maximumDebit":"-1","httpRequest":{"url":"` + p.base + `/x"}}`,
		`{"clientRequestId":"b4","maximumDebit":"0.05","httpRequest":{"url":"` + p.base + `/x","headers":{"X-PAYMENT":"x"}}}`,
		`{"clientRequestId":"b5","maximumDebit":"0.05","httpRequest":{"url":"` + p.base + `/x","headers":{"X-A":"a\r\nb"}}}`,
		`{"clientRequestId":"b6","maximumDebit":"0.05"}`,
	} {
		p.call("POST", "/sessions/"+p.sid+"/x402/payments", p.agentKey, body).want(t, 422, "validation_failed")
	}
	p.call("POST", "/sessions/"+p.sid+"/x402/payments", p.userKey,
		`{"clientRequestId":"u","maximumDebit":"0.05","httpRequest":{"url":"`+p.base+`/v2/report"}}`).want(t, 403, "wrong_key_scope")
	// A free answer, or an address nobody allowed, is no payable offer.
	p.ask("free", "/ledger", "0.05").want(t, 422, "offer_not_payable")
	port := p.base[strings.LastIndex(p.base, ":"):]
	p.call("POST", "/sessions/"+p.sid+"/x402/payments", p.agentKey,
		`{"clientRequestId":"private","maximumDebit":"0.05","httpRequest":{"url":"http://private.test`+port+`/v2/report"}}`).want(t, 502, "upstream_error")

	// The payee or the price changes between the ask and the payment: nothing is signed.
	for i, mode := range []string{seller.ModeWrongPayee, seller.ModeChangedPrice} {
		var c created
		p.ask("changed-"+mode, "/v2/report", "0.05").want(t, 201).into(t, &c)
		p.approve(c.Request.ID).want(t, 200)
		p.seller.SetMode(mode)
		p.run()
		p.seller.SetMode(seller.ModeNone)
		if st, f := p.payment(c.Payment.ID); st != "failed" || f == nil || *f != "offer_changed" {
			t.Errorf("%s: payment %s %v", mode, st, f)
		}
		var req struct{ Status string }
		p.call("GET", "/sessions/"+p.sid+"/requests/"+c.Request.ID, p.agentKey, "").want(t, 200).into(t, &req)
		if req.Status != "failed" {
			t.Errorf("%s: request %s", mode, req.Status)
		}
		if n := len(p.seller.Ledger()); n != 1 {
			t.Fatalf("%s (%d): %d transfers, want the first one only", mode, i, n)
		}
	}
	// Limits lowered after the approval: checked again before signing.
	var late created
	p.ask("late", "/v2/report", "0.05").want(t, 201).into(t, &late)
	p.approve(late.Request.ID).want(t, 200)
	p.limits(`{"perPayment":"0.001","daily":"5","monthly":"50"}`)
	p.run()
	if st, f := p.payment(late.Payment.ID); st != "failed" || f == nil || *f != "limit_exceeded" {
		t.Errorf("lowered limits: payment %s %v", st, f)
	}
	p.limits(`{"perPayment":"1","daily":"5","monthly":"50"}`)

	// The directory says avoid: the person must override.
	if _, err := p.store.SetOverride(ctx, postgres.OverrideChange{Hostname: "seller.test", Verdict: "avoid", Reason: "test", By: "ops"}, time.Now()); err == nil {
		t.Fatal("an override for a host not in the directory was taken")
	}
	listing := fmt.Sprintf(`{"resource":%q,"type":"http","x402Version":2,"accepts":[]}`, p.base+"/v2/report")
	cat, _, _ := catalog.ParseBazaar(strings.NewReader(listing))
	if _, err := p.store.LoadCatalog(ctx, cat, time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := p.store.SetOverride(ctx, postgres.OverrideChange{Hostname: "seller.test", Verdict: "avoid", Reason: "test", By: "ops"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := p.snaps.Refresh(ctx, p.store, nil); err != nil {
		t.Fatal(err)
	}
	var avoid created
	p.ask("avoid", "/v2/report", "0.05").want(t, 201).into(t, &avoid)
	if avoid.Payment.Merchant.Verdict != "avoid" {
		t.Fatalf("verdict %q", avoid.Payment.Merchant.Verdict)
	}
	p.approve(avoid.Request.ID).want(t, 422, "override_required")
	p.run()
	if n := len(p.seller.Ledger()); n != 1 {
		t.Fatalf("an avoid seller was paid without the override: %d transfers", n)
	}
	p.call("POST", "/sessions/"+p.sid+"/requests/"+avoid.Request.ID+"/decision", p.userKey,
		`{"decision":"deny","overrideVerdict":true}`).want(t, 422, "validation_failed")
	p.approve(avoid.Request.ID, `,"overrideVerdict":true`).want(t, 200)
	p.run()
	if st, _ := p.payment(avoid.Payment.ID); st != "settled" {
		t.Errorf("overridden payment %s", st)
	}

	// No payer: 501.
	np := newAuthEnv(t)
	uid, _ := np.user("bo")
	_, key := np.agent(uid, "scout")
	sid := np.openSession(key, "s")
	np.call("POST", "/sessions/"+sid+"/x402/payments", key,
		`{"clientRequestId":"x","maximumDebit":"0.05","httpRequest":{"url":"https://seller.example/x"}}`).want(t, 501, "payer_not_configured")
}

// TestAPaymentIsNeverMadeTwice: two approvals at once, two executors at once, an
// answer lost after the seller settled, and a stop between signing and sending each
// end in exactly one transfer.
func TestAPaymentIsNeverMadeTwice(t *testing.T) {
	t.Parallel()
	p := newPayEnv(t)
	ctx := context.Background()

	var c created
	p.ask("twice", "/v2/report", "0.05").want(t, 201).into(t, &c)
	var wg sync.WaitGroup
	codes := make([]int, 4)
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i] = p.approve(c.Request.ID).StatusCode
		}()
	}
	wg.Wait()
	ok := 0
	for _, code := range codes {
		if code == 200 {
			ok++
		} else if code != 409 {
			t.Errorf("a concurrent approval answered %d", code)
		}
	}
	if ok != 1 {
		t.Fatalf("%d approvals succeeded, want 1", ok)
	}
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				did, err := p.svc.Execute(ctx)
				if err != nil {
					t.Error(err)
				}
				if !did || err != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	if n := len(p.seller.Ledger()); n != 1 {
		t.Fatalf("%d transfers after concurrent executors, want 1", n)
	}

	// The seller settles, and the answer is lost on the way back: the payment is
	// taken again after its lease and sent again as it was; the seller settles the
	// same authorization once.
	lossy := &payment.Service{Store: p.store, Payer: p.svc.Payer, Log: p.svc.Log, Lease: time.Millisecond,
		Sender: dropAnswer{p.svc.Sender}}
	var lost created
	p.ask("lost", "/v2/report", "0.05").want(t, 201).into(t, &lost)
	p.approve(lost.Request.ID).want(t, 200)
	if did, err := lossy.Execute(ctx); !did || err != nil {
		t.Fatalf("lossy execute: %v %v", did, err)
	}
	if st, _ := p.payment(lost.Payment.ID); st != "executing" {
		t.Fatalf("after a lost answer: %s", st)
	}
	if n := len(p.seller.Ledger()); n != 2 {
		t.Fatalf("%d transfers after the lost answer, want 2", n)
	}
	retry := &payment.Service{Store: p.store, Payer: p.svc.Payer, Log: p.svc.Log, Lease: time.Millisecond, Sender: p.svc.Sender}
	executeTaken(t, retry, "retry")
	if st, f := p.payment(lost.Payment.ID); st != "settled" {
		t.Fatalf("after the retry: %s %v", st, f)
	}
	if n := len(p.seller.Ledger()); n != 2 {
		t.Fatalf("%d transfers after the retry, want 2", n)
	}

	// The service stops after recording the signing and before sending: taken again,
	// the same payment goes out once.
	var stopped created
	p.ask("stopped", "/v2/report", "0.05").want(t, 201).into(t, &stopped)
	p.approve(stopped.Request.ID).want(t, 200)
	taken, err := p.store.Take(ctx, time.Minute)
	if err != nil || taken == nil || taken.ID != stopped.Payment.ID {
		t.Fatalf("take: %+v %v", taken, err)
	}
	now := time.Now().Unix()
	if err := p.store.MarkSigned(ctx, taken.ID, payment.Window{ValidAfter: now - 600, ValidBefore: now + 60}); err != nil {
		t.Fatal(err)
	}
	executeTaken(t, retry, "after the stop")
	if st, _ := p.payment(stopped.Payment.ID); st != "settled" {
		t.Fatalf("after the stop: %s", st)
	}
	if n := len(p.seller.Ledger()); n != 3 {
		t.Fatalf("%d transfers, want 3: one per payment", n)
	}
	// A second decision on a payment carried out changes nothing.
	p.approve(stopped.Request.ID).want(t, 409)
	p.run()
	if n := len(p.seller.Ledger()); n != 3 {
		t.Fatalf("%d transfers after a repeated decision", n)
	}
}

// executeTaken runs svc's executor until it takes a payment up: one whose lease (a
// millisecond in these tests) has run out as the database's clock reads it, which a
// loaded machine may take a moment to see.
func executeTaken(t *testing.T, svc *payment.Service, what string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		did, err := svc.Execute(context.Background())
		if err != nil || (!did && time.Now().After(deadline)) {
			t.Fatalf("%s: %v %v", what, did, err)
		}
		if did {
			return
		}
	}
}

// TestASettledPaymentWhoseAnswerWasLostIsNeverRecordedAsFailed replays a replica
// killed while the seller worked: the seller settles the first sending, the answer
// never comes back, and the payment taken up again is refused with 402, as the
// reference stack refuses a used nonce. The payment is unknown (never failed),
// counted once in spend, and the chain's state of its authorization settles it: the
// request is fulfilled and the agent claims the receipt. A payment the chain shows
// unused once its window closed fails as not settled, and stops counting.
func TestASettledPaymentWhoseAnswerWasLostIsNeverRecordedAsFailed(t *testing.T) {
	t.Parallel()
	p := newPayEnv(t)
	ctx := context.Background()
	if err := p.seller.SetMode(seller.ModeReplayRefused); err != nil {
		t.Fatal(err)
	}
	spent := func() string {
		var me struct {
			Limits struct {
				Spending struct{ Spent struct{ Today string } }
			}
		}
		p.call("GET", "/agent/me", p.agentKey, "").want(t, 200).into(t, &me)
		return me.Limits.Spending.Spent.Today
	}
	requestStatus := func(id string) string {
		var r struct{ Status string }
		p.call("GET", "/sessions/"+p.sid+"/requests/"+id, p.agentKey, "").want(t, 200).into(t, &r)
		return r.Status
	}
	chain, err := x402.ParseChains(seller.DefaultNetwork+"="+strings.Replace(p.base, "seller.test", "127.0.0.1", 1)+"/rpc", nil)
	if err != nil {
		t.Fatal(err)
	}
	service := func(sender payment.Sender, chain payment.Chain, now func() time.Time) *payment.Service {
		return &payment.Service{Store: p.store, Payer: p.svc.Payer, Log: p.svc.Log, Lease: time.Millisecond,
			Sender: sender, Chain: chain, Now: now, CheckEvery: time.Millisecond}
	}

	// resolve runs one resolver until it looks at a payment: it takes the one due
	// with SKIP LOCKED, which passes over a row another connection holds for an
	// instant, and in the server it runs every few seconds anyway.
	resolve := func(svc *payment.Service, what string) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			did, err := svc.Resolve(ctx)
			if err != nil || (!did && time.Now().After(deadline)) {
				t.Fatalf("%s: %v %v", what, did, err)
			}
			if did {
				return
			}
		}
	}

	var lost created
	p.ask("lost", "/v2/report", "0.05").want(t, 201).into(t, &lost)
	p.approve(lost.Request.ID).want(t, 200)
	if did, err := service(dropAnswer{p.svc.Sender}, nil, nil).Execute(ctx); !did || err != nil {
		t.Fatalf("first sending: %v %v", did, err)
	}
	if n := len(p.seller.Ledger()); n != 1 {
		t.Fatalf("%d transfers after the first sending, want 1", n)
	}
	// Another executor takes it up once its lease ran out and sends it again: the
	// seller refuses the used authorization.
	executeTaken(t, service(p.svc.Sender, nil, nil), "second sending")
	if st, f := p.payment(lost.Payment.ID); st != payment.StatusUnknown || f != nil {
		t.Fatalf("after the refused second sending: %s %v, want unknown", st, f)
	}
	if st := requestStatus(lost.Request.ID); st != "executing" {
		t.Fatalf("request %s while the outcome is unknown", st)
	}
	if s := spent(); s != "0.01" {
		t.Errorf("spent %s while the outcome is unknown, want 0.01", s)
	}
	// Without a chain nothing can tell: it stays unknown.
	if did, err := service(p.svc.Sender, nil, nil).Resolve(ctx); did || err != nil {
		t.Fatalf("resolve without a chain: %v %v", did, err)
	}
	resolve(service(p.svc.Sender, chain, nil), "resolve")
	if st, f := p.payment(lost.Payment.ID); st != payment.StatusSettled {
		t.Fatalf("after the chain's answer: %s %v, want settled", st, f)
	}
	if st := requestStatus(lost.Request.ID); st != "fulfilled" {
		t.Fatalf("request %s after the payment settled", st)
	}
	var art struct {
		Type    string
		Payment struct {
			Status, Amount string
			Delivered      *bool
			Response       *struct{ Status int }
		}
	}
	p.call("POST", "/sessions/"+p.sid+"/requests/"+lost.Request.ID+"/claim", p.agentKey, "").want(t, 200).into(t, &art)
	if art.Type != "payment" || art.Payment.Status != "settled" || art.Payment.Amount != "10000" ||
		art.Payment.Response == nil || art.Payment.Response.Status != 402 || art.Payment.Delivered == nil || *art.Payment.Delivered {
		t.Errorf("artifact %+v: want the settled receipt, not delivered, with the refusal of the second sending (the first answer was lost)", art)
	}
	if s := spent(); s != "0.01" {
		t.Errorf("spent %s after the payment settled, want 0.01", s)
	}
	if n := len(p.seller.Ledger()); n != 1 {
		t.Fatalf("%d transfers, want 1", n)
	}

	// Signed, and sent only after its window closed: refused, unknown, and once the
	// chain shows its nonce unused past the window, failed as not settled.
	var late created
	p.ask("late", "/v2/report", "0.05").want(t, 201).into(t, &late)
	p.approve(late.Request.ID).want(t, 200)
	taken, err := p.store.Take(ctx, time.Minute)
	if err != nil || taken == nil || taken.ID != late.Payment.ID {
		t.Fatalf("take: %+v %v", taken, err)
	}
	now := time.Now().Unix()
	if err := p.store.MarkSigned(ctx, taken.ID, payment.Window{ValidAfter: now - 600, ValidBefore: now - 1}); err != nil {
		t.Fatal(err)
	}
	executeTaken(t, service(p.svc.Sender, nil, nil), "late sending")
	if st, _ := p.payment(late.Payment.ID); st != payment.StatusUnknown {
		t.Fatalf("late payment %s, want unknown", st)
	}
	if s := spent(); s != "0.02" {
		t.Errorf("spent %s with one settled and one unknown payment, want 0.02", s)
	}
	// Inside the grace after the window the chain is asked and the payment waits.
	resolve(service(p.svc.Sender, chain, nil), "resolve in the grace")
	if st, _ := p.payment(late.Payment.ID); st != payment.StatusUnknown {
		t.Fatalf("late payment %s inside the grace, want unknown", st)
	}
	time.Sleep(5 * time.Millisecond)
	later := func() time.Time { return time.Now().Add(2 * time.Minute) }
	resolve(service(p.svc.Sender, chain, later), "resolve after the grace")
	if st, f := p.payment(late.Payment.ID); st != payment.StatusFailed || f == nil || *f != payment.FailNotSettled {
		t.Fatalf("late payment %s %v, want failed not_settled", st, f)
	}
	if st := requestStatus(late.Request.ID); st != "failed" {
		t.Errorf("late request %s, want failed", st)
	}
	if s := spent(); s != "0.01" {
		t.Errorf("spent %s once the late payment is known unsettled, want 0.01", s)
	}
	if n := len(p.seller.Ledger()); n != 1 {
		t.Fatalf("%d transfers, want 1", n)
	}
}

// TestAnExecutorThatLostItsLeaseRecordsNothing: a payment taken up by a second
// executor after the first stopped renewing is the second's; the first can neither
// renew it nor record an outcome.
func TestAnExecutorThatLostItsLeaseRecordsNothing(t *testing.T) {
	t.Parallel()
	p := newPayEnv(t)
	ctx := context.Background()
	var c created
	p.ask("lease", "/v2/report", "0.05").want(t, 201).into(t, &c)
	p.approve(c.Request.ID).want(t, 200)
	first, err := p.store.Take(ctx, time.Minute)
	if err != nil || first == nil {
		t.Fatalf("take: %+v %v", first, err)
	}
	if ok, err := p.store.Renew(ctx, *first); !ok || err != nil {
		t.Fatalf("renew by its executor: %v %v", ok, err)
	}
	if again, err := p.store.Take(ctx, time.Minute); again != nil || err != nil {
		t.Fatalf("a renewed payment was taken again: %+v %v", again, err)
	}
	time.Sleep(5 * time.Millisecond)
	second, err := p.store.Take(ctx, time.Millisecond)
	if err != nil || second == nil || second.ID != first.ID {
		t.Fatalf("take after the lease: %+v %v", second, err)
	}
	if ok, err := p.store.Renew(ctx, *first); ok || err != nil {
		t.Errorf("the first executor renewed a payment taken over: %v %v", ok, err)
	}
	if err := p.store.Finish(ctx, *first, payment.Outcome{Status: payment.StatusFailed, Failure: payment.FailUnreachable}); !errors.Is(err, payment.ErrTakenOver) {
		t.Errorf("the first executor's outcome: %v, want ErrTakenOver", err)
	}
	if err := p.store.Finish(ctx, *second, payment.Outcome{Status: payment.StatusFailed, Failure: payment.FailUnreachable}); err != nil {
		t.Errorf("the second executor's outcome: %v", err)
	}
}

// dropAnswer sends the request and loses the answer, as a dropped connection would.
type dropAnswer struct{ payment.Sender }

func (d dropAnswer) Send(ctx context.Context, req *http.Request) (*http.Response, error) {
	resp, err := d.Sender.Send(ctx, req)
	if err != nil {
		return nil, err
	}
	if req.Header.Get(x402.HeaderPaymentV2) == "" && req.Header.Get(x402.HeaderPaymentV1) == "" {
		return resp, nil
	}
	resp.Body.Close()
	return nil, errors.New("connection reset")
}

// TestASolvedCaptchaAuthorisesNoPayment: the person answers a CAPTCHA in the session of
// a payment waiting for approval; the payment still waits, and nothing is paid.
func TestASolvedCaptchaAuthorisesNoPayment(t *testing.T) {
	t.Parallel()
	p := newPayEnv(t)
	var c created
	p.ask("pay", "/v2/report", "0.05").want(t, 201).into(t, &c)
	var tk task
	p.call("POST", "/sessions/"+p.sid+"/captcha/tasks", p.agentKey,
		`{"clientTaskId":"c1","type":"image_to_text","pageUrl":"`+p.base+`/v2/report","image":"`+captchaPNG+`"}`).want(t, 201).into(t, &tk)
	p.call("POST", "/sessions/"+p.sid+"/requests/"+*tk.RequestID+"/decision", p.userKey, `{"decision":"approve","values":{"solution":"W7XK"}}`).want(t, 200)
	if got := p.awaitTask(p.agentKey, p.sid, tk.ID); got.Status != "solved" {
		t.Fatalf("task %+v", got)
	}
	// The solution is no decision: the payment's request cannot be answered with it.
	p.call("POST", "/sessions/"+p.sid+"/requests/"+c.Request.ID+"/decision", p.userKey, `{"decision":"approve","values":{"solution":"W7XK"}}`).want(t, 422)
	p.run()
	if st, _ := p.payment(c.Payment.ID); st != "awaiting_approval" {
		t.Errorf("payment %s after a solved CAPTCHA", st)
	}
	if n := len(p.seller.Ledger()); n != 0 {
		t.Errorf("%d transfers after a solved CAPTCHA", n)
	}
}

// TestAWaitOnAPaymentsRequestLastsUntilItEnds: an agent's long poll on the request of
// an approved payment answers once the payment ends (fulfilled), not at once with
// approved or executing.
func TestAWaitOnAPaymentsRequestLastsUntilItEnds(t *testing.T) {
	t.Parallel()
	p := newPayEnv(t)
	var c created
	p.ask("wait", "/v2/report", "0.05").want(t, 201).into(t, &c)
	p.approve(c.Request.ID).want(t, 200)
	got := make(chan string, 1)
	start := time.Now()
	go func() {
		var r struct{ Status string }
		res := p.call("GET", "/sessions/"+p.sid+"/requests/"+c.Request.ID+"?wait=20", p.agentKey, "")
		json.Unmarshal(res.body, &r)
		got <- r.Status
	}()
	time.Sleep(300 * time.Millisecond)
	p.run()
	select {
	case st := <-got:
		if st != "fulfilled" {
			t.Errorf("the wait answered %q, want fulfilled", st)
		}
		if time.Since(start) < 300*time.Millisecond {
			t.Errorf("the wait answered before the payment was made")
		}
	case <-time.After(25 * time.Second):
		t.Fatal("the wait did not answer")
	}
}

// TestEveryPaymentRouteSaysItHasNoPayerFirst: without a payer, every payment route
// answers 501 payer_not_configured, the payment service's own word, before it reads
// the path or the body.
func TestEveryPaymentRouteSaysItHasNoPayerFirst(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	uid, userKey := e.user("bo")
	agentID, agentKey := e.agent(uid, "scout")
	sid := e.openSession(agentKey, "s")
	e.call("POST", "/sessions/"+sid+"/x402/payments", agentKey, `{"not":"an ask"}`).want(t, 501, "payer_not_configured")
	e.call("GET", "/sessions/"+sid+"/x402/payments/not-an-id", agentKey, "").want(t, 501, "payer_not_configured")
	e.call("GET", "/agents/"+agentID+"/spending-limits", userKey, "").want(t, 501, "payer_not_configured")
	e.call("PUT", "/agents/not-an-id/spending-limits", userKey, `{}`).want(t, 501, "payer_not_configured")
	var me struct{ Limits struct{ Spending any } }
	e.call("GET", "/agent/me", agentKey, "").want(t, 200).into(t, &me)
	if me.Limits.Spending != nil {
		t.Errorf("an agent of a server that cannot pay has spending limits: %v", me.Limits.Spending)
	}
}
