package trust

import (
	"math"
	"time"

	"github.com/waystation/waystation/internal/directory"
	"github.com/waystation/waystation/internal/x402"
)

// Probe outcomes. A probe calls a seller's endpoint without paying and classifies the
// answer; only OutcomePaymentRequired carries a usable offer. In the order a probe
// can end:
//
//   - blocked_address: the hostname resolves to a private, loopback, link-local or
//     otherwise non-public address; nothing was sent.
//   - dns_error: the hostname does not resolve.
//   - connection_refused: nothing listens, the host is unreachable, or the
//     connection was reset.
//   - tls_error: the TLS handshake failed (untrusted or expired certificate, ...).
//   - timeout: no complete answer within the probe timeout.
//   - redirect: the endpoint redirects to another host, which a probe never follows.
//   - http_error: an HTTP answer other than 402 and 2xx (4xx, 5xx, too many
//     redirects on the same host).
//   - no_payment_required: a 2xx answer: the endpoint gives its service away, or is
//     a checkout or account seller that does not ask for payment up front.
//   - invalid_offer: a 402 whose header and body hold no offer an x402 client could
//     pay: no x402 document at all, or one whose every accepts entry breaks the x402
//     v1 or v2 rules. The probe keeps the reason (one of x402.Reasons), and the
//     trust block shows it.
//   - payment_required: a 402 with an offer that follows x402 v1 (in the body) or v2
//     (in the PAYMENT-REQUIRED header) to the letter.
//   - error: anything else that kept the probe from an answer (an endpoint URL that
//     cannot be called, oversized headers, ...).
const (
	OutcomePaymentRequired   = "payment_required"
	OutcomeInvalidOffer      = "invalid_offer"
	OutcomeNoPaymentRequired = "no_payment_required"
	OutcomeHTTPError         = "http_error"
	OutcomeTimeout           = "timeout"
	OutcomeTLSError          = "tls_error"
	OutcomeDNSError          = "dns_error"
	OutcomeConnectionRefused = "connection_refused"
	OutcomeBlockedAddress    = "blocked_address"
	OutcomeRedirect          = "redirect"
	OutcomeError             = "error"
)

// Outcomes lists every outcome a probe may have.
var Outcomes = []string{OutcomePaymentRequired, OutcomeInvalidOffer, OutcomeNoPaymentRequired, OutcomeHTTPError,
	OutcomeTimeout, OutcomeTLSError, OutcomeDNSError, OutcomeConnectionRefused, OutcomeBlockedAddress,
	OutcomeRedirect, OutcomeError}

// Scoring constants; the rule that uses them is written on Score.
const (
	// Window is how far back probes count.
	Window = 7 * 24 * time.Hour
	// StaleAfter is the age of the newest probe past which the verdict is unknown.
	StaleAfter = 72 * time.Hour
	// HalfLife halves a probe's weight for each day of its age.
	HalfLife = 24 * time.Hour

	ProceedFrom = 70
	CautionFrom = 40
	// CautionCap is the highest score of an x402 seller whose offer is not in a known
	// mainnet asset (a testnet or unknown token) or whose payee changed.
	CautionCap = 60
	// OwnerPoints is what an owner-verified seller gains while its newest probe gets
	// a valid offer.
	OwnerPoints = 5
)

// Observation is one stored probe of a method's endpoint, in the store's terms.
type Observation struct {
	ProbedAt   time.Time
	Outcome    string
	HTTPStatus *int
	LatencyMS  *int
	// Scheme, Network, Asset, PayTo and Amount are the offer of a payment_required
	// probe. Amount is the exact price; nil for an upto offer, whose amount is only a
	// ceiling.
	Scheme  string
	Network string
	Asset   string
	PayTo   string
	Amount  *string
	// Reason is why an invalid_offer probe's answer could not be paid.
	Reason string
}

