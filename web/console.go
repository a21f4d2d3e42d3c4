package web

import (
	"encoding/csv"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/waystation/waystation/internal/auth"
	"github.com/waystation/waystation/internal/payment"
	"github.com/waystation/waystation/internal/problem"
	"github.com/waystation/waystation/internal/protect"
)

// ledgerLimit is how many payments the spend page and its CSV hold.
const ledgerLimit = 500

// SpendView is the person's spend ledger, with each agent's spend per day against
// its limits.
type SpendView struct {
	Page
	Bar     AppBar
	Charts  []SpendChart
	Rows    []SpendRow
	Settled string
	Limit   int
	// Message is what the page says on top: a report the person could not make.
	Message string
	// ReportChoices are what a delivery report may say, for each row's form.
	ReportChoices []ReportChoiceGroup
}

// spendDays is how many UTC days, today included, the spend charts draw.
const spendDays = 14

// SpendChart draws one agent's spend per UTC day, oldest to today, a bar a day as tall
// as what it spent, against a line at its daily limit; a day over the limit (the
// limit lowered after it spent) is marked. Summary says the same in words, with the
// month against the monthly limit.
type SpendChart struct {
	Agent         string
	Width, Height int
	LimitY        int
	Bars          []SpendBar
	FirstDay      string
	Summary       string
}

// SpendBar is one day of a spend chart.
type SpendBar struct {
	X, Y, H int
	Over    bool
	Title   string
}

// spendChart draws agent's spend per day (days: its DaySpend, in any order) over the
// spendDays UTC days that end with today, against its limits l.
func spendChart(agent string, l payment.LimitsAndSpend, days []payment.DaySpend, today time.Time) SpendChart {
	const bar, gap, height, top = 16, 6, 80, 8
	today = time.Date(today.Year(), today.Month(), today.Day(), 0, 0, 0, 0, time.UTC)
	first := today.AddDate(0, 0, 1-spendDays)
	spent := make([]payment.Micros, spendDays)
	for _, d := range days {
		if i := int(d.Day.Sub(first).Hours() / 24); i >= 0 && i < spendDays {
			spent[i] += d.Spent
		}
	}
	top1 := max(l.Daily, slices.Max(spent), 1)
	c := SpendChart{Agent: agent, Width: spendDays*(bar+gap) + gap, Height: top + height + 2, FirstDay: first.Format("2 Jan")}
	c.LimitY = top + height - int(int64(l.Daily)*height/int64(top1))
	var total, most payment.Micros
	over, active, mostDay := 0, 0, ""
	for i, v := range spent {
		day := first.AddDate(0, 0, i)
		h := int(int64(v) * height / int64(top1))
		if v > 0 {
			h = max(h, 2)
			active++
		}
		b := SpendBar{X: gap + i*(bar+gap), Y: top + height - h, H: h, Over: v > l.Daily,
			Title: day.Format("Mon 2 Jan") + ": " + v.String() + " of " + l.Daily.String() + " USD"}
		if b.Over {
			over++
			b.Title += ", over the daily limit"
		}
		if v > most {
			most, mostDay = v, day.Format("2 Jan")
		}
		total += v
		c.Bars = append(c.Bars, b)
	}
	c.Summary = fmt.Sprintf("%s spent %s USD in the last %d days", agent, total.String(), spendDays)
	switch {
	case active == 0:
		c.Summary += ", nothing on any day"
	case over > 0:
		c.Summary += fmt.Sprintf(", on %d of them; the most, %s USD on %s; %d over the daily limit of %s USD", active, most.String(), mostDay, over, l.Daily.String())
	default:
		c.Summary += fmt.Sprintf(", on %d of them; the most, %s USD on %s, within the daily limit of %s USD", active, most.String(), mostDay, l.Daily.String())
	}
	c.Summary += fmt.Sprintf(". This month: %s of %s USD.", l.Spent.ThisMonth.String(), l.Monthly.String())
	return c
}

