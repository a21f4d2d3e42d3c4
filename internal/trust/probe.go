package trust

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/waystation/waystation/internal/outbound"
	"github.com/waystation/waystation/internal/x402"
)

// Target is one method endpoint to probe.
type Target struct {
	MethodID int64
	Hostname string
	Kind     string
	// Method is the HTTP method the catalog lists; the probe tries GET first.
	Method string
	URL    string
	// LastProbed is when the method was last probed; zero when never. A round
	// within a budget takes the longest waiting first.
	LastProbed time.Time
}

// Result is what one probe saw.
type Result struct {
	Target     Target
	ProbedAt   time.Time
	Outcome    string
	HTTPStatus int // 0 when no HTTP answer came
	Latency    time.Duration
	// Offer is set when Outcome is payment_required.
	Offer *x402.Offer
	// Reason is set when Outcome is invalid_offer: why no x402 client could pay the
	// answer, one of x402.Reasons. The trust block shows it.
	Reason string
	// Detail says more, for operators: an error text or the offer problem.
	Detail string
}

// ProberConfig tunes a Prober. Zero values take the defaults.
type ProberConfig struct {
	// Client sends the probes: the service's guarded client, whose timeout bounds
	// one request (default: a client of outbound's defaults, public addresses only).
	Client Client
	// Concurrency is how many hosts are probed at once (default 8).
	Concurrency int
	// HostSpacing is the least time between two requests to one host (default 1s;
	// negative for none).
	HostSpacing time.Duration
	// MaxBody is how much of a body is read (default 64 KiB); the rest is dropped.
	MaxBody int64
	// BackoffBase is how long a host whose every probe failed to connect is left
	// alone after its first failed round; it doubles with each further failed round
	// up to BackoffMax (defaults 30m and 24h).
	BackoffBase time.Duration
	BackoffMax  time.Duration
	// UserAgent is sent with every probe.
	UserAgent string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Client sends one request, following redirects only within its origin, through
// the guarded client every outbound request goes through (outbound.Client).
type Client interface {
	Follow(ctx context.Context, req *http.Request) (*http.Response, error)
}

var _ Client = (*outbound.Client)(nil)

// Prober calls sellers' endpoints without paying and classifies the answers. It
// never sends a payment header, reaches sellers only through its guarded client
// (public addresses, no redirect to another origin), spaces its requests to a host
// and backs off from hosts that keep failing. It is safe for concurrent use.
type Prober struct {
	cfg ProberConfig
	log *slog.Logger

	mu    sync.Mutex
	hosts map[string]*hostState
}

type hostState struct {
	next     time.Time // the next request may start then
	failures int       // consecutive rounds in which every probe failed to connect
	until    time.Time // skipped until then
}

// NewProber returns a prober with cfg's settings.
func NewProber(cfg ProberConfig, log *slog.Logger) *Prober {
	if cfg.Client == nil {
		cfg.Client = outbound.New(outbound.Config{})
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 8
	}
	if cfg.HostSpacing < 0 {
		cfg.HostSpacing = 0
	} else if cfg.HostSpacing == 0 {
		cfg.HostSpacing = time.Second
	}
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = 64 << 10
	}
	if cfg.BackoffBase <= 0 {
		cfg.BackoffBase = 30 * time.Minute
	}
	if cfg.BackoffMax <= 0 {
		cfg.BackoffMax = 24 * time.Hour
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = "Waystation-Prober/1 (+directory trust probe; never pays)"
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Prober{cfg: cfg, log: log, hosts: map[string]*hostState{}}
}

// Probe calls one endpoint: GET first, then the listed method when GET does not get
// a 402 and the listed method is HEAD or POST. A listed DELETE, PUT, PATCH or anything
// else is never sent: the catalog is third parties' data. It never pays.
func (p *Prober) Probe(ctx context.Context, t Target) Result {
	res := p.request(ctx, t, http.MethodGet)
	m := strings.ToUpper(strings.TrimSpace(t.Method))
	if (m == http.MethodHead || m == http.MethodPost) && res.HTTPStatus != 0 && res.HTTPStatus != http.StatusPaymentRequired {
		p.space(ctx, t.Hostname)
		res = p.request(ctx, t, m)
	}
	return res
}

func (p *Prober) request(ctx context.Context, t Target, method string) Result {
	res := Result{Target: t, ProbedAt: p.cfg.Now().UTC()}
	var body io.Reader
	if method == http.MethodPost {
		body = strings.NewReader("{}")
	}
	req, err := http.NewRequestWithContext(ctx, method, t.URL, body)
	if err != nil {
		res.Outcome, res.Detail = OutcomeError, "bad endpoint URL: "+x402.Clean(err.Error(), 200)
		return res
	}
	if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
		res.Outcome, res.Detail = OutcomeError, "endpoint URL scheme is not http or https"
		return res
	}
	req.Header.Set("User-Agent", p.cfg.UserAgent)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	start := time.Now()
	resp, err := p.cfg.Client.Follow(ctx, req)
	if err != nil {
		res.Latency = time.Since(start)
		res.Outcome, res.Detail = classifyError(err)
		if resp != nil { // the redirect that was not followed
			res.HTTPStatus = resp.StatusCode
			resp.Body.Close()
		}
		return res
	}
	defer resp.Body.Close()
	res.HTTPStatus = resp.StatusCode
	var buf bytes.Buffer
	_, rerr := io.Copy(&buf, io.LimitReader(resp.Body, p.cfg.MaxBody+1))
	res.Latency = time.Since(start)
	truncated := int64(buf.Len()) > p.cfg.MaxBody
	if rerr != nil && resp.StatusCode == http.StatusPaymentRequired && resp.Header.Get(x402.HeaderPaymentRequired) == "" {
		res.Outcome, res.Detail = classifyError(rerr)
		return res
	}

	switch code := resp.StatusCode; {
	case code == http.StatusPaymentRequired:
		b := buf.Bytes()
		if truncated {
			b = nil // a cut-off body is no document
		}
		offer, err := x402.ParseOffer(resp.Header, b)
		if err != nil {
			res.Outcome, res.Detail = OutcomeInvalidOffer, x402.Clean(err.Error(), 500)
			var oe *x402.OfferError
			if errors.As(err, &oe) {
				res.Reason = oe.Reason
			}
			if truncated {
				res.Detail += fmt.Sprintf(" (body over %d bytes)", p.cfg.MaxBody)
			}
			return res
		}
		res.Outcome, res.Offer = OutcomePaymentRequired, &offer
	case code >= 200 && code < 300:
		res.Outcome = OutcomeNoPaymentRequired
	default:
		res.Outcome, res.Detail = OutcomeHTTPError, resp.Status
	}
	return res
}

