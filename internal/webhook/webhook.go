// Package webhook tells a person's systems what happened, as it happens: a user
// registers a URL and the events it wants; each event is queued in the transaction
// that records it (so none is lost or sent for a change that did not happen), signed
// with the webhook's secret, delivered with retries and backoff, and recorded with its
// outcome. Payloads are built from session events, checked for protected values when
// they are written, and cleaned again with the values of now when they are sent.
package webhook

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/waystation/waystation/internal/periodic"
	"github.com/waystation/waystation/internal/problem"
	"github.com/waystation/waystation/internal/redact"
)

// Events a webhook can ask for.
// ErrNotFound is a webhook that does not exist or is another user's.
var ErrNotFound = problem.New(problem.NotFound, "No webhook with this id is visible to this key.")

const (
	RequestWaiting   = "request.waiting_user"
	RequestApproved  = "request.approved"
	RequestFulfilled = "request.fulfilled"
	RequestExpired   = "request.expired"
	PaymentSettled   = "payment.settled"
	PaymentFailed    = "payment.failed"
	PaymentUnknown   = "payment.unknown"
	SessionCompleted = "session.completed"
	SessionStopped   = "session.stopped"
	CaptchaSolved    = "captcha.solved"
	// AgentPaused is an agent the service paused: its requests held protected values
	// it was never given, up to the budget. Only its person resumes it.
	AgentPaused = "agent.paused"
)

// Events lists every event.
var Events = []string{RequestWaiting, RequestApproved, RequestFulfilled, RequestExpired, PaymentSettled, PaymentFailed,
	PaymentUnknown, SessionCompleted, SessionStopped, CaptchaSolved, AgentPaused}

// FromSessionEvent is the webhook event a session event is, if any: a request's
// transition to waiting_user, approved, fulfilled or expired, a payment's outcome, a
// session's end, a solved CAPTCHA.
func FromSessionEvent(typ string, data []byte) (string, bool) {
	switch typ {
	case "request.status_changed":
		var d struct {
			To string `json:"to"`
		}
		json.Unmarshal(data, &d)
		if name := "request." + d.To; slices.Contains(Events, name) {
			return name, true
		}
	case PaymentSettled, PaymentFailed, PaymentUnknown, SessionCompleted, SessionStopped, CaptchaSolved:
		return typ, true
	}
	return "", false
}

// SignatureHeader carries a delivery's signature.
const SignatureHeader = "Waystation-Signature"

// Sign is the signature header's value for body sent at t: t=<unix>,v1=<hex of
// HMAC-SHA256 of "t.body" under the secret>.
func Sign(secret []byte, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(ts + "."))
	m.Write(body)
	return "t=" + ts + ",v1=" + hex.EncodeToString(m.Sum(nil))
}

// Verify checks a signature header as a receiver does: a v1 signature of the body
// under the secret, made within tolerance of now.
func Verify(secret []byte, header string, body []byte, now time.Time, tolerance time.Duration) bool {
	var ts string
	var sigs []string
	for _, part := range strings.Split(header, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			sigs = append(sigs, v)
		}
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || now.Sub(time.Unix(sec, 0)).Abs() > tolerance {
		return false
	}
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(ts + "."))
	m.Write(body)
	want := m.Sum(nil)
	for _, s := range sigs {
		if got, err := hex.DecodeString(s); err == nil && hmac.Equal(got, want) {
			return true
		}
	}
	return false
}

// SecretPrefix starts every webhook secret.
const SecretPrefix = "whsec_"

// NewSecret makes a webhook secret: 256 random bits, shown once.
func NewSecret() (string, []byte, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", nil, err
	}
	s := SecretPrefix + base64.RawURLEncoding.EncodeToString(b)
	return s, []byte(s), nil
}

// New is what a user registers.
type New struct {
	URL         string   `json:"url"`
	Events      []string `json:"events"`
	Description string   `json:"description"`
}

