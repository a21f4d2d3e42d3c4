// Package outbound is the guarded HTTP client the service reaches other hosts with:
// sellers (probes, quotes, payments, manifests) and webhook receivers, whose
// addresses come from users and third parties. Whatever a request names, it reaches
// public addresses only, checked at connection time, unless the operator named its
// host; it is bounded in time and in the size of the headers it reads.
package outbound

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// Config tunes a Client. Zero values take the defaults.
type Config struct {
	// Timeout bounds one request, from dialing to the last byte read (default 10s).
	Timeout time.Duration
	// AllowLoopback lets requests reach loopback addresses: for tests only.
	AllowLoopback bool
	// AllowHosts are hosts ("name" or "name:port") that may be reached on any
	// address, private ones included: a local seller or receiver, named by the
	// operator.
	AllowHosts []string
	// LookupHost resolves a hostname; nil uses the system resolver. Tests map names
	// to addresses with it. Whatever it returns is checked again at connection time.
	LookupHost func(ctx context.Context, host string) ([]netip.Addr, error)
	// RootCAs are the certificate authorities trusted; nil means the system's.
	RootCAs *x509.CertPool
}

// MaxRedirects is how many redirects within the origin Follow follows.
const MaxRedirects = 3

// maxHeaderBytes bounds the headers of an answer read.
const maxHeaderBytes = 64 << 10

// Client sends requests to other hosts under the guard's rules. It never goes
// through a proxy, refuses non-public addresses at connection time (so a name that
// resolves to a private address, or changes its answer between lookups, is refused
// all the same), and follows no redirect to another origin. Bodies are the caller's
// to bound: each reads what its answers may hold. It is safe for concurrent use.
type Client struct {
	cfg Config
	// follow follows redirects within the origin (Follow); direct follows none (Send).
	follow, direct *http.Client
}

// Errors a request fails with, wrapped, when the guard refuses it.
var (
	// ErrBlocked is an address that is not public, refused before connecting.
	ErrBlocked = errors.New("address is not public")
	// ErrTooManyRedirects is a chain of more than MaxRedirects within the origin.
	ErrTooManyRedirects = errors.New("too many redirects on the same host")
	// errScheme is a URL that is neither http nor https.
	errScheme = errors.New("only http and https")
)

// RedirectError is a redirect to another origin, never followed.
type RedirectError struct{ Host string }

func (e *RedirectError) Error() string { return "redirect to another origin " + e.Host }

// New returns a client with cfg's settings.
func New(cfg Config) *Client {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	c := &Client{cfg: cfg}
	guarded := &net.Dialer{
		Timeout: cfg.Timeout,
		// The address is checked once resolved, just before connecting.
		ControlContext: func(_ context.Context, _, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("%w: %s", ErrBlocked, address)
			}
			if !publicAddr(ap.Addr(), cfg.AllowLoopback) {
				return fmt.Errorf("%w: %s", ErrBlocked, ap.Addr())
			}
			return nil
		},
	}
	// A host the operator named is dialled without the address check.
	open := &net.Dialer{Timeout: cfg.Timeout}
	transport := &http.Transport{
		Proxy: nil, // straight to the host named
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if c.allowed(addr) {
				return c.dial(ctx, open, network, addr)
			}
			return c.dial(ctx, guarded, network, addr)
		},
		TLSClientConfig:        &tls.Config{RootCAs: cfg.RootCAs, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:    cfg.Timeout,
		ResponseHeaderTimeout:  cfg.Timeout,
		MaxResponseHeaderBytes: maxHeaderBytes,
		MaxIdleConnsPerHost:    2,
		IdleConnTimeout:        30 * time.Second,
		ForceAttemptHTTP2:      true,
	}
	c.follow = &http.Client{
		Transport: transport,
		Timeout:   cfg.Timeout,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			// Only to the very origin asked: same scheme, host and port.
			if !sameOrigin(req.URL, via[0].URL) {
				return &RedirectError{req.URL.Host}
			}
			if len(via) >= MaxRedirects {
				return ErrTooManyRedirects
			}
			return nil
		},
	}
	c.direct = &http.Client{
		Transport: transport,
		Timeout:   cfg.Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
	return c
}

// Send sends one exact request: no redirect is followed (a 3xx is answered as it
// came), public addresses only (and the hosts named in AllowHosts), within the
// client's timeout. Payments, webhook deliveries and manifest fetches go through it.
func (c *Client) Send(ctx context.Context, req *http.Request) (*http.Response, error) {
	if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
		return nil, errScheme
	}
	return c.direct.Do(req.WithContext(ctx))
}

// Follow sends req and follows up to MaxRedirects redirects within its origin. A
// redirect to another origin fails with a *RedirectError, a longer chain with
// ErrTooManyRedirects; either way the redirect's response comes back beside the
// error, its body closed, so that its status can be told.
func (c *Client) Follow(ctx context.Context, req *http.Request) (*http.Response, error) {
	if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
		return nil, errScheme
	}
	return c.follow.Do(req.WithContext(ctx))
}

// allowed reports whether addr ("host:port") is a host the operator named.
func (c *Client) allowed(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	for _, h := range c.cfg.AllowHosts {
		if strings.EqualFold(h, addr) || strings.EqualFold(h, host) {
			return true
		}
	}
	return false
}

// Refuses reports whether the client would refuse every address of hostport
// ("host:port") and names the first: a host not named in AllowHosts whose addresses
// are none of them public. A name is resolved now, and checked again at each
// connection; one that does not resolve is not reported here.
func (c *Client) Refuses(ctx context.Context, hostport string) (netip.Addr, bool) {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil || c.allowed(hostport) {
		return netip.Addr{}, false
	}
	ips, _ := c.lookup(ctx, host)
	for _, ip := range ips {
		if publicAddr(ip, c.cfg.AllowLoopback) {
			return netip.Addr{}, false
		}
	}
	if len(ips) == 0 {
		return netip.Addr{}, false
	}
	return ips[0].Unmap(), true
}

// lookup is host's addresses: host itself when it is one.
func (c *Client) lookup(ctx context.Context, host string) ([]netip.Addr, error) {
	if ip, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{ip}, nil
	}
	if c.cfg.LookupHost != nil {
		ips, err := c.cfg.LookupHost(ctx, host)
		if err != nil {
			return nil, &net.DNSError{Err: err.Error(), Name: host, IsNotFound: true}
		}
		return ips, nil
	}
	return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
}

// dial resolves the host itself (so tests can map names) and connects to the
// addresses in turn; the guarded dialer's control hook refuses non-public ones.
func (c *Client) dial(ctx context.Context, d *net.Dialer, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	ips, err := c.lookup(ctx, host)
	if err != nil {
		return nil, err
	}
	if len(ips) == 0 {
		return nil, &net.DNSError{Err: "no addresses", Name: host, IsNotFound: true}
	}
	var first error
	for _, ip := range ips {
		conn, err := d.DialContext(ctx, network, net.JoinHostPort(ip.Unmap().String(), port))
		if err == nil {
			return conn, nil
		}
		if first == nil {
			first = err
		}
	}
	return nil, first
}

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
