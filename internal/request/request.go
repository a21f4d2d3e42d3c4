// Package request is the domain of requests: the human-in-the-loop tasks an agent
// raises inside a session (confirm an action, choose an option, provide a missing
// value, allow use of a saved value), the state machine they move through, and the
// value-free artifacts they yield. Values a user provides never leave this package
// in the clear except sealed for storage.
package request

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/waystation/waystation/internal/memory"
	"github.com/waystation/waystation/internal/problem"
)

// Kinds of requests.
const (
	KindConfirm        = "confirm"
	KindChoice         = "choice"
	KindProvideMissing = "provide_missing"
	KindAskBeforeUse   = "ask_before_use"
	// KindChooseCandidate asks the user which of several saved values fills one
	// field: each option's id is a handle of the session's memory catalog.
	KindChooseCandidate = "choose_candidate"
	// KindAuthorizePayment asks the person to let the service pay a seller: the
	// service raises it for POST /sessions/{id}/x402/payments, never an agent
	// directly, and once approved pays and fulfils it itself.
	KindAuthorizePayment = "authorize_payment"
	// KindCaptcha asks the person for a CAPTCHA's answer: the service raises it for
	// POST /sessions/{id}/captcha/tasks when no solver answers, never an agent
	// directly. Its one field, solution, is the answer, which the task yields.
	KindCaptcha = "captcha"
)

// Kinds lists every kind an agent may raise.
var Kinds = []string{KindConfirm, KindChoice, KindProvideMissing, KindAskBeforeUse, KindChooseCandidate}

// choosing tells whether a kind is answered by picking one of its options.
func choosing(kind string) bool { return kind == KindChoice || kind == KindChooseCandidate }

// Statuses of a request. waiting_user, approved and executing are open; the others
// are terminal and final.
const (
	StatusWaitingUser = "waiting_user"
	StatusApproved    = "approved"
	StatusExecuting   = "executing"
	StatusFulfilled   = "fulfilled"
	StatusDenied      = "denied"
	StatusExpired     = "expired"
	StatusFailed      = "failed"
	StatusCanceled    = "canceled"
)

// Statuses lists every status.
var Statuses = []string{StatusWaitingUser, StatusApproved, StatusExecuting, StatusFulfilled,
	StatusDenied, StatusExpired, StatusFailed, StatusCanceled}

// Resolution paths: a person decides, or the system approves on its own (only for
// use of saved values the user marked as not needing a question).
const (
	PathUser = "user"
	PathAuto = "auto"
)

// EventStatusChanged is the session event every transition appends; EventArtifactClaimed
// the one a claim appends.
const (
	EventStatusChanged   = "request.status_changed"
	EventArtifactClaimed = "artifact.claimed"
)

// transitions lists, for each status, the statuses it may move to. Terminal statuses
// move nowhere.
var transitions = map[string][]string{
	"":                {StatusWaitingUser, StatusApproved},
	StatusWaitingUser: {StatusApproved, StatusDenied, StatusExpired, StatusCanceled},
	StatusApproved:    {StatusExecuting, StatusFulfilled, StatusFailed, StatusCanceled},
	StatusExecuting:   {StatusFulfilled, StatusFailed, StatusCanceled},
}

// CanMove reports whether the state machine allows from -> to; "" is a request not
// yet created.
func CanMove(from, to string) bool { return slices.Contains(transitions[from], to) }

// Terminal reports whether status is final.
func Terminal(status string) bool { return len(transitions[status]) == 0 }

// The request errors. Input that breaks a rule is a problem.Invalid whose text names
// the rule and never echoes a value.
var (
	// ErrNotFound is a request that does not exist or that the caller may not see.
	ErrNotFound = problem.New(problem.NotFound, "No request with this id is visible to this key.")
	// ErrInvalidTransition is a change the state machine does not allow from the
	// request's current status.
	ErrInvalidTransition = problem.New(problem.InvalidStateTransition, "The request's status does not allow this change.")
	// ErrExpired is a change to a request whose time ran out.
	ErrExpired = problem.New(problem.RequestExpired, "The request expired before it was decided.")
	// ErrAlreadyClaimed is a second claim of an artifact.
	ErrAlreadyClaimed = problem.New(problem.ArtifactAlreadyClaimed, "The artifact of this request was already claimed.")
	// ErrNotFulfilled is a claim of a request that yielded no artifact (yet).
	ErrNotFulfilled = problem.New(problem.InvalidStateTransition, "The request is not fulfilled: it has no artifact to claim.")
	errOverride     = problem.New(problem.OverrideRequired, "The directory's verdict on this seller is avoid: approve with overrideVerdict true to pay it anyway.")
)

