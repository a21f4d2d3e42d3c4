package payment

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/waystation/waystation/internal/auth"
	"github.com/waystation/waystation/internal/periodic"
	"github.com/waystation/waystation/internal/problem"
	"github.com/waystation/waystation/internal/request"
	"github.com/waystation/waystation/internal/x402"
)

// Sender sends one exact request to a seller through the service's guarded client
// (public addresses only, unless named; no redirect followed).
type Sender interface {
	Send(ctx context.Context, req *http.Request) (*http.Response, error)
}

// userAgent names the service to a seller when the person's request names nothing.
const userAgent = "Waystation/1 (x402 payer)"

// send sends req to the seller through the Sender, under the payer's User-Agent
// unless the request names one.
func (s *Service) send(ctx context.Context, req *http.Request) (*http.Response, error) {
	if req.Header.Get("User-Agent") == "" {
		req.Header.Set("User-Agent", userAgent)
	}
	return s.Sender.Send(ctx, req.WithContext(ctx))
}

// Outcome is how an executing payment ended.
type Outcome struct {
	Status      string
	Failure     string
	Settlement  *x402.Settlement
	Delivered   bool
	Transaction string
	Receipt     request.Receipt
	// Moved is what a settled upto payment moved, in atomic units; "" when it
	// moved its offer's amount.
	Moved string
}

// Service asks for payments and carries out the approved ones.
type Service struct {
	Store  Store
	Payer  *Payer
	Sender Sender
	Log    *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Reports keeps the delivery reports on settled payments; without it none is
	// taken.
	Reports ReportStore
	// Chain, when set, settles payments whose outcome is unknown from the chain's
	// state; without it they stay unknown, counted in spend.
	Chain Chain
	// Lease is how long an executing payment is left to an executor that stopped
	// renewing it before another takes it back (default 15 s); a live executor
	// renews it every third of it.
	Lease time.Duration
	// CheckEvery is how often an unknown payment's authorization is looked up
	// (default 5 s).
	CheckEvery time.Duration
	// MaxResponse is how much of the seller's answer the receipt keeps (default 256 KiB).
	MaxResponse int64
	// MaxAuthorization bounds the life of every authorization the service signs
	// (default DefaultMaxAuthorization): an offer asking a longer maxTimeoutSeconds
	// gets this long.
	MaxAuthorization time.Duration

	// afterSend, in tests, stops the executor between sending and recording, as a
	// crash would.
	afterSend func(Payment) error
	// chains, in tests, are the families paid on instead of the Payer's.
	chains []Family

	kick     chan struct{}
	kickOnce sync.Once // makes kick, for Kick and Run alike
}

// CheckPayer is nil when the service pays sellers, and ErrNoPayer
// (payer_not_configured) when it was built without a payer: the API's payment
// routes answer that before reading anything.
func (s *Service) CheckPayer() error {
	if s.Payer == nil {
		return ErrNoPayer
	}
	return nil
}

// Payment is payment id of session sessionID, if p may see it.
func (s *Service) Payment(ctx context.Context, p auth.Principal, sessionID, id string) (Payment, error) {
	return s.Store.Payment(ctx, p, sessionID, id)
}

// Keeps tells whether the service keeps payments and limits: one built without a
// store (the console's, where payments are not served) has none to show.
func (s *Service) Keeps() bool { return s.Store != nil }

// RequestPayment is what an authorize_payment request's page shows: the payment
// request requestID approves, if p may see it, and its agent agentID's limits and
// spend now; nil and nil from a service that keeps no payments.
func (s *Service) RequestPayment(ctx context.Context, p auth.Principal, requestID, agentID string) (*Payment, *LimitsAndSpend, error) {
	if !s.Keeps() {
		return nil, nil, nil
	}
	pay, err := s.Store.PaymentOfRequest(ctx, p, requestID)
	if err != nil {
		return nil, nil, err
	}
	lim, err := s.Limits(ctx, agentID)
	if err != nil {
		return nil, nil, err
	}
	return &pay, &lim, nil
}

// AgentLimits is what the console shows of agent agentID's spending: its limits and
// spend now; nil from a service that keeps no payments.
func (s *Service) AgentLimits(ctx context.Context, agentID string) (*LimitsAndSpend, error) {
	if !s.Keeps() {
		return nil, nil
	}
	l, err := s.Limits(ctx, agentID)
	if err != nil {
		return nil, err
	}
	return &l, nil
}

