// Package payment is the domain of paying sellers: an agent asks to pay for one exact
// HTTP request, the person approves the payment on its page, and the service signs
// and sends it itself (x402's exact scheme, or upto, whose maximum is approved and
// counted until what it moved is known), within the spending limits the person
// set for the agent. The payer's key stays in the Payer: nothing else here holds it,
// and no payment, event, artifact or error carries key or signature material.
package payment

import (
	"errors"
	"math/big"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/waystation/waystation/internal/catalog"
	"github.com/waystation/waystation/internal/problem"
	"github.com/waystation/waystation/internal/request"
	"github.com/waystation/waystation/internal/x402"
)

// Micros is an amount of US dollars in millionths: USDC's atomic unit, and the unit
// of every limit and spend. Stable coins of the dollar count one to one.
type Micros int64

// MaxMicros bounds every amount: a million dollars.
const MaxMicros Micros = 1_000_000 * 1_000_000

// ParseMicros reads a decimal dollar amount of at most six decimals ("0.05", "12").
func ParseMicros(s string) (Micros, bool) {
	whole, frac, dot := strings.Cut(s, ".")
	if whole == "" || len(whole) > 7 || len(frac) > 6 || (dot && frac == "") || (len(whole) > 1 && whole[0] == '0') {
		return 0, false
	}
	digits := whole + frac + strings.Repeat("0", 6-len(frac))
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || Micros(n) > MaxMicros {
		return 0, false
	}
	return Micros(n), true
}

// String renders m as a decimal dollar amount without trailing zeros.
func (m Micros) String() string {
	v, _ := x402.DecimalValue(strconv.FormatInt(int64(m), 10), 6)
	return v
}

// MarshalJSON writes m as a decimal string.
func (m Micros) MarshalJSON() ([]byte, error) { return []byte(`"` + m.String() + `"`), nil }

// UnmarshalJSON reads the decimal string MarshalJSON writes.
func (m *Micros) UnmarshalJSON(b []byte) error {
	v, ok := ParseMicros(strings.Trim(string(b), `"`))
	if !ok {
		return errors.New("payment: not a dollar amount: " + string(b))
	}
	*m = v
	return nil
}

// Value is what amount atomic units of a known dollar stable coin on network are
// worth; false for an asset the service does not count in dollars, or an amount past
// MaxMicros.
func Value(network, asset, amount string) (Micros, bool) {
	a, ok := x402.LookupAsset(network, asset)
	if !ok || a.Symbol != "USDC" {
		return 0, false
	}
	n, ok := new(big.Int).SetString(amount, 10)
	if !ok || n.Sign() < 0 {
		return 0, false
	}
	// Round up to whole micros: a limit is never passed by rounding.
	scale := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(a.Decimals)), nil)
	n.Mul(n, big.NewInt(1_000_000))
	q, r := new(big.Int).QuoRem(n, scale, new(big.Int))
	if r.Sign() > 0 {
		q.Add(q, big.NewInt(1))
	}
	if !q.IsInt64() || Micros(q.Int64()) > MaxMicros {
		return 0, false
	}
	return Micros(q.Int64()), true
}

// Envelope is the exact HTTP request the agent wants paid for: the service sends it
// as it is, once to read the seller's offer and once more with the payment.
type Envelope struct {
	Method  string            `json:"method"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers,omitempty"`
	Body    string            `json:"body,omitempty"`
}

// Envelope limits.
const (
	MaxHeaders    = 30
	MaxHeaderLen  = 4096
	MaxBody       = 64 << 10
	maxURLLen     = 2048
	MaxRequestTTL = 24 * time.Hour
)

// forbiddenHeaders are the headers the service writes itself or that say how the
// connection is carried; a payment header from the agent would pay with its own.
var forbiddenHeaders = []string{
	"Host", "Content-Length", "Transfer-Encoding", "Connection", "Keep-Alive", "Upgrade", "Te", "Trailer",
	"Proxy-Authorization", "Proxy-Connection", "Expect",
	x402.HeaderPaymentV1, x402.HeaderPaymentV2,
}