// Input is everything the scorer looks at for one seller.
type Input struct {
	// Kind is the method's kind; only x402 sellers are expected to answer 402.
	Kind string
	// Probes are newest first.
	Probes    []Observation
	Override  *directory.Override
	Settled   int
	Delivered int
	// Owner is the seller's proof that it owns the origin listing it (see OwnerOf),
	// nil without one.
	Owner *directory.Owner
	Now   time.Time
	// Reports are the seller's delivery reports (see Tally), nil without any.
	Reports *directory.Reports
}

// Rule is the scoring rule Score applies, in plain words, one paragraph per line: seven
// numbered steps, then the verdicts. The method pages show it beside every trust
// block, and a test keeps it equal to the rule written on Score.
const Rule = `1. Only probes of the last seven days count, each weighted by half for every day of its age. A probe succeeds when it got a valid x402 offer (for x402 sellers) or a plain answer (for checkout, subscription and account sellers, which are not expected to ask for payment up front and may redirect to a sign-in page elsewhere); an invalid offer counts a fifth; errors, timeouts, refusals, blocked addresses and redirects of x402 sellers to another host count nothing. Reliability is the weighted success share, worth up to 60 points.
2. Offer quality, up to 20 points: the newest valid offer is priced in a known asset on a supported mainnet (20), a known testnet asset (5), or anything else (0). An x402 seller whose newest valid offer is not in a known mainnet asset (a testnet or unknown token) has its score capped at 60: caution at best.
3. Consistency, up to 10 points: every valid offer in the window names the same payee, network and price (10); one change (5); more (0). A payee that changed within the window caps the score at 60 as well: a seller that moves where the money goes deserves a look first. Sellers of other kinds advertise no offer: they get the 30 points of offer quality and consistency when their newest probe succeeded.
4. Freshness, up to 10 points: the newest probe succeeded and is under a day old (10), or under three days old (5).
5. Delivery: from five settled payments on, what buyers got weighs as much as what probes saw: the score becomes half the above plus 50 points times the delivery rate.
6. Ownership, 5 points: an owner-verified x402 seller (the payee its newest valid offer names signed the origin that lists it, in the origin's own manifest) gains 5 points, up to 100, while its newest probe gets a valid offer. The proof says who answers for the seller, not how well it serves, so it weighs half as much as freshness: it can tip a seller on the edge of a band, never rescue a failing one. A seller whose newest probe failed gains nothing, and the caps of steps 2 and 3 still hold: a new payee's own signature does not vouch for the move, since whoever runs the origin's server can sign.
7. Reports: within 30 days after a payment the service settled, its agent or its person may report what the seller gave for it, in codes alone: delivered as described, delivered but wrong or useless, or not delivered. A paid call the service itself recorded as not delivered counts as not delivered without a report. Only payments settled in the last 180 days count, so a seller that mended its ways recovers. Each weighs the money it paid, and one person's reports on a seller count once a UTC day. From five counted reports by three people on, the share of their money saying wrong or not delivered takes up to 40 points off the score, never below 40 on their account: reports alone can bring a seller to caution, never to avoid, which would change what a person must do to approve a payment. Reports saying delivered add nothing: a seller paying itself through a friend's agent gets its money back, while a payer who accuses a seller paid it.
The verdict is proceed from 70, caution from 40, avoid below; unknown when there is no probe at all (score null) or the newest probe is older than three days. An operator override decides the verdict while it lasts, whatever the score, and is shown with its reason. The verdict is advisory: it never authorises a payment.`