// Limits are agent agentID's limits and its spend now.
func (s *Service) Limits(ctx context.Context, agentID string) (LimitsAndSpend, error) {
	return s.Store.Limits(ctx, agentID, s.now())
}

// SetLimits sets what one of user p's agents may spend.
func (s *Service) SetLimits(ctx context.Context, p auth.Principal, agentID string, l Limits) (LimitsAndSpend, error) {
	return s.Store.SetLimits(ctx, p, agentID, l)
}

// Ledger is user p's newest payments, at most limit.
func (s *Service) Ledger(ctx context.Context, p auth.Principal, limit int) ([]LedgerEntry, error) {
	return s.Store.Ledger(ctx, p, limit)
}

// DailySpend is what each of user p's agents spent on each of the last days UTC
// days, today included (days without spend left out); nil from a service that keeps
// no payments.
func (s *Service) DailySpend(ctx context.Context, p auth.Principal, days int) ([]DaySpend, error) {
	if !s.Keeps() {
		return nil, nil
	}
	today, _ := Periods(s.now())
	return s.Store.DailySpend(ctx, p, today.AddDate(0, 0, 1-days))
}

// families are the chain families the service pays on: the Payer's, settled from
// Chain for EVM.
func (s *Service) families() []Family {
	if s.chains != nil {
		return s.chains
	}
	return s.Payer.families(s.Chain)
}

// family is the family that pays offer o, as approved; nil when none does.
func (s *Service) family(o Offer) Family { return familyOf(s.families(), o.Network, o.Scheme) }

// Clock is the service's time: what spend is counted at.
func (s *Service) Clock() time.Time { return s.now() }

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// maxOfferRead bounds the 402 answer read for its offer.
const maxOfferRead = 256 << 10

// Ask reads the seller's offer for the agent's request and raises an
// authorize_payment request for it: only an offer one of the payer's families can
// pay, whose price (or, upto, whose maximum) is at most the agent's maximumDebit,
// within the agent's limits.
func (s *Service) Ask(ctx context.Context, p auth.Principal, sessionID string, a Ask, v Verdict, maxEvents int) (Payment, request.Request, error) {
	if err := s.CheckPayer(); err != nil {
		return Payment{}, request.Request{}, err
	}
	host := a.HTTPRequest.Host()
	lim, err := s.Store.Limits(ctx, p.AgentID, s.now())
	if err != nil {
		return Payment{}, request.Request{}, err
	}
	// The host list and the pause refuse before the seller hears anything.
	if err := lim.Allows(host, 0, Spend{}); err != nil {
		return Payment{}, request.Request{}, err
	}
	offer, err := s.offer(ctx, a.HTTPRequest)
	if err != nil {
		return Payment{}, request.Request{}, err
	}
	if max, _ := ParseMicros(a.MaximumDebit); offer.Value > max {
		return Payment{}, request.Request{}, problem.New(problem.PriceAboveMaximum,
			"The seller asks "+offer.Value.String()+" USD, above the maximumDebit of "+max.String()+".")
	}
	if err := lim.Allows(host, offer.Value, lim.Spent); err != nil {
		return Payment{}, request.Request{}, err
	}
	nonce := make([]byte, 32)
	if _, err := rand.Read(nonce); err != nil {
		return Payment{}, request.Request{}, err
	}
	max, _ := ParseMicros(a.MaximumDebit)
	pay := Payment{Host: host, HTTPRequest: a.HTTPRequest, Offer: offer.Offer, MaximumDebit: max, Verdict: v,
		Payer: offer.family.Address(), Nonce: nonce, Raw: offer.raw}
	ttl := a.TTLSeconds
	n := request.New{ClientRequestID: a.ClientRequestID, Kind: request.KindAuthorizePayment, TTLSeconds: ttl,
		Context: request.Context{URL: a.HTTPRequest.URL, MerchantName: host, Reason: a.Reason},
		Params: request.Params{
			Summary: "Pay " + upTo(offer.upTo) + offer.Value.String() + " " + offer.Symbol + " to " + host + " for " + a.HTTPRequest.Method + " " + a.HTTPRequest.URL,
			Amount:  offer.Value.String(), Currency: offer.Symbol, Recipient: offer.PayTo, Verdict: v.Verdict,
		}}
	if n.TTLSeconds == nil {
		t := int64(request.DefaultTTL / time.Second)
		n.TTLSeconds = &t
	}
	if t := *n.TTLSeconds; t < int64(request.MinTTL/time.Second) || t > int64(request.MaxTTL/time.Second) {
		return Payment{}, request.Request{}, problem.Invalid("ttlSeconds must be from " + strconv.Itoa(int(request.MinTTL/time.Second)) +
			" to " + strconv.Itoa(int(request.MaxTTL/time.Second)) + ".")
	}
	return s.Store.CreatePayment(ctx, p, sessionID, pay, n, maxEvents)
}

