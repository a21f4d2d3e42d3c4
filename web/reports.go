package web

import (
	"strconv"

	"github.com/waystation/waystation/internal/directory"
)

// ReportsView is what a merchant's page shows of the delivery reports on it and of
// the payments the service settled with it.
type ReportsView struct {
	Received, Observed, Counted, Payers string
	Delivered, Wrong, NotDelivered      string
	Paid, Moves                         string
	Chart                               *ReportChart
}

// ServiceDemandView is the use the service saw of a seller over 30 days.
type ServiceDemandView struct {
	Settled, Payers, Repeat, Organic string
}

// ReportChart draws the counted reports of the last weeks, oldest first: a stacked
// bar a week (delivered at the bottom, then wrong, then not delivered), each titled
// with its figures in words, so that it reads without colour.
type ReportChart struct {
	Width, Height int
	Weeks         []ReportBar
	Summary       string
}

// ReportBar is one week of a report chart: its three segments from the bottom.
type ReportBar struct {
	X     int
	Title string
	Parts []ReportPart
}

// ReportPart is one outcome's segment of a week's bar.
type ReportPart struct {
	Y, H  int
	Class string
}

func reportsView(r *directory.Reports) *ReportsView {
	if r == nil {
		return nil
	}
	v := &ReportsView{Received: strconv.Itoa(r.Received), Observed: strconv.Itoa(r.Observed), Counted: strconv.Itoa(r.Counted),
		Payers: strconv.Itoa(r.Payers), Delivered: strconv.Itoa(r.Delivered), Wrong: strconv.Itoa(r.Wrong),
		NotDelivered: strconv.Itoa(r.NotDelivered), Paid: r.Paid + " USD",
		Moves: "Too few to count in the score yet: they count from five reports by three people."}
	if r.MovesScore {
		v.Moves = "They count in the score: the share of their money saying wrong or not delivered takes up to 40 points off it, never below 40 on their account."
	}
	v.Chart = reportChart(r.Weeks)
	return v
}

func reportChart(weeks []directory.ReportWeek) *ReportChart {
	const bar, gap, height, top = 14, 4, 60, 4
	most := 0
	total := 0
	for _, w := range weeks {
		n := w.Delivered + w.Wrong + w.NotDelivered
		most = max(most, n)
		total += n
	}
	if total == 0 {
		return nil
	}
	c := &ReportChart{Width: len(weeks)*(bar+gap) + gap, Height: height + top,
		Summary: strconv.Itoa(total) + " counted reports over the last " + strconv.Itoa(len(weeks)) + " weeks, a bar a week, oldest first."}
	for i, w := range weeks {
		b := ReportBar{X: gap + i*(bar+gap), Title: "Week of " + w.Week + ": " + strconv.Itoa(w.Delivered) + " delivered, " +
			strconv.Itoa(w.Wrong) + " wrong or useless, " + strconv.Itoa(w.NotDelivered) + " not delivered"}
		y := top + height
		for _, part := range []struct {
			n     int
			class string
		}{{w.Delivered, "report-delivered"}, {w.Wrong, "report-wrong"}, {w.NotDelivered, "report-not-delivered"}} {
			if part.n == 0 {
				continue
			}
			h := max(1, part.n*height/most)
			y -= h
			b.Parts = append(b.Parts, ReportPart{Y: y, H: h, Class: part.class})
		}
		c.Weeks = append(c.Weeks, b)
	}
	return c
}

func serviceDemandView(d *directory.ServiceDemand) *ServiceDemandView {
	if d == nil {
		return nil
	}
	return &ServiceDemandView{Settled: strconv.Itoa(d.Settled), Payers: strconv.Itoa(d.Payers), Repeat: strconv.Itoa(d.Repeat),
		Organic: strconv.Itoa(d.Organic)}
}
