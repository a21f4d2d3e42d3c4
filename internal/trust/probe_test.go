package trust_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waystation/waystation/generator"
	"github.com/waystation/waystation/internal/catalog"
	"github.com/waystation/waystation/internal/directory"
	"github.com/waystation/waystation/internal/outbound"
	"github.com/waystation/waystation/internal/postgres/pgtest"
	"github.com/waystation/waystation/internal/trust"
	"github.com/waystation/waystation/internal/x402"
)

const (
	usdcBase = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"
	payee    = "0x209693Bc6afc0C5328bA36FaF03C514EF312287C"
	v1Offer  = `{"x402Version":1,"error":"X-PAYMENT header is required","accepts":[{"scheme":"exact","network":"base",
		"maxAmountRequired":"1000","resource":"https://seller/x","description":"a thing","mimeType":"application/json","payTo":"` + payee + `",
		"maxTimeoutSeconds":60,"asset":"` + usdcBase + `","extra":{"name":"USD Coin","version":"2"}}]}`
	v2Offer = `{"x402Version":2,"resource":{"url":"https://seller/x"},"accepts":[{"scheme":"exact",
		"network":"eip155:8453","amount":"2500","asset":"` + usdcBase + `","payTo":"` + payee + `","maxTimeoutSeconds":60,
		"extra":{"name":"USD Coin","version":"2"}}]}`
	// uptoOffer names a ceiling, not a price (scheme_upto_evm.md).
	uptoOffer = `{"x402Version":2,"resource":{"url":"https://seller/x"},"accepts":[{"scheme":"upto",
		"network":"eip155:8453","amount":"5000000","asset":"` + usdcBase + `","payTo":"` + payee + `","maxTimeoutSeconds":300,
		"extra":{"name":"USD Coin","version":"2","facilitatorAddress":"0x1234567890abcdef1234567890abcdef12345678"}}]}`
	// probeTimeout is short enough to keep the suite quick and long enough for a TLS
	// handshake under the race detector on a busy machine.
	probeTimeout = time.Second
)

// usdcOnBase is a payer holding USDC on Base and nothing else.
var usdcOnBase = trust.PayerFunc(func(network, asset string) bool {
	return network == "eip155:8453" && strings.EqualFold(asset, usdcBase)
})

// seller is one fake seller: a handler, whether it speaks TLS, what the catalog
// lists, and what a probe must find.
type seller struct {
	host    string
	kind    string
	method  string
	tls     bool
	handler http.HandlerFunc
	// expected
	outcome string
	status  int
	scheme  string
	amount  string // the exact price; empty for an upto offer
	reason  string // why an invalid offer is refused
	verdict string
}

// headerOffer answers 402 with doc in the PAYMENT-REQUIRED header, as x402 v2 does.
func headerOffer(doc string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(x402.HeaderPaymentRequired, base64.StdEncoding.EncodeToString([]byte(doc)))
		pay402("{}")(w, r)
	}
}

func pay402(body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusPaymentRequired)
		fmt.Fprint(w, body)
	}
}