// Score computes the advisory trust block.
//
// The rule, in full (Rule holds the same text, one paragraph per line, for the
// method pages):
//
//  1. Only probes of the last seven days count, each weighted by half for every day
//     of its age. A probe succeeds when it got a valid x402 offer (for x402 sellers)
//     or a plain answer (for checkout, subscription and account sellers, which are
//     not expected to ask for payment up front and may redirect to a sign-in page
//     elsewhere); an invalid offer counts a fifth; errors, timeouts, refusals,
//     blocked addresses and redirects of x402 sellers to another host count nothing.
//     Reliability is the weighted success share, worth up to 60 points.
//  2. Offer quality, up to 20 points: the newest valid offer is priced in a known
//     asset on a supported mainnet (20), a known testnet asset (5), or anything else
//     (0). An x402 seller whose newest valid offer is not in a known mainnet asset
//     (a testnet or unknown token) has its score capped at 60: caution at best.
//  3. Consistency, up to 10 points: every valid offer in the window names the same
//     payee, network and price (10); one change (5); more (0). A payee that changed
//     within the window caps the score at 60 as well: a seller that moves where the
//     money goes deserves a look first. Sellers of other kinds advertise no offer:
//     they get the 30 points of offer quality and consistency when their newest
//     probe succeeded.
//  4. Freshness, up to 10 points: the newest probe succeeded and is under a day old
//     (10), or under three days old (5).
//  5. Delivery: from five settled payments on, what buyers got weighs as much as
//     what probes saw: the score becomes half the above plus 50 points times the
//     delivery rate.
//  6. Ownership, 5 points: an owner-verified x402 seller (the payee its newest valid
//     offer names signed the origin that lists it, in the origin's own manifest)
//     gains 5 points, up to 100, while its newest probe gets a valid offer. The
//     proof says who answers for the seller, not how well it serves, so it weighs
//     half as much as freshness: it can tip a seller on the edge of a band, never
//     rescue a failing one. A seller whose newest probe failed gains
//     nothing, and the caps of steps 2 and 3 still hold: a new payee's own
//     signature does not vouch for the move, since whoever runs the origin's
//     server can sign.
//  7. Reports: within 30 days after a payment the service settled, its agent or its
//     person may report what the seller gave for it, in codes alone: delivered as
//     described, delivered but wrong or useless, or not delivered. A paid call the
//     service itself recorded as not delivered counts as not delivered without a
//     report. Only payments settled in the last 180 days count, so a seller that
//     mended its ways recovers. Each weighs the money it paid, and one person's
//     reports on a seller count once a UTC day. From five
//     counted reports by three people on, the share of their money saying wrong or not
//     delivered takes up to 40 points off the score, never below 40 on their account:
//     reports alone can bring a seller to caution, never to avoid, which would change
//     what a person must do to approve a payment. Reports saying delivered add
//     nothing: a seller paying itself through a friend's agent gets its money back,
//     while a payer who accuses a seller paid it.
//
// The verdict is proceed from 70, caution from 40, avoid below; unknown when there
// is no probe at all (score null) or the newest probe is older than three days. An
// operator override decides the verdict while it lasts, whatever the score, and is
// shown with its reason. The verdict is advisory: it never authorises a payment.
func Score(in Input) directory.Trust {
	t := score(in)
	if o := in.Override; o != nil && (o.ExpiresAt == nil || o.ExpiresAt.After(in.Now)) {
		t.Override = o
		t.Verdict = o.Verdict
	}
	return t
}