// Context is what the agent was looking at, and why it asks.
type Context struct {
	URL          string `json:"url,omitempty"`
	PageTitle    string `json:"pageTitle,omitempty"`
	MerchantName string `json:"merchantName,omitempty"`
	Reason       string `json:"reason,omitempty"`
}

// Field is a value a provide_missing or ask_before_use request is about: its name
// and type, never its value.
type Field struct {
	Key    string `json:"key"`
	Label  string `json:"label"`
	Type   string `json:"type"`
	Secret bool   `json:"secret"`
	// Handle, in an ask_before_use request, is the catalog handle of the saved value
	// the agent asks to use; the approval covers it for materialize.
	Handle string `json:"handle,omitempty"`
}

// FieldTypes are the value types a field may have; card fields and passwords are
// always secret.
var FieldTypes = memory.ValueTypes

func alwaysSecret(t string) bool { return memory.AlwaysSecret(t) }

// Option is one answer of a choice request.
type Option struct {
	ID          string `json:"id"`
	Label       string `json:"label"`
	Description string `json:"description,omitempty"`
}

// Params are the kind's own parameters: what a confirmation binds (summary, amount,
// currency, recipient), and what a use of values is for (purpose). An
// authorize_payment request carries the service's own: the payment and the
// directory's verdict on the seller, which agents may not set.
type Params struct {
	Summary   string `json:"summary,omitempty"`
	Amount    string `json:"amount,omitempty"`
	Currency  string `json:"currency,omitempty"`
	Recipient string `json:"recipient,omitempty"`
	Purpose   string `json:"purpose,omitempty"`
	PaymentID string `json:"paymentId,omitempty"`
	Verdict   string `json:"verdict,omitempty"`
}

// Artifact is what a fulfilled request yields to its agent: value-free.
type Artifact struct {
	Type         string        `json:"type"`
	Reference    *Reference    `json:"reference,omitempty"`
	Confirmation *Confirmation `json:"confirmation,omitempty"`
	Choice       *Choice       `json:"choice,omitempty"`
	Payment      *Receipt      `json:"payment,omitempty"`
}

// Artifact types.
const (
	ArtifactReference    = "reference"
	ArtifactConfirmation = "confirmation"
	ArtifactChoice       = "choice"
	ArtifactPayment      = "payment"
)

// Receipt is what a paid request yields: the payment as it settled (or failed) and
// the seller's answer to the paid request, size-capped and hashed.
type Receipt struct {
	PaymentID   string  `json:"paymentId"`
	Status      string  `json:"status"`
	Failure     *string `json:"failure"`
	Amount      string  `json:"amount"`
	Value       string  `json:"value"`
	Asset       string  `json:"asset"`
	Network     string  `json:"network"`
	PayTo       string  `json:"payTo"`
	Transaction *string `json:"transaction"`
	// SettledAmount and SettledValue are, for an upto payment that settled, what it
	// moved (atomic units, and dollars); Amount and Value are then the maximum the
	// person approved. Absent for exact payments, which move Amount.
	SettledAmount *string         `json:"settledAmount,omitempty"`
	SettledValue  *string         `json:"settledValue,omitempty"`
	Response      *SellerResponse `json:"response"`
	// Delivered, on a settled payment's receipt, says whether the seller answered
	// with what was paid for: false when the money moved and the seller answered
	// a refusal or an error (Response holds it).
	Delivered *bool `json:"delivered,omitempty"`
}

// SellerResponse is the seller's answer to the paid request: its status, content
// type, body (as text when it is UTF-8, else base64) cut at a cap, and the SHA-256
// and size of the whole body.
type SellerResponse struct {
	Status      int    `json:"status"`
	ContentType string `json:"contentType"`
	Body        string `json:"body"`
	Encoding    string `json:"encoding"`
	Bytes       int64  `json:"bytes"`
	SHA256      string `json:"sha256"`
	Truncated   bool   `json:"truncated"`
}

// Reference names provided values by handle.
type Reference struct {
	Handles []Handle `json:"handles"`
}

// Handle is an opaque reference to one stored value.
type Handle struct {
	FieldKey string `json:"fieldKey"`
	Handle   string `json:"handle"`
}

// Confirmation says the user confirmed exactly the scope whose hash it carries.
type Confirmation struct {
	Confirmed bool   `json:"confirmed"`
	ScopeHash string `json:"scopeHash"`
}

// Choice is the option the user picked.
type Choice struct {
	SelectedOptionID string `json:"selectedOptionId"`
}

