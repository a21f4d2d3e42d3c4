package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/waystation/waystation/internal/catalog"
	"github.com/waystation/waystation/internal/directory"
	"github.com/waystation/waystation/internal/postgres"
	"github.com/waystation/waystation/internal/postgres/pgtest"
)

// TestOverridesKeepTheirHistoryAndExpireByThemselves sets, replaces and removes
// overrides and checks what the directory sees and what the audit trail keeps.
func TestOverridesKeepTheirHistoryAndExpireByThemselves(t *testing.T) {
	ctx := context.Background()
	store := pgtest.New(t)
	cat := catalog.Catalog{Providers: []catalog.Provider{{Name: "Seller", Methods: []catalog.Method{{
		Slug: "seller-thing", Name: "Thing", Category: "data", Kind: "x402",
		Endpoint: catalog.Endpoint{Method: "GET", URL: "https://api.seller.example/thing"},
	}}}}}
	now := time.Now().UTC().Truncate(time.Second)
	if _, err := store.LoadCatalog(ctx, cat, now); err != nil {
		t.Fatal(err)
	}
	current := func(at time.Time) *directory.Override {
		rec, err := store.DirectoryRecords(ctx, at)
		if err != nil {
			t.Fatal(err)
		}
		return rec.Overrides["api.seller.example"]
	}

	if _, err := store.SetOverride(ctx, postgres.OverrideChange{Hostname: "nowhere.example", Verdict: "avoid", Reason: "x", By: "ops"}, now); !errors.Is(err, postgres.ErrUnknownMerchant) {
		t.Fatalf("unknown host: %v", err)
	}
	for _, bad := range []postgres.OverrideChange{
		{Hostname: "api.seller.example", Verdict: "trusted", Reason: "x", By: "ops"},
		{Hostname: "api.seller.example", Verdict: "avoid", Reason: " ", By: "ops"},
		{Hostname: "api.seller.example", Verdict: "avoid", Reason: "x", By: ""},
		{Hostname: "api.seller.example", Verdict: "avoid", Reason: "x", By: "ops", ExpiresAt: &now},
	} {
		if _, err := store.SetOverride(ctx, bad, now); err == nil {
			t.Errorf("accepted %+v", bad)
		}
	}

	if _, err := store.SetOverride(ctx, postgres.OverrideChange{Hostname: "API.Seller.Example.", Verdict: "avoid", Reason: "reported fraud", By: "alice"}, now); err != nil {
		t.Fatal(err)
	}
	expires := now.Add(2 * time.Hour)
	if _, err := store.SetOverride(ctx, postgres.OverrideChange{Hostname: "api.seller.example", Verdict: "caution", Reason: "under review", By: "bob", ExpiresAt: &expires}, now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if o := current(now.Add(time.Hour)); o == nil || o.Verdict != "caution" || o.Reason != "under review" || !o.ExpiresAt.Equal(expires) {
		t.Fatalf("override in force: %+v", o)
	}
	// Once expired, nothing decides but the score; the replaced one does not return.
	if o := current(now.Add(3 * time.Hour)); o != nil {
		t.Fatalf("expired override still counts: %+v", o)
	}
	if err := store.RemoveOverride(ctx, "api.seller.example", "carol", now.Add(3*time.Hour)); !errors.Is(err, postgres.ErrNoOverride) {
		t.Fatalf("removing an expired override: %v", err)
	}

	if _, err := store.SetOverride(ctx, postgres.OverrideChange{Hostname: "api.seller.example", Verdict: "proceed", Reason: "verified by hand", By: "dave"}, now.Add(2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := store.RemoveOverride(ctx, "api.seller.example", "erin", now.Add(3*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if o := current(now.Add(4 * time.Minute)); o != nil {
		t.Fatalf("removed override still counts: %+v", o)
	}

	// The audit trail: every decision, who made it and who ended it.
	rows, _ := store.Pool().Query(ctx, `
		SELECT verdict, set_by, coalesce(removed_by, '') FROM merchant_overrides
		WHERE hostname = 'api.seller.example' ORDER BY set_at, id`)
	var trail []string
	for rows.Next() {
		var v, by, removedBy string
		rows.Scan(&v, &by, &removedBy)
		trail = append(trail, v+":"+by+":"+removedBy)
	}
	want := []string{"avoid:alice:bob", "caution:bob:dave", "proceed:dave:erin"}
	if len(trail) != len(want) {
		t.Fatalf("trail %v", trail)
	}
	for i := range want {
		if trail[i] != want[i] {
			t.Fatalf("trail %v, want %v", trail, want)
		}
	}
}

// TestStatsCountSettledPaymentsPerHostname checks the payment counts the stats and
// the delivery part of the score come from, as the demo catalog feeds them.
func TestStatsCountSettledPaymentsPerHostname(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	store, cat := pgtest.LoadDemo(t, now)
	rec, err := store.DirectoryRecords(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, mc := range cat.Merchants {
		got := rec.Payments[mc.Hostname]
		if got.Settled != mc.Payments.Settled || got.Delivered != mc.Payments.Delivered {
			t.Errorf("%s: %+v, want %+v", mc.Hostname, got, mc.Payments)
		}
		if s := directory.NewStats(got.Settled, got.Delivered); (s == nil) != (got.Settled < directory.StatsFloor) {
			t.Errorf("%s: stats %+v for %d settled", mc.Hostname, s, got.Settled)
		}
		if mc.Payments.Settled > 0 {
			checked++
		}
	}
	if checked == 0 {
		t.Fatal("the demo catalog has no settled payments")
	}
}