func score(in Input) directory.Trust {
	t := directory.Trust{Verdict: directory.VerdictUnknown, Advisory: true}
	if len(in.Probes) == 0 {
		t.NotYetProbed = true
		return t
	}
	newest := in.Probes[0]
	t.Probe = Describe(newest, in.Now)

	var weight, success float64
	var offers []Observation
	for _, p := range in.Probes {
		age := in.Now.Sub(p.ProbedAt)
		if age > Window {
			break
		}
		w := math.Exp2(-max(age, 0).Hours() / HalfLife.Hours())
		weight += w
		success += w * outcomeCredit(in.Kind, p.Outcome)
		if p.Outcome == OutcomePaymentRequired {
			offers = append(offers, p)
		}
	}
	score, capped := 0.0, false
	if weight > 0 {
		score += 60 * success / weight
	}
	if in.Kind == "x402" {
		if len(offers) > 0 {
			switch a, ok := x402.LookupAsset(offers[0].Network, offers[0].Asset); {
			case ok && !a.Testnet:
				score += 20
			case ok:
				score += 5
				capped = true
			default:
				capped = true
			}
			score += consistency(offers)
			for _, o := range offers[1:] {
				if o.PayTo != offers[0].PayTo {
					capped = true
				}
			}
		}
	} else if outcomeCredit(in.Kind, newest.Outcome) == 1 {
		score += 30
	}
	if outcomeCredit(in.Kind, newest.Outcome) == 1 {
		switch age := in.Now.Sub(newest.ProbedAt); {
		case age < 24*time.Hour:
			score += 10
		case age < StaleAfter:
			score += 5
		}
	}
	if s := directory.NewStats(in.Settled, in.Delivered); s != nil {
		score = 0.5*score + 50*s.DeliveryRate
	}
	if o := in.Owner; o != nil && o.Verified {
		owner := *o
		owner.Points = 0
		if in.Kind == "x402" && newest.Outcome == OutcomePaymentRequired {
			owner.Points = OwnerPoints
			score += OwnerPoints
		}
		t.Owner = &owner
	}
	score = applyReports(score, in.Reports)
	if capped {
		score = min(score, CautionCap)
	}
	n := int(math.Round(math.Min(math.Max(score, 0), 100)))
	t.Score = &n

	switch {
	case in.Now.Sub(newest.ProbedAt) > StaleAfter:
		t.Verdict = directory.VerdictUnknown
	case n >= ProceedFrom:
		t.Verdict = directory.VerdictProceed
	case n >= CautionFrom:
		t.Verdict = directory.VerdictCaution
	default:
		t.Verdict = directory.VerdictAvoid
	}
	return t
}

func outcomeCredit(kind, outcome string) float64 {
	switch outcome {
	case OutcomePaymentRequired:
		return 1
	case OutcomeNoPaymentRequired, OutcomeRedirect:
		if kind != "x402" {
			return 1
		}
	case OutcomeInvalidOffer:
		return 0.2
	}
	return 0
}

// consistency gives 10 points when every offer names the same payee and price, 5 for
// one change, 0 for more. Offers are newest first.
func consistency(offers []Observation) float64 {
	changes := 0
	for i := 1; i < len(offers); i++ {
		a, b := offers[i-1], offers[i]
		if a.PayTo != b.PayTo || deref(a.Amount) != deref(b.Amount) || x402.NormalizeNetwork(a.Network) != x402.NormalizeNetwork(b.Network) {
			changes++
		}
	}
	switch changes {
	case 0:
		return 10
	case 1:
		return 5
	}
	return 0
}

// Describe turns a stored probe into the trust block's probe: network in CAIP-2, the
// asset's symbol and the decimal price when the asset is known.
func Describe(o Observation, now time.Time) *directory.Probe {
	p := &directory.Probe{
		Outcome:    o.Outcome,
		ProbedAt:   o.ProbedAt.UTC(),
		AgeSeconds: int64(math.Max(0, now.Sub(o.ProbedAt).Seconds())),
	}
	p.Network, p.Asset, p.AssetSymbol, p.Price = Advertised(o.Network, o.Asset, o.Amount)
	p.Reason = reason(o)
	return p
}

// reason is the refusal reason an invalid_offer probe carries, for the trust block.
func reason(o Observation) *string {
	if o.Outcome != OutcomeInvalidOffer || o.Reason == "" {
		return nil
	}
	r := o.Reason
	return &r
}

// ProbeRecord turns a stored probe into an entry of a merchant's probe history.
func ProbeRecord(o Observation) directory.ProbeRecord {
	r := directory.ProbeRecord{
		Outcome: o.Outcome, ProbedAt: o.ProbedAt.UTC(), HTTPStatus: o.HTTPStatus, LatencyMS: o.LatencyMS,
		Reason: reason(o),
	}
	r.Network, r.Asset, _, r.Price = Advertised(o.Network, o.Asset, o.Amount)
	return r
}