// upTo is how a summary says that the amount is a maximum.
func upTo(maximum bool) string {
	if maximum {
		return "up to "
	}
	return ""
}

type readOffer struct {
	Offer
	raw    x402.Offer
	family Family
	upTo   bool
}

// offer sends the envelope without payment and reads the offer the payer can pay.
func (s *Service) offer(ctx context.Context, e Envelope) (readOffer, error) {
	req, err := e.Request(nil)
	if err != nil {
		return readOffer{}, problem.Invalid("httpRequest does not make an HTTP request.")
	}
	resp, err := s.send(ctx, req)
	if err != nil {
		return readOffer{}, problem.Wrap(problem.UpstreamError, "The seller could not be reached: "+x402.Clean(err.Error(), 200), err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxOfferRead))
	if resp.StatusCode != http.StatusPaymentRequired {
		return readOffer{}, problem.New(problem.OfferNotPayable, "The seller answered "+strconv.Itoa(resp.StatusCode)+", not 402 Payment Required: it asks no payment for this request.")
	}
	offers, err := x402.ParseOffers(resp.Header, body)
	if err != nil {
		return readOffer{}, problem.New(problem.OfferNotPayable, "The seller's 402 answer holds no valid x402 offer: "+x402.Clean(err.Error(), 300))
	}
	fs := s.families()
	namesPayer := false
	var unapproved error
	for _, o := range offers {
		network := x402.NormalizeNetwork(o.Network)
		f := familyOf(fs, network, o.Scheme)
		if f == nil || !f.Pays(network, o.Asset) {
			continue
		}
		// What the signer needs must be there before the person is asked.
		q, err := f.Quote(ctx, o)
		if problem.CodeOf(err) == problem.Permit2ApprovalRequired && unapproved == nil {
			unapproved = err
		}
		if err != nil {
			continue
		}
		if owns(fs, o.PayTo) || slices.ContainsFunc(q.Named, func(a string) bool { return owns(fs, a) }) {
			namesPayer = true
			continue
		}
		return readOffer{Offer: Offer{Version: o.Version, Scheme: o.Scheme, Network: network, Asset: o.Asset,
			Symbol: q.Symbol, PayTo: o.PayTo, Amount: o.Most(), Value: q.Value, MaxTimeoutSeconds: o.MaxTimeoutSeconds, Resource: o.Resource},
			raw: o, family: f, upTo: q.UpTo}, nil
	}
	if unapproved != nil {
		return readOffer{}, unapproved
	}
	if namesPayer {
		return readOffer{}, problem.New(problem.OfferNamesPayer, "The seller's offer names this server's own payer as its payee or fee payer: it is not paid.")
	}
	return readOffer{}, problem.New(problem.OfferNotPayable, "None of the seller's offers is one this server's payer pays: exact or upto, in USDC, on "+networks(fs)+".")
}

// DefaultMaxAuthorization is how long a signed authorization is valid at most,
// unless the service is told otherwise: anyone holding it may settle it until then.
const DefaultMaxAuthorization = 10 * time.Minute

// Lifetime is how long an authorization for an offer asking maxTimeoutSeconds is
// valid: what the offer asks, never longer than MaxAuthorization; the whole
// ceiling for an offer that asks none.
func (s *Service) Lifetime(maxTimeoutSeconds int) time.Duration {
	ceiling := s.MaxAuthorization
	if ceiling <= 0 {
		ceiling = DefaultMaxAuthorization
	}
	if asked := time.Duration(maxTimeoutSeconds) * time.Second; maxTimeoutSeconds > 0 && asked < ceiling {
		return asked
	}
	return ceiling
}