// spendCharts draws the spend of each of the person's agents that has limits.
func (s *Server) spendCharts(r *http.Request, ws auth.WebSession) ([]SpendChart, error) {
	days, err := s.approvals.Payments.DailySpend(r.Context(), ws.Principal, spendDays)
	if err != nil || !s.approvals.Payments.Keeps() {
		return nil, err
	}
	agents, err := s.approvals.Auth.Agents(r.Context(), ws.UserID)
	if err != nil {
		return nil, err
	}
	var charts []SpendChart
	for _, a := range agents {
		l, err := s.approvals.Payments.AgentLimits(r.Context(), a.ID)
		if err != nil {
			return nil, err
		}
		if l == nil {
			continue
		}
		var own []payment.DaySpend
		for _, d := range days {
			if d.AgentID == a.ID {
				own = append(own, d)
			}
		}
		charts = append(charts, spendChart(agentName(a), *l, own, s.approvals.Payments.Clock().UTC()))
	}
	return charts, nil
}

// SpendRow is one payment of the ledger.
type SpendRow struct {
	When, Agent, Seller, Amount, Network, PayTo, Status, Transaction, AnswerHash, RequestURL string
	// The payee, transaction and hash as the table shows them, shortened (the full
	// value is the cell's title), and the status in the words of the request pages.
	PayToShort, TransactionShort, AnswerHashShort, StatusLabel string
	// ID is the payment's id; Reported says its delivery report, and ReportAction,
	// for a settled payment without one, is where its report form posts.
	ID, Reported, ReportAction string
}

// shortened is a long identifier (an address, a transaction, a hash) as a table cell
// shows it: its head and tail, which are what people compare, around an ellipsis.
func shortened(id string) string {
	const head, tail = 6, 4
	if utf8.RuneCountInString(id) <= head+tail+3 {
		return id
	}
	r := []rune(id)
	return string(r[:head]) + "…" + string(r[len(r)-tail:])
}

// paymentLabel is a payment's status as the request pages name it: the words before
// their explanation.
func paymentLabel(status string) string {
	words, ok := paymentWords[status]
	if !ok {
		return status
	}
	label, _, _ := strings.Cut(words, ":")
	return label
}

// AgentsView is the person's agents, each with its spending limits and spend.
type AgentsView struct {
	Page
	Bar     AppBar
	Agents  []AgentRow
	Message string
}

// AgentRow is one agent and its limits, as the form shows them.
type AgentRow struct {
	ID, Name, Status, StatusAction string
	Disabled, Limits               bool
	// PausedWhy says why the service paused the agent, and Detections lists its
	// requests that were refused for holding protected values, newest first.
	PausedWhy                                  string
	Detections                                 []string
	PerPayment, Daily, Monthly, Hosts, Summary string
	Allow, Paused                              bool
	SpentToday, SpentMonth, Action             string
}

func ledgerRows(entries []payment.LedgerEntry, now time.Time) ([]SpendRow, payment.Micros) {
	var settled payment.Micros
	rows := make([]SpendRow, 0, len(entries))
	for _, e := range entries {
		r := SpendRow{When: formatTime(e.CreatedAt), Agent: e.Agent, Seller: e.Host, Amount: e.Value.String() + " " + e.Symbol,
			Network: networkLabel(e.Network), PayTo: e.PayTo, Status: e.Status, Transaction: "-", AnswerHash: "-", ID: e.PaymentID}
		r.Reported, r.ReportAction = reportCell(e, now)
		if e.Failure != nil {
			r.Status += ": " + *e.Failure
		}
		if e.Transaction != nil {
			r.Transaction = *e.Transaction
		}
		if e.ResponseSHA256 != nil {
			r.AnswerHash = *e.ResponseSHA256
		}
		r.StatusLabel = paymentLabel(e.Status)
		if e.Failure != nil {
			r.StatusLabel += ": " + *e.Failure
		}
		r.PayToShort, r.TransactionShort, r.AnswerHashShort = shortened(r.PayTo), shortened(r.Transaction), shortened(r.AnswerHash)
		if e.RequestID != "" {
			r.RequestURL = requestURL(e.RequestID)
		}
		if e.UpTo {
			r.Amount = "up to " + r.Amount
		}
		paid := e.Value
		if e.Settled != nil {
			paid = *e.Settled
			r.Amount = e.Settled.String() + " " + e.Symbol + " of " + r.Amount
		}
		if e.Status == payment.StatusSettled {
			settled += paid
		}
		rows = append(rows, r)
	}
	return rows, settled
}

