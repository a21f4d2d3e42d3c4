package outbound_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waystation/waystation/internal/outbound"
)

// timeout is short enough to keep the suite quick and long enough for a request on
// loopback under the race detector on a busy machine.
const timeout = 2 * time.Second

// resolveTo answers addr for every name.
func resolveTo(addr string) func(context.Context, string) ([]netip.Addr, error) {
	return func(context.Context, string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr(addr)}, nil
	}
}

func portOf(addr string) string {
	_, port, _ := net.SplitHostPort(addr)
	return port
}

// counted serves h on loopback and counts the requests that reached it.
func counted(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if h != nil {
			h(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

// A public-looking name that resolves to a private, loopback, link-local or
// otherwise reserved address is refused at connection time, before anything is
// sent; so is the address written in the URL itself.
func TestSendRefusesEveryAddressThatIsNotPublic(t *testing.T) {
	srv, hits := counted(t, nil)
	port := portOf(srv.Listener.Addr().String())
	for _, addr := range []string{"127.0.0.1", "10.0.0.7", "172.16.0.1", "192.168.1.1", "169.254.169.254", "::1", "fd00::1", "fe80::1",
		"100.64.0.1", "0.0.0.0", "224.0.0.1", "198.18.0.1", "240.0.0.1",
		// IPv6 forms outside global unicast, or that embed an IPv4 address.
		"::127.0.0.1", "::ffff:127.0.0.1", "::ffff:0:127.0.0.1", "fec0::1", "100::1", "64:ff9b::a00:1", "2002:a00:1::1",
		"2001:0:4136:e378:8000:63bf:3fff:fdd2"} {
		c := outbound.New(outbound.Config{Timeout: timeout, LookupHost: resolveTo(addr)})
		for _, u := range []string{"http://api.seller.example:" + port + "/x", "http://" + net.JoinHostPort(addr, port) + "/x"} {
			req, _ := http.NewRequest(http.MethodGet, u, nil)
			resp, err := c.Send(context.Background(), req)
			if err == nil {
				resp.Body.Close()
			}
			if !errors.Is(err, outbound.ErrBlocked) {
				t.Errorf("%s (%s): %v, want the address refused", u, addr, err)
			}
		}
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("%d requests reached the loopback server", n)
	}
}

// Loopback is reached only when the client is told it may (the tests' exception);
// other private addresses stay refused even then.
func TestAllowLoopbackReachesLoopbackAlone(t *testing.T) {
	srv, hits := counted(t, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusPaymentRequired) })
	port := portOf(srv.Listener.Addr().String())
	c := outbound.New(outbound.Config{Timeout: timeout, AllowLoopback: true, LookupHost: resolveTo("127.0.0.1")})
	req, _ := http.NewRequest(http.MethodGet, "http://seller.example:"+port+"/x", nil)
	resp, err := c.Send(context.Background(), req)
	if err != nil || resp.StatusCode != http.StatusPaymentRequired {
		t.Fatalf("loopback with the exception: %v %v", resp, err)
	}
	resp.Body.Close()
	private := outbound.New(outbound.Config{Timeout: timeout, AllowLoopback: true, LookupHost: resolveTo("10.0.0.7")})
	req, _ = http.NewRequest(http.MethodGet, "http://seller.example:"+port+"/x", nil)
	if _, err := private.Send(context.Background(), req); !errors.Is(err, outbound.ErrBlocked) {
		t.Errorf("a private address with the loopback exception: %v", err)
	}
	if hits.Load() != 1 {
		t.Errorf("%d requests reached the server, want 1", hits.Load())
	}
}

// A name that resolves to a public address when asked ahead, then to loopback when
// the request is made (DNS rebinding), is refused: the address is checked as it is
// connected to, not as it was first answered.
func TestANameThatRebindsToLoopbackIsRefusedAtConnection(t *testing.T) {
	srv, hits := counted(t, nil)
	port := portOf(srv.Listener.Addr().String())
	var mu sync.Mutex
	lookups := 0
	c := outbound.New(outbound.Config{Timeout: timeout, LookupHost: func(context.Context, string) ([]netip.Addr, error) {
		mu.Lock()
		defer mu.Unlock()
		lookups++
		if lookups == 1 {
			return []netip.Addr{netip.MustParseAddr("93.184.215.14")}, nil
		}
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}})
	if _, refused := c.Refuses(context.Background(), "rebind.example:"+port); refused {
		t.Fatal("the first, public answer was refused")
	}
	req, _ := http.NewRequest(http.MethodGet, "http://rebind.example:"+port+"/x", nil)
	resp, err := c.Send(context.Background(), req)
	if err == nil {
		resp.Body.Close()
	}
	if !errors.Is(err, outbound.ErrBlocked) || hits.Load() != 0 {
		t.Fatalf("after rebinding to loopback: %v, %d requests reached the server", err, hits.Load())
	}
}

// TestSendReachesAPrivateAddressOnlyForAHostTheOperatorNamed: PAYMENT_ALLOW_HOSTS
// lets a named host (or host:port) through on loopback; any other name for the same
// address stays refused, and Send follows no redirect.
func TestSendReachesAPrivateAddressOnlyForAHostTheOperatorNamed(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/away" {
			http.Redirect(w, r, "http://elsewhere.example/", http.StatusFound)
			return
		}
		w.WriteHeader(http.StatusPaymentRequired)
	}))
	defer srv.Close()
	port := portOf(srv.Listener.Addr().String())
	lookup := resolveTo("127.0.0.1")
	for allow, want := range map[string]bool{"seller.local": true, "seller.local:" + port: true, "seller.local:1": false, "other.local": false, "": false} {
		c := outbound.New(outbound.Config{Timeout: timeout, LookupHost: lookup, AllowHosts: []string{allow}})
		req, _ := http.NewRequest(http.MethodGet, "http://seller.local:"+port+"/x", nil)
		resp, err := c.Send(context.Background(), req)
		if got := err == nil && resp.StatusCode == http.StatusPaymentRequired; got != want {
			t.Errorf("allow %q: reached %v, want %v (%v)", allow, got, want, err)
		}
		if resp != nil {
			resp.Body.Close()
		}
		if want {
			req, _ := http.NewRequest(http.MethodGet, "http://seller.local:"+port+"/away", nil)
			resp, err := c.Send(context.Background(), req)
			if err != nil || resp.StatusCode != http.StatusFound {
				t.Errorf("a redirect: %v %v", resp, err)
			} else {
				resp.Body.Close()
			}
		}
	}
}

