package api_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/waystation/waystation/internal/catalog"
	"github.com/waystation/waystation/internal/seller"
)

// listSeller puts p's seller in the directory, so that its record shows what is
// reported of it.
func listSeller(t *testing.T, p *payEnv) {
	t.Helper()
	listing := fmt.Sprintf(`{"resource":%q,"type":"http","x402Version":2,"accepts":[{"scheme":"exact","network":"eip155:84532","amount":"10000","asset":%q,"payTo":%q,"maxTimeoutSeconds":60,"extra":{"name":"USDC","version":"2"}}]}`,
		p.base+"/v2/report", seller.DefaultAsset, seller.DefaultPayTo)
	cat, _, err := catalog.ParseBazaar(strings.NewReader(listing))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.store.LoadCatalog(context.Background(), cat, time.Now()); err != nil {
		t.Fatal(err)
	}
}

// paid asks to pay for path, has the person approve it and the service pay it, and
// returns the settled payment's id.
func (p *payEnv) paid(clientID, path string) string {
	p.t.Helper()
	var c created
	p.ask(clientID, path, "0.05").want(p.t, 201).into(p.t, &c)
	p.approve(c.Request.ID).want(p.t, 200)
	p.run()
	if st, f := p.payment(c.Payment.ID); st != "settled" {
		p.t.Fatalf("payment %s %s %v, want settled", c.Payment.ID, st, f)
	}
	return c.Payment.ID
}

func (p *payEnv) report(sid, pid, key, body string) response {
	p.t.Helper()
	return p.call("POST", "/sessions/"+sid+"/x402/payments/"+pid+"/report", key, body)
}

// merchantReports reads the seller's record from a fresh snapshot.
func (p *payEnv) merchantRecord() merchantJSON {
	p.t.Helper()
	if err := p.snaps.Refresh(context.Background(), p.store, nil); err != nil {
		p.t.Fatal(err)
	}
	var m merchantJSON
	p.call("GET", "/api/public/v1/merchants/seller.test", "", "").want(p.t, 200).into(p.t, &m)
	return m
}

type merchantJSON struct {
	Trust struct {
		Score   *int
		Verdict string
		Reports *struct {
			Received, Counted, Delivered, Wrong, Payers int
			Observed                                    int `json:"observed_not_delivered"`
			NotDelivered                                int `json:"not_delivered"`
			Paid                                        string
			MovesScore                                  bool `json:"moves_score"`
			Rates                                       struct {
				Delivered, Wrong float64
				NotDelivered     float64 `json:"not_delivered"`
			}
			Weeks []struct{ Week string }
		}
		Demand *struct {
			Settled int `json:"settled_30d"`
			Payers  int `json:"payers_30d"`
			Repeat  int `json:"repeat_payers_30d"`
			Organic int `json:"organic_payers_30d"`
		} `json:"service_demand"`
	}
}

