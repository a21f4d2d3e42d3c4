package web

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/waystation/waystation/internal/catalog"
	"github.com/waystation/waystation/internal/directory"
)

// TestPagesSayAnOriginListsItselfAndWhoOwnsIt: a method an origin lists itself says
// so and shows the owner's proof and what it added to the score; its merchant page
// says the hostname is listed by its origin, how the proof counted, and why it is
// stale.
func TestPagesSayAnOriginListsItselfAndWhoOwnsIt(t *testing.T) {
	at := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	payee, o := "0x2c7536E3605D9C16a7a3D7b1898e529396a65c23", "https://api.seller.example"
	m := directory.Method{Slug: "seller-report", Name: "Report", Provider: "Seller", Hostname: "api.seller.example",
		Category: "data", Kind: "x402", Endpoint: directory.Endpoint{Method: "GET", URL: o + "/report"},
		Trust:         directory.Trust{Verdict: directory.VerdictUnknown, Advisory: true, Owner: &directory.Owner{Verified: true, PayTo: payee, Origin: o, Points: 5}},
		SourceListing: &directory.Listing{Source: catalog.SourceOrigin}}
	reason := "unreachable: timeout"
	mr := directory.Merchant{Hostname: "api.seller.example", Providers: []string{"Seller"}, Trust: m.Trust,
		Methods: []directory.MerchantEntry{{Slug: m.Slug, Name: m.Name, Category: m.Category}}, Probes: []directory.ProbeRecord{},
		Origin: &directory.OriginListing{Origin: o, Status: "stale", Reason: &reason, Owner: &payee, ListedAt: at, CheckedAt: at}}
	snap, err := directory.NewSnapshot(at, []directory.Method{m}, []directory.Merchant{mr})
	if err != nil {
		t.Fatal(err)
	}
	var vs Views
	mv, ok := vs.MethodPage(snap, m.Slug)
	if !ok {
		t.Fatal("no method page")
	}
	var b strings.Builder
	if err := MethodPageView(mv).Render(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Listed by the origin itself", "<dt>Owner</dt>", payee, "signed " + o, "it added 5 points to the score"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the method page lacks %q", want)
		}
	}
	hv, ok := vs.MerchantPage(snap, "api.seller.example")
	if !ok {
		t.Fatal("no merchant page")
	}
	b.Reset()
	if err := MerchantPageView(hv).Render(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Listed by the origin itself: " + o, "Its payee " + payee + " signed the origin",
		"Owner-verified: 1 of 1 methods. The proof added 5 points to the score of 1 of them", "Stale:", reason} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the merchant page lacks %q", want)
		}
	}
}

// TestPagesSayTheOwnersProofCountsNothingWhileTheSellerFails: a proof whose seller's
// newest probe got no valid offer adds nothing, and both pages say so.
func TestPagesSayTheOwnersProofCountsNothingWhileTheSellerFails(t *testing.T) {
	at := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	payee, o := "0x2c7536E3605D9C16a7a3D7b1898e529396a65c23", "https://api.seller.example"
	m := directory.Method{Slug: "seller-report", Name: "Report", Provider: "Seller", Hostname: "api.seller.example",
		Category: "data", Kind: "x402", Endpoint: directory.Endpoint{Method: "GET", URL: o + "/report"},
		Trust:         directory.Trust{Verdict: directory.VerdictUnknown, Advisory: true, Owner: &directory.Owner{Verified: true, PayTo: payee, Origin: o}},
		SourceListing: &directory.Listing{Source: catalog.SourceOrigin}}
	other := m
	other.Slug, other.Endpoint.URL, other.Trust.Owner = "seller-other", o+"/other", nil
	mr := directory.Merchant{Hostname: "api.seller.example", Providers: []string{"Seller"}, Trust: m.Trust,
		Methods: []directory.MerchantEntry{{Slug: m.Slug, Name: m.Name, Category: m.Category}, {Slug: other.Slug, Name: other.Name, Category: other.Category}},
		Probes:  []directory.ProbeRecord{},
		Origin:  &directory.OriginListing{Origin: o, Status: "listed", Owner: &payee, ListedAt: at, CheckedAt: at}}
	snap, err := directory.NewSnapshot(at, []directory.Method{m, other}, []directory.Merchant{mr})
	if err != nil {
		t.Fatal(err)
	}
	var vs Views
	mv, _ := vs.MethodPage(snap, m.Slug)
	var b strings.Builder
	if err := MethodPageView(mv).Render(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	if want := "it adds nothing to the score now"; !strings.Contains(b.String(), want) {
		t.Errorf("the method page lacks %q", want)
	}
	hv, _ := vs.MerchantPage(snap, "api.seller.example")
	b.Reset()
	if err := MerchantPageView(hv).Render(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	if want := "Owner-verified: 1 of 2 methods. The proof added 5 points to the score of 0 of them"; !strings.Contains(b.String(), want) {
		t.Errorf("the merchant page lacks %q", want)
	}
}
