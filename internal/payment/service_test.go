package payment

import (
	"context"
	"encoding/base64"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waystation/waystation/internal/auth"
	"github.com/waystation/waystation/internal/problem"
	"github.com/waystation/waystation/internal/request"
	"github.com/waystation/waystation/internal/x402"
)

// The service's tests run against a store in memory, a seller in memory and a fake
// chain family: what they ensure is the service's own part, whatever the chain.

const (
	testUSDC  = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913" // Base USDC
	testPayTo = "0x209693Bc6afc0C5328bA36FaF03C514EF312287C"
	testPayer = "0x000000000000000000000000000000000000beef"
	testURL   = "https://seller.example/thing"
)

// offerDoc is a seller's x402 v2 document asking amount atomic units of Base USDC
// to payTo.
func offerDoc(amount, payTo string) string {
	return `{"x402Version":2,"error":"PAYMENT-SIGNATURE header is required",
		"resource":{"url":"` + testURL + `","description":"a thing","mimeType":"application/json"},
		"accepts":[{"scheme":"exact","network":"eip155:8453","amount":"` + amount + `","asset":"` + testUSDC +
		`","payTo":"` + payTo + `","maxTimeoutSeconds":60,"extra":{"name":"USD Coin","version":"2"}}]}`
}

// memStore is a Store in memory.
type memStore struct {
	mu       sync.Mutex
	limits   LimitsAndSpend
	created  []Payment
	asked    []request.New
	waiting  []Payment // what Take hands out
	unknowns []Payment // what TakeUnknown hands out
	signed   []Window
	markErr  error
	renew    bool
	finished []Outcome
	taken    time.Duration
}

func newMemStore() *memStore {
	return &memStore{limits: LimitsAndSpend{Limits: DefaultLimits, Currency: "USD"}, renew: true}
}

var _ Store = (*memStore)(nil)

func (m *memStore) Limits(context.Context, string, time.Time) (LimitsAndSpend, error) {
	return m.limits, nil
}

func (m *memStore) SetLimits(_ context.Context, _ auth.Principal, _ string, l Limits) (LimitsAndSpend, error) {
	m.limits.Limits = l
	return m.limits, nil
}

func (m *memStore) CreatePayment(_ context.Context, _ auth.Principal, sessionID string, pay Payment, n request.New, _ int) (Payment, request.Request, error) {
	pay.ID, pay.SessionID, pay.Status = "pay_1", sessionID, StatusPending
	m.created, m.asked = append(m.created, pay), append(m.asked, n)
	return pay, request.Request{ID: "req_1", Kind: n.Kind}, nil
}

func (m *memStore) Payment(_ context.Context, _ auth.Principal, _, id string) (Payment, error) {
	for _, p := range m.created {
		if p.ID == id {
			return p, nil
		}
	}
	return Payment{}, ErrNotFound
}

func (m *memStore) PaymentOfRequest(context.Context, auth.Principal, string) (Payment, error) {
	if len(m.created) == 0 {
		return Payment{}, ErrNotFound
	}
	return m.created[0], nil
}

func (m *memStore) Ledger(_ context.Context, _ auth.Principal, limit int) ([]LedgerEntry, error) {
	return make([]LedgerEntry, min(limit, len(m.created))), nil
}

func (m *memStore) DailySpend(_ context.Context, _ auth.Principal, since time.Time) ([]DaySpend, error) {
	return []DaySpend{{AgentID: "agent", Day: since, Spent: 1}}, nil
}

func (m *memStore) Take(_ context.Context, lease time.Duration) (*Payment, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.taken = lease
	if len(m.waiting) == 0 {
		return nil, nil
	}
	p := m.waiting[0]
	m.waiting = m.waiting[1:]
	return &p, nil
}

func (m *memStore) Renew(context.Context, Payment) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.renew, nil
}

func (m *memStore) MarkSigned(_ context.Context, _ string, w Window) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.markErr != nil {
		return m.markErr
	}
	m.signed = append(m.signed, w)
	return nil
}

func (m *memStore) Finish(_ context.Context, _ Payment, o Outcome) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.renew {
		return ErrTakenOver
	}
	m.finished = append(m.finished, o)
	return nil
}

func (m *memStore) TakeUnknown(context.Context, time.Duration) (*Payment, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.unknowns) == 0 {
		return nil, nil
	}
	p := m.unknowns[0]
	m.unknowns = m.unknowns[1:]
	return &p, nil
}

// outcome is the one outcome the store recorded.
func (m *memStore) outcome(t *testing.T) Outcome {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.finished) != 1 {
		t.Fatalf("%d outcomes recorded, want 1: %+v", len(m.finished), m.finished)
	}
	return m.finished[0]
}

// fakeChain is a chain family that pays Base USDC by the exact scheme, signs with a
// header naming the payment, and answers for the chain what it is told to.
type fakeChain struct {
	owns      []string
	named     []string
	quoteErr  error
	windowErr error
	signErr   error
	reads     bool
	evidence  Evidence
	settleErr error
	// moved is what the family says a settlement moved, movedErr its error.
	moved    Moved
	movedErr error
	// lagging is how many reads of what moved find no settlement before one
	// does: a chain behind the seller's.
	lagging int
}

var _ Family = (*fakeChain)(nil)