// Kick wakes the executor: a payment was approved.
func (s *Service) Kick() {
	select {
	case s.kicks() <- struct{}{}:
	default:
	}
}

func (s *Service) kicks() chan struct{} {
	s.kickOnce.Do(func() {
		if s.kick == nil {
			s.kick = make(chan struct{}, 1)
		}
	})
	return s.kick
}

// Run carries out approved payments until ctx ends: at once when kicked, and every
// `every` for approvals made on other replicas and payments whose executor stopped;
// with a Chain, it also settles payments whose outcome is unknown.
func (s *Service) Run(ctx context.Context, every time.Duration) {
	kick := s.kicks()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		for _, step := range []func(context.Context) (bool, error){s.Execute, s.Resolve} {
			for {
				did, err := step(ctx)
				if err != nil && ctx.Err() == nil {
					s.Log.Warn("payment", "err", err)
				}
				if !did || err != nil {
					break
				}
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-kick:
		case <-t.C:
		}
	}
}

func (s *Service) lease() time.Duration {
	if s.Lease > 0 {
		return s.Lease
	}
	return 15 * time.Second
}

// Execute carries out one approved payment, if one waits; it reports whether it did.
func (s *Service) Execute(ctx context.Context) (bool, error) {
	if s.Payer == nil {
		return false, nil
	}
	p, err := s.Store.Take(ctx, s.lease())
	if err != nil || p == nil {
		return false, err
	}
	return true, s.executeLeased(ctx, *p)
}

// executeLeased executes p while renewing its lease, so that a payment whose replica
// died is taken up by another within a lease, and one whose replica lives is left to
// it however long the seller takes. An executor that lost its lease stops and
// records nothing: the payment is another's.
func (s *Service) executeLeased(ctx context.Context, p Payment) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	lost := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		every := max(s.lease()/3, 10*time.Millisecond)
		periodic.Run(ctx, every, every, func(ctx context.Context) {
			// A renewal that fails (the database away) is tried at the next tick.
			if ok, err := s.Store.Renew(ctx, p); err == nil && !ok {
				close(lost)
				cancel()
			}
		})
	}()
	err := s.execute(ctx, p)
	cancel()
	<-done
	select {
	case <-lost:
		s.Log.Warn("payment taken over by another executor: nothing recorded here", "payment", p.ID)
		return nil
	default:
	}
	if errors.Is(err, ErrTakenOver) {
		return nil
	}
	return err
}