// classifyError maps a failed request to an outcome.
func classifyError(err error) (string, string) {
	detail := x402.Clean(err.Error(), 300)
	var redirect *outbound.RedirectError
	var dnsErr *net.DNSError
	var certInvalid x509.CertificateInvalidError
	var unknownAuthority x509.UnknownAuthorityError
	var hostnameErr x509.HostnameError
	var tlsRecord tls.RecordHeaderError
	var tlsAlert tls.AlertError
	var certVerify *tls.CertificateVerificationError
	var netErr net.Error
	switch {
	case errors.As(err, &redirect):
		return OutcomeRedirect, detail
	case errors.Is(err, outbound.ErrTooManyRedirects):
		return OutcomeHTTPError, detail
	case errors.Is(err, outbound.ErrBlocked):
		return OutcomeBlockedAddress, detail
	case errors.As(err, &dnsErr):
		// The name and what went wrong, never the resolver's address: that is this
		// service's network, not the seller's.
		return OutcomeDNSError, x402.Clean("lookup "+dnsErr.Name+": "+dnsErr.Err, 300)
	case errors.As(err, &certVerify), errors.As(err, &certInvalid), errors.As(err, &unknownAuthority),
		errors.As(err, &hostnameErr), errors.As(err, &tlsRecord), errors.As(err, &tlsAlert):
		return OutcomeTLSError, detail
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded),
		errors.As(err, &netErr) && netErr.Timeout():
		return OutcomeTimeout, detail
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return OutcomeConnectionRefused, detail
	case strings.Contains(detail, "tls:") || strings.Contains(detail, "x509:"):
		return OutcomeTLSError, detail
	}
	return OutcomeError, detail
}

// connectionFailure reports outcomes that say the host cannot be reached at all.
func connectionFailure(outcome string) bool {
	switch outcome {
	case OutcomeTimeout, OutcomeTLSError, OutcomeDNSError, OutcomeConnectionRefused, OutcomeBlockedAddress:
		return true
	}
	return false
}

