package web

import (
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/waystation/waystation/internal/payment"
	"github.com/waystation/waystation/internal/problem"
)

// reportOutcomeWords and reportReasonWords say a delivery report's codes to its
// person.
var (
	reportOutcomeWords = map[string]string{
		payment.ReportDelivered:    "Delivered as described",
		payment.ReportWrong:        "Delivered, but wrong or useless",
		payment.ReportNotDelivered: "Not delivered",
	}
	reportReasonWords = map[string]string{
		"as_described":       "as described",
		"wrong_content":      "wrong content",
		"malformed":          "malformed",
		"incomplete":         "incomplete",
		"stale":              "out of date",
		"not_as_described":   "not what it described",
		"error_answer":       "the seller answered an error",
		"empty_answer":       "the seller answered nothing usable (empty)",
		"no_answer":          "no answer came",
		"asked_to_pay_again": "the seller asked to be paid again",
	}
)

// ReportChoiceGroup is one outcome of a delivery report and its reasons, as the
// report form's choices.
type ReportChoiceGroup struct {
	Label   string
	Choices []ReportChoice
}

// ReportChoice is one outcome and reason, sent as "outcome:reason".
type ReportChoice struct {
	Value, Label string
}

// reportChoices are every outcome with each of its reason codes: the form offers
// nothing else, and has no field for text.
var reportChoices = func() []ReportChoiceGroup {
	var out []ReportChoiceGroup
	for _, o := range payment.ReportOutcomes {
		g := ReportChoiceGroup{Label: reportOutcomeWords[o]}
		for _, reason := range payment.ReportReasons[o] {
			g.Choices = append(g.Choices, ReportChoice{Value: o + ":" + reason, Label: reportOutcomeWords[o] + ": " + reportReasonWords[reason]})
		}
		out = append(out, g)
	}
	return out
}()

// reportWords says a delivery report to the person: what it says and who made it.
func reportWords(r payment.LedgerReport) string {
	out, ok := reportOutcomeWords[r.Outcome]
	if !ok {
		out = r.Outcome
	}
	if reason, ok := reportReasonWords[r.Reason]; ok {
		out += ": " + reason
	} else {
		out += ": " + r.Reason
	}
	if r.ReportedBy == "agent" {
		return out + " (reported by the agent)"
	}
	return out + " (reported by you)"
}

// reportTooLate is what a ledger row says of a settled payment past its report
// window.
const reportTooLate = "Not reported; reports are taken within 30 days of a payment settling"

// reportCell is what a ledger row shows of e's delivery report at now: the report
// made, or for a settled payment without one the action its form posts to while
// it is in its window.
func reportCell(e payment.LedgerEntry, now time.Time) (reported, action string) {
	switch {
	case e.Report != nil:
		return reportWords(*e.Report), ""
	case e.Status != payment.StatusSettled || e.SessionID == "" || e.SettledAt == nil:
		return "", ""
	case now.Sub(*e.SettledAt) > payment.ReportWindow:
		return reportTooLate, ""
	}
	return "", reportURL(e.SessionID, e.PaymentID)
}

// reportURL is where the person reports payment pid of session sid.
func reportURL(sid, pid string) string {
	return appPath + "/sessions/" + sid + "/payments/" + pid + "/report"
}

// handleReport takes the person's delivery report on one of their agents' settled
// payments from the spend page's form: an outcome and a reason, in codes. A
// payment that is not theirs is not found; one reported already, or not settled,
// shows the page again saying so, and nothing is recorded.
func (s *Server) handleReport() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		pid := chi.URLParam(r, "pid")
		if !uuidPattern.MatchString(pid) {
			s.appNotFound(w, r)
			return
		}
		pid = strings.ToLower(pid)
		sid, ws, ok := s.consoleItemForm(w, r)
		if !ok {
			return
		}
		outcome, reason, _ := strings.Cut(r.PostForm.Get("report"), ":")
		_, err := s.approvals.Payments.Report(r.Context(), ws.Principal, sid, pid, payment.ReportInput{Outcome: outcome, Reason: reason})
		f := form{page: func(message string, status int) {
			entries, err := s.approvals.Payments.Ledger(r.Context(), ws.Principal, ledgerLimit)
			if err != nil {
				s.fail(w, r, err)
				return
			}
			s.spendPage(w, r, ws, entries, message, status)
		}, refusals: append(detailed("Nothing was reported: ", http.StatusUnprocessableEntity, problem.ValidationFailed),
			detailed("Nothing was reported: ", http.StatusConflict, problem.AlreadyReported, problem.PaymentNotSettled, problem.ReportWindowClosed)...)}
		s.answer(w, r, f, err, seeOther(w, r, appPath+"/spend#payment-"+pid))
	}
}