func (*fakeChain) Namespace() string  { return "eip155" }
func (*fakeChain) Scheme() string     { return x402.SchemeExact }
func (*fakeChain) Networks() Networks { return Networks{"eip155:8453"} }
func (*fakeChain) Address() string    { return testPayer }
func (c *fakeChain) Owns(a string) bool {
	return strings.EqualFold(a, testPayer) || containsFold(c.owns, a)
}
func (*fakeChain) Pays(network, asset string) bool {
	return network == "eip155:8453" && strings.EqualFold(asset, testUSDC)
}

func (c *fakeChain) Quote(_ context.Context, o x402.Offer) (Quote, error) {
	if c.quoteErr != nil {
		return Quote{}, c.quoteErr
	}
	return quote(o, c.named...)
}

func (c *fakeChain) Window(_ context.Context, _ string, now time.Time, life time.Duration) (Window, error) {
	if c.windowErr != nil {
		return Window{}, c.windowErr
	}
	return Window{ValidAfter: now.Unix(), ValidBefore: now.Add(life).Unix(), Blockhash: "hash"}, nil
}

func (c *fakeChain) Sign(p Payment) (http.Header, error) {
	if c.signErr != nil {
		return nil, c.signErr
	}
	return http.Header{http.CanonicalHeaderKey(x402.HeaderPaymentV2): {"signed " + p.ID}}, nil
}

func (c *fakeChain) Moved(_ context.Context, p Payment, _ *x402.Settlement) (Moved, error) {
	if c.lagging > 0 {
		c.lagging--
		return Moved{Amount: p.Offer.Amount}, x402.ErrNoSettlement
	}
	return c.moved, c.movedErr
}

func (c *fakeChain) Reads() bool { return c.reads }

func (*fakeChain) SettlesUntil(p Payment) time.Time { return windowEnd(p) }

func (c *fakeChain) Settled(context.Context, Payment) (Evidence, error) {
	return c.evidence, c.settleErr
}

func containsFold(all []string, a string) bool {
	for _, x := range all {
		if strings.EqualFold(x, a) {
			return true
		}
	}
	return false
}

// memSeller is a seller in memory: it asks price for the request without payment
// and answers paid with the payment.
type memSeller struct {
	mu    sync.Mutex
	offer func(w http.ResponseWriter)
	paid  func(w http.ResponseWriter)
	err   error // every sending fails with it
	sent  []string
}

func (s *memSeller) Send(_ context.Context, req *http.Request) (*http.Response, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sent = append(s.sent, req.Header.Get(x402.HeaderPaymentV2))
	if s.err != nil {
		return nil, s.err
	}
	w := httptest.NewRecorder()
	if req.Header.Get(x402.HeaderPaymentV2) == "" {
		s.offer(w)
	} else {
		s.paid(w)
	}
	return w.Result(), nil
}

func asks(amount, payTo string) func(http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		w.Header().Set(x402.HeaderPaymentRequired, base64.StdEncoding.EncodeToString([]byte(offerDoc(amount, payTo))))
		w.WriteHeader(http.StatusPaymentRequired)
	}
}

