package trust

import (
	"fmt"
	"testing"
	"time"

	"github.com/waystation/waystation/internal/directory"
)

func reported(payer string, age time.Duration, outcome string, value int64) ReportRecord {
	return ReportRecord{Payer: payer, SettledAt: now.Add(-age), Outcome: outcome, Value: value, Reported: true}
}

// TestReportsCountOncePerPayerAndDay: one payer's fifty reports of a day are one
// report; its reports of five days are five, but from one payer they stay under
// the floor and move nothing.
func TestReportsCountOncePerPayerAndDay(t *testing.T) {
	var flood []ReportRecord
	for i := range 50 {
		flood = append(flood, reported("mallory", time.Duration(i)*time.Minute, ReportNotDelivered, 10_000))
	}
	r := Tally(flood, now)
	if r.Received != 50 || r.Counted != 1 || r.NotDelivered != 1 || r.Payers != 1 || r.MovesScore || r.Paid != "0.5" {
		t.Errorf("a day's flood: %+v", r)
	}
	var days []ReportRecord
	for i := range 5 {
		days = append(days, reported("mallory", time.Duration(i)*24*time.Hour, ReportNotDelivered, 10_000))
	}
	r = Tally(days, now)
	if r.Counted != 5 || r.Payers != 1 || r.MovesScore {
		t.Errorf("one payer over five days: %+v, want under the floor", r)
	}
	in := Input{Kind: "x402", Now: now, Probes: []Observation{offer(time.Hour, "0xa", "1000")}}
	want := *Score(in).Score
	in.Reports = r
	if got := *Score(in).Score; got != want {
		t.Errorf("one payer's reports moved the score from %d to %d", want, got)
	}
}

// TestReportsWeighWhatWasPaid: a dollar's report outweighs ten cents' worth of
// reports, in the rates and in the score.
func TestReportsWeighWhatWasPaid(t *testing.T) {
	rs := []ReportRecord{
		reported("ada", time.Hour, ReportNotDelivered, 1_000_000),
		reported("bob", time.Hour, ReportDelivered, 25_000),
		reported("cy", time.Hour, ReportDelivered, 25_000),
		reported("dee", time.Hour, ReportDelivered, 25_000),
		reported("eve", time.Hour, ReportDelivered, 25_000),
	}
	r := Tally(rs, now)
	if r.Counted != 5 || r.Delivered != 4 || r.NotDelivered != 1 || !r.MovesScore || r.Rates.NotDelivered != 0.9091 || r.Rates.Delivered != 0.0909 {
		t.Fatalf("tally %+v", r)
	}
	// Within a payer's day the money decides the outcome: a dollar's delivered
	// outweighs a cent's complaint.
	day := Tally([]ReportRecord{reported("ada", time.Hour, ReportDelivered, 1_000_000), reported("ada", 2*time.Hour, ReportWrong, 10_000)}, now)
	if day.Counted != 1 || day.Delivered != 1 || day.Paid != "1.01" {
		t.Errorf("a payer's day: %+v", day)
	}
	in := Input{Kind: "x402", Now: now, Probes: []Observation{offer(time.Hour, "0xa", "1000")}, Reports: r}
	if got := *Score(in).Score; got != 64 {
		t.Errorf("score %d, want 100 less 40 times the 0.9091 share not delivered", got)
	}
}

// TestReportsNeverTakeASellerToAvoidNorLiftIt: however bad, reports alone stop at
// caution (avoid asks the person for an override, which reports must never decide);
// a score already under it stays; and good reports add nothing.
func TestReportsNeverTakeASellerToAvoidNorLiftIt(t *testing.T) {
	var all []ReportRecord
	var good []ReportRecord
	for i, p := range []string{"a", "b", "c", "d", "e", "f"} {
		all = append(all, reported(p, time.Duration(i)*time.Hour, ReportNotDelivered, 10_000))
		good = append(good, reported(p, time.Duration(i)*time.Hour, ReportDelivered, 10_000))
	}
	bad := Tally(all, now)
	cases := []struct {
		name   string
		probes []Observation
		r      *directory.Reports
		want   string
	}{
		{"a fine seller, all reported undelivered", []Observation{offer(time.Hour, "0xa", "1000")}, bad, "60 caution"},
		{"a middling seller, all reported undelivered", []Observation{failed(time.Hour, OutcomeTimeout), offer(2*time.Hour, "0xa", "1000")}, bad, "40 caution"},
		{"a failing seller, all reported delivered", []Observation{failed(time.Hour, OutcomeTimeout)}, Tally(good, now), "0 avoid"},
	}
	for _, c := range cases {
		got := Score(Input{Kind: "x402", Now: now, Probes: c.probes, Reports: c.r})
		if s := fmt.Sprintf("%d %s", *got.Score, got.Verdict); s != c.want {
			t.Errorf("%s: %s, want %s", c.name, s, c.want)
		}
	}
}

// TestAPaidCallNotDeliveredCountsWithoutAReport: what the service recorded as paid
// and not delivered counts as such, and a report saying otherwise does not undo it.
func TestAPaidCallNotDeliveredCountsWithoutAReport(t *testing.T) {
	observed := ReportRecord{Payer: "ada", SettledAt: now.Add(-time.Hour), Outcome: ReportNotDelivered, Value: 10_000, Observed: true}
	r := Tally([]ReportRecord{observed}, now)
	if r.Received != 0 || r.Observed != 1 || r.Counted != 1 || r.NotDelivered != 1 {
		t.Errorf("tally %+v", r)
	}
	if w := r.Weeks[len(r.Weeks)-1]; w.NotDelivered != 1 || w.Week != "2026-11-16" {
		t.Errorf("this week %+v", w)
	}
}

// TestOldReportsStopCounting: a seller past the floor on reports of payments settled
// over ReportAge ago is scored as if they were never made, and one whose old
// reports were bad and recent ones good recovers.
func TestOldReportsStopCounting(t *testing.T) {
	old := ReportAge + 24*time.Hour
	var stale, mended []ReportRecord
	for _, p := range []string{"a", "b", "c", "d", "e"} {
		stale = append(stale, reported(p, old, ReportNotDelivered, 10_000))
		mended = append(mended, reported(p, old, ReportNotDelivered, 10_000), reported(p, 24*time.Hour, ReportDelivered, 10_000))
	}
	if r := Tally(stale, now); r != nil {
		t.Errorf("reports over %v old: %+v", ReportAge, r)
	}
	r := Tally(mended, now)
	if r == nil || r.Counted != 5 || r.Delivered != 5 || r.NotDelivered != 0 || r.Received != 5 || r.Rates.NotDelivered != 0 {
		t.Fatalf("a seller that mended its ways: %+v", r)
	}
	in := Input{Kind: "x402", Now: now, Probes: []Observation{offer(time.Hour, "0xa", "1000")}}
	want := *Score(in).Score
	in.Reports = r
	if got := *Score(in).Score; got != want {
		t.Errorf("old reports still move the score: %d, want %d", got, want)
	}
}