// Validate checks n.
func (n *New) Validate() error {
	u, err := url.Parse(n.URL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil || len(n.URL) > 2048 || u.Fragment != "" {
		return problem.Invalid("url must be an absolute http or https URL of at most 2048 bytes, without user information or fragment.")
	}
	if len(n.Events) == 0 || len(n.Events) > len(Events) {
		return problem.Invalid("events must name 1 to " + strconv.Itoa(len(Events)) + " of: " + strings.Join(Events, ", ") + ".")
	}
	for _, e := range n.Events {
		if !slices.Contains(Events, e) {
			return problem.Invalid("events must be among: " + strings.Join(Events, ", ") + ".")
		}
	}
	slices.Sort(n.Events)
	n.Events = slices.Compact(n.Events)
	return problem.Text("description", n.Description, false, 500)
}

// Webhook is a registered webhook, without its secret.
type Webhook struct {
	ID          string    `json:"id"`
	URL         string    `json:"url"`
	Events      []string  `json:"events"`
	Description string    `json:"description"`
	CreatedAt   time.Time `json:"createdAt"`
}

// Delivery is one event on its way to one webhook.
type Delivery struct {
	ID          int64      `json:"id"`
	WebhookID   string     `json:"webhookId"`
	Event       string     `json:"event"`
	Status      string     `json:"status"`
	Attempts    int        `json:"attempts"`
	LastStatus  *int       `json:"lastStatus"`
	LastError   *string    `json:"lastError"`
	CreatedAt   time.Time  `json:"createdAt"`
	NextAt      *time.Time `json:"nextAttemptAt"`
	DeliveredAt *time.Time `json:"deliveredAt"`
	// What the deliverer needs: the target, the payload, the sealed secret.
	URL     string          `json:"-"`
	UserID  string          `json:"-"`
	Payload json.RawMessage `json:"-"`
	Secret  Sealed          `json:"-"`
}

// Sealed is a webhook's secret, encrypted under the server's key.
type Sealed struct {
	KeyID      string
	Nonce      []byte
	Ciphertext []byte
}

// AAD binds a webhook's sealed secret to its user and webhook.
func AAD(userID, webhookID string) []byte { return []byte("webhook|" + userID + "|" + webhookID) }

// Delivery statuses.
const (
	StatusPending   = "pending"
	StatusDelivered = "delivered"
	StatusFailed    = "failed"
)

// MaxAttempts is how many times a delivery is tried before it is failed.
const MaxAttempts = 8

// Backoff is the wait after the n-th failed attempt: 10 s, 30 s, 2 min, 10 min, 30 min,
// 2 h, 6 h.
func Backoff(n int) time.Duration {
	steps := []time.Duration{10 * time.Second, 30 * time.Second, 2 * time.Minute, 10 * time.Minute, 30 * time.Minute, 2 * time.Hour, 6 * time.Hour}
	return steps[min(max(n-1, 0), len(steps)-1)]
}

// Opener opens sealed secrets.
type Opener interface {
	Open(keyID string, nonce, ciphertext, aad []byte) ([]byte, error)
}

// Sender sends a request through the service's guarded client.
type Sender interface {
	Send(ctx context.Context, req *http.Request) (*http.Response, error)
}

// Deliverer delivers due deliveries every Every (any replica may run one).
type Deliverer struct {
	Store  Store
	Opener Opener
	Sender Sender
	Every  time.Duration
	Log    *slog.Logger
	// Backoff is the wait after a failed attempt (default Backoff); Now the clock.
	Backoff func(attempt int) time.Duration
	Now     func() time.Time
	// Protected gives a user's protected values, which each body is cleaned with as
	// they are now before it is sent; without it nothing is sent.
	Protected redact.Source
}

// Run delivers until ctx ends.
func (d Deliverer) Run(ctx context.Context) {
	periodic.Run(ctx, d.Every, d.Every, func(ctx context.Context) {
		for {
			n, err := d.Once(ctx)
			if err != nil && ctx.Err() == nil {
				d.Log.Warn("webhook deliveries", "err", err)
			}
			if err != nil || n < batch {
				return
			}
		}
	})
}

const (
	// batch is how many due deliveries one deliverer takes at a time, and sends at
	// once: each attempt lasts postTimeout at most, so a batch is over well within
	// its lease.
	batch = 16
	// postTimeout bounds one attempt.
	postTimeout = 10 * time.Second
	// lease is how long a batch is left to the deliverer that took it: past it, a
	// deliverer that died (its replica killed mid-attempt) has its deliveries taken
	// up by another, which sends them again with the same id.
	lease = 3 * postTimeout
)

// Once takes the deliveries due now and attempts them all at once; it says how many
// it tried. A batch taken is another deliverer's to leave alone until each attempt
// is recorded or the lease runs out, so each attempt goes out once, however many
// replicas deliver.
func (d Deliverer) Once(ctx context.Context) (int, error) {
	due, err := d.Store.DueDeliveries(ctx, batch, lease)
	if err != nil {
		return 0, err
	}
	var wg sync.WaitGroup
	for _, dl := range due {
		wg.Go(func() { d.deliver(ctx, dl) })
	}
	wg.Wait()
	return len(due), nil
}

func (d Deliverer) now() time.Time {
	if d.Now != nil {
		return d.Now()
	}
	return time.Now()
}

// deliver makes one attempt: the body is the same on every attempt, so a receiver
// can drop a repeat by its id.
func (d Deliverer) deliver(ctx context.Context, dl Delivery) {
	// The payload was built when its event was written, against the values of then:
	// it is cleaned with the user's values of now, and not sent while they cannot be
	// loaded.
	set, err := redact.Load(ctx, d.Protected, dl.UserID, "the delivery was not sent")
	if err != nil {
		d.record(ctx, dl, 0, "the user's protected values could not be loaded to check the body")
		return
	}
	dl.Payload, _ = set.RawJSON(dl.Payload)
	body, _ := json.Marshal(struct {
		ID        string          `json:"id"`
		Type      string          `json:"type"`
		CreatedAt time.Time       `json:"createdAt"`
		Data      json.RawMessage `json:"data"`
	}{"whd_" + strconv.FormatInt(dl.ID, 10), dl.Event, dl.CreatedAt.UTC(), dl.Payload})
	status, errText := 0, ""
	secret, err := d.Opener.Open(dl.Secret.KeyID, dl.Secret.Nonce, dl.Secret.Ciphertext, AAD(dl.UserID, dl.WebhookID))
	if err == nil {
		status, errText = d.post(ctx, dl.URL, secret, body)
	} else {
		errText = "the webhook's secret could not be opened"
	}
	d.record(ctx, dl, status, errText)
}

// record keeps the outcome of an attempt at dl: delivered, failed for good past
// MaxAttempts, else due again after the backoff.
func (d Deliverer) record(ctx context.Context, dl Delivery, status int, errText string) {
	var err error
	attempt := dl.Attempts + 1
	switch {
	case errText == "" && status >= 200 && status < 300:
		err = d.Store.Attempted(ctx, dl.ID, StatusDelivered, status, "", nil)
	case attempt >= MaxAttempts:
		err = d.Store.Attempted(ctx, dl.ID, StatusFailed, status, errText, nil)
	default:
		backoff := d.Backoff
		if backoff == nil {
			backoff = Backoff
		}
		next := d.now().Add(backoff(attempt))
		err = d.Store.Attempted(ctx, dl.ID, StatusPending, status, errText, &next)
	}
	if err != nil {
		d.Log.Warn("record webhook delivery", "delivery", dl.ID, "err", err)
	}
}

func (d Deliverer) post(ctx context.Context, target string, secret, body []byte) (int, string) {
	ctx, cancel := context.WithTimeout(ctx, postTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, strings.NewReader(string(body)))
	if err != nil {
		return 0, "the URL makes no request"
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "Waystation-Webhooks/1")
	req.Header.Set(SignatureHeader, Sign(secret, d.now(), body))
	resp, err := d.Sender.Send(ctx, req)
	if err != nil {
		msg := err.Error()
		if len(msg) > 200 {
			msg = msg[:200]
		}
		return 0, msg
	}
	resp.Body.Close()
	if resp.StatusCode >= 300 {
		return resp.StatusCode, fmt.Sprintf("the receiver answered %d", resp.StatusCode)
	}
	return resp.StatusCode, ""
}

// Guard tells whether deliveries to a host would be refused: the guarded client's
// rule (public addresses only, and the hosts the operator named) asked ahead.
type Guard interface {
	Refuses(ctx context.Context, hostport string) (netip.Addr, bool)
}

// Warnings are what the person registering rawURL should know that does not stop it
// being kept: that its host resolves only to addresses every delivery will be refused
// on. A host that does not resolve yet is not warned about. g nil warns of nothing.
func Warnings(ctx context.Context, g Guard, rawURL string) []string {
	warnings := []string{}
	u, err := url.Parse(rawURL)
	if g == nil || err != nil {
		return warnings
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if addr, refused := g.Refuses(ctx, net.JoinHostPort(u.Hostname(), port)); refused {
		warnings = append(warnings, fmt.Sprintf("Every delivery to %s will fail: it is reached on %s, a private or loopback address, "+
			"which this server refuses to send to unless its operator names the host in WEBHOOK_ALLOW_HOSTS.", u.Host, addr))
	}
	return warnings
}

// Sealer encrypts a value bound to additional data under the server's current key.
type Sealer interface {
	Seal(plaintext, aad []byte) (keyID string, nonce, ciphertext []byte, err error)
}
