package api_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waystation/waystation/internal/catalog"
	"github.com/waystation/waystation/internal/payment"
	"github.com/waystation/waystation/internal/seller"
	"github.com/waystation/waystation/internal/x402"
)

// liarBase starts a seller.Liar telling lie in front of p's seller and returns its
// base URL, at seller.test like the seller's.
func liarBase(t *testing.T, p *payEnv, lie string) (*seller.Liar, string) {
	t.Helper()
	target, _ := url.Parse(strings.Replace(p.base, "seller.test", "127.0.0.1", 1))
	liar := seller.NewLiar(target, lie)
	ts := httptest.NewServer(liar)
	t.Cleanup(ts.Close)
	return liar, "http://seller.test" + ts.URL[strings.LastIndex(ts.URL, ":"):]
}

// askAt asks to pay for GET url.
func (p *payEnv) askAt(clientID, u string) response {
	p.t.Helper()
	return p.call("POST", "/sessions/"+p.sid+"/x402/payments", p.agentKey,
		fmt.Sprintf(`{"clientRequestId":%q,"maximumDebit":"0.05","httpRequest":{"url":%q},"reason":"the report"}`, clientID, u))
}

func (p *payEnv) spentToday() string {
	p.t.Helper()
	var me struct {
		Limits struct {
			Spending struct{ Spent struct{ Today string } }
		}
	}
	p.call("GET", "/agent/me", p.agentKey, "").want(p.t, 200).into(p.t, &me)
	return me.Limits.Spending.Spent.Today
}

