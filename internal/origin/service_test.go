package origin_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waystation/waystation/internal/catalog"
	"github.com/waystation/waystation/internal/origin"
	"github.com/waystation/waystation/internal/outbound"
	"github.com/waystation/waystation/internal/problem"
	"github.com/waystation/waystation/internal/seller"
	"github.com/waystation/waystation/internal/trust"
)

// fakeStore keeps the listings it is given.
type fakeStore struct {
	mu       sync.Mutex
	listings []origin.Listing
	origins  map[string]origin.Origin
	failing  []string
}

func (f *fakeStore) ListOrigin(_ context.Context, l origin.Listing) (map[string]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.listings = append(f.listings, l)
	if f.origins == nil {
		f.origins = map[string]origin.Origin{}
	}
	o := l.Origin
	o.ID, o.LastFetched, o.CheckedAt, o.ListedAt = 1, l.At, l.At, l.At
	f.origins[o.Origin] = o
	slugs := map[string]string{}
	for _, p := range l.Catalog.Providers {
		for _, m := range p.Methods {
			slugs[m.SourceKey] = m.Slug
		}
	}
	return slugs, nil
}

func (f *fakeStore) TryRefreshLock(context.Context) (func(), bool, error) {
	return func() {}, true, nil
}

func (f *fakeStore) Origin(_ context.Context, o string) (origin.Origin, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r, ok := f.origins[o]; ok {
		return r, nil
	}
	return origin.Origin{}, origin.ErrNotFound
}

func (f *fakeStore) Origins(context.Context) ([]origin.Origin, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []origin.Origin
	for _, o := range f.origins {
		if o.Status != origin.StatusDelisted {
			out = append(out, o)
		}
	}
	return out, nil
}

func (f *fakeStore) OriginUnchanged(_ context.Context, _ int64, at time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failing = append(f.failing, "unchanged")
	return nil
}

func (f *fakeStore) OriginFailing(_ context.Context, _ int64, status, reason string, _ time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failing = append(f.failing, status+" "+reason)
	for k, o := range f.origins {
		o.Status, o.Reason = status, reason
		f.origins[k] = o
	}
	return nil
}

// reach is a guarded client (the service's Sender) and a prober over it, as the
// server wires them.
type reach struct {
	*outbound.Client
	*trust.Prober
}

func newReach(c outbound.Config) reach {
	client := outbound.New(c)
	return reach{client, trust.NewProber(trust.ProberConfig{Client: client}, nil)}
}

// localSeller serves the local seller, signed by payeeKey, as http://localhost:port;
// the client reaches it on loopback.
func localSeller(t *testing.T, h http.Handler) (string, reach) {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	p := newReach(outbound.Config{AllowLoopback: true, Timeout: 5 * time.Second,
		LookupHost: func(context.Context, string) ([]netip.Addr, error) {
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
		}})
	return "http://localhost:" + port, p
}

// TestSubmitListsTheSellersOwnItemsOwnerVerified submits the local seller: both its
// routes are listed with source origin, owner-verified, since its manifest carries
// its payee's signature and its live 402s name that payee.
func TestSubmitListsTheSellersOwnItemsOwnerVerified(t *testing.T) {
	o, prober := localSeller(t, seller.New(seller.Config{PayeeKey: payeeKey}))
	store := &fakeStore{}
	svc := origin.NewService(store, prober, prober, origin.Config{})
	sub, err := svc.Submit(context.Background(), "user-1", strings.ToUpper(o)+"/anything")
	if err != nil {
		t.Fatal(err)
	}
	if sub.Origin != o || sub.Status != origin.StatusListed || sub.Listed != 2 || sub.Refused != 0 || sub.Owner != payee {
		t.Fatalf("submission %+v", sub)
	}
	for _, it := range sub.Items {
		if it.Status != origin.ItemListed || !it.OwnerVerified || it.Slug == "" {
			t.Errorf("item %+v", it)
		}
	}
	l := store.listings[0]
	if l.Origin.SubmittedBy != "user-1" || l.Origin.ETag == "" || len(l.Probes) != 2 || len(l.Verified) != 2 {
		t.Fatalf("listing %+v", l)
	}
	for _, p := range l.Catalog.Providers {
		for _, m := range p.Methods {
			if m.Source != catalog.SourceOrigin || m.Kind != catalog.KindX402 || m.Listing == nil || m.Guidance == nil {
				t.Errorf("method %+v", m)
			}
		}
	}
}

// TestSubmitWithoutSignatureListsButDoesNotVerify: no proof, no owner fact; a live
// 402 naming another payee than the signer's, no owner fact either.
func TestSubmitWithoutSignatureListsButDoesNotVerify(t *testing.T) {
	o, prober := localSeller(t, seller.New(seller.Config{PayTo: payee}))
	sub, err := origin.NewService(&fakeStore{}, prober, prober, origin.Config{}).Submit(context.Background(), "u", o)
	if err != nil || sub.Listed != 2 || sub.Owner != "" {
		t.Fatalf("%+v, %v", sub, err)
	}
	for _, it := range sub.Items {
		if it.OwnerVerified {
			t.Errorf("verified without a proof: %+v", it)
		}
	}

	s := seller.New(seller.Config{PayeeKey: payeeKey})
	// The manifest is signed, but the live 402s now name another payee.
	mux := http.NewServeMux()
	mux.Handle("/.well-known/", s)
	other := seller.New(seller.Config{PayTo: "0x000000000000000000000000000000000000bEEF"})
	mux.Handle("/", other)
	o, prober = localSeller(t, mux)
	sub, err = origin.NewService(&fakeStore{}, prober, prober, origin.Config{}).Submit(context.Background(), "u", o)
	if err != nil || sub.Listed != 2 || sub.Owner != "" || sub.Items[0].OwnerVerified {
		t.Fatalf("a live payee other than the signer's: %+v, %v", sub, err)
	}
}