func answers(status int, tx string, body string) func(http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		if tx != "" {
			name, value := x402.Settlement{Success: true, Transaction: tx, Network: "eip155:8453"}.Header(2)
			w.Header().Set(name, value)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
}

var testNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func newTestService(chain *fakeChain, store *memStore, seller *memSeller) *Service {
	return &Service{Store: store, Payer: &Payer{}, Sender: seller, Log: slog.New(slog.DiscardHandler),
		Now: func() time.Time { return testNow }, Lease: time.Second, chains: []Family{chain}}
}

func testAsk(max string) Ask {
	return Ask{ClientRequestID: "c1", MaximumDebit: max, HTTPRequest: Envelope{Method: http.MethodGet, URL: testURL}, Reason: "a thing"}
}

// TestAskRaisesARequestForTheOfferTheChainPays: the service reads the seller's offer,
// has the chain's family price it, and raises an authorize_payment request for it
// that names the family's payer, the price and a fresh nonce.
func TestAskRaisesARequestForTheOfferTheChainPays(t *testing.T) {
	store, seller := newMemStore(), &memSeller{offer: asks("25000", testPayTo)}
	s := newTestService(&fakeChain{}, store, seller)
	pay, req, err := s.Ask(context.Background(), auth.Principal{AgentID: "agent"}, "ses_1", testAsk("0.05"), Verdict{Verdict: "good"}, 10)
	if err != nil {
		t.Fatal(err)
	}
	if req.ID != "req_1" || pay.SessionID != "ses_1" || pay.Host != "seller.example" || pay.Payer != testPayer || len(pay.Nonce) != 32 {
		t.Fatalf("payment %+v, request %+v", pay, req)
	}
	if o := pay.Offer; o.Value != 25_000 || o.Symbol != "USDC" || o.Network != "eip155:8453" || o.PayTo != testPayTo || o.Amount != "25000" || pay.MaximumDebit != 50_000 {
		t.Errorf("offer %+v, maximum %s", o, pay.MaximumDebit)
	}
	n := store.asked[0]
	if n.Kind != request.KindAuthorizePayment || n.Params.Amount != "0.025" || n.Params.Recipient != testPayTo ||
		n.Params.Summary != "Pay 0.025 USDC to seller.example for GET "+testURL || *n.TTLSeconds != int64(request.DefaultTTL/time.Second) {
		t.Errorf("request %+v (ttl %d)", n.Params, *n.TTLSeconds)
	}
	if len(seller.sent) != 1 || seller.sent[0] != "" {
		t.Errorf("the seller heard %q, want one request without payment", seller.sent)
	}
}

// TestAskRefusesWhatThePersonTheSellerOrTheChainDoesNotAllow: each refusal says
// which, and none raises a request.
func TestAskRefusesWhatThePersonTheSellerOrTheChainDoesNotAllow(t *testing.T) {
	ttl := int64(1)
	for _, c := range []struct {
		name   string
		store  func(*memStore)
		seller *memSeller
		chain  fakeChain
		ask    func(*Ask)
		code   string
	}{
		{name: "paused", store: func(m *memStore) { m.limits.Paused = true }, code: problem.AgentPaused},
		{name: "host denied", store: func(m *memStore) { m.limits.Hosts = []string{"seller.example"} }, code: problem.HostNotAllowed},
		{name: "above the most for a payment", store: func(m *memStore) { m.limits.PerPayment = 1 }, code: problem.SpendingLimitExceeded},
		{name: "unreachable", seller: &memSeller{err: errors.New("connection refused")}, code: problem.UpstreamError},
		{name: "free", seller: &memSeller{offer: answers(200, "", "{}")}, code: problem.OfferNotPayable},
		{name: "no x402 document", seller: &memSeller{offer: func(w http.ResponseWriter) { w.WriteHeader(402); io.WriteString(w, "pay me") }}, code: problem.OfferNotPayable},
		{name: "an offer the chain cannot sign", chain: fakeChain{quoteErr: errNoValue}, code: problem.OfferNotPayable},
		{name: "above the maximum debit", ask: func(a *Ask) { a.MaximumDebit = "0.01" }, code: problem.PriceAboveMaximum},
		{name: "pays the payer", seller: &memSeller{offer: asks("25000", testPayer)}, code: problem.OfferNamesPayer},
		{name: "names the payer", chain: fakeChain{named: []string{"fee"}, owns: []string{"fee"}}, code: problem.OfferNamesPayer},
		{name: "a lifetime too short", ask: func(a *Ask) { a.TTLSeconds = &ttl }, code: problem.ValidationFailed},
		{name: "a bad request", ask: func(a *Ask) { a.HTTPRequest.Method = "BAD METHOD" }, code: problem.ValidationFailed},
	} {
		t.Run(c.name, func(t *testing.T) {
			store := newMemStore()
			if c.store != nil {
				c.store(store)
			}
			seller := c.seller
			if seller == nil {
				seller = &memSeller{}
			}
			if seller.offer == nil {
				seller.offer = asks("25000", testPayTo)
			}
			a := testAsk("0.05")
			if c.ask != nil {
				c.ask(&a)
			}
			s := newTestService(&c.chain, store, seller)
			_, _, err := s.Ask(context.Background(), auth.Principal{AgentID: "agent"}, "ses_1", a, Verdict{}, 10)
			if problem.CodeOf(err) != c.code || len(store.created) != 0 {
				t.Errorf("%v (%s), %d payments; want %s", err, problem.CodeOf(err), len(store.created), c.code)
			}
		})
	}
}

// TestAnOfferNoFamilyPaysNamesWhereThePayerPays: the refusal lists the networks of
// every family, and a service without one pays on no network.
func TestAnOfferNoFamilyPaysNamesWhereThePayerPays(t *testing.T) {
	store, seller := newMemStore(), &memSeller{offer: asks("25000", testPayTo)}
	s := newTestService(&fakeChain{}, store, seller)
	s.chains = []Family{evm{payer: &Payer{}}}
	_, _, err := s.Ask(context.Background(), auth.Principal{}, "ses_1", testAsk("0.05"), Verdict{}, 10)
	if problem.CodeOf(err) != problem.OfferNotPayable || !strings.Contains(err.Error(), "on no network") {
		t.Errorf("%v", err)
	}
}

// approved is the payment Ask made, approved and waiting for the executor.
func approved(t *testing.T, s *Service, store *memStore) Payment {
	t.Helper()
	p, _, err := s.Ask(context.Background(), auth.Principal{AgentID: "agent"}, "ses_1", testAsk("0.05"), Verdict{}, 10)
	if err != nil {
		t.Fatal(err)
	}
	p.Attempts = 1
	store.waiting = append(store.waiting, p)
	return p
}

// TestExecuteSignsWithinTheFamilysWindowAndRecordsTheSettlement: the executor checks
// the offer again, records the family's window before the payment leaves, sends the
// family's header and records the seller's settlement and answer.
func TestExecuteSignsWithinTheFamilysWindowAndRecordsTheSettlement(t *testing.T) {
	store := newMemStore()
	seller := &memSeller{offer: asks("25000", testPayTo), paid: answers(200, "0xabc", `{"thing":1}`)}
	s := newTestService(&fakeChain{}, store, seller)
	approved(t, s, store)
	did, err := s.Execute(context.Background())
	if !did || err != nil {
		t.Fatalf("Execute: %v %v", did, err)
	}
	if store.taken != time.Second {
		t.Errorf("taken with a lease of %s", store.taken)
	}
	life := s.Lifetime(60)
	if len(store.signed) != 1 || store.signed[0] != (Window{ValidAfter: testNow.Unix(), ValidBefore: testNow.Add(life).Unix(), Blockhash: "hash"}) {
		t.Errorf("signed %+v", store.signed)
	}
	if len(seller.sent) != 3 || seller.sent[2] != "signed pay_1" {
		t.Errorf("the seller heard %q", seller.sent)
	}
	o := store.outcome(t)
	if o.Status != StatusSettled || !o.Delivered || o.Transaction != "0xabc" || o.Receipt.Transaction == nil || *o.Receipt.Transaction != "0xabc" {
		t.Errorf("outcome %+v", o)
	}
	if r := o.Receipt.Response; r == nil || r.Status != 200 || r.Body != `{"thing":1}` || r.Encoding != "text" || r.Bytes != 11 || r.Truncated {
		t.Errorf("answer %+v", r)
	}
	if did, err := s.Execute(context.Background()); did || err != nil {
		t.Errorf("Execute with nothing waiting: %v %v", did, err)
	}
}

// TestExecuteKeepsOnlyTheStartOfALongOrBinaryAnswer: the receipt holds the first
// MaxResponse bytes, base64 when they are not text, and the hash of the whole.
func TestExecuteKeepsOnlyTheStartOfALongOrBinaryAnswer(t *testing.T) {
	store := newMemStore()
	seller := &memSeller{offer: asks("25000", testPayTo), paid: func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write([]byte{0, 1, 2, 3, 4, 5})
	}}
	s := newTestService(&fakeChain{}, store, seller)
	s.MaxResponse = 4
	approved(t, s, store)
	if _, err := s.Execute(context.Background()); err != nil {
		t.Fatal(err)
	}
	o := store.outcome(t)
	if r := o.Receipt.Response; o.Status != StatusSettled || !o.Delivered || r.Encoding != "base64" || r.Body != "AAECAw==" || !r.Truncated || r.Bytes != 6 || len(r.SHA256) != 64 {
		t.Errorf("outcome %+v, answer %+v", o, r)
	}
}