// TestNoOneReportsAPaymentNotTheirsNorOneNotSettled: an agent reports its own
// settled payment once; another agent of the same person, another person's agent
// and another person cannot report it (404, as for a payment they cannot see), a
// second report of it is refused, and a payment waiting for approval or failed
// cannot be reported at all. A report is codes only: text is refused.
func TestNoOneReportsAPaymentNotTheirsNorOneNotSettled(t *testing.T) {
	t.Parallel()
	p := newPayEnv(t)
	listSeller(t, p)
	pid := p.paid("paid-1", "/v2/report?topic=tides")
	bad := `{"outcome":"not_delivered","reason":"error_answer"}`

	uid, _ := p.user("ada") // the same person as p's agent
	_, siblingKey := p.agent(uid, "sibling")
	otherUser, otherUserKey := p.user("mallory")
	_, strangerKey := p.agent(otherUser, "stranger")
	for _, key := range []string{siblingKey, strangerKey, otherUserKey} {
		p.report(p.sid, pid, key, bad).want(t, 404, "not_found")
	}
	// Text that could carry a value is no report.
	p.report(p.sid, pid, p.agentKey, `{"outcome":"wrong","reason":"wrong_content","note":"my card is 4111"}`).want(t, 422)
	p.report(p.sid, pid, p.agentKey, `{"outcome":"wrong","reason":"the seller lied"}`).want(t, 422, "validation_failed")
	p.report(p.sid, pid, p.agentKey, `{"outcome":"great"}`).want(t, 422, "validation_failed")

	var rep struct{ PaymentID, Outcome, Reason, ReportedBy, Value string }
	p.report(p.sid, pid, p.agentKey, bad).want(t, 201).into(t, &rep)
	if rep.PaymentID != pid || rep.Outcome != "not_delivered" || rep.Reason != "error_answer" || rep.ReportedBy != "agent" || rep.Value != "0.01" {
		t.Errorf("report %+v", rep)
	}
	// Once: the agent again, or its person, are refused; the first stands.
	p.report(p.sid, pid, p.agentKey, `{"outcome":"delivered"}`).want(t, 409, "already_reported")
	p.report(p.sid, pid, p.userKey, `{"outcome":"delivered"}`).want(t, 409, "already_reported")

	// A payment waiting for the person's approval, and a failed one.
	var waiting created
	p.ask("waiting", "/v2/report?topic=waves", "0.05").want(t, 201).into(t, &waiting)
	p.report(p.sid, waiting.Payment.ID, p.agentKey, bad).want(t, 409, "payment_not_settled")
	var failed created
	p.ask("failed", "/v2/report?topic=reefs", "0.05").want(t, 201).into(t, &failed)
	p.approve(failed.Request.ID).want(t, 200)
	p.limits(`{"perPayment":"0.005","daily":"5","monthly":"50"}`)
	p.run()
	if st, _ := p.payment(failed.Payment.ID); st != "failed" {
		t.Fatalf("payment %s, want failed", st)
	}
	p.report(p.sid, failed.Payment.ID, p.userKey, bad).want(t, 409, "payment_not_settled")
	p.report(p.sid, "00000000-0000-0000-0000-000000000000", p.agentKey, bad).want(t, 404, "not_found")

	if r := p.merchantRecord().Trust.Reports; r == nil || r.Received != 1 || r.Counted != 1 || r.NotDelivered != 1 {
		t.Errorf("the record's reports %+v, want the one report", r)
	}
}

// TestAFloodOfReportsFromOneAgentCountsOnceADayAndMovesNothing: an agent pays the
// seller six times and reports each payment not delivered. Its person's reports on
// the seller count once that day, under the floor, so the score is what it was
// before the reports; the record says what was received and what counted.
func TestAFloodOfReportsFromOneAgentCountsOnceADayAndMovesNothing(t *testing.T) {
	t.Parallel()
	p := newPayEnv(t)
	listSeller(t, p)
	var pids []string
	for i := range 6 {
		pids = append(pids, p.paid(fmt.Sprintf("flood-%d", i), fmt.Sprintf("/v2/report?topic=t%d", i)))
	}
	before := p.merchantRecord()
	for _, pid := range pids {
		p.report(p.sid, pid, p.agentKey, `{"outcome":"not_delivered","reason":"no_answer"}`).want(t, 201)
	}
	after := p.merchantRecord()
	r := after.Trust.Reports
	if r == nil || r.Received != 6 || r.Counted != 1 || r.NotDelivered != 1 || r.Payers != 1 || r.MovesScore || r.Paid != "0.06" ||
		r.Rates.NotDelivered != 1 || len(r.Weeks) != 12 {
		t.Fatalf("the record's reports %+v, want six received counted once, under the floor", r)
	}
	if scoreText(before.Trust.Score) != scoreText(after.Trust.Score) || before.Trust.Verdict != after.Trust.Verdict {
		t.Errorf("the flood moved the score from %s %s to %s %s", scoreText(before.Trust.Score), before.Trust.Verdict, scoreText(after.Trust.Score), after.Trust.Verdict)
	}
	// The service's own demand: six payments from one payer on one day, a burst,
	// not a payer who came back.
	if d := after.Trust.Demand; d == nil || d.Settled != 6 || d.Payers != 1 || d.Repeat != 0 || d.Organic != 0 {
		t.Errorf("service demand %+v", d)
	}
}

