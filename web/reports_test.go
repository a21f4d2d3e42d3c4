package web

import (
	"context"
	"strings"
	"testing"

	"github.com/waystation/waystation/internal/directory"
)

// TestTheMerchantPageShowsReportsAndTheirPlot: the page says the counted reports,
// what was received and seen undelivered, whether they count in the score, and
// plots the weeks as an SVG drawn on the server, with its figures in words.
func TestTheMerchantPageShowsReportsAndTheirPlot(t *testing.T) {
	weeks := make([]directory.ReportWeek, 12)
	for i := range weeks {
		weeks[i].Week = "2026-09-0" + string(rune('1'+i%9))
	}
	weeks[10] = directory.ReportWeek{Week: "2026-11-16", Delivered: 3, Wrong: 1}
	weeks[11] = directory.ReportWeek{Week: "2026-11-23", NotDelivered: 2}
	mr := directory.Merchant{Hostname: "api.seller.example", Providers: []string{"Seller"},
		Trust: directory.Trust{Verdict: directory.VerdictCaution, Advisory: true,
			Reports: &directory.Reports{Received: 9, Observed: 1, Counted: 6, Delivered: 3, Wrong: 1, NotDelivered: 2, Payers: 4,
				Paid: "0.6", MovesScore: true, Weeks: weeks},
			Demand: &directory.ServiceDemand{Settled: 12, Payers: 5, Repeat: 3, Organic: 3}}}
	v := merchantRecordView(mr)
	var b strings.Builder
	if err := reportsSection(*v.Reports).Render(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	if err := serviceDemandSection(*v.ServiceDemand).Render(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{"<dd>6, from 4 people, weighing 0.6 USD</dd>", "Paid calls seen undelivered", "They count in the score",
		`<svg role="img" aria-labelledby="report-chart-title"`, "Week of 2026-11-16: 3 delivered, 1 wrong or useless, 0 not delivered",
		`class="report-not-delivered"`, "6 counted reports over the last 12 weeks", "5, 3 of them on more than one day", "Organic payers"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q:\n%s", want, page)
		}
	}
	if strings.Contains(page, "<script") {
		t.Error("the plot needs script")
	}
	// Nothing reported: no section, no plot.
	if v := merchantRecordView(directory.Merchant{Hostname: "quiet.example"}); v.Reports != nil || v.ServiceDemand != nil {
		t.Errorf("a seller without reports shows %+v %+v", v.Reports, v.ServiceDemand)
	}
}