// execute pays p: checks the seller still asks what was approved, records the
// signing, signs, sends the request with the payment and records what came back.
// Once signed, a payment taken again is sent again exactly as it was, never
// re-priced or re-signed with another nonce; and since its first sending may have
// settled, no answer to it can prove that nothing did: a refusal or a silence then
// leaves the payment unknown, for the chain to decide.
func (s *Service) execute(ctx context.Context, p Payment) error {
	log := s.Log.With("payment", p.ID, "host", p.Host)
	repeat := p.SignedAt != nil
	if !repeat {
		o, err := s.offer(ctx, p.HTTPRequest)
		switch {
		case err != nil:
			log.Info("payment not signed: no payable offer now", "err", err)
			return s.fail(ctx, p, FailNoOffer)
		case !o.Same(p.Offer):
			log.Info("payment not signed: the offer changed", "payTo", o.PayTo, "amount", o.Amount, "network", o.Network)
			return s.fail(ctx, p, FailOfferChanged)
		}
		w, err := o.family.Window(ctx, p.Offer.Network, s.now(), s.Lifetime(p.Offer.MaxTimeoutSeconds))
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			why, ok := refused(err)
			if !ok {
				return err
			}
			log.Warn("payment not signed", "failure", why, "err", err)
			return s.fail(ctx, p, why)
		}
		p.ValidAfter, p.ValidBefore, p.Blockhash, p.Slot = w.ValidAfter, w.ValidBefore, w.Blockhash, w.Slot
		switch err := s.Store.MarkSigned(ctx, p.ID, w); {
		case errors.Is(err, ErrAgentStopped):
			log.Info("payment not signed: its agent is disabled or its payments paused")
			return s.fail(ctx, p, FailAgentDisabled)
		case err != nil:
			return err
		}
		signed := s.now()
		p.SignedAt = &signed
	}
	f := s.family(p.Offer)
	if f == nil {
		return s.fail(ctx, p, FailNoOffer)
	}
	header, err := f.Sign(p)
	if why, ok := refused(err); ok {
		return s.fail(ctx, p, why)
	}
	if err != nil {
		return err
	}
	req, err := p.HTTPRequest.Request(header)
	if err != nil {
		return s.fail(ctx, p, FailUnreachable)
	}
	resp, err := s.send(ctx, req)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err() // stopping, or taken over: taken again after the lease
		}
		// A garbled answer is no answer: the payment may have settled.
		log.Info("payment sent, no answer", "err", x402.Clean(err.Error(), 200))
		if p.Attempts > 1 || s.now().Unix() >= p.ValidBefore {
			return s.unknown(ctx, p, Outcome{}, "no answer to the payment")
		}
		return nil // taken again after the lease, and sent again as it is
	}
	defer resp.Body.Close()
	answer := s.readAnswer(resp)
	if s.afterSend != nil {
		if err := s.afterSend(p); err != nil {
			return err
		}
	}
	o := Outcome{Settlement: x402.ReadSettlement(resp.Header)}
	o.Receipt = request.Receipt{PaymentID: p.ID, Amount: p.Offer.Amount, Value: p.Offer.Value.String(), Asset: p.Offer.Asset,
		Network: p.Offer.Network, PayTo: p.Offer.PayTo, Response: &answer}
	switch st := o.Settlement; {
	case st != nil && st.Success, resp.StatusCode < 300:
		// Settled, or delivered without a settlement answer: the seller took the
		// payment. What moved is the chain's word where it is not fixed; a seller
		// that misstated it lied about money, and is recorded as a liar is: paid,
		// not delivered as it answered.
		m, err := f.Moved(ctx, p, st)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		switch {
		case err != nil && f.Reads() && !errors.Is(err, x402.ErrNoChain) && (!errors.Is(err, x402.ErrNoSettlement) || s.mayStillSettle(p)):
			// The chain did not answer, or does not show the settlement yet (an
			// RPC behind the seller's): what moved is not known yet. The payment
			// is left unknown, counted at its maximum, with the seller's answer
			// and settlement kept, for Resolve to record what moved once the
			// chain shows it.
			return s.unknown(ctx, p, Outcome{Settlement: st, Receipt: o.Receipt}, "what the payment moved could not be read from the chain: "+
				x402.Clean(err.Error(), 200))
		case err != nil:
			log.Warn("what the payment moved could not be read from the chain: its maximum is recorded", "err", err)
		}
		if m.Misstated {
			log.Warn("the seller's settlement answer misstates what moved: the chain's word is recorded",
				"answered_amount", st.Amount, "answered_transaction", st.Transaction, "moved", m.Amount, "transaction", m.Transaction)
		}
		if returned(m) && (resp.StatusCode >= 300 || m.Misstated) {
			return s.comeBack(ctx, p, m.Transaction)
		}
		o.Status, o.Delivered, o.Moved, o.Transaction = StatusSettled, resp.StatusCode < 300 && !m.Misstated, m.Amount, m.Transaction
		if o.Transaction == "" && st != nil {
			o.Transaction = st.Transaction
		}
	default:
		// A refusal, an error or garbage says nothing of the authorization that
		// left: a seller may settle it and answer 402 all the same. Only the chain
		// can tell; the answer is kept for the receipt.
		return s.unknown(ctx, p, Outcome{Receipt: o.Receipt}, "the seller answered "+strconv.Itoa(resp.StatusCode)+" without a settlement")
	}
	o.Receipt.Status, o.Receipt.Delivered = o.Status, &o.Delivered
	o.Receipt.SettledAmount, o.Receipt.SettledValue = s.settled(p, o.Moved)
	if o.Transaction != "" {
		o.Receipt.Transaction = &o.Transaction
	}
	log.Info("payment done", "status", o.Status, "failure", o.Failure, "http_status", resp.StatusCode)
	return s.Store.Finish(ctx, p, o)
}

func (s *Service) fail(ctx context.Context, p Payment, why string) error {
	return s.Store.Finish(ctx, p, Outcome{Status: StatusFailed, Failure: why, Receipt: s.receipt(p, StatusFailed, why)})
}