// TestExecuteSignsNothingWhenItMayNot: an offer gone or changed, a family that
// refuses to open a window or to sign, an agent stopped: the payment fails with the
// reason, and nothing with a payment reaches the seller.
func TestExecuteSignsNothingWhenItMayNot(t *testing.T) {
	for _, c := range []struct {
		name    string
		chain   fakeChain
		now     func(*memSeller)
		markErr error
		failure string
	}{
		{name: "offer gone", now: func(s *memSeller) { s.offer = answers(200, "", "{}") }, failure: FailNoOffer},
		{name: "offer changed", now: func(s *memSeller) { s.offer = asks("25001", testPayTo) }, failure: FailOfferChanged},
		{name: "no window", chain: fakeChain{windowErr: refusal{FailNoBlockhash, errors.New("rpc down")}}, failure: FailNoBlockhash},
		{name: "agent stopped", markErr: ErrAgentStopped, failure: FailAgentDisabled},
		{name: "unsignable", chain: fakeChain{signErr: refusal{FailNoOffer, errors.New("no key")}}, failure: FailNoOffer},
	} {
		t.Run(c.name, func(t *testing.T) {
			store := newMemStore()
			seller := &memSeller{offer: asks("25000", testPayTo), paid: answers(200, "0xabc", "{}")}
			s := newTestService(&c.chain, store, seller)
			approved(t, s, store)
			if c.now != nil {
				c.now(seller)
			}
			store.markErr = c.markErr
			if _, err := s.Execute(context.Background()); err != nil {
				t.Fatal(err)
			}
			o := store.outcome(t)
			if o.Status != StatusFailed || o.Failure != c.failure || o.Receipt.Failure == nil || *o.Receipt.Failure != c.failure {
				t.Errorf("outcome %+v, want failed with %s", o, c.failure)
			}
			for _, h := range seller.sent {
				if h != "" {
					t.Errorf("a payment reached the seller: %q", h)
				}
			}
		})
	}
}

// TestExecuteStopsOnAnErrorItCannotRecord: a window that fails for another reason
// than a refusal, or a failing store, is the executor's error, and nothing is
// recorded.
func TestExecuteStopsOnAnErrorItCannotRecord(t *testing.T) {
	boom := errors.New("boom")
	for _, c := range []struct {
		name    string
		chain   fakeChain
		markErr error
	}{
		{name: "window", chain: fakeChain{windowErr: boom}},
		{name: "sign", chain: fakeChain{signErr: boom}},
		{name: "store", markErr: boom},
	} {
		t.Run(c.name, func(t *testing.T) {
			store := newMemStore()
			s := newTestService(&c.chain, store, &memSeller{offer: asks("25000", testPayTo)})
			approved(t, s, store)
			store.markErr = c.markErr
			if _, err := s.Execute(context.Background()); !errors.Is(err, boom) || len(store.finished) != 0 {
				t.Errorf("%v, %d outcomes", err, len(store.finished))
			}
		})
	}
}