// space waits until the host may be called again and books the next slot.
func (p *Prober) space(ctx context.Context, host string) {
	p.mu.Lock()
	st := p.state(host)
	now := time.Now()
	wait := st.next.Sub(now)
	start := now
	if wait > 0 {
		start = st.next
	}
	st.next = start.Add(p.cfg.HostSpacing)
	p.mu.Unlock()
	if wait <= 0 {
		return
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// Resting reports whether the host is in backoff now: a round would skip it.
func (p *Prober) Resting(host string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	st, ok := p.hosts[host]
	return ok && p.cfg.Now().Before(st.until)
}

func (p *Prober) state(host string) *hostState {
	st := p.hosts[host]
	if st == nil {
		st = &hostState{}
		p.hosts[host] = st
	}
	return st
}

// RoundStats counts what a round did.
type RoundStats struct {
	Probed   int
	Skipped  int // hosts in backoff, and methods left after a host stopped answering
	Deferred int // methods past the round's budget, first in the next round
	Outcomes map[string]int
}

// Round probes every target, hosts in parallel (up to Concurrency) and each host's
// targets one after another, spaced by HostSpacing. A host in backoff is skipped; a
// host that fails to connect twice in a row within a round is left for the rest of
// it. record is called with each result, from one goroutine at a time; an error from
// it ends the round.
func (p *Prober) Round(ctx context.Context, targets []Target, record func(Result) error) (RoundStats, error) {
	stats := RoundStats{Outcomes: map[string]int{}}
	byHost := map[string][]Target{}
	var hosts []string
	for _, t := range targets {
		if _, ok := byHost[t.Hostname]; !ok {
			hosts = append(hosts, t.Hostname)
		}
		byHost[t.Hostname] = append(byHost[t.Hostname], t)
	}

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var (
		recMu sync.Mutex
		wg    sync.WaitGroup
		queue = make(chan string)
	)
	emit := func(r Result) {
		recMu.Lock()
		defer recMu.Unlock()
		if ctx.Err() != nil {
			return
		}
		stats.Probed++
		stats.Outcomes[r.Outcome]++
		if err := record(r); err != nil {
			cancel(err)
		}
	}
	skip := func(n int) {
		recMu.Lock()
		stats.Skipped += n
		recMu.Unlock()
	}
	for range min(p.cfg.Concurrency, max(len(hosts), 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for host := range queue {
				p.probeHost(ctx, host, byHost[host], emit, skip)
			}
		}()
	}
	for _, h := range hosts {
		select {
		case queue <- h:
		case <-ctx.Done():
		}
	}
	close(queue)
	wg.Wait()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return stats, err
	}
	return stats, ctx.Err()
}

func (p *Prober) probeHost(ctx context.Context, host string, targets []Target, emit func(Result), skip func(int)) {
	p.mu.Lock()
	until := p.state(host).until
	p.mu.Unlock()
	if p.cfg.Now().Before(until) {
		p.log.Debug("probe: host in backoff", "host", host, "until", until)
		skip(len(targets))
		return
	}
	attempted, failed, streak := 0, 0, 0
	for i, t := range targets {
		if ctx.Err() != nil {
			return
		}
		p.space(ctx, host)
		if ctx.Err() != nil {
			return
		}
		r := p.Probe(ctx, t)
		if ctx.Err() != nil {
			return // a cancelled round records nothing half-done
		}
		emit(r)
		attempted++
		if connectionFailure(r.Outcome) {
			failed++
			streak++
		} else {
			streak = 0
		}
		if streak >= 2 && i+1 < len(targets) {
			skip(len(targets) - i - 1)
			break
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.state(host)
	if attempted > 0 && failed == attempted {
		st.failures++
		d := p.cfg.BackoffBase << min(st.failures-1, 16)
		if d > p.cfg.BackoffMax || d <= 0 {
			d = p.cfg.BackoffMax
		}
		st.until = p.cfg.Now().Add(d)
		p.log.Info("probe: host unreachable; backing off", "host", host, "rounds", st.failures, "for", d)
	} else if attempted > 0 {
		st.failures, st.until = 0, time.Time{}
	}
}

// Probeable reports whether a hostname can be on the internet at all: names under
// the reserved example, test, invalid and localhost domains (RFC 2606, RFC 6761)
// and bare IP addresses are never probed by the service's rounds.
func Probeable(hostname string) bool {
	h := strings.TrimSuffix(strings.ToLower(hostname), ".")
	if _, err := netip.ParseAddr(h); err == nil || h == "" {
		return false
	}
	for _, tld := range []string{"example", "test", "invalid", "localhost"} {
		if h == tld || strings.HasSuffix(h, "."+tld) {
			return false
		}
	}
	return true
}

// Classify names the outcome of a request that failed before any answer came, as
// a probe would record it (blocked_address, redirect, dns_error, timeout, ...), with
// a detail for operators.
func Classify(err error) (outcome, detail string) { return classifyError(err) }