// settled is what the receipt says p moved, moved atomic units: nil for a payment
// that always moves its offer's amount.
func (s *Service) settled(p Payment, moved string) (amount, value *string) {
	if moved == "" {
		return nil, nil
	}
	v, _ := Value(p.Offer.Network, p.Offer.Asset, moved)
	vs := v.String()
	return &moved, &vs
}

// receipt is p's receipt without the seller's answer.
func (s *Service) receipt(p Payment, status, failure string) request.Receipt {
	r := request.Receipt{PaymentID: p.ID, Status: status, Amount: p.Offer.Amount, Value: p.Offer.Value.String(),
		Asset: p.Offer.Asset, Network: p.Offer.Network, PayTo: p.Offer.PayTo}
	if failure != "" {
		r.Failure = &failure
	}
	return r
}

// unknown records that p left and nothing says whether it settled, with the seller's
// answer o.Receipt.Response if one came: it counts in the agent's spend, its request
// stays executing, and Resolve settles it from the chain.
func (s *Service) unknown(ctx context.Context, p Payment, o Outcome, why string) error {
	s.Log.Warn("payment outcome unknown", "payment", p.ID, "host", p.Host, "why", why)
	o.Status = StatusUnknown
	if err := s.Store.Finish(ctx, p, o); err != nil {
		return err
	}
	s.Kick()
	return nil
}

// settleGrace is how long after an authorization's window closes the chain is still
// given to show it used: a transfer mined just inside the window takes a block or
// two to be seen.
const settleGrace = 60 * time.Second

// mayStillSettle reports whether p's authorization may still be settled, or its
// settlement not yet be shown by a chain a little behind the seller's: until its
// family's SettlesUntil (on EVM its deadline, and settleGrace after; on Solana's
// upto, the channel's expiresAt and the seller's facilitator's cleanup after it,
// which returns an abandoned deposit). Until then a chain that shows no settlement
// of a payment the seller answered says only that it has not seen one yet.
func (s *Service) mayStillSettle(p Payment) bool {
	until := windowEnd(p)
	if f := s.family(p.Offer); f != nil {
		until = f.SettlesUntil(p)
	}
	return !s.now().After(until)
}

// returned reports whether m, what a settled payment moved, is nothing: the
// whole of what left the payer came back (on Solana's upto, a distribute that
// returned the whole deposit, as the seller's facilitator does with a channel
// never settled). Unless the seller delivered, such a payment was not settled, and
// nothing of it is spent.
func returned(m Moved) bool {
	return m.Amount != "" && strings.TrimLeft(m.Amount, "0") == ""
}

// comeBack records p, whose whole deposit the chain shows back with the payer in
// transaction tx, as not settled: nothing spent, the limits freed.
func (s *Service) comeBack(ctx context.Context, p Payment, tx string) error {
	s.Log.Info("payment not settled: the chain shows what left the payer come back whole", "payment", p.ID, "host", p.Host, "transaction", tx)
	return s.Store.Finish(ctx, p, Outcome{Status: StatusFailed, Failure: FailNotSettled, Transaction: tx,
		Receipt: s.receipt(p, StatusFailed, FailNotSettled)})
}