// Follow follows redirects within the origin, up to MaxRedirects; a redirect to
// another origin is never followed, a private address (the cloud's metadata
// service, loopback on another port) included, even from a host the operator named;
// the redirect's status comes back beside the error.
func TestFollowStaysOnTheOriginAndNeverRedirectsToAPrivateAddress(t *testing.T) {
	other, otherHits := counted(t, nil)
	otherPort := portOf(other.Listener.Addr().String())
	srv, _ := counted(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/hop":
			http.Redirect(w, r, "/done", http.StatusFound)
		case "/done":
			w.WriteHeader(http.StatusPaymentRequired)
		case "/loop":
			http.Redirect(w, r, "/loop", http.StatusFound)
		case "/metadata":
			http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/", http.StatusFound)
		case "/loopback":
			http.Redirect(w, r, "http://127.0.0.1:"+otherPort+"/", http.StatusFound)
		case "/internal":
			http.Redirect(w, r, "http://internal.local:"+otherPort+"/", http.StatusFound)
		}
	})
	port := portOf(srv.Listener.Addr().String())
	c := outbound.New(outbound.Config{Timeout: timeout, LookupHost: resolveTo("127.0.0.1"), AllowHosts: []string{"seller.local"}})
	get := func(path string) (*http.Response, error) {
		req, _ := http.NewRequest(http.MethodGet, "http://seller.local:"+port+path, nil)
		resp, err := c.Follow(context.Background(), req)
		if err == nil {
			resp.Body.Close()
		}
		return resp, err
	}
	if resp, err := get("/hop"); err != nil || resp.StatusCode != http.StatusPaymentRequired {
		t.Errorf("a redirect within the origin: %v %v", resp, err)
	}
	if _, err := get("/loop"); !errors.Is(err, outbound.ErrTooManyRedirects) {
		t.Errorf("a redirect loop: %v", err)
	}
	for _, path := range []string{"/metadata", "/loopback", "/internal"} {
		resp, err := get(path)
		var re *outbound.RedirectError
		if !errors.As(err, &re) || resp == nil || resp.StatusCode != http.StatusFound {
			t.Errorf("%s: %v %v, want the redirect refused", path, resp, err)
		}
	}
	if otherHits.Load() != 0 {
		t.Errorf("%d requests followed a redirect to another origin", otherHits.Load())
	}
}