// ledger is the newest payments of the signed-in person's agents, which the spend
// page and its CSV show alike; false when it answered instead (a sign-in, a failure).
func (s *Server) ledger(w http.ResponseWriter, r *http.Request) (auth.WebSession, []payment.LedgerEntry, bool) {
	ws, ok := s.signedIn(w, r, "", http.StatusOK)
	if !ok {
		return ws, nil, false
	}
	entries, err := s.approvals.Payments.Ledger(r.Context(), ws.Principal, ledgerLimit)
	if err != nil {
		s.fail(w, r, err)
		return ws, nil, false
	}
	return ws, entries, true
}

// handleSpend shows the payments of the person's agents, newest first, with receipts.
func (s *Server) handleSpend() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ws, entries, ok := s.ledger(w, r)
		if !ok {
			return
		}
		s.spendPage(w, r, ws, entries, "", http.StatusOK)
	}
}

// spendPage draws the spend page of the ledger's entries with message on top, at
// status.
func (s *Server) spendPage(w http.ResponseWriter, r *http.Request, ws auth.WebSession, entries []payment.LedgerEntry, message string, status int) {
	charts, err := s.spendCharts(r, ws)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	rows, settled := ledgerRows(entries, s.approvals.Payments.Clock())
	v := SpendView{Page: s.appPage("Spending"), Bar: appBar(ws), Charts: charts, Rows: rows, Settled: settled.String() + " USD", Limit: ledgerLimit,
		Message: message, ReportChoices: reportChoices}
	s.renderApp(w, r, SpendPage(v), status)
}

// handleSpendCSV answers the same ledger as CSV, for a spreadsheet.
func (s *Server) handleSpendCSV() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		_, entries, ok := s.ledger(w, r)
		if !ok {
			return
		}
		w.Header().Set("Content-Type", "text/csv; charset=utf-8")
		w.Header().Set("Content-Disposition", `attachment; filename="waystation-spend.csv"`)
		if r.Method == http.MethodHead {
			return
		}
		c := csv.NewWriter(w)
		c.Write([]string{"created_at", "settled_at", "payment_id", "agent", "seller", "amount_usd", "asset", "network", "pay_to", "status", "failure", "transaction", "answer_sha256"})
		for _, e := range entries {
			settledAt, failure, tx, hash := "", "", "", ""
			if e.SettledAt != nil {
				settledAt = e.SettledAt.UTC().Format(time.RFC3339)
			}
			if e.Failure != nil {
				failure = *e.Failure
			}
			if e.Transaction != nil {
				tx = *e.Transaction
			}
			if e.ResponseSHA256 != nil {
				hash = *e.ResponseSHA256
			}
			c.Write(csvSafe(e.CreatedAt.UTC().Format(time.RFC3339), settledAt, e.PaymentID, e.Agent, e.Host, e.Value.String(), e.Symbol,
				e.Network, e.PayTo, e.Status, failure, tx, hash))
		}
		c.Flush()
	}
}

// csvSafe keeps a spreadsheet from reading a cell as a formula: one that starts with
// =, +, -, @, a tab or a carriage return gets a leading apostrophe.
func csvSafe(cells ...string) []string {
	for i, c := range cells {
		if c != "" && strings.ContainsRune("=+-@\t\r", rune(c[0])) {
			cells[i] = "'" + c
		}
	}
	return cells
}