// Resolve settles one payment whose outcome is unknown, if one is due a check, from
// the chain, whatever the seller answered: its authorization used (on Solana, its
// transaction landed) means it settled, once, whoever sent it, and the seller
// delivered nothing if it answered anything but success; unused once it can no
// longer be used (its window closed, or its blockhash expired) means nothing moved
// and nothing can. Without a chain for its network it stays unknown. It reports
// whether it looked at one.
func (s *Service) Resolve(ctx context.Context) (bool, error) {
	if !slices.ContainsFunc(s.families(), Family.Reads) {
		return false, nil
	}
	every := s.CheckEvery
	if every <= 0 {
		every = 5 * time.Second
	}
	p, err := s.Store.TakeUnknown(ctx, every)
	if err != nil || p == nil {
		return false, err
	}
	log := s.Log.With("payment", p.ID, "host", p.Host)
	var ev Evidence
	if f := s.family(p.Offer); f != nil {
		ev, err = f.Settled(ctx, *p)
	} else {
		err = x402.ErrNoChain
	}
	tx := ev.Transaction
	switch {
	case errors.Is(err, x402.ErrNoChain):
		return true, nil // stays unknown: nothing here can tell
	case err != nil:
		log.Warn("payment outcome unknown: the chain did not answer", "err", err)
		return true, nil
	case ev.Used:
		log.Info("payment settled, as the chain shows", "answered", p.Answer != nil)
		m, err := s.family(p.Offer).Moved(ctx, *p, p.Settlement)
		switch {
		case ctx.Err() != nil:
			return true, ctx.Err()
		case errors.Is(err, x402.ErrNoSettlement) && s.mayStillSettle(*p):
			log.Info("payment outcome unknown: the chain shows its authorization used and no settlement of it yet")
			return true, nil
		case errors.Is(err, x402.ErrNoSettlement):
			log.Warn("the chain shows the payment's authorization used and no settlement of it, and it can no longer settle: its maximum is recorded")
		case err != nil:
			log.Warn("payment outcome unknown: the chain did not tell what moved", "err", err)
			return true, nil
		}
		if m.Transaction != "" {
			tx = m.Transaction // the settlement's, where the evidence names the open's
		}
		if m.Misstated {
			log.Warn("the seller's settlement answer misstates what moved: the chain's word is recorded",
				"answered_amount", p.Settlement.Amount, "answered_transaction", p.Settlement.Transaction, "moved", m.Amount, "transaction", m.Transaction)
		}
		// Paid, and delivered only when the seller answered success (left unknown
		// because the chain could not be read at once) and its settlement answer
		// is the chain's; a refusal, an error or nothing delivered nothing. A
		// deposit that came back whole, undelivered, was not paid at all.
		delivered := p.Answer != nil && p.Answer.Status < 300 && !m.Misstated
		if returned(m) && !delivered {
			return true, s.comeBack(ctx, *p, tx)
		}
		o := Outcome{Status: StatusSettled, Settlement: p.Settlement, Transaction: tx, Moved: m.Amount, Receipt: s.receipt(*p, StatusSettled, "")}
		o.Receipt.SettledAmount, o.Receipt.SettledValue = s.settled(*p, o.Moved)
		o.Delivered = delivered
		o.Receipt.Response, o.Receipt.Delivered = p.Answer, &o.Delivered
		if tx != "" {
			o.Receipt.Transaction = &tx
		}
		return true, s.Store.Finish(ctx, *p, o)
	case ev.Closed || !s.mayStillSettle(*p):
		log.Info("payment not settled, as the chain shows after it could no longer be used")
		return true, s.fail(ctx, *p, FailNotSettled)
	}
	return true, nil
}

// hashLimit bounds how much of an answer is read to hash it.
const hashLimit = 16 << 20

// readAnswer reads the seller's answer for the receipt: the whole body hashed (up to
// 16 MiB), the first MaxResponse bytes kept.
func (s *Service) readAnswer(resp *http.Response) request.SellerResponse {
	keep := s.MaxResponse
	if keep <= 0 {
		keep = 256 << 10
	}
	h := sha256.New()
	var kept bytes.Buffer
	n, _ := io.Copy(io.MultiWriter(h, &limitWriter{w: &kept, n: keep}), io.LimitReader(resp.Body, hashLimit))
	out := request.SellerResponse{Status: resp.StatusCode, ContentType: x402.Clean(resp.Header.Get("Content-Type"), 200),
		Bytes: n, SHA256: hex.EncodeToString(h.Sum(nil)), Truncated: n > keep}
	body := kept.Bytes()
	if mt, _, _ := mime.ParseMediaType(out.ContentType); utf8.Valid(body) && !bytes.ContainsRune(body, 0) && (mt == "" || textual(mt)) {
		out.Body, out.Encoding = string(body), "text"
	} else {
		out.Body, out.Encoding = base64.StdEncoding.EncodeToString(body), "base64"
	}
	return out
}

func textual(mt string) bool {
	switch {
	case len(mt) > 5 && mt[:5] == "text/", mt == "application/json", mt == "application/xml",
		len(mt) > 5 && mt[len(mt)-5:] == "+json", len(mt) > 4 && mt[len(mt)-4:] == "+xml":
		return true
	}
	return false
}

type limitWriter struct {
	w io.Writer
	n int64
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if l.n > 0 {
		k := min(int64(len(p)), l.n)
		l.w.Write(p[:k])
		l.n -= k
	}
	return len(p), nil
}