func sellers() []*seller {
	return []*seller{
		{host: "v1.seller.test", handler: pay402(v1Offer),
			outcome: trust.OutcomePaymentRequired, status: 402, scheme: "exact", amount: "1000", verdict: directory.VerdictProceed},
		{host: "v2.seller.test", handler: func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("X-Payment") != "" || r.Header.Get("Payment-Signature") != "" {
				http.Error(w, "a probe never pays", http.StatusBadRequest)
				return
			}
			w.Header().Set(x402.HeaderPaymentRequired, base64.StdEncoding.EncodeToString([]byte(v2Offer)))
			pay402("{}")(w, r)
		}, outcome: trust.OutcomePaymentRequired, status: 402, scheme: "exact", amount: "2500", verdict: directory.VerdictProceed},
		{host: "post.seller.test", method: "POST", handler: func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodPost {
				http.Error(w, "use POST", http.StatusMethodNotAllowed)
				return
			}
			pay402(v1Offer)(w, r)
		}, outcome: trust.OutcomePaymentRequired, status: 402, scheme: "exact", amount: "1000", verdict: directory.VerdictProceed},
		{host: "upto.seller.test", handler: headerOffer(uptoOffer),
			outcome: trust.OutcomePaymentRequired, status: 402, scheme: "upto", verdict: directory.VerdictProceed},
		{host: "garbage.seller.test", handler: pay402("<html>pay us somehow</html>"),
			outcome: trust.OutcomeInvalidOffer, status: 402, reason: x402.ReasonNoDocument, verdict: directory.VerdictAvoid},
		// Offers no x402 client could pay: never payment_required, whatever their asset.
		{host: "nodomain.seller.test", handler: headerOffer(strings.Replace(v2Offer, `"extra":{"name":"USD Coin","version":"2"}`, `"extra":{}`, 1)),
			outcome: trust.OutcomeInvalidOffer, status: 402, reason: x402.ReasonBadExtra, verdict: directory.VerdictAvoid},
		{host: "mixed.seller.test", handler: headerOffer(strings.Replace(v2Offer, `"network":"eip155:8453","amount"`, `"network":"base","amount"`, 1)),
			outcome: trust.OutcomeInvalidOffer, status: 402, reason: x402.ReasonMixedVersions, verdict: directory.VerdictAvoid},
		{host: "deferred.seller.test", handler: headerOffer(strings.Replace(v2Offer, `"scheme":"exact"`, `"scheme":"deferred"`, 1)),
			outcome: trust.OutcomeInvalidOffer, status: 402, reason: x402.ReasonUnknownScheme, verdict: directory.VerdictAvoid},
		{host: "v2body.seller.test", handler: pay402(v2Offer),
			outcome: trust.OutcomeInvalidOffer, status: 402, reason: x402.ReasonWrongTransport, verdict: directory.VerdictAvoid},
		{host: "free.seller.test", handler: func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, `{"ok":true}`) },
			outcome: trust.OutcomeNoPaymentRequired, status: 200, verdict: directory.VerdictAvoid},
		{host: "shop.seller.test", kind: "checkout", handler: func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "<html>shop</html>") },
			outcome: trust.OutcomeNoPaymentRequired, status: 200, verdict: directory.VerdictProceed},
		{host: "broken.seller.test", handler: func(w http.ResponseWriter, r *http.Request) { http.Error(w, "oops", 500) },
			outcome: trust.OutcomeHTTPError, status: 500, verdict: directory.VerdictAvoid},
		{host: "stall.seller.test", handler: func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
		}, outcome: trust.OutcomeTimeout, verdict: directory.VerdictAvoid},
		{host: "tls.seller.test", tls: true, handler: pay402(v1Offer),
			outcome: trust.OutcomeTLSError, verdict: directory.VerdictAvoid},
		{host: "redirect.seller.test", handler: func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "http://elsewhere.seller.test/"+r.URL.Path, http.StatusFound)
		}, outcome: trust.OutcomeRedirect, status: 302, verdict: directory.VerdictAvoid},
		{host: "huge.seller.test", handler: func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusPaymentRequired)
			chunk := []byte(strings.Repeat("x", 64<<10))
			for range 256 { // 16 MiB, far past the cap
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		}, outcome: trust.OutcomeInvalidOffer, status: 402, reason: x402.ReasonNoDocument, verdict: directory.VerdictAvoid},
	}
}

// testProber resolves the names in hosts (and nothing else) and reaches loopback.
func testProber(hosts map[string]netip.Addr) *trust.Prober {
	return trust.NewProber(trust.ProberConfig{
		Concurrency: 4,
		HostSpacing: -1,
		Client: outbound.New(outbound.Config{
			Timeout:       probeTimeout,
			AllowLoopback: true,
			LookupHost: func(_ context.Context, host string) ([]netip.Addr, error) {
				if a, ok := hosts[host]; ok {
					return []netip.Addr{a}, nil
				}
				return nil, errors.New("no such host")
			},
		}),
	}, nil)
}