// handleAgents shows the person's agents with their limits, each in a form.
func (s *Server) handleAgents() http.HandlerFunc {
	return s.consolePage(s.agentsPage)
}

func (s *Server) agentsPage(w http.ResponseWriter, r *http.Request, ws auth.WebSession, message string, status int) {
	agents, err := s.approvals.Auth.Agents(r.Context(), ws.UserID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	detections, err := s.approvals.Guard.Detections(r.Context(), ws.UserID, 100)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	v := AgentsView{Page: s.appPage("Agents"), Bar: appBar(ws), Message: message}
	for _, a := range agents {
		row := AgentRow{ID: a.ID, Name: agentName(a), Status: a.Status, Disabled: a.Status == auth.AgentDisabled,
			StatusAction: appPath + "/agents/" + a.ID + "/status"}
		if a.PausedReason == protect.ReasonProtectedValues {
			row.PausedWhy = "Waystation paused it: its requests held your protected values, which it was never given, or many guesses shaped like them, " +
				strconv.Itoa(s.approvals.Guard.Config().Budget) + " times. An agent that sends a value it was not given has guessed or stolen it; " +
				"check what it was told to do (a web page or a message may have instructed it) before you resume it."
		}
		for _, d := range detections {
			if d.AgentID == a.ID && len(row.Detections) < 10 {
				row.Detections = append(row.Detections, formatTime(d.At)+" · "+d.Route+" · "+detectionWords[d.Kind])
			}
		}
		l, err := s.approvals.Payments.AgentLimits(r.Context(), a.ID)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		if l != nil {
			row.Limits = true
			row.PerPayment, row.Daily, row.Monthly, row.Hosts = l.PerPayment.String(), l.Daily.String(), l.Monthly.String(), strings.Join(l.Hosts, "\n")
			row.Allow, row.Paused, row.Summary = l.HostsMode == payment.HostsAllow, l.Paused, l.Describe()
			row.SpentToday = l.Spent.Today.String() + " of " + l.Daily.String() + " USD"
			row.SpentMonth = l.Spent.ThisMonth.String() + " of " + l.Monthly.String() + " USD"
			row.Action = appPath + "/agents/" + a.ID + "/limits"
		}
		v.Agents = append(v.Agents, row)
	}
	s.renderApp(w, r, AgentsPage(v), status)
}

// handleSetLimits sets one agent's spending limits from the form.
func (s *Server) handleSetLimits() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id, ws, ok := s.consoleItemForm(w, r)
		if !ok {
			return
		}
		in := payment.LimitsInput{PerPayment: strings.TrimSpace(r.PostForm.Get("perPayment")), Daily: strings.TrimSpace(r.PostForm.Get("daily")),
			Monthly: strings.TrimSpace(r.PostForm.Get("monthly")), HostsMode: r.PostForm.Get("hostsMode"), Paused: r.PostForm.Get("paused") == "true"}
		in.Hosts = append(in.Hosts, strings.FieldsFunc(r.PostForm.Get("hosts"), func(c rune) bool { return c == ',' || c == '\n' || c == '\r' || c == ' ' })...)
		l, err := in.Limits()
		if err == nil {
			_, err = s.approvals.Payments.SetLimits(r.Context(), ws.Principal, id, l)
		}
		f := form{page: func(message string, status int) { s.agentsPage(w, r, ws, message, status) },
			refusals: detailed("Nothing was changed: ", http.StatusUnprocessableEntity, problem.ValidationFailed)}
		s.answer(w, r, f, err, seeOther(w, r, appPath+"/agents"))
	}
}

// detectionWords says what each kind of detection was, for the person.
var detectionWords = map[string]string{
	protect.KindValue:      "held one of your protected values, never given to it",
	protect.KindCandidates: "held many guesses shaped like a card number, date, phone number or email address",
}
