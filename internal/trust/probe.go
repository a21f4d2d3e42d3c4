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
	"net/url"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

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
	// Concurrency is how many hosts are probed at once (default 8).
	Concurrency int
	// Timeout bounds one request, from dialing to the last byte read (default 10s).
	Timeout time.Duration
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
	// AllowLoopback lets probes reach loopback addresses: for tests only.
	AllowLoopback bool
	// AllowHosts are hosts ("name" or "name:port") that may be reached on any
	// address, private ones included: a local seller, named by the operator.
	AllowHosts []string
	// LookupHost resolves a hostname; nil uses the system resolver. Tests map names
	// to addresses with it. Whatever it returns is checked again at connection time.
	LookupHost func(ctx context.Context, host string) ([]netip.Addr, error)
	// RootCAs are the certificate authorities trusted; nil means the system's.
	RootCAs *x509.CertPool
	// UserAgent is sent with every probe.
	UserAgent string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Prober calls sellers' endpoints without paying and classifies the answers. It
// never sends a payment header, never follows a redirect to another host, refuses
// non-public addresses at connection time, and backs off from hosts that keep
// failing. It is safe for concurrent use.
type Prober struct {
	cfg    ProberConfig
	client *http.Client
	// direct sends exact requests (Send) and follows no redirect.
	direct *http.Client
	log    *slog.Logger

	mu    sync.Mutex
	hosts map[string]*hostState
}

type hostState struct {
	next     time.Time // the next request may start then
	failures int       // consecutive rounds in which every probe failed to connect
	until    time.Time // skipped until then
}

// errBlocked is returned by the dialer for a non-public address.
var errBlocked = errors.New("address is not public")

// NewProber returns a prober with cfg's settings.
func NewProber(cfg ProberConfig, log *slog.Logger) *Prober {
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 8
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
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
	p := &Prober{cfg: cfg, log: log, hosts: map[string]*hostState{}}

	dialer := &net.Dialer{
		Timeout: cfg.Timeout,
		// The address is checked once resolved, just before connecting, so a name
		// that resolves to a private address (or changes its answer between lookups)
		// is refused all the same.
		ControlContext: func(_ context.Context, _, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("%w: %s", errBlocked, address)
			}
			if !publicAddr(ap.Addr(), cfg.AllowLoopback) {
				return fmt.Errorf("%w: %s", errBlocked, ap.Addr())
			}
			return nil
		},
	}
	// A host the operator named is dialled without the address check.
	open := &net.Dialer{Timeout: cfg.Timeout}
	transport := &http.Transport{
		Proxy: nil, // probes go straight to the seller
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if p.allowed(addr) {
				return p.dial(ctx, open, network, addr)
			}
			return p.dial(ctx, dialer, network, addr)
		},
		TLSClientConfig:        &tls.Config{RootCAs: cfg.RootCAs, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:    cfg.Timeout,
		ResponseHeaderTimeout:  cfg.Timeout,
		MaxResponseHeaderBytes: 64 << 10,
		MaxIdleConnsPerHost:    2,
		IdleConnTimeout:        30 * time.Second,
		ForceAttemptHTTP2:      true,
	}
	p.client = &http.Client{
		Transport: transport,
		Timeout:   cfg.Timeout,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			// Only to the very origin probed: same scheme, host and port.
			if !sameOrigin(req.URL, via[0].URL) {
				return errRedirectElsewhere{req.URL.Host}
			}
			if len(via) >= 3 {
				return errTooManyRedirects
			}
			return nil
		},
	}
	p.direct = &http.Client{
		Transport: transport,
		Timeout:   cfg.Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
	return p
}

// allowed reports whether addr ("host:port") is a host the operator named.
func (p *Prober) allowed(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	for _, h := range p.cfg.AllowHosts {
		if strings.EqualFold(h, addr) || strings.EqualFold(h, host) {
			return true
		}
	}
	return false
}

// Refuses reports whether the prober would refuse every address of hostport
// ("host:port") and names the first: a host not named in AllowHosts whose addresses
// are none of them public. A name is resolved now, and checked again at each
// connection; one that does not resolve is not reported here.
func (p *Prober) Refuses(ctx context.Context, hostport string) (netip.Addr, bool) {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil || p.allowed(hostport) {
		return netip.Addr{}, false
	}
	var ips []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		ips = []netip.Addr{ip}
	} else if p.cfg.LookupHost != nil {
		ips, _ = p.cfg.LookupHost(ctx, host)
	} else {
		ips, _ = net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	}
	for _, ip := range ips {
		if publicAddr(ip, p.cfg.AllowLoopback) {
			return netip.Addr{}, false
		}
	}
	if len(ips) == 0 {
		return netip.Addr{}, false
	}
	return ips[0].Unmap(), true
}