// TestABurstOfPaymentsIsNotDemandAndComingBackIs: one agent paying a seller five
// times in a day is one payer of one day, which counts a quarter (rounded down: no
// organic payer), so it cannot buy a tie in search; the same payer seen again on
// another day came back, and counts in full. The seller's methods carry the demand
// their record shows, where search reads it.
func TestABurstOfPaymentsIsNotDemandAndComingBackIs(t *testing.T) {
	t.Parallel()
	p := newPayEnv(t)
	listSeller(t, p)
	var pids []string
	for i := range 5 {
		pids = append(pids, p.paid(fmt.Sprintf("burst-%d", i), fmt.Sprintf("/v2/report?topic=b%d", i)))
	}
	type demand struct {
		Settled int `json:"settled_30d"`
		Payers  int `json:"payers_30d"`
		Repeat  int `json:"repeat_payers_30d"`
		Organic int `json:"organic_payers_30d"`
	}
	check := func(want demand) {
		t.Helper()
		if d := p.merchantRecord().Trust.Demand; d == nil || demand(*d) != want {
			t.Errorf("the record's service demand %+v, want %+v", d, want)
		}
		var list struct {
			Items []struct {
				Hostname string
				Trust    struct {
					Demand *demand `json:"service_demand"`
				}
			}
		}
		p.call("GET", "/api/public/v1/services", "", "").want(t, 200).into(t, &list)
		seen := 0
		for _, it := range list.Items {
			if it.Hostname == "seller.test" {
				seen++
				if d := it.Trust.Demand; d == nil || *d != want {
					t.Errorf("a listing item's service demand %+v, want %+v", d, want)
				}
			}
		}
		if seen == 0 {
			t.Error("the seller is not listed")
		}
	}
	// At one instant, so that no midnight falls between them.
	if _, err := p.store.Pool().Exec(context.Background(),
		`UPDATE payments SET settled_at = (SELECT min(settled_at) FROM payments WHERE id = ANY($1::uuid[])) WHERE id = ANY($1::uuid[])`, pids); err != nil {
		t.Fatal(err)
	}
	check(demand{Settled: 5, Payers: 1, Repeat: 0, Organic: 0})

	// Two of the payments were a day earlier: the payer came back.
	if _, err := p.store.Pool().Exec(context.Background(),
		`UPDATE payments SET settled_at = settled_at - interval '1 day' WHERE id = ANY($1::uuid[])`, pids[:2]); err != nil {
		t.Fatal(err)
	}
	check(demand{Settled: 5, Payers: 1, Repeat: 1, Organic: 1})
}

func scoreText(n *int) string {
	if n == nil {
		return "null"
	}
	return fmt.Sprint(*n)
}

// TestReportsNeverChangeWhetherAPaymentIsAuthorised: five people report every
// payment to the seller not delivered, past the floor; the seller's verdict may
// fall to caution, never to avoid, so a new payment still asks its person's
// approval alone, no override, and is paid once approved, as before.
func TestReportsNeverChangeWhetherAPaymentIsAuthorised(t *testing.T) {
	t.Parallel()
	p := newPayEnv(t)
	listSeller(t, p)
	ctx := context.Background()
	// The seller's probes say it answers well.
	if _, err := p.store.Pool().Exec(ctx, `
		INSERT INTO probes (method_id, hostname, probed_at, outcome, http_status, scheme, network, asset, pay_to, amount)
		SELECT id, hostname, now() - interval '1 hour', 'payment_required', 402, 'exact', 'eip155:8453',
			'0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913', '0xa', '10000' FROM provider_methods WHERE hostname = 'seller.test'`); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		uid, _ := p.user(fmt.Sprintf("payer-%d", i))
		_, key := p.agent(uid, "buyer")
		sid := p.openSession(key, "buy")
		var c created
		p.call("POST", "/sessions/"+sid+"/x402/payments", key,
			fmt.Sprintf(`{"clientRequestId":"r","maximumDebit":"0.05","httpRequest":{"url":%q}}`, p.base+"/v2/report?topic=x")).want(t, 201).into(t, &c)
		userKey := p.key("user", uid, "")
		p.call("POST", "/sessions/"+sid+"/requests/"+c.Request.ID+"/decision", userKey, `{"decision":"approve"}`).want(t, 200)
		p.run()
		p.report(sid, c.Payment.ID, key, `{"outcome":"not_delivered","reason":"empty_answer"}`).want(t, 201)
	}
	m := p.merchantRecord()
	if r := m.Trust.Reports; r == nil || !r.MovesScore || r.Counted != 5 || r.Payers != 5 {
		t.Fatalf("reports %+v, want five counted past the floor", r)
	}
	if m.Trust.Verdict != "caution" {
		t.Errorf("verdict %s (score %s), want caution: reports alone never make avoid", m.Trust.Verdict, scoreText(m.Trust.Score))
	}
	var c created
	p.ask("after-reports", "/v2/report?topic=y", "0.05").want(t, 201).into(t, &c)
	if c.Payment.Merchant.Verdict == "avoid" {
		t.Fatalf("the payment asks for an override: verdict %s", c.Payment.Merchant.Verdict)
	}
	p.run()
	if st, _ := p.payment(c.Payment.ID); st != "awaiting_approval" {
		t.Errorf("payment %s before its approval: reports authorised it", st)
	}
	p.approve(c.Request.ID).want(t, 200)
	p.run()
	if st, _ := p.payment(c.Payment.ID); st != "settled" {
		t.Errorf("payment %s after its approval, want settled", st)
	}
}