// A request is bounded in time, and the headers read are bounded in size; a URL that
// is neither http nor https is refused before anything is dialled.
func TestRequestsAreBoundedInTimeAndHeaders(t *testing.T) {
	srv, _ := counted(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/stall":
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
		case "/headers":
			w.Header().Set("X-Big", strings.Repeat("x", 100<<10))
		}
	})
	port := portOf(srv.Listener.Addr().String())
	c := outbound.New(outbound.Config{Timeout: 300 * time.Millisecond, AllowLoopback: true, LookupHost: resolveTo("127.0.0.1")})
	start := time.Now()
	req, _ := http.NewRequest(http.MethodGet, "http://seller.example:"+port+"/stall", nil)
	_, err := c.Send(context.Background(), req)
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() || time.Since(start) > 4*time.Second {
		t.Errorf("a stalled answer: %v after %s", err, time.Since(start))
	}
	req, _ = http.NewRequest(http.MethodGet, "http://seller.example:"+port+"/headers", nil)
	if resp, err := c.Send(context.Background(), req); err == nil {
		resp.Body.Close()
		t.Error("100 KiB of headers were read")
	}
	for _, u := range []string{"ftp://seller.example/x", "file:///etc/passwd"} {
		req, _ = http.NewRequest(http.MethodGet, u, nil)
		if _, err := c.Send(context.Background(), req); err == nil {
			t.Errorf("%s was sent", u)
		}
		if _, err := c.Follow(context.Background(), req); err == nil {
			t.Errorf("%s was followed", u)
		}
	}
}

// Refuses tells ahead of time what Send would refuse: a host whose addresses are all
// private, unless the operator named it; a name with one public address, or none, is
// not refused.
func TestRefusesNamesTheAddressAHostWouldBeRefusedOn(t *testing.T) {
	addrs := map[string][]netip.Addr{
		"local.example":  {netip.MustParseAddr("::1"), netip.MustParseAddr("127.0.0.1")},
		"office.example": {netip.MustParseAddr("10.1.2.3")},
		"mixed.example":  {netip.MustParseAddr("10.1.2.3"), netip.MustParseAddr("93.184.215.14")},
		"public.example": {netip.MustParseAddr("93.184.215.14")},
	}
	lookup := func(_ context.Context, host string) ([]netip.Addr, error) {
		if a, ok := addrs[host]; ok {
			return a, nil
		}
		return nil, errors.New("no such host")
	}
	c := outbound.New(outbound.Config{LookupHost: lookup, AllowHosts: []string{"office.example:8443"}})
	for hostport, want := range map[string]string{
		"local.example:80":      "::1",
		"office.example:80":     "10.1.2.3",
		"office.example:8443":   "",
		"mixed.example:443":     "",
		"public.example:443":    "",
		"nowhere.example:443":   "",
		"127.0.0.1:4022":        "127.0.0.1",
		"[::ffff:10.0.0.1]:443": "10.0.0.1",
		"not a host":            "",
	} {
		addr, refused := c.Refuses(context.Background(), hostport)
		if got := addr.String(); refused != (want != "") || (refused && got != want) {
			t.Errorf("%s: refused %v on %s, want %q", hostport, refused, got, want)
		}
	}
}
