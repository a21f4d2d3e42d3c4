package trust

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/waystation/waystation/internal/directory"
	"github.com/waystation/waystation/internal/x402"
)

// Report outcomes, as payment.Report* names them.
const (
	ReportDelivered    = "delivered"
	ReportWrong        = "wrong"
	ReportNotDelivered = "not_delivered"
)

// Constants of the reports' rule (step 7 of Score).
const (
	// ReportFloor is how many counted reports a seller needs before they move its
	// score, and ReportPayersFloor how many people they must come from: one payer,
	// however much it pays, never moves a score alone.
	ReportFloor       = 5
	ReportPayersFloor = 3
	// ReportPoints is the most reports take off a score: all of the money they weigh
	// reported wrong or not delivered.
	ReportPoints = 40
	// ReportAge is how far back a seller's reports count, by their payments'
	// settlement: a seller that mended its ways recovers once its old reports are
	// this old.
	ReportAge = 180 * 24 * time.Hour
	// reportWeeks is how many weeks a record's plot shows.
	reportWeeks = 12
)

// ReportRecord is one settled payment's evidence on its seller, in the store's
// terms: its delivery report, or the service's own record that the seller was paid
// and did not deliver (then Outcome is not_delivered whatever a report said).
type ReportRecord struct {
	// Payer is the person whose agent paid: reports count once per payer, seller
	// and UTC day.
	Payer string
	// SettledAt is when the payment settled; its UTC day is the day it counts on.
	SettledAt time.Time
	Outcome   string
	// Value is what the payment paid, in millionths of a dollar: its weight.
	Value int64
	// Reported is set when the payment's agent or person reported it; Observed when
	// the service recorded it paid and not delivered.
	Reported, Observed bool
}

// Tally is the reports block of a seller from its records of payments settled in
// the last ReportAge (older ones are left out): each payer's records of one UTC
// day fold into one counted report, whose outcome is the one the day's money says
// most (ties to the worse) and whose weight is all of the day's money. nil without
// any record in that time.
func Tally(records []ReportRecord, now time.Time) *directory.Reports {
	records = slices.DeleteFunc(slices.Clone(records), func(r ReportRecord) bool { return !r.SettledAt.After(now.Add(-ReportAge)) })
	if len(records) == 0 {
		return nil
	}
	type key struct {
		payer string
		day   time.Time
	}
	days := map[key]*[3]int64{}
	r := &directory.Reports{}
	for _, rec := range records {
		if rec.Reported {
			r.Received++
		}
		if rec.Observed {
			r.Observed++
		}
		k := key{rec.Payer, day(rec.SettledAt)}
		if days[k] == nil {
			days[k] = &[3]int64{}
		}
		days[k][outcomeIndex(rec.Outcome)] += rec.Value
	}
	keys := make([]key, 0, len(days))
	for k := range days {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b key) int { return cmp.Or(a.day.Compare(b.day), cmp.Compare(a.payer, b.payer)) })

	thisWeek := monday(day(now))
	first := thisWeek.AddDate(0, 0, -7*(reportWeeks-1))
	r.Weeks = make([]directory.ReportWeek, reportWeeks)
	for i := range r.Weeks {
		r.Weeks[i].Week = first.AddDate(0, 0, 7*i).Format(time.DateOnly)
	}
	var money [3]int64
	payers := map[string]bool{}
	for _, k := range keys {
		m := days[k]
		// The worst outcome the most money says: ties go to the worse.
		o := 2
		for i := 1; i >= 0; i-- {
			if m[i] > m[o] {
				o = i
			}
		}
		total := m[0] + m[1] + m[2]
		money[o] += total
		payers[k.payer] = true
		r.Counted++
		var w *directory.ReportWeek
		if wk := monday(k.day); !wk.Before(first) && !wk.After(thisWeek) {
			w = &r.Weeks[int(wk.Sub(first).Hours()/24/7)]
		}
		switch o {
		case 0:
			r.Delivered++
			if w != nil {
				w.Delivered++
			}
		case 1:
			r.Wrong++
			if w != nil {
				w.Wrong++
			}
		default:
			r.NotDelivered++
			if w != nil {
				w.NotDelivered++
			}
		}
	}
	r.Payers = len(payers)
	all := money[0] + money[1] + money[2]
	r.Paid, _ = x402.DecimalValue(strconv.FormatInt(all, 10), 6)
	if all > 0 {
		share := func(m int64) float64 { return math.Round(float64(m)/float64(all)*10000) / 10000 }
		r.Rates = directory.ReportRates{Delivered: share(money[0]), Wrong: share(money[1]), NotDelivered: share(money[2])}
	}
	r.MovesScore = r.Counted >= ReportFloor && r.Payers >= ReportPayersFloor
	return r
}

// applyReports is step 7 of Score: past the floor, the share of the reports' money
// saying wrong or not delivered takes up to ReportPoints off the score, never below
// CautionFrom on their account (a score already under it is left as it is). Reports
// saying delivered add nothing.
func applyReports(score float64, r *directory.Reports) float64 {
	if r == nil || !r.MovesScore {
		return score
	}
	bad := r.Rates.Wrong + r.Rates.NotDelivered
	return max(score-ReportPoints*bad, min(score, CautionFrom))
}

func outcomeIndex(outcome string) int {
	switch outcome {
	case ReportDelivered:
		return 0
	case ReportWrong:
		return 1
	}
	return 2
}

func day(t time.Time) time.Time {
	t = t.UTC()
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
}

func monday(d time.Time) time.Time {
	return d.AddDate(0, 0, -(int(d.Weekday())+6)%7)
}
