package web

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/a-h/templ"

	"github.com/waystation/waystation/internal/auth"
	"github.com/waystation/waystation/internal/captcha"
	"github.com/waystation/waystation/internal/payment"
	"github.com/waystation/waystation/internal/request"
	"github.com/waystation/waystation/internal/session"
	"github.com/waystation/waystation/internal/trace"
	"github.com/waystation/waystation/internal/x402"
)

// AppBar is the strip atop every signed-in page: which key is signed in, and the
// sign-out form with the sign-in's CSRF token.
type AppBar struct {
	// Key is the prefix of the key the person signed in with, or Passkey the name of
	// their passkey.
	Key, Passkey string
	CSRF         string
}

func appBar(ws auth.WebSession) AppBar {
	if ws.PasskeyID != "" {
		return AppBar{Passkey: ws.PasskeyName, CSRF: ws.CSRFToken}
	}
	return AppBar{Key: "sk_user_" + ws.KID, CSRF: ws.CSRFToken}
}

// SignInView is the sign-in form. RequestID, when set, is the request the form leads
// back to; CSRF is the form's token, matched against a cookie.
type SignInView struct {
	Page
	RequestID string
	CSRF      string
	Message   string
	// Passkey is where a passkey's answer is sent, when passkeys work here.
	Passkey string
}

// MessageView is a page that only says something: a refusal, a missing request.
type MessageView struct {
	Page
	Heading, Message, Back string
}

// FieldView is one field of a request as a form shows it: never with a value.
type FieldView struct {
	Key, Label, Type string
	// Input is the name of the form input, InputType its type (password for
	// secrets, so that the value is not shown on screen).
	Input, InputType, ID string
	Secret               bool
}

// RequestView is one request's page.
type RequestView struct {
	Page
	Bar         AppBar
	ID          string
	Action      string
	Agent       string
	Session     string
	SessionURL  string
	Kind        string
	KindLabel   string
	Context     request.Context
	Params      request.Params
	Amount      string
	Fields      []FieldView
	Options     []request.Option
	Expires     string
	Status      string
	StatusLabel string
	Outcome     string
	Waiting     bool
	Message     string
	// Payment is set for an authorize_payment request, Captcha for a captcha one.
	Payment *PaymentView
	Captcha *CaptchaView
}

// CaptchaView is the CAPTCHA a person reads: its image as a data URL.
type CaptchaView struct {
	Image   templ.SafeURL
	PageURL string
}

// captchaView is the task t for its page; nil for none.
func captchaView(t *captcha.Task) *CaptchaView {
	if t == nil {
		return nil
	}
	v := &CaptchaView{PageURL: t.PageURL}
	if mt := captcha.ImageType(t.Image); mt != "" {
		// Built here from a checked image type and base64: nothing else goes in it.
		v.Image = templ.SafeURL("data:" + mt + ";base64," + base64.StdEncoding.EncodeToString(t.Image))
	}
	return v
}

// PaymentView is a payment as its person decides on it: who is paid what, where,
// the directory's word on the seller, and what the agent may still spend.
type PaymentView struct {
	Seller, Amount, Atomic, Asset, Network, PayTo, Request string
	Verdict, Score                                         string
	Listed, Avoid, Override                                bool
	Limits, SpentToday, SpentMonth                         string
	Status, StatusLabel, Failure, Transaction              string
}

// unknownWords say what an unknown payment is, and what its person can do while
// it stays so.
const unknownWords = "Sent, outcome unknown: the payment left and no answer proves whether the seller took it (the answer was lost, or the seller refused or failed after it may have settled). " +
	"It counts toward the agent's spend until the chain shows whether it moved; the service checks every few seconds where the operator gave it the network's chain endpoint " +
	"(X402_RPC_URLS on EVM networks, SOLANA_RPC_URL on Solana). If it stays unknown, look up the payer's address on the network's block explorer for a transfer of this amount to this payee, " +
	"pause the agent's payments meanwhile if you wish, and ask the operator to configure the endpoint."