// Request is one human-in-the-loop task.
type Request struct {
	ID              string     `json:"id"`
	SessionID       string     `json:"sessionId"`
	AgentID         string     `json:"agentId"`
	UserID          string     `json:"userId"`
	ClientRequestID string     `json:"clientRequestId"`
	Kind            string     `json:"kind"`
	Status          string     `json:"status"`
	ResolutionPath  string     `json:"resolutionPath"`
	Context         Context    `json:"context"`
	Fields          []Field    `json:"fields"`
	Options         []Option   `json:"options"`
	Params          Params     `json:"params"`
	ExpiresAt       time.Time  `json:"expiresAt"`
	DecidedBy       *string    `json:"decidedBy"`
	DecidedAt       *time.Time `json:"decidedAt"`
	CreatedAt       time.Time  `json:"createdAt"`
	UpdatedAt       time.Time  `json:"updatedAt"`
	// ArtifactType is set once the request is fulfilled; ClaimedAt once its agent
	// claimed the artifact.
	ArtifactType *string    `json:"artifactType"`
	ClaimedAt    *time.Time `json:"claimedAt"`
}

// Due reports whether the request waits for its user past its time at now.
func (r Request) Due(now time.Time) bool {
	return r.Status == StatusWaitingUser && !now.Before(r.ExpiresAt)
}

// TTL bounds.
const (
	DefaultTTL = 15 * time.Minute
	MinTTL     = 30 * time.Second
	MaxTTL     = 24 * time.Hour
)

// New is what an agent gives to raise a request.
type New struct {
	ClientRequestID string   `json:"clientRequestId"`
	Kind            string   `json:"kind"`
	TTLSeconds      *int64   `json:"ttlSeconds"`
	Context         Context  `json:"context"`
	Fields          []Field  `json:"fields"`
	Options         []Option `json:"options"`
	Params          Params   `json:"params"`
}