// TestProberAgainstSellersInEveryOutcome runs real HTTP(S) servers on loopback as
// sellers, probes them through the store's targets, and checks the stored probes
// and the score and verdict the next snapshot gives each seller.
func TestProberAgainstSellersInEveryOutcome(t *testing.T) {
	ctx := context.Background()
	store := pgtest.New(t)
	loopback := netip.MustParseAddr("127.0.0.1")
	hosts := map[string]netip.Addr{"elsewhere.seller.test": loopback}
	byHost := map[string]*seller{}
	cat := catalog.Catalog{}
	all := sellers()
	// One more seller whose port nobody listens on.
	refused := &seller{host: "refused.seller.test", outcome: trust.OutcomeConnectionRefused, verdict: directory.VerdictAvoid}
	dead := &seller{host: "dead.seller.test", outcome: trust.OutcomeDNSError, verdict: directory.VerdictAvoid}
	for _, s := range append(all, refused, dead) {
		var endpoint string
		switch {
		case s == refused:
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			endpoint = "http://" + s.host + ":" + portOf(ln.Addr().String()) + "/x"
			ln.Close()
		case s == dead:
			endpoint = "http://" + s.host + "/x"
		default:
			srv := httptest.NewUnstartedServer(s.handler)
			srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused TLS handshake is expected
			if s.tls {
				srv.StartTLS()
			} else {
				srv.Start()
			}
			t.Cleanup(srv.CloseClientConnections)
			t.Cleanup(srv.Close)
			u, _ := url.Parse(srv.URL)
			endpoint = u.Scheme + "://" + s.host + ":" + u.Port() + "/x"
		}
		if s != dead {
			hosts[s.host] = loopback
		}
		kind := s.kind
		if kind == "" {
			kind = "x402"
		}
		method := s.method
		if method == "" {
			method = "GET"
		}
		slug := strings.ReplaceAll(strings.TrimSuffix(s.host, ".test"), ".", "-")
		cat.Providers = append(cat.Providers, catalog.Provider{Name: s.host, Methods: []catalog.Method{{
			Slug: slug, Name: s.host, Category: "data", Kind: kind,
			Endpoint: catalog.Endpoint{Method: method, URL: endpoint},
		}}})
		byHost[s.host] = s
	}
	now := time.Now()
	if _, err := store.LoadCatalog(ctx, cat, now); err != nil {
		t.Fatal(err)
	}
	targets, err := store.ProbeTargets(ctx, time.Now())
	if err != nil || len(targets) != len(byHost) {
		t.Fatalf("%d targets, %v", len(targets), err)
	}

	start := time.Now()
	stats, err := testProber(hosts).Round(ctx, targets, func(r trust.Result) error { return store.RecordProbe(ctx, r) })
	if err != nil {
		t.Fatal(err)
	}
	if stats.Probed != len(targets) {
		t.Fatalf("probed %d of %d: %+v", stats.Probed, len(targets), stats)
	}
	// No timing check here: the stalled seller answers after 5 s, so only a working
	// timeout gives it the timeout outcome checked below.

	// Every probe is stored with what was seen and advertised.
	rows, err := store.Pool().Query(ctx, `
		SELECT hostname, outcome, coalesce(http_status, 0), latency_ms IS NOT NULL, scheme, network, asset, pay_to,
			coalesce(amount, ''), coalesce(x402_version, 0), reason, detail
		FROM probes`)
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for rows.Next() {
		var host, outcome, scheme, network, asset, payTo, amount, reason, detail string
		var status, version int
		var hasLatency bool
		if err := rows.Scan(&host, &outcome, &status, &hasLatency, &scheme, &network, &asset, &payTo, &amount, &version, &reason, &detail); err != nil {
			t.Fatal(err)
		}
		seen++
		s := byHost[host]
		if outcome != s.outcome || status != s.status || reason != s.reason {
			t.Errorf("%s: outcome %s (HTTP %d, reason %q: %s), want %s (HTTP %d, reason %q)", host, outcome, status, reason, detail, s.outcome, s.status, s.reason)
		}
		if s.outcome == trust.OutcomePaymentRequired {
			if scheme != s.scheme || network != "eip155:8453" || asset != usdcBase || payTo != payee || amount != s.amount || version == 0 {
				t.Errorf("%s: stored offer %s %s %s %s %s v%d", host, scheme, network, asset, payTo, amount, version)
			}
		} else if network != "" || amount != "" || scheme != "" {
			t.Errorf("%s: an offer stored for outcome %s", host, outcome)
		}
		if s.reason != "" && !strings.HasPrefix(detail, "x402 offer: "+s.reason) {
			t.Errorf("%s: detail %q does not name the reason", host, detail)
		}
		if !hasLatency && s.outcome != trust.OutcomeDNSError {
			t.Errorf("%s: no latency stored", host)
		}
	}
	if rows.Err() != nil || seen != len(byHost) {
		t.Fatalf("%d probes stored, want %d (%v)", seen, len(byHost), rows.Err())
	}

	// The snapshot built next carries the scores and verdicts.
	snap, err := generator.Build(ctx, store, time.Now(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range snap.Methods() {
		s := byHost[m.Hostname]
		tr := m.Trust
		if tr.Verdict != s.verdict || tr.Score == nil || tr.Probe == nil || tr.Probe.Outcome != s.outcome {
			t.Errorf("%s: verdict %s, score %v, probe %+v; want %s", m.Hostname, tr.Verdict, tr.Score, tr.Probe, s.verdict)
			continue
		}
		if s.verdict == directory.VerdictProceed && *tr.Score < trust.ProceedFrom {
			t.Errorf("%s: score %d", m.Hostname, *tr.Score)
		}
		// The trust block names why an offer was refused, and shows a price only for
		// an exact offer.
		if got := deref(tr.Probe.Reason); got != s.reason {
			t.Errorf("%s: trust block reason %q, want %q", m.Hostname, got, s.reason)
		}
		if s.outcome == trust.OutcomePaymentRequired {
			if *tr.Probe.Network != "eip155:8453" || *tr.Probe.AssetSymbol != "USDC" || (tr.Probe.Price == nil) != (s.amount == "") ||
				(s.amount != "" && *tr.Probe.Price.Amount != s.amount) {
				t.Errorf("%s: probe %+v", m.Hostname, tr.Probe)
			}
		} else if tr.Probe.Network != nil || tr.Probe.Price != nil {
			t.Errorf("%s: offer facts for outcome %s: %+v", m.Hostname, s.outcome, tr.Probe)
		}
		if m.Payable {
			t.Errorf("%s: payable with no payer configured", m.Hostname)
		}
	}

	// With a payer for USDC on Base, exactly the valid exact offers are payable: not
	// the ceiling, not the offers no client could pay.
	paying, err := generator.Build(ctx, store, time.Now(), usdcOnBase)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range paying.Methods() {
		s := byHost[m.Hostname]
		if want := s.outcome == trust.OutcomePaymentRequired && s.scheme == "exact"; m.Payable != want {
			t.Errorf("%s: payable %v with a payer for USDC on Base, want %v", m.Hostname, m.Payable, want)
		}
	}

	// A merchant's probe history names the reason too.
	res, ok := snap.Merchant("nodomain.seller.test")
	if !ok || !strings.Contains(string(res.Body), `"outcome":"invalid_offer"`) || !strings.Contains(string(res.Body), `"reason":"bad_extra"`) {
		t.Errorf("merchant record %s", res.Body)
	}

	// Probed just now, nothing is due again.
	if again, _ := store.ProbeTargets(ctx, start); len(again) != 0 {
		t.Errorf("%d targets due right after a round", len(again))
	}
}

// TestProberRefusesPrivateAddresses checks that a public-looking hostname that
// resolves to a private, loopback or link-local address is refused at connection
// time, before anything is sent.
func TestProberRefusesPrivateAddresses(t *testing.T) {
	hit := make(chan struct{}, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hit <- struct{}{} }))
	defer srv.Close()
	port := portOf(srv.Listener.Addr().String())
	for _, addr := range []string{"127.0.0.1", "10.0.0.7", "192.168.1.1", "169.254.169.254", "::1", "fd00::1", "100.64.0.1", "0.0.0.0",
		// IPv6 forms outside global unicast, or that embed an IPv4 address.
		"::127.0.0.1", "::ffff:0:127.0.0.1", "fec0::1", "100::1", "2001:0:4136:e378:8000:63bf:3fff:fdd2"} {
		p := trust.NewProber(trust.ProberConfig{
			HostSpacing: -1,
			Client: outbound.New(outbound.Config{
				Timeout: probeTimeout,
				LookupHost: func(context.Context, string) ([]netip.Addr, error) {
					return []netip.Addr{netip.MustParseAddr(addr)}, nil
				},
			}),
		}, nil)
		r := p.Probe(context.Background(), trust.Target{Hostname: "api.seller.example", Kind: "x402",
			URL: "http://api.seller.example:" + port + "/x"})
		if r.Outcome != trust.OutcomeBlockedAddress {
			t.Errorf("%s: outcome %s (%s)", addr, r.Outcome, r.Detail)
		}
		// A literal address in the URL is refused just the same.
		r = p.Probe(context.Background(), trust.Target{Hostname: addr, URL: "http://" + net.JoinHostPort(addr, port) + "/x"})
		if r.Outcome != trust.OutcomeBlockedAddress {
			t.Errorf("literal %s: outcome %s (%s)", addr, r.Outcome, r.Detail)
		}
	}
	select {
	case <-hit:
		t.Fatal("a request reached the loopback seller")
	default:
	}
}