// paymentWords say a payment's status to its person.
var paymentWords = map[string]string{
	"awaiting_approval": "Waiting for your approval: nothing is paid until you approve.",
	"approved":          "Approved: the service is about to pay.",
	"executing":         "Paying: the service checked the offer and is sending the payment.",
	"unknown":           unknownWords,
	"settled":           "Paid: the seller took the payment.",
	"failed":            "Not completed",
	"denied":            "Denied: nothing was paid.",
	"expired":           "Expired: nothing was paid.",
	"canceled":          "Canceled: nothing was paid.",
}

// paymentView describes pay, under its agent's limits lim, for its page; nil for
// none.
func paymentView(pay *payment.Payment, lim *payment.LimitsAndSpend) *PaymentView {
	if pay == nil {
		return nil
	}
	o := pay.Offer
	v := &PaymentView{Seller: pay.Host, Amount: o.Value.String() + " " + o.Symbol, Atomic: o.Amount, Asset: o.Asset,
		Network: networkLabel(o.Network), PayTo: o.PayTo, Request: pay.HTTPRequest.Method + " " + pay.HTTPRequest.URL,
		Verdict: pay.Verdict.Verdict, Score: "no score", Listed: pay.Verdict.Listed, Avoid: pay.Verdict.Verdict == payment.Avoid,
		Override: pay.Override, Limits: lim.Describe(),
		SpentToday: lim.Spent.Today.String() + " of " + lim.Daily.String() + " USD",
		SpentMonth: lim.Spent.ThisMonth.String() + " of " + lim.Monthly.String() + " USD", Status: pay.Status,
		StatusLabel: paymentWords[pay.Status]}
	if v.StatusLabel == "" {
		v.StatusLabel = pay.Status
	}
	if o.UpTo() {
		// The person approves the maximum; the seller settles what the call used.
		v.Amount = "up to " + v.Amount
	}
	if pay.SettledValue != nil {
		v.Amount = pay.SettledValue.String() + " " + o.Symbol + " paid, of " + v.Amount
	}
	if pay.Status == payment.StatusSettled && pay.Delivered != nil && !*pay.Delivered {
		v.StatusLabel = "Paid, and the seller did not deliver: the chain shows the money moved, and the seller " + answered(pay.Answer) +
			". It counts in the seller's record as a paid call not delivered."
	}
	if pay.Verdict.Score != nil {
		v.Score = strconv.Itoa(*pay.Verdict.Score) + " of 100"
	}
	if pay.Failure != nil {
		v.Failure = *pay.Failure
	}
	if pay.Transaction != nil {
		v.Transaction = *pay.Transaction
	}
	return v
}

// answered says what the seller answered to a payment it did not deliver.
func answered(a *request.SellerResponse) string {
	if a == nil {
		return "sent no answer the service received"
	}
	what := "answered " + strconv.Itoa(a.Status)
	if t := http.StatusText(a.Status); t != "" {
		what += " " + t
	}
	if a.ContentType != "" {
		what += " (" + a.ContentType + ", " + strconv.FormatInt(a.Bytes, 10) + " bytes)"
	}
	return what
}

// RequestRow is a waiting request as the index lists it.
type RequestRow struct {
	URL, Agent, KindLabel, About, Expires string
}

// RequestsView is the console's home: the requests waiting for the signed-in user
// first, then their agents' recent sessions.
type RequestsView struct {
	Page
	Bar      AppBar
	Items    []RequestRow
	Limit    int
	Sessions []SessionRow
}

// SessionRow is one session of the console's list.
type SessionRow struct {
	URL, Description, Agent, Status, Updated string
}

var kindLabels = map[string]string{
	request.KindConfirm:          "Confirm an action",
	request.KindChoice:           "Choose an option",
	request.KindChooseCandidate:  "Choose which saved details to use",
	request.KindProvideMissing:   "Provide missing details",
	request.KindAuthorizePayment: "Authorize a payment",
	request.KindCaptcha:          "Read a CAPTCHA",
	request.KindAskBeforeUse:     "Allow use of saved details",
}