// undelivered counts the seller's settled payments its trust record holds as not
// delivered.
func undelivered(t *testing.T, p *payEnv) int {
	t.Helper()
	var n int
	if err := p.store.Pool().QueryRow(context.Background(),
		`SELECT count(*) FROM settled_payments WHERE hostname = 'seller.test' AND NOT delivered`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestASellerThatSettlesAndThenLiesIsRecordedPaidAndNotDelivered puts a hostile
// proxy in front of the seller: the seller settles the payment, and the proxy
// answers 402 with the offer again, a 502, a closed connection or garbage, on x402
// v2 and v1. Whatever it answers, the payment is unknown (never failed, its spend
// held) until the chain speaks; then settled, its spend counted once, the receipt
// the agent claims saying the seller did not deliver and holding what it answered,
// and the seller's trust record counting a paid call not delivered. One
// authorization is signed per approval, however often it is sent again.
func TestASellerThatSettlesAndThenLiesIsRecordedPaidAndNotDelivered(t *testing.T) {
	t.Parallel()
	p := newPayEnv(t)
	ctx := context.Background()
	listing := fmt.Sprintf(`{"resource":%q,"type":"http","x402Version":2,"accepts":[{"scheme":"exact","network":"eip155:84532","amount":"10000","asset":%q,"payTo":%q,"maxTimeoutSeconds":60,"extra":{"name":"USDC","version":"2"}}]}`,
		p.base+"/v2/report", seller.DefaultAsset, seller.DefaultPayTo)
	cat, _, err := catalog.ParseBazaar(strings.NewReader(listing))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.store.LoadCatalog(ctx, cat, time.Now()); err != nil {
		t.Fatal(err)
	}
	chain, err := x402.ParseChains(seller.DefaultNetwork+"="+strings.Replace(p.base, "seller.test", "127.0.0.1", 1)+"/rpc", nil)
	if err != nil {
		t.Fatal(err)
	}
	service := func(chain payment.Chain) *payment.Service {
		return &payment.Service{Store: p.store, Payer: p.svc.Payer, Log: p.svc.Log, Lease: time.Millisecond,
			Sender: p.svc.Sender, Chain: chain, CheckEvery: time.Millisecond}
	}
	for i, lie := range seller.Lies {
		for j, path := range []string{"/v2/report?topic=tides", "/v1/weather?city=Lyon"} {
			n := 2*i + j + 1
			liar, base := liarBase(t, p, lie)
			var c created
			p.askAt(fmt.Sprintf("%s-%d", lie, j), base+path).want(t, 201).into(t, &c)
			p.approve(c.Request.ID).want(t, 200)
			// Executed, and taken up again after its lease if no answer came: sent
			// again as it was, until the payment is unknown.
			status := ""
			for deadline := time.Now().Add(10 * time.Second); status != payment.StatusUnknown && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
				if _, err := service(nil).Execute(ctx); err != nil {
					t.Fatal(err)
				}
				var f *string
				if status, f = p.payment(c.Payment.ID); status == payment.StatusFailed {
					t.Fatalf("%s %s: the payment failed (%s) after the seller settled it", lie, path, deref(f))
				}
			}
			if status != payment.StatusUnknown {
				t.Fatalf("%s %s: payment %s, want unknown", lie, path, status)
			}
			if got := len(p.seller.Ledger()); got != n {
				t.Fatalf("%s %s: %d transfers, want %d", lie, path, got, n)
			}
			if s := p.spentToday(); s != fmt.Sprintf("0.0%d", n) && s != fmt.Sprintf("0.%d", n) {
				t.Errorf("%s %s: spent %s while the outcome is unknown, want %d cents", lie, path, s, n)
			}
			// Without a chain nothing tells: it stays unknown.
			if did, err := service(nil).Resolve(ctx); did || err != nil {
				t.Fatalf("resolve without a chain: %v %v", did, err)
			}
			for deadline := time.Now().Add(5 * time.Second); status == payment.StatusUnknown && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
				if _, err := service(chain).Resolve(ctx); err != nil {
					t.Fatal(err)
				}
				status, _ = p.payment(c.Payment.ID)
			}
			var pay struct {
				Status    string
				Delivered *bool
			}
			p.call("GET", "/sessions/"+p.sid+"/x402/payments/"+c.Payment.ID, p.agentKey, "").want(t, 200).into(t, &pay)
			if pay.Status != payment.StatusSettled || pay.Delivered == nil || *pay.Delivered {
				t.Fatalf("%s %s: payment %+v, want settled and not delivered", lie, path, pay)
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
			p.call("POST", "/sessions/"+p.sid+"/requests/"+c.Request.ID+"/claim", p.agentKey, "").want(t, 200).into(t, &art)
			if art.Type != "payment" || art.Payment.Status != "settled" || art.Payment.Delivered == nil || *art.Payment.Delivered {
				t.Errorf("%s %s: the claim %+v, want a settled receipt saying nothing was delivered", lie, path, art)
			}
			switch r := art.Payment.Response; lie {
			case seller.LieRefused, seller.LieError:
				if r == nil || r.Status < 400 || strings.Contains(r.Body, "answer") {
					t.Errorf("%s %s: the receipt's answer %+v, want the seller's refusal and nothing it did not deliver", lie, path, r)
				}
			default:
				if r != nil {
					t.Errorf("%s %s: the receipt holds an answer %+v that never came", lie, path, r)
				}
			}
			if got := liar.Payments(); got != 1 {
				t.Errorf("%s %s: %d distinct authorizations reached the seller, want 1", lie, path, got)
			}
			if got := undelivered(t, p); got != n {
				t.Errorf("%s %s: the seller's record counts %d paid calls not delivered, want %d", lie, path, got, n)
			}
		}
	}
	if s := p.spentToday(); s != "0.08" {
		t.Errorf("spent %s, want 0.08: each payment once", s)
	}
	if n := len(p.seller.Ledger()); n != 8 {
		t.Errorf("%d transfers, want 8", n)
	}
	// The seller's record counts the paid calls not delivered without a report:
	// one person's, on one day, count once.
	if r := p.merchantRecord().Trust.Reports; r == nil || r.Observed != 8 || r.Received != 0 || r.Counted != 1 || r.NotDelivered != 1 || r.Paid != "0.08" {
		t.Errorf("the record's reports %+v, want eight paid calls not delivered, counted once", r)
	}
}

// TestASolanaSellerThatSettlesAndThenAnswers402LeavesThePaymentUnknown: on Solana a
// seller that settles and answers 402 leaves the payment unknown and its spend
// held; without the chain's word it stays so.
func TestASolanaSellerThatSettlesAndThenAnswers402LeavesThePaymentUnknown(t *testing.T) {
	t.Parallel()
	p := newPayEnv(t, withSolanaPayer(t, &counter{}))
	ctx := context.Background()
	liar, base := liarBase(t, p, seller.LieRefused)
	var c created
	p.askAt("sol-lie", base+"/v2/solana?topic=tides").want(t, 201).into(t, &c)
	p.approve(c.Request.ID).want(t, 200)
	p.run()
	if st, f := p.payment(c.Payment.ID); st != payment.StatusUnknown {
		t.Fatalf("payment %s (%s), want unknown: the seller settled it", st, deref(f))
	}
	if n := len(p.seller.Ledger()); n != 1 || liar.Payments() != 1 {
		t.Fatalf("%d transfers and %d transactions, want 1 and 1", n, liar.Payments())
	}
	if s := p.spentToday(); s != "0.01" {
		t.Errorf("spent %s, want 0.01", s)
	}
	if _, err := p.svc.Resolve(ctx); err != nil {
		t.Fatal(err)
	}
	if st, _ := p.payment(c.Payment.ID); st != payment.StatusUnknown {
		t.Errorf("payment %s without the chain's word, want unknown", st)
	}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

// offerRewriter stands for a seller whose offers say what rewrite makes of them
// (maxTimeoutSeconds, payTo, extra.feePayer) and keeps the payment headers sent.
type offerRewriter struct {
	payment.Sender
	rewrite func(entry map[string]any)

	mu   sync.Mutex
	sent []http.Header
}

func (o *offerRewriter) Send(ctx context.Context, req *http.Request) (*http.Response, error) {
	if req.Header.Get(x402.HeaderPaymentV2)+req.Header.Get(x402.HeaderPaymentV1) != "" {
		o.mu.Lock()
		o.sent = append(o.sent, req.Header.Clone())
		o.mu.Unlock()
	}
	res, err := o.Sender.Send(ctx, req)
	if err != nil || res.StatusCode != http.StatusPaymentRequired {
		return res, err
	}
	edit := func(doc []byte) []byte {
		var d map[string]any
		if json.Unmarshal(doc, &d) != nil {
			return doc
		}
		accepts, _ := d["accepts"].([]any)
		for _, a := range accepts {
			if e, ok := a.(map[string]any); ok {
				o.rewrite(e)
			}
		}
		out, _ := json.Marshal(d)
		return out
	}
	if h := res.Header.Get("PAYMENT-REQUIRED"); h != "" {
		doc, _ := base64.StdEncoding.DecodeString(h)
		res.Header.Set("PAYMENT-REQUIRED", base64.StdEncoding.EncodeToString(edit(doc)))
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	body = edit(body)
	res.Body, res.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	res.Header.Del("Content-Length")
	return res, nil
}

// TestNoAuthorizationOutlivesTheCeiling: a seller asking maxTimeoutSeconds of
// 999999999 (31 years) is still paid, and gets an authorization valid for the configured ceiling at
// most (ten minutes by default), and one asking less gets what it asked; none is
// valid from a time to come.
func TestNoAuthorizationOutlivesTheCeiling(t *testing.T) {
	t.Parallel()
	rw := &offerRewriter{rewrite: func(e map[string]any) { e["maxTimeoutSeconds"] = 999999999 }}
	p := newPayEnv(t, func(s *payment.Service) { rw.Sender, s.Sender = s.Sender, rw })
	for i, c := range []struct {
		ceiling time.Duration
		asked   any
		want    int64
	}{
		{0, 999999999, 600},
		{2 * time.Minute, 999999999, 120},
		{0, 45, 45},
	} {
		p.svc.MaxAuthorization = c.ceiling
		rw.rewrite = func(e map[string]any) { e["maxTimeoutSeconds"] = c.asked }
		var made created
		p.ask(fmt.Sprintf("life-%d", i), "/v2/report", "0.05").want(t, 201).into(t, &made)
		p.approve(made.Request.ID).want(t, 200)
		before := time.Now().Unix()
		p.run()
		after := time.Now().Unix()
		// The seller's facilitator may refuse what no longer matches its own offer:
		// only the authorization that left matters here.
		pay, ok, err := x402.ReadPayment(rw.sent[len(rw.sent)-1])
		if !ok || err != nil {
			t.Fatalf("%d: no payment sent: %v", i, err)
		}
		exact := pay.Payload
		validBefore, _ := strconv.ParseInt(exact.Authorization.ValidBefore, 10, 64)
		validAfter, _ := strconv.ParseInt(exact.Authorization.ValidAfter, 10, 64)
		if validBefore > after+c.want || validBefore < before+c.want {
			t.Errorf("%d: valid for %d s, want %d s (the offer asked %v)", i, validBefore-before, c.want, c.asked)
		}
		if validAfter > before {
			t.Errorf("%d: valid only from %d, after it was signed (%d)", i, validAfter, before)
		}
	}
}

// TestAnOfferNamingThePayerIsRefusedAtTheAsk: an offer whose payee is the service's
// own EVM payer, or whose Solana fee payer is the service's own Solana payer, is
// refused when the agent asks, with offer_names_payer: nothing is raised, signed or
// counted.
func TestAnOfferNamingThePayerIsRefusedAtTheAsk(t *testing.T) {
	t.Parallel()
	rw := &offerRewriter{rewrite: func(map[string]any) {}}
	p := newPayEnv(t, withSolanaPayer(t, &counter{}), func(s *payment.Service) { rw.Sender, s.Sender = s.Sender, rw })
	evm, sol := p.svc.Payer.Address(), p.svc.Payer.AddressOn(seller.DefaultSolanaNetwork)
	for _, c := range []struct {
		name, path string
		rewrite    func(map[string]any)
	}{
		{"payTo on EVM", "/v2/report", func(e map[string]any) { e["payTo"] = strings.ToLower(evm) }},
		{"payTo on v1", "/v1/weather", func(e map[string]any) { e["payTo"] = evm }},
		{"payTo on Solana", "/v2/solana", func(e map[string]any) { e["payTo"] = sol }},
		{"feePayer on Solana", "/v2/solana", func(e map[string]any) {
			extra, _ := e["extra"].(map[string]any)
			extra["feePayer"] = sol
		}},
	} {
		rw.rewrite = c.rewrite
		p.ask(c.name, c.path, "0.05").want(t, 422, "offer_names_payer")
	}
	var n int
	if err := p.store.Pool().QueryRow(context.Background(), `SELECT count(*) FROM payments`).Scan(&n); err != nil || n != 0 {
		t.Errorf("%d payments recorded (%v), want none", n, err)
	}
	p.run()
	if len(rw.sent) != 0 || len(p.seller.Ledger()) != 0 || p.spentToday() != "0" {
		t.Errorf("%d payments sent, %d transfers, spent %s: want nothing", len(rw.sent), len(p.seller.Ledger()), p.spentToday())
	}
}

// TestDisablingAnAgentCancelsItsPayments: the person disables an agent with one
// payment waiting for approval and one approved and not yet carried out: both are
// canceled, nothing is paid or counted. A payment the executor took before the
// agent was disabled is checked again before it is signed, and fails unsigned.
func TestDisablingAnAgentCancelsItsPayments(t *testing.T) {
	t.Parallel()
	p := newPayEnv(t)
	ctx := context.Background()
	var waiting, approved, taken created
	p.ask("waiting", "/v2/report", "0.05").want(t, 201).into(t, &waiting)
	p.ask("approved", "/v2/report", "0.05").want(t, 201).into(t, &approved)
	p.approve(approved.Request.ID).want(t, 200)
	p.call("PATCH", "/agents/"+p.agentID, p.userKey, `{"status":"disabled"}`).want(t, 200)
	// The person approves the waiting one afterwards, from its page.
	p.approve(waiting.Request.ID)
	p.run()
	// Its keys work again once it is resumed, to read what became of its payments.
	p.call("PATCH", "/agents/"+p.agentID, p.userKey, `{"status":"active"}`).want(t, 200)
	p.run()
	for _, c := range []created{waiting, approved} {
		if st, f := p.payment(c.Payment.ID); st != "canceled" && !(st == payment.StatusFailed && f != nil && *f == payment.FailAgentDisabled) {
			t.Errorf("payment %s %s after the agent was disabled, want canceled", st, deref(f))
		}
	}
	if n := len(p.seller.Ledger()); n != 0 {
		t.Fatalf("%d transfers after the agent was disabled", n)
	}

	// Taken by the executor, then the agent is disabled: nothing is signed.
	p.ask("taken", "/v2/report", "0.05").want(t, 201).into(t, &taken)
	p.approve(taken.Request.ID).want(t, 200)
	got, err := p.store.Take(ctx, time.Minute)
	if err != nil || got == nil || got.ID != taken.Payment.ID {
		t.Fatalf("take: %+v %v", got, err)
	}
	p.call("PATCH", "/agents/"+p.agentID, p.userKey, `{"status":"disabled"}`).want(t, 200)
	time.Sleep(5 * time.Millisecond)
	executeTaken(t, &payment.Service{Store: p.store, Payer: p.svc.Payer, Log: p.svc.Log, Lease: time.Millisecond, Sender: p.svc.Sender}, "after the disabling")
	p.call("PATCH", "/agents/"+p.agentID, p.userKey, `{"status":"active"}`).want(t, 200)
	if st, f := p.payment(taken.Payment.ID); st != payment.StatusFailed || f == nil || *f != payment.FailAgentDisabled {
		t.Errorf("payment %s %s, want failed agent_disabled", st, deref(f))
	}
	if n := len(p.seller.Ledger()); n != 0 {
		t.Fatalf("%d transfers after the agent was disabled", n)
	}
	if s := p.spentToday(); s != "0" {
		t.Errorf("spent %s, want 0", s)
	}
}