// TestProberBacksOffFromUnreachableHosts checks that a host whose every probe
// failed to connect is skipped in the next round, and that two failures in a row
// leave the rest of its methods for later.
func TestProberBacksOffFromUnreachableHosts(t *testing.T) {
	clock := time.Now()
	p := trust.NewProber(trust.ProberConfig{
		HostSpacing: -1, BackoffBase: time.Hour,
		Client: outbound.New(outbound.Config{Timeout: probeTimeout,
			LookupHost: func(context.Context, string) ([]netip.Addr, error) { return nil, errors.New("no such host") }}),
		Now: func() time.Time { return clock },
	}, nil)
	var targets []trust.Target
	for i := range 5 {
		targets = append(targets, trust.Target{MethodID: int64(i), Hostname: "gone.seller.example", URL: fmt.Sprintf("http://gone.seller.example/%d", i)})
	}
	var got []trust.Result
	record := func(r trust.Result) error { got = append(got, r); return nil }
	st, err := p.Round(context.Background(), targets, record)
	if err != nil || st.Probed != 2 || st.Skipped != 3 || got[0].Outcome != trust.OutcomeDNSError {
		t.Fatalf("first round: %+v %v", st, err)
	}
	st, _ = p.Round(context.Background(), targets, record)
	if st.Probed != 0 || st.Skipped != 5 {
		t.Fatalf("round in backoff: %+v", st)
	}
	clock = clock.Add(61 * time.Minute)
	st, _ = p.Round(context.Background(), targets, record)
	if st.Probed != 2 {
		t.Fatalf("round after backoff: %+v", st)
	}
}