// TestAnAgentReportsThroughMCPAndCheckMerchantAnswersIt: report_delivery takes the
// agent's report of its own payment as the route does, refuses another agent's with
// not_found, and check_merchant answers the seller's reports and the service's own
// demand of it.
func TestAnAgentReportsThroughMCPAndCheckMerchantAnswersIt(t *testing.T) {
	t.Parallel()
	p := newPayEnv(t)
	listSeller(t, p)
	pid := p.paid("mcp-1", "/v2/report?topic=tides")
	uid, _ := p.user("eve")
	_, strangerKey := p.agent(uid, "stranger")
	args := fmt.Sprintf(`{"sessionId":%q,"paymentId":%q,"outcome":"wrong","reason":"stale"}`, p.sid, pid)
	if _, failure := p.toolCall(t, strangerKey, "report_delivery", args); !strings.HasPrefix(failure, "not_found (404)") {
		t.Errorf("another agent's report: %q, want not_found", failure)
	}
	out, failure := p.toolCall(t, p.agentKey, "report_delivery", args)
	if failure != "" || out["outcome"] != "wrong" || out["reason"] != "stale" || out["reportedBy"] != "agent" {
		t.Fatalf("report: %v %q", out, failure)
	}
	if _, failure := p.toolCall(t, p.agentKey, "report_delivery", args); !strings.HasPrefix(failure, "already_reported (409)") {
		t.Errorf("a second report: %q, want already_reported", failure)
	}
	if err := p.snaps.Refresh(context.Background(), p.store, nil); err != nil {
		t.Fatal(err)
	}
	m, failure := p.toolCall(t, p.agentKey, "check_merchant", `{"hostname":"seller.test"}`)
	reports, _ := m["reports"].(map[string]any)
	demand, _ := m["serviceDemand"].(map[string]any)
	if failure != "" || reports["wrong"] != float64(1) || reports["counted"] != float64(1) || demand["settled_30d"] != float64(1) {
		t.Errorf("check_merchant: %v %q", m, failure)
	}
	var check struct{ Reasons []string }
	p.call("POST", "/tools/merchant-checks", p.agentKey, `{"url":"`+p.base+`/v2/report"}`).want(t, 200).into(t, &check)
	if all := strings.Join(check.Reasons, " "); !strings.Contains(all, "1 wrong or useless") || !strings.Contains(all, "too few to count") {
		t.Errorf("the merchant check's reasons %q", check.Reasons)
	}
}

// settledAgo moves payment pid's settlement age into the past.
func (p *payEnv) settledAgo(pid string, age time.Duration) {
	p.t.Helper()
	if _, err := p.store.Pool().Exec(context.Background(), `UPDATE payments SET settled_at = now() - make_interval(secs => $2) WHERE id = $1`,
		pid, age.Seconds()); err != nil {
		p.t.Fatal(err)
	}
}

// TestAReportComesWithinThirtyDaysAndCountsForHalfAYear: a payment settled more than
// thirty days ago is no longer reported (409 report_window_closed, nothing
// recorded), one of twenty-nine days is; and a seller's record counts the reports of
// payments settled in the last 180 days, so that old complaints stop counting.
func TestAReportComesWithinThirtyDaysAndCountsForHalfAYear(t *testing.T) {
	t.Parallel()
	p := newPayEnv(t)
	listSeller(t, p)
	late := p.paid("late", "/v2/report?topic=late")
	p.settledAgo(late, 31*24*time.Hour)
	bad := `{"outcome":"not_delivered","reason":"no_answer"}`
	p.report(p.sid, late, p.agentKey, bad).want(t, 409, "report_window_closed")
	p.report(p.sid, late, p.userKey, bad).want(t, 409, "report_window_closed")
	if r := p.merchantRecord().Trust.Reports; r != nil {
		t.Fatalf("a report out of its window counts: %+v", r)
	}
	inTime := p.paid("in-time", "/v2/report?topic=soon")
	p.settledAgo(inTime, 29*24*time.Hour)
	p.report(p.sid, inTime, p.agentKey, bad).want(t, 201)
	if r := p.merchantRecord().Trust.Reports; r == nil || r.Counted != 1 || r.NotDelivered != 1 {
		t.Fatalf("a report in its window: %+v", r)
	}
	// Half a year on, the report no longer counts.
	p.settledAgo(inTime, 181*24*time.Hour)
	if r := p.merchantRecord().Trust.Reports; r != nil {
		t.Errorf("a report of a payment settled 181 days ago counts: %+v", r)
	}
}