// TestSubmitRefusesWhatItCannotFetchFromTheOriginItself: redirects to another
// origin (a private address most of all), missing manifests, a private address
// without the operator's leave, and live endpoints that do not ask for payment.
func TestSubmitRefusesWhatItCannotFetchFromTheOriginItself(t *testing.T) {
	ctx := context.Background()
	redirect := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://169.254.169.254/latest/meta-data", http.StatusFound)
	})
	o, prober := localSeller(t, redirect)
	store := &fakeStore{}
	_, err := origin.NewService(store, prober, prober, origin.Config{}).Submit(ctx, "u", o)
	if p, ok := problem.As(err); !ok || p.Code != problem.ManifestRefused || !strings.HasPrefix(p.Detail, origin.ReasonRedirect+":") {
		t.Fatalf("redirect: %v", err)
	}

	o, prober = localSeller(t, http.NotFoundHandler())
	_, err = origin.NewService(store, prober, prober, origin.Config{}).Submit(ctx, "u", o)
	if p, ok := problem.As(err); !ok || !strings.HasPrefix(p.Detail, origin.ReasonHTTPStatus+":") {
		t.Fatalf("404: %v", err)
	}

	// Without AllowLoopback the seller's loopback address is refused.
	o, _ = localSeller(t, seller.New(seller.Config{}))
	strict := newReach(outbound.Config{LookupHost: func(context.Context, string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}})
	_, err = origin.NewService(store, strict, strict, origin.Config{}).Submit(ctx, "u", o)
	if p, ok := problem.As(err); !ok || !strings.HasPrefix(p.Detail, origin.ReasonBlockedAddress+":") {
		t.Fatalf("private address: %v", err)
	}

	// A manifest whose endpoints answer 200: nothing listed, each item says why.
	free := http.NewServeMux()
	s := seller.New(seller.Config{PayeeKey: payeeKey})
	free.Handle("/.well-known/", s)
	free.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("{}")) })
	o, prober = localSeller(t, free)
	sub, err := origin.NewService(store, prober, prober, origin.Config{}).Submit(ctx, "u", o)
	if err != nil || sub.Status != "refused" || sub.Reason != origin.ReasonNothingListed || sub.Listed != 0 || sub.Refused != 2 {
		t.Fatalf("free endpoints: %+v, %v", sub, err)
	}
	for _, it := range sub.Items {
		if it.Reason != origin.ItemProbeFailed || !strings.Contains(it.Detail, trust.OutcomeNoPaymentRequired) {
			t.Errorf("item %+v", it)
		}
	}
	if len(store.listings) != 0 {
		t.Fatalf("listed from refused manifests: %+v", store.listings)
	}

	if _, err := origin.NewService(store, prober, prober, origin.Config{}).Submit(ctx, "u", "not an origin"); problem.CodeOf(err) != problem.ValidationFailed {
		t.Fatalf("a bad origin: %v", err)
	}
}

// TestRefreshAsksIfNoneMatchAndMarksStaleThenDelisted re-fetches a listed origin:
// unchanged, it is a 304; gone, it is stale after StaleAfter and delisted after
// DelistAfter.
func TestRefreshAsksIfNoneMatchAndMarksStaleThenDelisted(t *testing.T) {
	var mu sync.Mutex
	var conditional int
	up := true
	s := seller.New(seller.Config{PayeeKey: payeeKey})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if !up {
			http.Error(w, "gone", http.StatusServiceUnavailable)
			return
		}
		if r.Header.Get("If-None-Match") != "" {
			conditional++
		}
		s.ServeHTTP(w, r)
	})
	o, prober := localSeller(t, h)
	now := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	store := &fakeStore{}
	svc := origin.NewService(store, prober, prober, origin.Config{StaleAfter: time.Hour, DelistAfter: 3 * time.Hour,
		Now: func() time.Time { return now }})
	if _, err := svc.Submit(context.Background(), "u", o); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	if conditional != 1 || len(store.failing) != 1 || store.failing[0] != "unchanged" {
		t.Fatalf("conditional fetches %d, recorded %v", conditional, store.failing)
	}
	mu.Lock()
	up = false
	mu.Unlock()
	for _, step := range []struct {
		after time.Duration
		want  string
	}{{30 * time.Minute, origin.StatusListed}, {2 * time.Hour, origin.StatusStale}, {4 * time.Hour, origin.StatusDelisted}} {
		now = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC).Add(step.after)
		if _, err := svc.Refresh(context.Background()); err != nil {
			t.Fatal(err)
		}
		got := store.failing[len(store.failing)-1]
		if !strings.HasPrefix(got, step.want+" "+origin.ReasonHTTPStatus) {
			t.Fatalf("after %s: %q; want %s", step.after, got, step.want)
		}
	}
	if n, _ := svc.Refresh(context.Background()); n != 0 {
		t.Fatalf("a delisted origin refreshed again")
	}
	if got, err := svc.Origin(context.Background(), o+"/"); err != nil || got.Status != origin.StatusDelisted {
		t.Fatalf("origin lookup: %+v, %v", got, err)
	}
	if _, err := svc.Origin(context.Background(), "https://nowhere.example"); !errors.Is(err, origin.ErrNotFound) {
		t.Fatalf("an origin never listed: %v", err)
	}
}