// TestAnAnswerThatProvesNothingLeavesThePaymentUnknown: a refusal after the payment
// left, or a silence on a payment sent again, says nothing of whether it settled:
// the payment is unknown, with the seller's answer kept; a first silence within the
// window leaves it to be sent again as it is.
func TestAnAnswerThatProvesNothingLeavesThePaymentUnknown(t *testing.T) {
	store := newMemStore()
	seller := &memSeller{offer: asks("25000", testPayTo), paid: answers(402, "", `{"error":"nope"}`)}
	s := newTestService(&fakeChain{}, store, seller)
	approved(t, s, store)
	if _, err := s.Execute(context.Background()); err != nil {
		t.Fatal(err)
	}
	o := store.outcome(t)
	if o.Status != StatusUnknown || o.Receipt.Response == nil || o.Receipt.Response.Status != 402 {
		t.Errorf("after a refusal: %+v", o)
	}

	store = newMemStore()
	seller = &memSeller{offer: asks("25000", testPayTo)}
	s = newTestService(&fakeChain{}, store, seller)
	p := approved(t, s, store)
	seller.err = errors.New("connection reset")
	signedAt := testNow
	p.SignedAt, p.ValidBefore = &signedAt, testNow.Add(time.Minute).Unix()
	store.waiting = []Payment{p}
	if _, err := s.Execute(context.Background()); err != nil || len(store.finished) != 0 {
		t.Fatalf("a first silence: %v, %+v", err, store.finished)
	}
	if len(store.signed) != 0 || seller.sent[len(seller.sent)-1] != "signed pay_1" {
		t.Errorf("a signed payment taken again is not sent again as it was: signed %+v, sent %q", store.signed, seller.sent)
	}
	p.Attempts = 2
	store.waiting = []Payment{p}
	if _, err := s.Execute(context.Background()); err != nil {
		t.Fatal(err)
	}
	if o := store.outcome(t); o.Status != StatusUnknown || o.Receipt.Response != nil {
		t.Errorf("after a second silence: %+v", o)
	}
}

// TestResolveSettlesAnUnknownPaymentFromTheChain: the family's evidence decides:
// used settles it undelivered with the transaction, closed or past its window fails
// it, anything else leaves it unknown; a service whose families read no chain looks
// at none.
func TestResolveSettlesAnUnknownPaymentFromTheChain(t *testing.T) {
	answer := &request.SellerResponse{Status: 402}
	unknown := Payment{ID: "pay_1", Status: StatusUnknown, Answer: answer, ValidBefore: testNow.Add(time.Minute).Unix(),
		Offer: Offer{Version: 2, Scheme: x402.SchemeExact, Network: "eip155:8453", Asset: testUSDC, PayTo: testPayTo, Amount: "25000", Value: 25_000}}
	for _, c := range []struct {
		name    string
		chain   fakeChain
		offer   func(*Payment)
		status  string
		failure string
	}{
		{name: "used", chain: fakeChain{evidence: Evidence{Used: true, Transaction: "0xabc"}}, status: StatusSettled},
		{name: "closed", chain: fakeChain{evidence: Evidence{Closed: true}}, status: StatusFailed, failure: FailNotSettled},
		{name: "past its window", chain: fakeChain{}, offer: func(p *Payment) { p.ValidBefore = testNow.Add(-settleGrace - time.Second).Unix() },
			status: StatusFailed, failure: FailNotSettled},
		{name: "unused in its window", chain: fakeChain{}},
		{name: "no chain for its network", chain: fakeChain{settleErr: x402.ErrNoChain}},
		{name: "the chain silent", chain: fakeChain{settleErr: errors.New("timeout")}},
		{name: "no family for its network", offer: func(p *Payment) { p.Offer.Network = "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp" }},
	} {
		t.Run(c.name, func(t *testing.T) {
			store := newMemStore()
			p := unknown
			if c.offer != nil {
				c.offer(&p)
			}
			store.unknowns = []Payment{p}
			c.chain.reads = true
			s := newTestService(&c.chain, store, &memSeller{})
			if did, err := s.Resolve(context.Background()); !did || err != nil {
				t.Fatalf("Resolve: %v %v", did, err)
			}
			if c.status == "" {
				if len(store.finished) != 0 {
					t.Errorf("recorded %+v, want it left unknown", store.finished)
				}
				return
			}
			o := store.outcome(t)
			if o.Status != c.status || o.Failure != c.failure || o.Delivered {
				t.Errorf("outcome %+v", o)
			}
			if c.status == StatusSettled && (o.Transaction != "0xabc" || o.Receipt.Response != answer || o.Receipt.Delivered == nil || *o.Receipt.Delivered) {
				t.Errorf("settled receipt %+v", o.Receipt)
			}
			if did, err := s.Resolve(context.Background()); did || err != nil {
				t.Errorf("Resolve with nothing due: %v %v", did, err)
			}
		})
	}
	store := newMemStore()
	store.unknowns = []Payment{unknown}
	if did, err := newTestService(&fakeChain{}, store, &memSeller{}).Resolve(context.Background()); did || err != nil || len(store.unknowns) != 1 {
		t.Errorf("Resolve without a chain: %v %v", did, err)
	}
}