// Advertised normalises what a seller advertised: network, asset, the asset's symbol
// and the price. Empty inputs give nils; so does a missing amount, which is what an
// offer with no exact price (upto, whose amount is only a ceiling) leaves.
func Advertised(network, asset string, amount *string) (net, addr, symbol *string, price *directory.Price) {
	if network != "" {
		n := x402.NormalizeNetwork(network)
		net = &n
	}
	if asset != "" {
		addr = &asset
	}
	a, known := x402.LookupAsset(network, asset)
	if known {
		symbol = &a.Symbol
	}
	if amount != nil {
		price = &directory.Price{Amount: amount}
		if known {
			d := a.Decimals
			price.Decimals = &d
			if v, ok := x402.DecimalValue(*amount, d); ok {
				price.Value = &v
			}
		}
	}
	return net, addr, symbol, price
}

// Payer is what the service can pay with: the networks and assets for which it holds
// a key and funds. The payer a deployment configures implements it; until one is
// configured there is none (a nil Payer), and no method is payable.
type Payer interface {
	// Pays reports whether the payer can pay in asset (as advertised) on network
	// (CAIP-2).
	Pays(network, asset string) bool
}

// PayerFunc adapts a function to Payer.
type PayerFunc func(network, asset string) bool

// Pays calls f.
func (f PayerFunc) Pays(network, asset string) bool { return f(network, asset) }

// Payable reports whether the service can pay a method itself now. It can when the
// method is an x402 one, the newest probe that got an answer about payment (probes
// are newest first) found a valid offer, that offer is an exact price (upto names only
// a ceiling), and the payer pays in its asset on its network. A refused offer, a free
// answer or no payer at all make it unpayable; probes that reached no answer (a
// timeout, say) leave the newest answer in force.
func Payable(kind string, probes []Observation, payer Payer) bool {
	if payer == nil || kind != "x402" {
		return false
	}
	for _, p := range probes {
		switch p.Outcome {
		case OutcomePaymentRequired:
			if p.Scheme != x402.SchemeExact || p.Amount == nil {
				return false
			}
			if _, ok := x402.DecimalValue(*p.Amount, 0); !ok {
				return false
			}
			return payer.Pays(x402.NormalizeNetwork(p.Network), p.Asset)
		case OutcomeInvalidOffer, OutcomeNoPaymentRequired:
			return false
		}
	}
	return false
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// Merchant computes the trust block of a hostname from the trust blocks of its
// methods: the score is their mean, the probe is the newest any of them saw, and the
// verdict follows the same thresholds and staleness; the override decides it while
// it lasts.
func Merchant(methods []directory.Trust, override *directory.Override, now time.Time) directory.Trust {
	t := directory.Trust{Verdict: directory.VerdictUnknown, Advisory: true}
	if override != nil && (override.ExpiresAt == nil || override.ExpiresAt.After(now)) {
		t.Override = override
	}
	sum, n := 0, 0
	for _, m := range methods {
		if m.Score != nil {
			sum += *m.Score
			n++
		}
		if m.Probe != nil && (t.Probe == nil || m.Probe.ProbedAt.After(t.Probe.ProbedAt)) {
			t.Probe = m.Probe
		}
	}
	t.NotYetProbed = t.Probe == nil
	if n > 0 {
		score := int(math.Round(float64(sum) / float64(n)))
		t.Score = &score
		switch {
		case t.Probe == nil || now.Sub(t.Probe.ProbedAt) > StaleAfter:
		case score >= ProceedFrom:
			t.Verdict = directory.VerdictProceed
		case score >= CautionFrom:
			t.Verdict = directory.VerdictCaution
		default:
			t.Verdict = directory.VerdictAvoid
		}
	}
	if t.Override != nil {
		t.Verdict = t.Override.Verdict
	}
	return t
}