var (
	keyPattern    = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9_.-]{0,63}$`)
	amountPattern = regexp.MustCompile(`^(0|[1-9][0-9]{0,17})(\.[0-9]{1,18})?$`)
	currencyRule  = regexp.MustCompile(`^[A-Z][A-Z0-9]{1,11}$`)
)

// Validate checks n for its kind and fills in defaults (the TTL, secret flags).
func (n *New) Validate() error {
	if n.ClientRequestID == "" || len(n.ClientRequestID) > 200 {
		return problem.Invalid("clientRequestId must be 1 to 200 bytes.")
	}
	if !slices.Contains(Kinds, n.Kind) {
		return problem.Invalid("kind must be one of " + strings.Join(Kinds, ", ") + ".")
	}
	if n.TTLSeconds == nil {
		ttl := int64(DefaultTTL / time.Second)
		n.TTLSeconds = &ttl
	}
	if t := *n.TTLSeconds; t < int64(MinTTL/time.Second) || t > int64(MaxTTL/time.Second) {
		return problem.Invalid("ttlSeconds must be from " + strconv.Itoa(int(MinTTL/time.Second)) + " to " + strconv.Itoa(int(MaxTTL/time.Second)) + ".")
	}
	if err := n.Context.validate(); err != nil {
		return err
	}
	if err := n.Params.check(); err != nil {
		return err
	}
	if err := n.checkShape(); err != nil {
		return err
	}
	if err := n.checkFields(); err != nil {
		return err
	}
	return n.checkOptions()
}

// check is what holds of params whatever the kind: bounded text, an amount with its
// currency, and none of the service's own members.
func (p Params) check() error {
	for _, f := range []struct {
		name, v string
		max     int
	}{{"params.summary", p.Summary, 2000}, {"params.recipient", p.Recipient, 500}, {"params.purpose", p.Purpose, 1000}} {
		if err := problem.Text(f.name, f.v, false, f.max); err != nil {
			return err
		}
	}
	if p.PaymentID != "" || p.Verdict != "" {
		return problem.Invalid("params.paymentId and params.verdict are the service's own.")
	}
	if p.Amount != "" && !amountPattern.MatchString(p.Amount) {
		return problem.Invalid("params.amount must be a decimal number such as 12.50.")
	}
	if p.Currency != "" && !currencyRule.MatchString(p.Currency) {
		return problem.Invalid("params.currency must be an upper-case code such as USD or USDC.")
	}
	if (p.Amount == "") != (p.Currency == "") {
		return problem.Invalid("params.amount and params.currency go together.")
	}
	return nil
}

// checkShape is what each kind holds: a confirm's summary and amount, a choice's
// options, the fields of those that fill fields, and nothing that belongs to another.
func (n *New) checkShape() error {
	p := n.Params
	wantFields := n.Kind == KindProvideMissing || n.Kind == KindAskBeforeUse || n.Kind == KindChooseCandidate
	switch {
	case n.Kind == KindConfirm && strings.TrimSpace(p.Summary) == "":
		return problem.Invalid("A confirm request needs params.summary: what the user confirms.")
	case n.Kind != KindConfirm && (p.Amount != "" || p.Recipient != ""):
		return problem.Invalid("params.amount, params.currency and params.recipient belong to confirm requests.")
	case choosing(n.Kind) && (len(n.Options) < 2 || len(n.Options) > 20):
		return problem.Invalid("A " + n.Kind + " request needs 2 to 20 options.")
	case !choosing(n.Kind) && len(n.Options) > 0:
		return problem.Invalid("options belong to choice and choose_candidate requests.")
	case n.Kind == KindChooseCandidate && len(n.Fields) != 1:
		return problem.Invalid("A choose_candidate request names the one field its candidates fill.")
	case wantFields && (len(n.Fields) == 0 || len(n.Fields) > 20):
		return problem.Invalid("A " + n.Kind + " request needs 1 to 20 fields.")
	case !wantFields && len(n.Fields) > 0:
		return problem.Invalid("fields belong to provide_missing, ask_before_use and choose_candidate requests.")
	}
	return nil
}

// checkFields checks each field and fills in its defaults: text when no type is
// given, secret when its type always is. Only ask_before_use names handles.
func (n *New) checkFields() error {
	seen := map[string]bool{}
	for i := range n.Fields {
		f := &n.Fields[i]
		at := "fields[" + strconv.Itoa(i) + "]"
		if !keyPattern.MatchString(f.Key) || seen[f.Key] {
			return problem.Invalid(at + ".key must be a distinct name of letters, digits, _ . - (at most 64).")
		}
		seen[f.Key] = true
		if err := problem.Text(at+".label", f.Label, true, 200); err != nil {
			return err
		}
		if f.Type == "" {
			f.Type = "text"
		}
		if !slices.Contains(FieldTypes, f.Type) {
			return problem.Invalid(at + ".type must be one of " + strings.Join(FieldTypes, ", ") + ".")
		}
		f.Secret = f.Secret || alwaysSecret(f.Type)
		switch {
		case f.Handle != "" && n.Kind != KindAskBeforeUse:
			return problem.Invalid(at + ".handle belongs to ask_before_use requests.")
		case f.Handle != "" && (len(f.Handle) < 24 || len(f.Handle) > 100 || !strings.HasPrefix(f.Handle, "wh_")):
			return problem.Invalid(at + ".handle must be a handle of this session's memory catalog.")
		}
	}
	return nil
}

// checkOptions checks each option: distinct ids (a choose_candidate's are handles of
// the session's catalog), a label, a bounded description.
func (n *New) checkOptions() error {
	seen := map[string]bool{}
	for i, o := range n.Options {
		at := "options[" + strconv.Itoa(i) + "]"
		if !keyPattern.MatchString(o.ID) || seen[o.ID] {
			return problem.Invalid(at + ".id must be a distinct name of letters, digits, _ . - (at most 64).")
		}
		seen[o.ID] = true
		if n.Kind == KindChooseCandidate && !strings.HasPrefix(o.ID, "wh_") {
			return problem.Invalid(at + ".id must be a handle of this session's memory catalog.")
		}
		if err := problem.Text(at+".label", o.Label, true, 200); err != nil {
			return err
		}
		if err := problem.Text(at+".description", o.Description, false, 1000); err != nil {
			return err
		}
	}
	return nil
}

func (c Context) validate() error {
	if c.URL != "" {
		u, err := url.Parse(c.URL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || len(c.URL) > 2048 {
			return problem.Invalid("context.url must be an absolute http or https URL of at most 2048 bytes.")
		}
	}
	if err := problem.Text("context.pageTitle", c.PageTitle, false, 500); err != nil {
		return err
	}
	if err := problem.Text("context.merchantName", c.MerchantName, false, 200); err != nil {
		return err
	}
	return problem.Text("context.reason", c.Reason, false, 1000)
}

// Decisions a user can take.
const (
	Approve = "approve"
	Deny    = "deny"
)

// Decision is a user's answer to a request waiting for them. Values are the
// provided values by field key: they are sealed before storage and never returned.
type Decision struct {
	Decision         string            `json:"decision"`
	Values           map[string]string `json:"values"`
	SelectedChoiceID string            `json:"selectedChoiceId"`
	// Save keeps a provide_missing approval's values as a memory item of the user,
	// for the request's site (every site without a context URL); AskBeforeUse (true
	// unless false) makes later uses wait for an ask_before_use approval.
	Save         bool  `json:"save"`
	AskBeforeUse *bool `json:"askBeforeUse"`
	// OverrideVerdict approves a payment to a seller the directory says to avoid.
	OverrideVerdict bool `json:"overrideVerdict"`
}

// MaxValueLen bounds one provided value, in bytes.
const MaxValueLen = 4096

// Check tells whether d answers r: the values, the choice, or neither, as r's kind
// wants. Messages name fields, never values.
func (r Request) Check(d Decision) error {
	if d.Decision != Approve && d.Decision != Deny {
		return problem.Invalid("decision must be approve or deny.")
	}
	if (d.Save || d.AskBeforeUse != nil) && (r.Kind != KindProvideMissing || d.Decision != Approve) {
		return problem.Invalid("save and askBeforeUse go with the approval of a provide_missing request.")
	}
	if d.OverrideVerdict && (r.Kind != KindAuthorizePayment || d.Decision != Approve) {
		return problem.Invalid("overrideVerdict goes with the approval of an authorize_payment request.")
	}
	if d.Decision == Approve && r.Kind == KindAuthorizePayment && r.Params.Verdict == "avoid" && !d.OverrideVerdict {
		return errOverride
	}
	if d.Decision == Deny {
		if len(d.Values) > 0 || d.SelectedChoiceID != "" {
			return problem.Invalid("A denial carries no values and no choice.")
		}
		return nil
	}
	if choosing(r.Kind) {
		if !slices.ContainsFunc(r.Options, func(o Option) bool { return o.ID == d.SelectedChoiceID }) {
			return problem.Invalid("selectedChoiceId must be the id of one of the request's options.")
		}
	} else if d.SelectedChoiceID != "" {
		return problem.Invalid("selectedChoiceId answers choice and choose_candidate requests only.")
	}
	if r.Kind != KindProvideMissing && r.Kind != KindCaptcha {
		if len(d.Values) > 0 {
			return problem.Invalid("values answer provide_missing and captcha requests only.")
		}
		return nil
	}
	for k := range d.Values {
		if !slices.ContainsFunc(r.Fields, func(f Field) bool { return f.Key == k }) {
			return problem.Invalid("values has a key that is not one of the request's fields.")
		}
	}
	for _, f := range r.Fields {
		v, ok := d.Values[f.Key]
		if !ok || strings.TrimSpace(v) == "" {
			return problem.Invalid("values must give every field; " + f.Key + " is missing.")
		}
		if len(v) > MaxValueLen || !utf8.ValidString(v) {
			return problem.Invalid("the value of " + f.Key + " must be valid UTF-8 of at most " + strconv.Itoa(MaxValueLen) + " bytes.")
		}
	}
	return nil
}

// ScopeHash binds a confirmation to exactly what was confirmed: the request, its
// kind, summary, amount, currency, recipient, purpose and field keys.
func (r Request) ScopeHash() string {
	keys := make([]string, len(r.Fields))
	for i, f := range r.Fields {
		keys[i] = f.Key
	}
	b, _ := json.Marshal(struct {
		RequestID string   `json:"requestId"`
		Kind      string   `json:"kind"`
		Params    Params   `json:"params"`
		Fields    []string `json:"fields"`
	}{r.ID, r.Kind, r.Params, keys})
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Sealed is one provided value, encrypted for storage, with the handle the agent
// receives in its stead.
type Sealed struct {
	FieldKey   string
	Handle     string
	KeyID      string
	Nonce      []byte
	Ciphertext []byte
}

// Outcome is a decision made ready for storage: the status the request ends in,
// its artifact and the sealed values, if any.
type Outcome struct {
	Approved bool
	Artifact *Artifact
	Values   []Sealed
	// Save is the memory item the values are kept as, when the user said so.
	Save *memory.Stored
	// Pending leaves an approved request approved, for the system to carry out and
	// fulfil (a payment); Override records the person's override of the verdict.
	Pending  bool
	Override bool
	// Solution is the answer to a captcha request, which its task yields.
	Solution *string
}

// ValueAAD is the additional data a provided value is sealed with: user|request|field,
// so that a ciphertext moved to another row fails to open.
func ValueAAD(userID, requestID, fieldKey string) []byte {
	return []byte(userID + "|" + requestID + "|" + fieldKey)
}
