package web

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"testing"

	"github.com/waystation/waystation/internal/auth"
	"github.com/waystation/waystation/internal/clientip"
)

// setCookies finds the cookies an answer sets, by name.
func setCookies(t *testing.T, h http.Header) map[string]*http.Cookie {
	t.Helper()
	out := map[string]*http.Cookie{}
	for _, c := range (&http.Response{Header: h}).Cookies() {
		out[c.Name] = c
	}
	return out
}

// hostCookie checks a cookie a browser keeps only as its own host's: the __Host-
// prefix, Secure, Path=/ and no Domain.
func hostCookie(t *testing.T, c *http.Cookie) {
	t.Helper()
	if c == nil {
		t.Fatal("cookie not set")
	}
	if !strings.HasPrefix(c.Name, "__Host-") || !c.Secure || c.Path != "/" || c.Domain != "" || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode {
		t.Errorf("cookie %s: Secure %v Path %q Domain %q HttpOnly %v SameSite %v", c.Name, c.Secure, c.Path, c.Domain, c.HttpOnly, c.SameSite)
	}
}

// Out of development mode every cookie is __Host- and Secure whatever the request
// says of itself (X-Forwarded-Proto is the client's to forge), and a whole sign-in
// works with them.
func TestApprovalCookiesAreHostOnlyAndSecureUnlessExplicitlyLoopbackHTTP(t *testing.T) {
	e := newAppEnv(t, func(a *Approvals) { a.LoopbackHTTP = false })
	ada, adaKey := e.user("ada")
	scout, _ := e.agent(ada, "scout")
	r := e.raise(scout, provideMissing("r1"))

	plain := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	send := func(method, path string, form url.Values, cookies ...*http.Cookie) *http.Response {
		t.Helper()
		var req *http.Request
		if form != nil {
			req, _ = http.NewRequest(method, e.base+path, strings.NewReader(form.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		} else {
			req, _ = http.NewRequest(method, e.base+path, nil)
		}
		req.Header.Set("X-Forwarded-Proto", "http")
		for _, c := range cookies {
			req.AddCookie(&http.Cookie{Name: c.Name, Value: c.Value})
		}
		res, err := plain.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	readAll := func(res *http.Response) string {
		t.Helper()
		defer res.Body.Close()
		raw, err := io.ReadAll(res.Body)
		if err != nil {
			t.Fatal(err)
		}
		return string(raw)
	}

	res := send(http.MethodGet, requestURL(r.ID), nil)
	body := readAll(res)
	signIn := setCookies(t, res.Header)["__Host-waystation_signin"]
	hostCookie(t, signIn)
	if _, ok := setCookies(t, res.Header)["waystation_signin"]; ok {
		t.Error("an unprefixed cookie is set too")
	}
	res = send(http.MethodPost, "/app/sign-in", url.Values{"csrf": {csrfOf(t, page{body: body})}, "key": {adaKey}, "request": {r.ID}}, signIn)
	readAll(res)
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-in: %d", res.StatusCode)
	}
	session := setCookies(t, res.Header)["__Host-waystation_session"]
	hostCookie(t, session)
	res = send(http.MethodGet, requestURL(r.ID), nil, session)
	if body := readAll(res); res.StatusCode != http.StatusOK || !strings.Contains(body, "Buy a rain forecast") {
		t.Fatalf("signed-in page: %d", res.StatusCode)
	}
	// The unprefixed name signs nobody in.
	res = send(http.MethodGet, requestURL(r.ID), nil, &http.Cookie{Name: "waystation_session", Value: session.Value})
	if body := readAll(res); strings.Contains(body, "Buy a rain forecast") {
		t.Error("an unprefixed session cookie was accepted")
	}

	// With development mode on, a client that is not on loopback still gets
	// Secure cookies.
	dev := NewServer(slog.New(slog.DiscardHandler), fixed{testSnapshot(t)}, testViews, nil, WithApprovals(func() Approvals {
		a := storeApprovals(e.store)
		a.LoopbackHTTP = true
		return a
	}()))
	for addr, secure := range map[string]bool{"192.0.2.7:4000": true, "[2001:db8::1]:4000": true, "127.0.0.1:4000": false, "[::1]:4000": false} {
		req := httptest.NewRequest(http.MethodGet, requestURL(r.ID), nil)
		req.RemoteAddr = addr
		req.Header.Set("X-Forwarded-Proto", "http")
		w := httptest.NewRecorder()
		dev.ServeHTTP(w, req)
		cs := setCookies(t, w.Result().Header)
		if secure {
			hostCookie(t, cs["__Host-waystation_signin"])
		} else if c := cs["waystation_signin"]; c == nil || c.Secure || c.Path != "/" {
			t.Errorf("%s: plain-HTTP loopback cookie %+v", addr, c)
		}
	}
}

// A form posted from another site is refused before it is read, by Fetch Metadata
// or by Origin; the same site's forms pass on to their CSRF checks.
func TestApprovalFormsFromAnotherSiteAreRefused(t *testing.T) {
	e := newAppEnv(t, func(a *Approvals) { a.PublicURL = "https://waystation.example" })
	ada, adaKey := e.user("ada")
	scout, _ := e.agent(ada, "scout")
	r := e.raise(scout, provideMissing("r1"))
	b := e.browser()
	b.mustSignIn(adaKey, r.ID)
	form := b.get(requestURL(r.ID))
	approve := url.Values{"csrf": {csrfOf(t, form)}, "decision": {"approve"}, "value.email": {"ada@example.org"}, "value.card": {"4242424242424242"}}

	for _, hdr := range [][]string{
		{"Sec-Fetch-Site", "cross-site"},
		{"Sec-Fetch-Site", "same-site"},
		{"Origin", "https://evil.example"},
		{"Origin", "null"},
		{"Origin", "http://waystation.example"},
	} {
		for _, path := range []string{"/app/requests/" + r.ID + "/decision", "/app/sign-in", "/app/sign-out"} {
			p := b.do(http.MethodPost, path, approve, hdr...)
			if p.status != http.StatusForbidden || !strings.Contains(p.body, "sent from another site") || p.header.Get("Cache-Control") != "no-store" {
				t.Errorf("%s %v: %d %q", path, hdr, p.status, p.header.Get("Cache-Control"))
			}
		}
	}
	if got := e.status(ada, r.ID); got != "waiting_user" {
		t.Fatalf("a refused form moved the request to %s", got)
	}
	// The published origin is the site's own, even where a proxy rewrote Host.
	if p := b.do(http.MethodPost, "/app/requests/"+r.ID+"/decision", approve, "Origin", "https://waystation.example", "Sec-Fetch-Site", "same-origin"); p.status != http.StatusSeeOther {
		t.Fatalf("same-site decision: %d %.300s", p.status, p.body)
	}
	if got := e.status(ada, r.ID); got == "waiting_user" {
		t.Fatal("the same site's decision changed nothing")
	}
}

// Every answer under /app is no-store, errors and redirects included, and a 405
// names the methods the path takes.
func TestEveryAppAnswerIsNoStoreAndA405NamesTheRightMethods(t *testing.T) {
	e := newAppEnv(t)
	b := e.browser()
	for _, c := range []struct {
		method, path string
		status       int
		allow        string
	}{
		{http.MethodGet, "/app/nothing-here", http.StatusNotFound, ""},
		{http.MethodGet, "/app", http.StatusNotFound, ""},
		{http.MethodGet, "/app/requests/", http.StatusMovedPermanently, ""},
		{http.MethodGet, "/app/requests/not-a-uuid", http.StatusNotFound, ""},
		{http.MethodGet, "/app/requests/00000000-0000-0000-0000-000000000000/decision", http.StatusMethodNotAllowed, "POST"},
		{http.MethodPut, "/app/sign-in", http.StatusMethodNotAllowed, "GET, HEAD, POST"},
		{http.MethodPut, "/app/sign-out", http.StatusMethodNotAllowed, "POST"},
		{http.MethodPost, "/app/requests", http.StatusMethodNotAllowed, "GET, HEAD"},
		{http.MethodPost, "/app/sign-in", http.StatusForbidden, ""},
	} {
		p := b.do(c.method, c.path, nil)
		if p.status != c.status || p.header.Get("Cache-Control") != "no-store" || p.header.Get("X-Frame-Options") != "DENY" {
			t.Errorf("%s %s: %d, Cache-Control %q, X-Frame-Options %q", c.method, c.path, p.status, p.header.Get("Cache-Control"), p.header.Get("X-Frame-Options"))
		}
		if c.allow != "" && p.header.Get("Allow") != c.allow {
			t.Errorf("%s %s: Allow %q, want %q", c.method, c.path, p.header.Get("Allow"), c.allow)
		}
	}
	// The directory's pages stay public, and read-only.
	if p := b.do(http.MethodGet, "/nothing-here", nil); p.header.Get("Cache-Control") == "no-store" {
		t.Error("a directory 404 is no-store")
	}
	if p := b.do(http.MethodDelete, "/", nil); p.status != http.StatusMethodNotAllowed || p.header.Get("Allow") != "GET, HEAD" {
		t.Errorf("DELETE /: %d Allow %q", p.status, p.header.Get("Allow"))
	}
}

// Sign-in attempts are limited per address: past the burst the page answers 429 with
// Retry-After, and checks no key.
func TestSignInAttemptsAreRateLimited(t *testing.T) {
	e := newAppEnv(t)
	_, adaKey := e.user("ada")
	b := e.browser()
	page := b.get("/app/requests")
	form := url.Values{"csrf": {csrfOf(t, page)}, "key": {"sk_user_0123456789abcdef_" + strings.Repeat("A", 43)}}
	var last attempt
	for range SignInBurst + 1 {
		p := b.post("/app/sign-in", form)
		last = attempt{p.status, p.header.Get("Retry-After")}
	}
	if last.status != http.StatusTooManyRequests || last.retry == "" {
		t.Fatalf("attempt %d: %d, Retry-After %q", SignInBurst+1, last.status, last.retry)
	}
	// Even the right key waits.
	form.Set("key", adaKey)
	if p := b.post("/app/sign-in", form); p.status != http.StatusTooManyRequests {
		t.Errorf("the right key during the wait: %d", p.status)
	}
}

type attempt struct {
	status int
	retry  string
}

// Where the store counts sign-in attempts, two replicas share an address's budget:
// attempts split between them are refused past the burst on either, though neither
// saw as many itself.
func TestSignInAttemptsAreCountedForEveryReplica(t *testing.T) {
	var shared Approvals
	e := newAppEnv(t, func(a *Approvals) {
		withAuth(a, func(c *auth.Config) { c.SignInAttempts = a.Requests.Store.(auth.SignInAttempts) })
		shared = *a
	})
	second := httptest.NewServer(NewServer(slog.New(slog.DiscardHandler), fixed{testSnapshot(t)}, testViews, nil, WithApprovals(shared)))
	t.Cleanup(second.Close)
	e2 := *e
	e2.base = second.URL
	replicas := []*browser{e.browser(), e2.browser()}
	forms := make([]url.Values, 2)
	for i, b := range replicas {
		forms[i] = url.Values{"csrf": {csrfOf(t, b.get("/app/requests"))}, "key": {"sk_user_0123456789abcdef_" + strings.Repeat("A", 43)}}
	}
	for i := range SignInBurst {
		if p := replicas[i%2].post("/app/sign-in", forms[i%2]); p.status != http.StatusForbidden {
			t.Fatalf("attempt %d: %d", i+1, p.status)
		}
	}
	p := replicas[0].post("/app/sign-in", forms[0])
	if p.status != http.StatusTooManyRequests || p.header.Get("Retry-After") == "" {
		t.Fatalf("attempt %d, the first replica's %d: %d, Retry-After %q", SignInBurst+1, SignInBurst/2+1, p.status, p.header.Get("Retry-After"))
	}
}

// Behind a trusted proxy each client has its own sign-in budget, named by the
// proxy's X-Forwarded-For; from anyone else the header names no one, so a client
// cannot escape its budget by sending one.
func TestSignInAttemptsAreCountedPerClientBehindATrustedProxy(t *testing.T) {
	for _, trusted := range []bool{true, false} {
		e := newAppEnv(t, func(a *Approvals) {
			withAuth(a, func(c *auth.Config) { c.SignInAttempts = a.Requests.Store.(auth.SignInAttempts) })
			if trusted {
				a.TrustedProxies = clientip.Proxies{netip.MustParsePrefix("127.0.0.0/8")}
			}
		})
		b := e.browser()
		form := url.Values{"csrf": {csrfOf(t, b.get("/app/requests"))}, "key": {"sk_user_0123456789abcdef_" + strings.Repeat("A", 43)}}
		post := func(client string) int {
			return b.do(http.MethodPost, "/app/sign-in", form, "X-Forwarded-For", client).status
		}
		for range SignInBurst {
			post("203.0.113.1")
		}
		if got := post("203.0.113.1"); got != http.StatusTooManyRequests {
			t.Errorf("trusted %v: the first client past its burst: %d", trusted, got)
		}
		want := http.StatusForbidden // its own budget: the key is checked, and refused
		if !trusted {
			want = http.StatusTooManyRequests // the same peer, whatever it claims
		}
		if got := post("203.0.113.2"); got != want {
			t.Errorf("trusted %v: another client: %d, want %d", trusted, got, want)
		}
	}
}