// Send sends one exact request through the prober's guarded transport: public
// addresses only (and the hosts named in AllowHosts), no redirect followed, the
// prober's timeout. Payments go through it, so they reach no more than probes do.
func (p *Prober) Send(ctx context.Context, req *http.Request) (*http.Response, error) {
	if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
		return nil, errors.New("only http and https")
	}
	if req.Header.Get("User-Agent") == "" {
		req.Header.Set("User-Agent", "Waystation/1 (x402 payer)")
	}
	return p.direct.Do(req.WithContext(ctx))
}

var errTooManyRedirects = errors.New("too many redirects on the same host")

// sameOrigin reports whether a and b have one scheme, host and port (the scheme's
// default when none is written).
func sameOrigin(a, b *url.URL) bool {
	port := func(u *url.URL) string {
		if p := u.Port(); p != "" {
			return p
		}
		if strings.EqualFold(u.Scheme, "https") {
			return "443"
		}
		return "80"
	}
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Hostname(), b.Hostname()) && port(a) == port(b)
}

type errRedirectElsewhere struct{ host string }

func (e errRedirectElsewhere) Error() string { return "redirect to another origin " + e.host }

// dial resolves the host itself (so tests can map names) and connects to the
// addresses in turn; the dialer's control hook refuses non-public ones.
func (p *Prober) dial(ctx context.Context, d *net.Dialer, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	var ips []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		ips = []netip.Addr{ip}
	} else if p.cfg.LookupHost != nil {
		ips, err = p.cfg.LookupHost(ctx, host)
		if err != nil {
			return nil, &net.DNSError{Err: err.Error(), Name: host, IsNotFound: true}
		}
	} else {
		ips, err = net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		if err != nil {
			return nil, err
		}
	}
	if len(ips) == 0 {
		return nil, &net.DNSError{Err: "no addresses", Name: host, IsNotFound: true}
	}
	var first error
	for _, ip := range ips {
		c, err := d.DialContext(ctx, network, net.JoinHostPort(ip.Unmap().String(), port))
		if err == nil {
			return c, nil
		}
		if first == nil {
			first = err
		}
	}
	return nil, first
}

// publicAddr reports whether ip is a public unicast address: not private,
// loopback (unless allowed), link-local, multicast, unspecified, shared (CGNAT) or
// otherwise reserved.
func publicAddr(ip netip.Addr, allowLoopback bool) bool {
	ip = ip.Unmap()
	if ip.IsLoopback() {
		return allowLoopback
	}
	// IPv6 only from the global unicast block: the rest holds forms that embed or
	// reach other addresses (::127.0.0.1, ::ffff:0:127.0.0.1), site-local fec0::/10
	// and the discard prefix 100::/64.
	if ip.Is6() && !globalUnicast6.Contains(ip) {
		return false
	}
	if !ip.IsValid() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsInterfaceLocalMulticast() || ip.IsMulticast() || ip.IsUnspecified() {
		return false
	}
	for _, p := range reservedPrefixes {
		if p.Contains(ip) {
			return false
		}
	}
	return true
}

var reservedPrefixes = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"), // shared address space (CGNAT)
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("192.0.2.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("198.51.100.0/24"),
	netip.MustParsePrefix("203.0.113.0/24"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("64:ff9b::/96"), // NAT64 can reach private IPv4
	netip.MustParsePrefix("64:ff9b:1::/48"),
	netip.MustParsePrefix("2001:db8::/32"),
	netip.MustParsePrefix("2002::/16"), // 6to4 embeds any IPv4
	netip.MustParsePrefix("2001::/32"), // Teredo embeds any IPv4
	netip.MustParsePrefix("2001:10::/28"),
}

var globalUnicast6 = netip.MustParsePrefix("2000::/3")

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
	resp, err := p.client.Do(req)
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
	var redirect errRedirectElsewhere
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
	case errors.Is(err, errTooManyRedirects):
		return OutcomeHTTPError, detail
	case errors.Is(err, errBlocked):
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