func kindLabel(k string) string {
	if l, ok := kindLabels[k]; ok {
		return l
	}
	return k
}

// statusWords says how a request stands, in a label and a sentence: the label is the
// API's status (request.Statuses) in words, so that the page and the agent's answer
// never seem to disagree.
var statusWords = map[string][2]string{
	request.StatusWaitingUser: {"Waiting for you", "The agent waits for your decision."},
	request.StatusApproved:    {"Approved", "You approved it; the agent is being given what you allowed."},
	request.StatusExecuting:   {"Being carried out", "You approved it; the service is carrying it out."},
	request.StatusFulfilled:   {"Fulfilled", "You approved it and it was carried out. The agent holds only references to what you allowed, never the values themselves."},
	request.StatusDenied:      {"Denied", "You denied it; the agent was told no."},
	request.StatusExpired:     {"Expired", "No decision was made in time; nothing was approved."},
	request.StatusCanceled:    {"Canceled", "The agent withdrew it, or its session ended; nothing was approved."},
	request.StatusFailed:      {"Failed", "You approved it, but it could not be carried out."},
}

// inputTypes are the HTML input types of field types that are not secret.
var inputTypes = map[string]string{"email": "email", "phone": "tel", "url": "url", "date": "date"}

func fieldView(f request.Field) FieldView {
	v := FieldView{Key: f.Key, Label: f.Label, Type: f.Type, Secret: f.Secret,
		Input: "value." + f.Key, InputType: "text", ID: "field-" + f.Key}
	if t, ok := inputTypes[f.Type]; ok {
		v.InputType = t
	}
	if f.Secret {
		v.InputType = "password"
	}
	return v
}

func agentName(a auth.Agent) string {
	if a.Name == "" {
		return "an agent"
	}
	return a.Name
}

// requestView builds a request's page for the user signed in as ws.
func requestView(p Page, ws auth.WebSession, r request.Request, a auth.Agent, sess session.Session, now time.Time) RequestView {
	words, ok := statusWords[r.Status]
	if !ok {
		words = [2]string{r.Status, ""}
	}
	v := RequestView{
		Page: p, Bar: appBar(ws), ID: r.ID, Action: requestURL(r.ID) + "/decision",
		Agent: agentName(a), Session: sess.Description, SessionURL: sessionURL(sess.ID), Kind: r.Kind, KindLabel: kindLabel(r.Kind),
		Context: r.Context, Params: r.Params, Options: r.Options,
		Expires: formatTime(r.ExpiresAt) + untilText(r.ExpiresAt, now),
		Status:  r.Status, StatusLabel: words[0], Outcome: words[1],
		Waiting: r.Status == request.StatusWaitingUser,
	}
	if r.Params.Amount != "" {
		v.Amount = r.Params.Amount + " " + r.Params.Currency
	}
	for _, f := range r.Fields {
		v.Fields = append(v.Fields, fieldView(f))
	}
	return v
}

// untilText says how long is left, for a person who reads the page now.
func untilText(t, now time.Time) string {
	d := t.Sub(now)
	switch {
	case d <= 0:
		return ""
	case d < time.Minute:
		return " (in less than a minute)"
	case d < 2*time.Hour:
		return " (in " + strconv.Itoa(int(d/time.Minute)) + " min)"
	default:
		return " (in " + strconv.Itoa(int(d/time.Hour)) + " h)"
	}
}