var methods = []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}

// Validate checks the envelope and puts it in canonical form (upper-case method,
// canonical header names).
func (e *Envelope) Validate() error {
	e.Method = strings.ToUpper(strings.TrimSpace(e.Method))
	if e.Method == "" {
		e.Method = http.MethodGet
	}
	if !slices.Contains(methods, e.Method) {
		return problem.Invalid("httpRequest.method must be one of " + strings.Join(methods, ", ") + ".")
	}
	u, err := url.Parse(e.URL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil || len(e.URL) > maxURLLen {
		return problem.Invalid("httpRequest.url must be an absolute http or https URL of at most 2048 bytes, without user information.")
	}
	if _, err := catalog.NormalizeHostname(u.Hostname()); err != nil {
		return problem.Invalid("httpRequest.url's host is not a hostname.")
	}
	if len(e.Headers) > MaxHeaders {
		return problem.Invalid("httpRequest.headers holds at most " + strconv.Itoa(MaxHeaders) + " headers.")
	}
	canon := make(map[string]string, len(e.Headers))
	for k, v := range e.Headers {
		name := http.CanonicalHeaderKey(k)
		switch {
		case !token(k):
			return problem.Invalid("httpRequest.headers has a name that is not an HTTP token.")
		case slices.ContainsFunc(forbiddenHeaders, func(f string) bool { return strings.EqualFold(f, k) }):
			return problem.Invalid("httpRequest.headers may not set " + name + ": the service writes it.")
		case len(v) > MaxHeaderLen || strings.ContainsAny(v, "\r\n\x00"):
			return problem.Invalid("httpRequest.headers." + name + " must be one line of at most " + strconv.Itoa(MaxHeaderLen) + " bytes.")
		}
		if _, dup := canon[name]; dup {
			return problem.Invalid("httpRequest.headers names " + name + " twice.")
		}
		canon[name] = v
	}
	e.Headers = canon
	if len(e.Body) > MaxBody {
		return problem.Invalid("httpRequest.body must be at most " + strconv.Itoa(MaxBody) + " bytes.")
	}
	if err := problem.Text("httpRequest.body", e.Body, false, MaxBody); err != nil {
		return err
	}
	if e.Body != "" && (e.Method == http.MethodGet || e.Method == http.MethodDelete) {
		return problem.Invalid("httpRequest.body goes with POST, PUT or PATCH.")
	}
	return nil
}

func token(s string) bool {
	if s == "" || len(s) > 100 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

// Host is the normalised hostname of the envelope's URL.
func (e Envelope) Host() string {
	u, _ := url.Parse(e.URL)
	h, _ := catalog.NormalizeHostname(u.Hostname())
	return h
}

// Request builds the HTTP request of the envelope, with extra headers on top.
func (e Envelope) Request(extra http.Header) (*http.Request, error) {
	var body *strings.Reader
	if e.Body != "" {
		body = strings.NewReader(e.Body)
	}
	var req *http.Request
	var err error
	if body != nil {
		req, err = http.NewRequest(e.Method, e.URL, body)
	} else {
		req, err = http.NewRequest(e.Method, e.URL, nil)
	}
	if err != nil {
		return nil, err
	}
	for k, v := range e.Headers {
		req.Header.Set(k, v)
	}
	if req.Header.Get("Accept") == "" {
		req.Header.Set("Accept", "application/json")
	}
	for k, vs := range extra {
		req.Header[k] = vs
	}
	return req, nil
}

// Ask is what an agent sends to pay: the request to pay for and the most it may cost.
type Ask struct {
	ClientRequestID string   `json:"clientRequestId"`
	MaximumDebit    string   `json:"maximumDebit"`
	HTTPRequest     Envelope `json:"httpRequest"`
	TTLSeconds      *int64   `json:"ttlSeconds"`
	Reason          string   `json:"reason"`
}

// Validate checks the ask.
func (a *Ask) Validate() error {
	if a.ClientRequestID == "" || len(a.ClientRequestID) > 200 {
		return problem.Invalid("clientRequestId must be 1 to 200 bytes.")
	}
	if m, ok := ParseMicros(a.MaximumDebit); !ok || m <= 0 {
		return problem.Invalid("maximumDebit must be a positive dollar amount of at most six decimals, such as 0.05.")
	}
	if err := problem.Text("reason", a.Reason, false, 1000); err != nil {
		return err
	}
	return a.HTTPRequest.Validate()
}

// Statuses of a payment's execution; the request it belongs to says whether the
// person approved it.
const (
	StatusPending   = "pending"   // waiting for the person, or approved and not yet taken
	StatusExecuting = "executing" // taken by the service: signed or about to be
	StatusUnknown   = "unknown"   // it left, and no answer says whether it settled: counted in spend until the chain tells
	StatusSettled   = "settled"   // the seller took the payment
	StatusFailed    = "failed"    // nothing more will happen; Failure says why
)

// The session events a payment's end appends; their data is value-free: paymentId,
// requestId, status, failure, amount (atomic units), network and transaction.
const (
	EventSettled = "payment.settled"
	EventFailed  = "payment.failed"
	EventUnknown = "payment.unknown"
)

// Failures of an approved payment.
const (
	FailOfferChanged  = "offer_changed"  // the seller now asks another payee, amount, asset or network: nothing signed
	FailNoOffer       = "no_offer"       // the seller no longer answers with a payable offer: nothing signed
	FailLimit         = "limit_exceeded" // a spending limit would be passed at signing time: nothing signed
	FailUnreachable   = "unreachable"    // the seller could not be reached with the payment
	FailNoBlockhash   = "no_blockhash"   // Solana's RPC gave no recent blockhash (or upto slot) to sign with: nothing signed
	FailNotSettled    = "not_settled"    // its outcome was unknown, and the chain shows it unused after its window closed, or what left the payer come back whole: nothing moved
	FailAgentDisabled = "agent_disabled" // its agent was disabled, or its payments paused, before it was signed: nothing signed
	// FailSellerRefused is how payments the seller answered 402 were recorded before
	// any answer after signing left them unknown; none is recorded so any more.
	FailSellerRefused = "seller_refused"
	// FailUnknown is how payments whose outcome was unknown were recorded before
	// StatusUnknown; none is recorded so any more.
	FailUnknown = "outcome_unknown"
)

// Offer is the seller's offer the person approves, as the service will pay it.
type Offer struct {
	Version           int    `json:"x402Version"`
	Scheme            string `json:"scheme"`
	Network           string `json:"network"`
	Asset             string `json:"asset"`
	Symbol            string `json:"symbol"`
	PayTo             string `json:"payTo"`
	Amount            string `json:"amount"`
	Value             Micros `json:"value"`
	MaxTimeoutSeconds int    `json:"maxTimeoutSeconds"`
	Resource          string `json:"resource"`
}

// UpTo reports whether o's amount is a maximum: the seller settles what the call
// used, up to it (x402's upto scheme).
func (o Offer) UpTo() bool { return o.Scheme == x402.SchemeUpto }

// Same reports whether o asks exactly what approved asked: the version, scheme,
// network, asset, payee and amount.
func (o Offer) Same(approved Offer) bool {
	// EVM addresses are the same in either case; Solana's base58 keys are not.
	same := func(a, b string) bool {
		return a == b || x402.Namespace(o.Network) == "eip155" && strings.EqualFold(a, b)
	}
	return o.Version == approved.Version && o.Scheme == approved.Scheme && o.Network == approved.Network &&
		same(o.Asset, approved.Asset) && same(o.PayTo, approved.PayTo) && o.Amount == approved.Amount
}

// Verdict is the directory's advisory word on the seller when the agent asked.
type Verdict struct {
	Verdict string `json:"verdict"`
	Score   *int   `json:"score"`
	Listed  bool   `json:"listed"`
}

// Avoid is the verdict a payment needs the person's override for.
const Avoid = "avoid"

// Payment is one payment, from the agent's ask to its settlement. It never holds
// the signature: the service signs at the moment it sends, and a signature made
// again is the same one.
type Payment struct {
	ID           string   `json:"id"`
	RequestID    string   `json:"requestId"`
	SessionID    string   `json:"sessionId"`
	AgentID      string   `json:"agentId"`
	UserID       string   `json:"-"`
	Status       string   `json:"status"`
	Failure      *string  `json:"failure"`
	Host         string   `json:"hostname"`
	HTTPRequest  Envelope `json:"httpRequest"`
	Offer        Offer    `json:"offer"`
	MaximumDebit Micros   `json:"maximumDebit"`
	Verdict      Verdict  `json:"merchant"`
	Override     bool     `json:"overrideVerdict"`
	Payer        string   `json:"payer"`
	Transaction  *string  `json:"transaction"`
	// SettledAmount and SettledValue are what a settled upto payment moved (atomic
	// units, dollars): its offer's amount and value are the maximum approved. Nil
	// for exact payments, and until an upto one settles.
	SettledAmount *string    `json:"settledAmount,omitempty"`
	SettledValue  *Micros    `json:"settledValue,omitempty"`
	CreatedAt     time.Time  `json:"createdAt"`
	SignedAt      *time.Time `json:"signedAt"`
	SettledAt     *time.Time `json:"settledAt"`
	// What the store keeps for signing and sending, never shown.
	Nonce       []byte          `json:"-"`
	ValidAfter  int64           `json:"-"`
	ValidBefore int64           `json:"-"`
	Blockhash   string          `json:"-"` // Solana: the recent blockhash it is signed with
	Slot        uint64          `json:"-"` // Solana upto: the slot read beside it (0: none read)
	Raw         x402.Offer      `json:"-"`
	Attempts    int             `json:"-"`
	Limits      *LimitsAndSpend `json:"-"`
	// Delivered is, for a settled payment, whether the seller answered with what
	// was paid for; false when the money moved and it answered a refusal, an
	// error or nothing.
	Delivered *bool `json:"delivered"`
	// Answer is what the seller answered to a payment left unknown, if it did.
	Answer *request.SellerResponse `json:"-"`
	// Settlement is the seller's settlement answer, as it named it, if one came.
	Settlement *x402.Settlement `json:"-"`
}

// ErrAgentStopped is MarkSigned's answer for a payment whose agent was disabled, or
// whose payments were paused, since it was taken: it must not be signed.
var ErrAgentStopped = errors.New("payment: the agent is disabled or its payments paused")

// Errors of the payment routes.
var (
	ErrNotFound = problem.New(problem.NotFound, "No payment with this id is visible to this key.")
	ErrNoPayer  = problem.New(problem.PayerNotConfigured, "This server has no payer key: it cannot pay sellers.")
)

// LedgerEntry is one payment as the person's spend ledger lists it: who was paid what,
// where, by which agent, how it ended, and the receipt (transaction, the SHA-256 of
// the seller's answer).
type LedgerEntry struct {
	PaymentID string
	SessionID string
	RequestID string
	Agent     string
	Host      string
	PayTo     string
	Value     Micros
	// Settled is what a settled upto payment moved, Value being its maximum; nil
	// otherwise.
	Settled        *Micros
	UpTo           bool
	Symbol         string
	Network        string
	Status         string
	Failure        *string
	Transaction    *string
	ResponseSHA256 *string
	CreatedAt      time.Time
	SettledAt      *time.Time
	// Report is the payment's delivery report, nil while it has none.
	Report *LedgerReport
}

// LedgerReport is a delivery report as the ledger shows it beside its payment.
type LedgerReport struct {
	Outcome, Reason, ReportedBy string
}