func TestProbeable(t *testing.T) {
	for h, want := range map[string]bool{
		"api.onesource.io": true, "api.tidewatch.example": false, "seller.test": false,
		"localhost": false, "x.invalid": false, "127.0.0.1": false, "example.com": true,
	} {
		if trust.Probeable(h) != want {
			t.Errorf("Probeable(%q) = %v", h, !want)
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func portOf(addr string) string {
	_, port, _ := net.SplitHostPort(addr)
	return port
}

// TestDemoIsPayableOnlyWithAPayer checks that no demo method is payable while no
// payer is configured, and that a payer for USDC on Base makes payable exactly the
// x402 methods whose newest answer was a valid exact offer in USDC on Base.
func TestDemoIsPayableOnlyWithAPayer(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	store, cat := pgtest.LoadDemo(t, now)
	snap, err := generator.Build(ctx, store, now, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range snap.Methods() {
		if m.Payable {
			t.Errorf("%s: payable with no payer", m.Slug)
		}
	}
	if snap, err = generator.Build(ctx, store, now, usdcOnBase); err != nil {
		t.Fatal(err)
	}
	// The newest probe of each method that got an answer about payment.
	newest := map[string]catalog.Probe{}
	for _, mc := range cat.Merchants {
		for _, p := range mc.Probes {
			switch p.Outcome {
			case trust.OutcomePaymentRequired, trust.OutcomeInvalidOffer, trust.OutcomeNoPaymentRequired:
				if q, ok := newest[p.Slug]; !ok || p.Age < q.Age {
					newest[p.Slug] = p
				}
			}
		}
	}
	payable := 0
	for _, m := range snap.Methods() {
		p := newest[m.Slug]
		want := m.Kind == "x402" && p.Outcome == trust.OutcomePaymentRequired && p.Scheme == "exact" &&
			x402.NormalizeNetwork(p.Network) == "eip155:8453" && strings.EqualFold(p.Asset, usdcBase)
		if m.Payable != want {
			t.Errorf("%s: payable %v, want %v (newest answer %+v)", m.Slug, m.Payable, want, p)
		}
		if m.Payable {
			payable++
		}
	}
	if payable == 0 {
		t.Error("a payer for USDC on Base pays no demo method")
	}
}

// TestDemoVerdictsComeFromProbeRecords checks that the demo catalog's verdicts are
// the scorer's reading of its probe rows: without them, every seller is unknown
// but the one an operator override decides.
func TestDemoVerdictsComeFromProbeRecords(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	store, _ := pgtest.LoadDemo(t, now)
	verdicts := func() map[string]int {
		snap, err := generator.Build(ctx, store, now, nil)
		if err != nil {
			t.Fatal(err)
		}
		n := map[string]int{}
		for _, m := range snap.Methods() {
			if m.Trust.Override == nil {
				n[m.Trust.Verdict]++
			}
		}
		return n
	}
	with := verdicts()
	for _, v := range []string{directory.VerdictProceed, directory.VerdictCaution, directory.VerdictAvoid, directory.VerdictUnknown} {
		if with[v] == 0 {
			t.Errorf("the demo shows no %s verdict from its probes: %v", v, with)
		}
	}
	if _, err := store.Pool().Exec(ctx, `DELETE FROM probes`); err != nil {
		t.Fatal(err)
	}
	without := verdicts()
	if len(without) != 1 || without[directory.VerdictUnknown] == 0 {
		t.Fatalf("verdicts without probe rows: %v", without)
	}
}

// TestProberSendsNoDestructiveMethodAndStaysOnItsOrigin: a listed DELETE, PUT or PATCH
// is never sent (GET alone is), a listed POST is; a redirect to another port of the
// same host is not followed.
func TestProberSendsNoDestructiveMethodAndStaysOnItsOrigin(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, "other "+r.Method)
		mu.Unlock()
	}))
	defer other.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.Path)
		mu.Unlock()
		if r.URL.Path == "/moved" {
			http.Redirect(w, r, "http://api.seller.test:"+portOf(other.Listener.Addr().String())+"/x", http.StatusFound)
			return
		}
		w.WriteHeader(http.StatusMethodNotAllowed)
	}))
	defer srv.Close()
	p := testProber(map[string]netip.Addr{"api.seller.test": netip.MustParseAddr("127.0.0.1")})
	base := "http://api.seller.test:" + portOf(srv.Listener.Addr().String())
	for _, c := range []struct{ method, want string }{
		{"DELETE", "GET /x"}, {"PUT", "GET /x"}, {"PATCH", "GET /x"}, {"PROPFIND", "GET /x"},
		{"POST", "GET /x,POST /x"}, {"head", "GET /x,HEAD /x"},
	} {
		mu.Lock()
		seen = nil
		mu.Unlock()
		p.Probe(context.Background(), trust.Target{Hostname: "api.seller.test", URL: base + "/x", Method: c.method})
		mu.Lock()
		got := strings.Join(seen, ",")
		mu.Unlock()
		if got != c.want {
			t.Errorf("listed %s: sent %q, want %q", c.method, got, c.want)
		}
	}
	mu.Lock()
	seen = nil
	mu.Unlock()
	r := p.Probe(context.Background(), trust.Target{Hostname: "api.seller.test", URL: base + "/moved"})
	mu.Lock()
	defer mu.Unlock()
	if r.Outcome != trust.OutcomeRedirect || strings.Contains(strings.Join(seen, ","), "other") {
		t.Fatalf("redirect to another port: outcome %s, requests %v", r.Outcome, seen)
	}
}

// A failed lookup is told by the name and the failure, never by the address of the
// resolver the service asked, which is the service's network and no seller's.
func TestADNSFailureNamesNoResolver(t *testing.T) {
	err := &url.Error{Op: "Get", URL: "https://gone.example/.well-known/x402.json", Err: &net.OpError{Op: "dial", Net: "tcp",
		Err: &net.DNSError{Err: "no such host", Name: "gone.example", Server: "127.0.0.53:53", IsNotFound: true}}}
	outcome, detail := trust.Classify(err)
	if outcome != trust.OutcomeDNSError || strings.Contains(detail, "127.0.0.53") || !strings.Contains(detail, "gone.example: no such host") {
		t.Errorf("%s: %q", outcome, detail)
	}
}