// requestsView builds the index of waiting requests.
func requestsView(p Page, ws auth.WebSession, items []request.Request, agents []auth.Agent) RequestsView {
	names := map[string]string{}
	for _, a := range agents {
		names[a.ID] = a.Name
	}
	v := RequestsView{Page: p, Bar: appBar(ws), Limit: waitingLimit}
	now := time.Now()
	for _, r := range items {
		about := r.Context.Reason
		if about == "" {
			about = r.Context.MerchantName
		}
		if about == "" {
			about = r.Params.Summary
		}
		v.Items = append(v.Items, RequestRow{URL: requestURL(r.ID), Agent: names[r.AgentID],
			KindLabel: kindLabel(r.Kind), About: about, Expires: formatTime(r.ExpiresAt) + untilText(r.ExpiresAt, now)})
	}
	return v
}

// SessionView is one session's page: what the agent did, in time order.
type SessionView struct {
	Page
	Bar         AppBar
	Agent       string
	Description string
	Status      string
	Created     string
	Entries     []TimelineEntry
	// Limited says the timeline shows only the first entries of a long session.
	Limited bool
}

// TimelineEntry is one thing that happened: an event of the session's log (a
// request's transition links to the request) or a span the agent sent.
type TimelineEntry struct {
	At     time.Time
	When   string
	Kind   string // "event", "payment" or "span"
	What   string
	Who    string
	Link   string
	Detail string
}

// sessionView builds a session's timeline from its events and spans. Event data is
// value-free by construction; only a request's transition is spelled out.
func sessionView(p Page, ws auth.WebSession, sess session.Session, a auth.Agent, events []session.Event, spans []trace.Span, limited bool) SessionView {
	v := SessionView{Page: p, Bar: appBar(ws), Agent: agentName(a), Description: sess.Description,
		Status: sess.Status, Created: formatTime(sess.CreatedAt), Limited: limited}
	for _, e := range events {
		t := TimelineEntry{At: e.CreatedAt, Kind: "event", What: e.Type, Who: e.Actor}
		if e.Type == request.EventStatusChanged {
			var d struct {
				RequestID string  `json:"requestId"`
				Kind      string  `json:"kind"`
				From      *string `json:"from"`
				To        string  `json:"to"`
			}
			if json.Unmarshal(e.Data, &d) == nil && uuidPattern.MatchString(d.RequestID) {
				t.What = kindLabel(d.Kind) + ": " + d.To
				t.Link = requestURL(d.RequestID)
			}
		}
		if e.Type == payment.EventSettled || e.Type == payment.EventFailed || e.Type == payment.EventUnknown {
			var d struct {
				RequestID   string  `json:"requestId"`
				Failure     *string `json:"failure"`
				Network     string  `json:"network"`
				Transaction *string `json:"transaction"`
			}
			if json.Unmarshal(e.Data, &d) == nil {
				network := x402.NetworkName(d.Network)
				if network == "" {
					network = d.Network
				}
				t.Kind, t.What = "payment", "Payment settled on "+network
				switch e.Type {
				case payment.EventFailed:
					t.What = "Payment failed"
					if d.Failure != nil {
						t.What += ": " + *d.Failure
					}
				case payment.EventUnknown:
					t.What = "Payment sent on " + network + ", outcome unknown: it counts toward spend until the chain shows whether it settled"
				}
				if d.Transaction != nil {
					t.Detail = "transaction " + *d.Transaction
				}
				if uuidPattern.MatchString(d.RequestID) {
					t.Link = requestURL(d.RequestID)
				}
			}
		}
		v.Entries = append(v.Entries, t)
	}
	for _, sp := range spans {
		at := time.Unix(0, int64(sp.Start))
		t := TimelineEntry{At: at, Kind: "span", What: sp.Name, Who: "trace"}
		if sp.End >= sp.Start {
			t.Detail = time.Duration(sp.End - sp.Start).Round(time.Millisecond).String()
		}
		if sp.Status.Code == 2 {
			t.Detail += " · error"
		}
		v.Entries = append(v.Entries, t)
	}
	slices.SortStableFunc(v.Entries, func(a, b TimelineEntry) int { return a.At.Compare(b.At) })
	for i := range v.Entries {
		v.Entries[i].When = v.Entries[i].At.UTC().Format("15:04:05.000")
	}
	return v
}