// TestASellerThatMisstatesWhatMovedIsRecordedAtTheChainsWordAndNotDelivered: the
// seller answers its report and a settlement; when the family reads on the chain
// that more moved than the answer says, the chain's amount and transaction are
// recorded, and the payment as a lie is: settled, not delivered, its answer kept.
// When the chain shows no settlement of an unknown payment whose nonce is used, it
// stays unknown while the authorization may still settle, and the family's answer
// (the maximum) is recorded once it cannot; when the chain cannot tell, the payment
// stays unknown, to be read again.
func TestASellerThatMisstatesWhatMovedIsRecordedAtTheChainsWordAndNotDelivered(t *testing.T) {
	store := newMemStore()
	seller := &memSeller{offer: asks("50000", testPayTo), paid: answers(200, "0xabc", `{"report":1}`)}
	chain := &fakeChain{moved: Moved{Amount: "40000", Transaction: "0xdef", Misstated: true}}
	s := newTestService(chain, store, seller)
	approved(t, s, store)
	if did, err := s.Execute(context.Background()); !did || err != nil {
		t.Fatalf("Execute: %v %v", did, err)
	}
	o := store.outcome(t)
	if o.Status != StatusSettled || o.Delivered || o.Moved != "40000" || o.Transaction != "0xdef" || o.Receipt.SettledAmount == nil ||
		*o.Receipt.SettledAmount != "40000" || o.Receipt.Response == nil || o.Receipt.Response.Body != `{"report":1}` {
		t.Errorf("outcome %+v", o)
	}

	unknown := Payment{ID: "pay_2", Status: StatusUnknown, ValidBefore: testNow.Add(time.Minute).Unix(),
		Offer: Offer{Version: 2, Scheme: x402.SchemeExact, Network: "eip155:8453", Asset: testUSDC, PayTo: testPayTo, Amount: "50000", Value: 50_000}}
	for _, c := range []struct {
		name   string
		moved  Moved
		err    error
		status string
		later  time.Duration
	}{
		{"found", Moved{Amount: "3000", Transaction: "0x123"}, nil, StatusSettled, 0},
		{"no transaction found in its window", Moved{Amount: "50000"}, x402.ErrNoSettlement, "", 0},
		{"no transaction found past its window", Moved{Amount: "50000"}, x402.ErrNoSettlement, StatusSettled, time.Minute + settleGrace + time.Second},
		{"the chain silent", Moved{Amount: "50000"}, errors.New("timeout"), "", 0},
	} {
		store := newMemStore()
		store.unknowns = []Payment{unknown}
		chain := &fakeChain{reads: true, evidence: Evidence{Used: true}, moved: c.moved, movedErr: c.err}
		s := newTestService(chain, store, &memSeller{})
		s.Now = func() time.Time { return testNow.Add(c.later) }
		if did, err := s.Resolve(context.Background()); !did || err != nil {
			t.Fatalf("%s: Resolve: %v %v", c.name, did, err)
		}
		if c.status == "" {
			if len(store.finished) != 0 {
				t.Errorf("%s: recorded %+v, want it left unknown", c.name, store.finished)
			}
			continue
		}
		if o := store.outcome(t); o.Status != c.status || o.Moved != c.moved.Amount || o.Transaction != c.moved.Transaction {
			t.Errorf("%s: outcome %+v", c.name, o)
		}
	}
}

// TestRunExecutesAKickedPaymentUntilStopped: an approval's kick wakes the executor,
// which pays at once; ending the context ends Run.
func TestRunExecutesAKickedPaymentUntilStopped(t *testing.T) {
	store := newMemStore()
	seller := &memSeller{offer: asks("25000", testPayTo), paid: answers(200, "0xabc", "{}")}
	s := newTestService(&fakeChain{}, store, seller)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx, time.Hour) }()
	approvedLocked(t, s, store)
	s.Kick()
	s.Kick() // a second kick while one waits is dropped
	deadline := time.Now().Add(5 * time.Second)
	for {
		store.mu.Lock()
		n := len(store.finished)
		store.mu.Unlock()
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the kicked payment was not executed")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	<-done
}

func approvedLocked(t *testing.T, s *Service, store *memStore) {
	t.Helper()
	p, _, err := s.Ask(context.Background(), auth.Principal{AgentID: "agent"}, "ses_1", testAsk("0.05"), Verdict{}, 10)
	if err != nil {
		t.Fatal(err)
	}
	store.mu.Lock()
	store.waiting = append(store.waiting, p)
	store.mu.Unlock()
}

// TestAnExecutorThatLosesItsLeaseRecordsNothing: once another executor took the
// payment, this one stops and records nothing, whatever the seller answered.
func TestAnExecutorThatLosesItsLeaseRecordsNothing(t *testing.T) {
	store := newMemStore()
	seller := &memSeller{offer: asks("25000", testPayTo), paid: answers(200, "0xabc", "{}")}
	s := newTestService(&fakeChain{}, store, seller)
	s.Lease = 30 * time.Millisecond
	approved(t, s, store)
	s.afterSend = func(Payment) error {
		store.mu.Lock()
		store.renew = false
		store.mu.Unlock()
		time.Sleep(100 * time.Millisecond) // the renewal finds the lease lost
		return nil
	}
	if did, err := s.Execute(context.Background()); !did || err != nil {
		t.Fatalf("Execute: %v %v", did, err)
	}
	if len(store.finished) != 0 {
		t.Errorf("recorded %+v", store.finished)
	}
}

