package generator

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/waystation/waystation/internal/catalog"
	"github.com/waystation/waystation/internal/directory"
	"github.com/waystation/waystation/internal/origin"
	"github.com/waystation/waystation/internal/postgres/pgtest"
	"github.com/waystation/waystation/internal/trust"
	"github.com/waystation/waystation/internal/x402"
)

// TestAnOriginOnAnotherPortNeitherDelistsNorSpeaksForItsNeighbours is the listing
// integrity attack: sellers mirrored from a listing at http://localhost:8282, and an
// origin submitted at http://localhost:8286, another port of the same hostname. The
// origin's own items are listed, but its word covers the origin it proved alone: the
// neighbours at :8282 stay listed and probed, and the merchant record does not show
// the origin (nor its payee) as the hostname's owner record. Once the neighbours'
// own origin lists itself, its mirrored copies give way as before.
func TestAnOriginOnAnotherPortNeitherDelistsNorSpeaksForItsNeighbours(t *testing.T) {
	ctx := context.Background()
	store := pgtest.New(t)
	now := time.Now().UTC().Truncate(time.Second)
	method := func(url, source string) catalog.Method {
		return catalog.Method{Name: "Thing " + url, Description: "A thing.", Category: "data", Kind: catalog.KindX402,
			Endpoint: catalog.Endpoint{Method: "GET", URL: url}, SourceKey: url, Source: source,
			Slug: catalog.Slugify(url[len("http://"):]), Listing: &catalog.Listing{}}
	}
	a, b := "http://localhost:8282/a", "http://localhost:8282/b"
	mirror := catalog.Catalog{Providers: []catalog.Provider{{Name: "Mirrored", Methods: []catalog.Method{
		method(a, catalog.SourceBazaar), method(b, catalog.SourceBazaar)}}}}
	if _, err := store.SyncCatalog(ctx, mirror, catalog.SourceBazaar, now); err != nil {
		t.Fatal(err)
	}
	const intruder = "0x2c7536E3605D9C16a7a3D7b1898e529396a65c23"
	probe := trust.Result{ProbedAt: now, Outcome: trust.OutcomePaymentRequired, HTTPStatus: 402,
		Offer: &x402.Offer{Version: 2, Scheme: "exact", Network: "eip155:8453", PayTo: intruder, Amount: "10000"}}
	list := func(o string, urls ...string) {
		t.Helper()
		var ms []catalog.Method
		probes := map[string]trust.Result{}
		verified := map[string]bool{}
		for _, u := range urls {
			ms = append(ms, method(u, catalog.SourceOrigin))
			probes[u], verified[u] = probe, true
		}
		if _, err := store.ListOrigin(ctx, origin.Listing{
			Origin:   origin.Origin{Origin: o, Hostname: "localhost", Owner: intruder},
			Catalog:  catalog.Catalog{Providers: []catalog.Provider{{Name: "Intruder " + o, Methods: ms}}},
			Verified: verified, Probes: probes, At: now,
		}); err != nil {
			t.Fatal(err)
		}
	}
	x := "http://localhost:8286/x"
	list("http://localhost:8286", x)

	listed := func() ([]string, directory.Merchant) {
		t.Helper()
		snap, err := Build(ctx, store, now, nil)
		if err != nil {
			t.Fatal(err)
		}
		var urls []string
		for _, m := range snap.Methods() {
			urls = append(urls, m.Endpoint.URL)
		}
		slices.Sort(urls)
		res, ok := snap.Merchant("localhost")
		if !ok {
			t.Fatal("no merchant record of localhost")
		}
		var mr directory.Merchant
		if err := json.Unmarshal(res.Body, &mr); err != nil {
			t.Fatal(err)
		}
		return urls, mr
	}
	if rec, err := store.DirectoryRecords(ctx, now); err != nil || rec.Listed["localhost"].IsZero() {
		t.Errorf("when localhost was first listed: %v (%v)", rec.Listed, err)
	}
	urls, mr := listed()
	if !slices.Equal(urls, []string{a, b, x}) {
		t.Errorf("listed after an origin on another port: %v, want the neighbours and the origin's own item", urls)
	}
	if mr.Origin != nil {
		t.Errorf("the merchant record names %s (owner %v) as the hostname's own origin, over neighbours it never proved", mr.Origin.Origin, mr.Origin.Owner)
	}
	targets, err := store.ProbeTargets(ctx, now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	var probed []string
	for _, tg := range targets {
		probed = append(probed, tg.URL)
	}
	if !slices.Contains(probed, a) || !slices.Contains(probed, b) {
		t.Errorf("the neighbours are no longer probed: %v", probed)
	}

	// The neighbours' own origin: its word covers its mirrored copies.
	list("http://localhost:8282", a)
	if urls, _ := listed(); !slices.Equal(urls, []string{a, x}) {
		t.Errorf("listed once :8282 lists itself: %v, want its own item (b's mirrored copy gives way) and :8286's", urls)
	}
}
