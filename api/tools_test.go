package api_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/waystation/waystation/internal/catalog"
)

// A merchant check gives the directory's advisory verdict on the seller behind any
// URL, with its reasons in words; an unknown seller is unknown, never trusted.
func TestMerchantCheckGivesTheDirectorysVerdictAndWhy(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	uid, userKey := e.user("ada")
	_, agentKey := e.agent(uid, "scout")
	ctx := context.Background()
	cat, err := catalog.Demo()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.LoadCatalog(ctx, cat, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := e.snaps.Refresh(ctx, e.store, nil); err != nil {
		t.Fatal(err)
	}
	m := e.snaps.Current().Methods()[0]

	var check struct {
		Hostname, Verdict string
		Listed, Advisory  bool
		Reasons           []string
		Methods           int
	}
	e.call("POST", "/tools/merchant-checks", agentKey, `{"url":"https://`+strings.ToUpper(m.Hostname)+`/checkout?x=1"}`).want(t, 200).into(t, &check)
	if !check.Listed || check.Hostname != m.Hostname || check.Verdict != m.Trust.Verdict || !check.Advisory || check.Methods < 1 ||
		!strings.Contains(strings.Join(check.Reasons, " "), "Listed in the directory") {
		t.Errorf("listed seller: %+v", check)
	}
	e.call("POST", "/tools/merchant-checks", agentKey, `{"url":"http://unknown-seller.example/pay"}`).want(t, 200).into(t, &check)
	if check.Listed || check.Verdict != "unknown" || !strings.Contains(strings.Join(check.Reasons, " "), "plain HTTP") ||
		!strings.Contains(strings.Join(check.Reasons, " "), "Not in the directory") {
		t.Errorf("unknown seller: %+v", check)
	}
	e.call("POST", "/tools/merchant-checks", agentKey, `{"url":"ftp://x.example"}`).want(t, 422)
	e.call("POST", "/tools/merchant-checks", userKey, `{"url":"https://x.example"}`).want(t, 403)
}