// TestTheServiceReadsThroughToItsStore: the reads the API and the pages make, and a
// service that keeps no payments answering nothing.
func TestTheServiceReadsThroughToItsStore(t *testing.T) {
	ctx, p := context.Background(), auth.Principal{UserID: "user"}
	store := newMemStore()
	s := newTestService(&fakeChain{}, store, &memSeller{offer: asks("25000", testPayTo)})
	pay := approved(t, s, store)
	if got, err := s.Payment(ctx, p, "ses_1", pay.ID); err != nil || got.ID != pay.ID {
		t.Errorf("Payment: %+v %v", got, err)
	}
	if got, lim, err := s.RequestPayment(ctx, p, "req_1", "agent"); err != nil || got.ID != pay.ID || lim.Daily != DefaultLimits.Daily {
		t.Errorf("RequestPayment: %+v %+v %v", got, lim, err)
	}
	if lim, err := s.AgentLimits(ctx, "agent"); err != nil || lim.PerPayment != DefaultLimits.PerPayment {
		t.Errorf("AgentLimits: %+v %v", lim, err)
	}
	if l, err := s.SetLimits(ctx, p, "agent", Limits{Daily: 7}); err != nil || l.Daily != 7 {
		t.Errorf("SetLimits: %+v %v", l, err)
	}
	if l, err := s.Ledger(ctx, p, 10); err != nil || len(l) != 1 {
		t.Errorf("Ledger: %+v %v", l, err)
	}
	if d, err := s.DailySpend(ctx, p, 7); err != nil || len(d) != 1 || !d[0].Day.Equal(time.Date(2026, 2, 23, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("DailySpend: %+v %v", d, err)
	}
	if !s.Clock().Equal(testNow) || !s.Keeps() {
		t.Error("Clock or Keeps")
	}
	none := &Service{}
	if pay, lim, err := none.RequestPayment(ctx, p, "req_1", "agent"); pay != nil || lim != nil || err != nil {
		t.Error("RequestPayment without a store")
	}
	if lim, err := none.AgentLimits(ctx, "agent"); lim != nil || err != nil {
		t.Error("AgentLimits without a store")
	}
	if d, err := none.DailySpend(ctx, p, 7); d != nil || err != nil {
		t.Error("DailySpend without a store")
	}
	if did, err := none.Execute(ctx); did || err != nil {
		t.Error("Execute without a payer")
	}
	if none.Clock().IsZero() {
		t.Error("the clock without Now")
	}
}

// TestLifetimeNeverPassesTheCeiling: an authorization lives what the offer asks, at
// most the ceiling, and the whole ceiling when it asks none.
func TestLifetimeNeverPassesTheCeiling(t *testing.T) {
	s := &Service{}
	if s.Lifetime(60) != time.Minute || s.Lifetime(0) != DefaultMaxAuthorization || s.Lifetime(3600) != DefaultMaxAuthorization {
		t.Error("default ceiling")
	}
	s.MaxAuthorization = 30 * time.Second
	if s.Lifetime(60) != 30*time.Second {
		t.Error("a ceiling set")
	}
}

// TestWhatMovedUnreadRightAfterSuccessIsReadAgainLater: the seller answers its
// report and a settlement, and the chain cannot be read for what moved. The payment
// is left unknown (counted at its maximum) with the answer and the settlement kept,
// not recorded at the maximum for good; once the chain answers, Resolve records
// what moved, delivered as answered, or not delivered when the chain contradicts
// the settlement answer. A chain that shows no settlement yet is read again as well
// (TestAChainBehindTheSellerIsReadAgainUntilTheAuthorizationEnds); a family that
// reads none records the maximum at once.
func TestWhatMovedUnreadRightAfterSuccessIsReadAgainLater(t *testing.T) {
	for _, c := range []struct {
		name    string
		reads   bool
		err     error
		unknown bool
	}{
		{"the chain silent", true, errors.New("timeout"), true},
		{"no settlement on the chain yet", true, x402.ErrNoSettlement, true},
		{"no chain", false, x402.ErrNoChain, false},
	} {
		store := newMemStore()
		seller := &memSeller{offer: asks("50000", testPayTo), paid: answers(200, "0xabc", `{"report":1}`)}
		chain := &fakeChain{reads: c.reads, moved: Moved{Amount: "50000"}, movedErr: c.err}
		s := newTestService(chain, store, seller)
		approved(t, s, store)
		if did, err := s.Execute(context.Background()); !did || err != nil {
			t.Fatalf("%s: Execute: %v %v", c.name, did, err)
		}
		o := store.outcome(t)
		if !c.unknown {
			if o.Status != StatusSettled || o.Moved != "50000" || !o.Delivered {
				t.Errorf("%s: outcome %+v, want settled at the maximum", c.name, o)
			}
			continue
		}
		if o.Status != StatusUnknown || o.Settlement == nil || o.Settlement.Transaction != "0xabc" || o.Receipt.Response == nil ||
			o.Receipt.Response.Status != 200 {
			t.Fatalf("%s: outcome %+v, want unknown with the answer and the settlement kept", c.name, o)
		}
		for _, m := range []Moved{{Amount: "3000", Transaction: "0xabc"}, {Amount: "40000", Transaction: "0xabc", Misstated: true}} {
			store := newMemStore()
			store.unknowns = []Payment{{ID: "pay_1", Status: StatusUnknown, ValidBefore: testNow.Add(time.Minute).Unix(),
				Answer: o.Receipt.Response, Settlement: o.Settlement,
				Offer: Offer{Version: 2, Scheme: x402.SchemeExact, Network: "eip155:8453", Asset: testUSDC, PayTo: testPayTo, Amount: "50000", Value: 50_000}}}
			chain := &fakeChain{reads: true, evidence: Evidence{Used: true}, moved: m}
			if did, err := newTestService(chain, store, seller).Resolve(context.Background()); !did || err != nil {
				t.Fatalf("Resolve: %v %v", did, err)
			}
			r := store.outcome(t)
			if r.Status != StatusSettled || r.Moved != m.Amount || r.Transaction != "0xabc" || r.Delivered == m.Misstated ||
				r.Receipt.Response == nil || r.Receipt.Response.Body != `{"report":1}` || r.Settlement != o.Settlement {
				t.Errorf("resolved %+v, want settled at %s, delivered %v", r, m.Amount, !m.Misstated)
			}
		}
	}
}

// TestAChainBehindTheSellerIsReadAgainUntilTheAuthorizationEnds: the seller
// answers its report and a settlement, and the chain, a few blocks behind the
// seller's, shows no settlement yet. That is not "nothing moved": the payment is
// left unknown (counted at its maximum) with the answer and the settlement kept,
// and read again; once the chain shows the settlement it is recorded at what
// moved, delivered. Only once the authorization can no longer be used (its window
// closed, and the grace after it) with still no settlement shown is the maximum
// recorded, what left the payer and may never come back.
func TestAChainBehindTheSellerIsReadAgainUntilTheAuthorizationEnds(t *testing.T) {
	store := newMemStore()
	seller := &memSeller{offer: asks("50000", testPayTo), paid: answers(200, "0xabc", `{"report":1}`)}
	chain := &fakeChain{reads: true, evidence: Evidence{Used: true}, moved: Moved{Amount: "3000", Transaction: "0xabc"}, lagging: 2}
	s := newTestService(chain, store, seller)
	p := approved(t, s, store)
	if did, err := s.Execute(context.Background()); !did || err != nil {
		t.Fatalf("Execute: %v %v", did, err)
	}
	o := store.outcome(t)
	if o.Status != StatusUnknown || o.Settlement == nil || o.Settlement.Transaction != "0xabc" || o.Receipt.Response == nil {
		t.Fatalf("outcome %+v, want unknown with the answer and the settlement kept, not the maximum for good", o)
	}
	p.Status, p.Answer, p.Settlement, p.ValidBefore = StatusUnknown, o.Receipt.Response, o.Settlement, testNow.Add(time.Minute).Unix()
	resolve := func(now time.Time) []Outcome {
		t.Helper()
		store := newMemStore()
		store.unknowns = []Payment{p}
		s := newTestService(chain, store, seller)
		s.Now = func() time.Time { return now }
		if did, err := s.Resolve(context.Background()); !did || err != nil {
			t.Fatalf("Resolve: %v %v", did, err)
		}
		return store.finished
	}
	if got := resolve(testNow); len(got) != 0 {
		t.Fatalf("the chain still behind: recorded %+v, want it left unknown", got)
	}
	if got := resolve(testNow); len(got) != 1 || got[0].Status != StatusSettled || got[0].Moved != "3000" || !got[0].Delivered ||
		got[0].Transaction != "0xabc" || got[0].Receipt.Response == nil || got[0].Receipt.Response.Body != `{"report":1}` {
		t.Fatalf("the chain caught up: recorded %+v, want settled at 3000, delivered", got)
	}

	chain.lagging = 1_000
	for _, c := range []struct {
		name string
		now  time.Time
		want string
	}{
		{"in its window", testNow.Add(time.Minute), ""},
		{"in the grace after it", testNow.Add(time.Minute + settleGrace), ""},
		{"past the grace", testNow.Add(time.Minute + settleGrace + time.Second), "50000"},
	} {
		got := resolve(c.now)
		switch {
		case c.want == "" && len(got) != 0:
			t.Errorf("%s, no settlement shown: recorded %+v, want it left unknown", c.name, got)
		case c.want != "" && (len(got) != 1 || got[0].Status != StatusSettled || got[0].Moved != c.want):
			t.Errorf("%s, no settlement shown: recorded %+v, want settled at the maximum", c.name, got)
		}
	}
}

// TestASettlementThatMovedNothingAndDeliveredNothingIsNotSpent: a seller answers
// 402 with a settlement success, and the chain shows that what left the payer came
// back whole. Nothing was paid and nothing delivered: the payment is not settled,
// nothing of it spent, not a payment settled at 0.
func TestASettlementThatMovedNothingAndDeliveredNothingIsNotSpent(t *testing.T) {
	t.Parallel()
	store := newMemStore()
	seller := &memSeller{offer: asks("50000", testPayTo), paid: answers(402, "0xabc", `{}`)}
	chain := &fakeChain{reads: true, moved: Moved{Amount: "0", Transaction: "0xabc"}}
	s := newTestService(chain, store, seller)
	approved(t, s, store)
	if did, err := s.Execute(context.Background()); !did || err != nil {
		t.Fatalf("Execute: %v %v", did, err)
	}
	if o := store.outcome(t); o.Status != StatusFailed || o.Failure != FailNotSettled || o.Moved != "" || o.Transaction != "0xabc" {
		t.Errorf("outcome %+v, want failed %s in 0xabc", o, FailNotSettled)
	}
}
