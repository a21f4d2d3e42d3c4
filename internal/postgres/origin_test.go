package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/waystation/waystation/internal/catalog"
	"github.com/waystation/waystation/internal/origin"
	"github.com/waystation/waystation/internal/postgres/pgtest"
	"github.com/waystation/waystation/internal/trust"
	"github.com/waystation/waystation/internal/x402"
)

const ownerPayee = "0x2c7536E3605D9C16a7a3D7b1898e529396a65c23"

func method(url, source string) catalog.Method {
	return catalog.Method{Name: "Thing " + url, Description: "A thing.", Category: "data", Kind: catalog.KindX402,
		Endpoint: catalog.Endpoint{Method: "GET", URL: url}, SourceKey: url, Source: source,
		Slug: catalog.Slugify(url[len("https://"):]), Listing: &catalog.Listing{}}
}

// TestAnOriginsItemsStandOverTheMirrorsCopies lists an origin over a Bazaar mirror
// of its hostname: the same URL takes the mirrored row's place and slug, the mirror's
// other items of that hostname leave the directory, a later sync of the mirror
// changes neither, items gone from the manifest are disabled, and once the origin is
// delisted the mirror's items come back.
func TestAnOriginsItemsStandOverTheMirrorsCopies(t *testing.T) {
	ctx := context.Background()
	store := pgtest.New(t)
	now := time.Now().UTC().Truncate(time.Second)
	a, b, c := "https://api.seller.example/a", "https://api.seller.example/b", "https://api.seller.example/c"
	other := "https://api.other.example/x"
	mirror := catalog.Catalog{Providers: []catalog.Provider{{Name: "Mirrored", Methods: []catalog.Method{
		method(a, catalog.SourceBazaar), method(b, catalog.SourceBazaar), method(other, catalog.SourceBazaar)}}}}
	if _, err := store.SyncCatalog(ctx, mirror, catalog.SourceBazaar, now); err != nil {
		t.Fatal(err)
	}
	slugOf := func() map[string]string {
		rec, err := store.DirectoryRecords(ctx, now)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, m := range rec.Methods {
			src := ""
			if m.Method.SourceListing != nil {
				src = m.Method.SourceListing.Source
			}
			out[m.Method.Endpoint.URL] = m.Method.Slug + " " + src + " " + m.Owner
		}
		return out
	}
	before := slugOf()

	probe := trust.Result{ProbedAt: now, Outcome: trust.OutcomePaymentRequired, HTTPStatus: 402,
		Offer: &x402.Offer{Version: 2, Scheme: "exact", Network: "eip155:84532", PayTo: ownerPayee, Amount: "10000"}}
	list := func(urls ...string) map[string]string {
		var ms []catalog.Method
		probes := map[string]trust.Result{}
		for _, u := range urls {
			ms = append(ms, method(u, catalog.SourceOrigin))
			probes[u] = probe
		}
		slugs, err := store.ListOrigin(ctx, origin.Listing{
			Origin:   origin.Origin{Origin: "https://api.seller.example", Hostname: "api.seller.example", ETag: `"v1"`, Owner: ownerPayee},
			Catalog:  catalog.Catalog{Providers: []catalog.Provider{{Name: "Seller", Methods: ms}}},
			Verified: map[string]bool{a: true}, Probes: probes, At: now,
		})
		if err != nil {
			t.Fatal(err)
		}
		return slugs
	}
	slugs := list(a)
	got := slugOf()
	if slugs[a] == "" || got[a] != slugs[a]+" origin "+ownerPayee {
		t.Fatalf("the origin's item: %q (slugs %v)", got[a], slugs)
	}
	if before[a][:len(slugs[a])] != slugs[a] {
		t.Fatalf("the mirrored row's slug changed: %q then %q", before[a], slugs[a])
	}
	if _, ok := got[b]; ok {
		t.Fatalf("a mirrored item of the origin's hostname is still listed: %v", got)
	}
	if _, ok := got[other]; !ok {
		t.Fatalf("another hostname's mirrored item left: %v", got)
	}
	rec, _ := store.DirectoryRecords(ctx, now)
	if o := rec.Origins["api.seller.example"]; o == nil || o.Status != origin.StatusListed || o.Owner == nil || *o.Owner != ownerPayee {
		t.Fatalf("the merchant's origin: %+v", o)
	}
	var probed bool
	for _, m := range rec.Methods {
		if m.Method.Endpoint.URL == a {
			probed = len(rec.Probes[m.ID]) == 1 && rec.Probes[m.ID][0].PayTo == ownerPayee
		}
	}
	if !probed {
		t.Fatal("the listing's probe was not recorded")
	}

	targets, err := store.ProbeTargets(ctx, now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	for _, tg := range targets {
		if tg.URL == b {
			t.Fatal("a hidden mirrored item is still probed")
		}
	}
	release, ok, err := store.TryRefreshLock(ctx)
	if err != nil || !ok {
		t.Fatalf("refresh lock: %v %v", ok, err)
	}
	if _, again, _ := store.TryRefreshLock(ctx); again {
		t.Fatal("the refresh lock was taken twice")
	}
	release()

	// The mirror syncs again: the owner's row stays the owner's.
	if _, err := store.SyncCatalog(ctx, mirror, catalog.SourceBazaar, now); err != nil {
		t.Fatal(err)
	}
	if after := slugOf(); after[a] != got[a] {
		t.Fatalf("a sync of the mirror took the owner's row: %q", after[a])
	}

	// The manifest drops /a and lists /c.
	list(c)
	got = slugOf()
	if _, ok := got[a]; ok {
		t.Fatalf("an item gone from the manifest is still listed: %v", got)
	}
	if _, ok := got[c]; !ok {
		t.Fatalf("the new item is not listed: %v", got)
	}

	o, err := store.Origin(ctx, "https://api.seller.example")
	if err != nil || o.ETag != `"v1"` || o.Status != origin.StatusListed {
		t.Fatalf("origin %+v, %v", o, err)
	}
	if _, err := store.Origin(ctx, "https://none.example"); !errors.Is(err, origin.ErrNotFound) {
		t.Fatalf("unknown origin: %v", err)
	}
	if err := store.OriginFailing(ctx, o.ID, origin.StatusStale, "unreachable: timeout", now); err != nil {
		t.Fatal(err)
	}
	if got := slugOf(); got[c] == "" {
		t.Fatal("a stale origin's items left the directory")
	}
	if err := store.OriginFailing(ctx, o.ID, origin.StatusDelisted, "unreachable: timeout", now); err != nil {
		t.Fatal(err)
	}
	got = slugOf()
	if _, ok := got[c]; ok {
		t.Fatalf("a delisted origin's item is still listed: %v", got)
	}
	if _, ok := got[b]; !ok {
		t.Fatalf("the mirror's item did not come back once the origin was delisted: %v", got)
	}
	if os, err := store.Origins(ctx); err != nil || len(os) != 0 {
		t.Fatalf("origins to refresh: %+v, %v", os, err)
	}
}
