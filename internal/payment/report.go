package payment

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/waystation/waystation/internal/auth"
	"github.com/waystation/waystation/internal/problem"
)

// Outcomes a delivery report may give, and the reason codes each takes. A report is
// codes alone: no free text, which could carry a value out to a seller's public
// record.
const (
	ReportDelivered    = "delivered"     // delivered as described
	ReportWrong        = "wrong"         // delivered, but wrong or useless
	ReportNotDelivered = "not_delivered" // paid, and nothing usable came back
)

// ReportReasons are the reason codes of each outcome.
var ReportReasons = map[string][]string{
	ReportDelivered:    {"as_described"},
	ReportWrong:        {"wrong_content", "malformed", "incomplete", "stale", "not_as_described"},
	ReportNotDelivered: {"error_answer", "empty_answer", "no_answer", "asked_to_pay_again"},
}

// ReportOutcomes lists the outcomes, best first.
var ReportOutcomes = []string{ReportDelivered, ReportWrong, ReportNotDelivered}

// ReportInput is what an agent or its person says of a settled payment's delivery.
type ReportInput struct {
	Outcome string `json:"outcome"`
	Reason  string `json:"reason"`
}

// Validate checks that the outcome is one of ReportOutcomes and the reason one of
// its codes; a delivered report's reason may be left out (as_described).
func (in *ReportInput) Validate() error {
	reasons, ok := ReportReasons[in.Outcome]
	if !ok {
		return problem.Invalid("outcome must be one of " + strings.Join(ReportOutcomes, ", ") + ".")
	}
	if in.Reason == "" && in.Outcome == ReportDelivered {
		in.Reason = reasons[0]
	}
	if !slices.Contains(reasons, in.Reason) {
		return problem.Invalid("reason must be one of " + strings.Join(reasons, ", ") + " for outcome " + in.Outcome + ".")
	}
	return nil
}

// Report is a delivery report as recorded: one per settled payment, weighed by what
// the payment paid. It is evidence for the seller's public record, never a say in
// whether a payment is made.
type Report struct {
	PaymentID  string    `json:"paymentId"`
	Hostname   string    `json:"hostname"`
	Outcome    string    `json:"outcome"`
	Reason     string    `json:"reason"`
	ReportedBy string    `json:"reportedBy"`
	Value      Micros    `json:"value"`
	CreatedAt  time.Time `json:"createdAt"`
}

// ReportWindow is how long after its payment settled a report is taken: what the
// seller gave is then fresh, and a seller's record is not rewritten by reports on
// payments of long ago.
const ReportWindow = 30 * 24 * time.Hour

// Errors of a report.
var (
	ErrReportWindowClosed = problem.New(problem.ReportWindowClosed,
		"This payment settled more than 30 days ago: a report is taken within 30 days of its payment settling.")
	ErrNotSettled = problem.New(problem.PaymentNotSettled,
		"This payment is not settled: only a payment the seller was paid can be reported.")
	ErrAlreadyReported = problem.New(problem.AlreadyReported,
		"This payment was reported already: one report per payment, and the first stands.")
)

// ReportStore keeps delivery reports.
type ReportStore interface {
	// ReportDelivery records in's report on payment id of session sessionID, if p
	// may see the payment (its own agent, or its person): ErrNotFound for a
	// payment p may not see, ErrNotSettled for one that is not settled,
	// ErrReportWindowClosed for one settled over ReportWindow ago,
	// ErrAlreadyReported for one reported before.
	ReportDelivery(ctx context.Context, p auth.Principal, sessionID, id string, in ReportInput) (Report, error)
}

// Report records what the agent or person p says the seller gave for payment id of
// session sessionID. It changes nothing about any payment: it feeds the seller's
// public record alone.
func (s *Service) Report(ctx context.Context, p auth.Principal, sessionID, id string, in ReportInput) (Report, error) {
	if err := in.Validate(); err != nil {
		return Report{}, err
	}
	if s.Reports == nil {
		return Report{}, ErrNotFound
	}
	return s.Reports.ReportDelivery(ctx, p, sessionID, id, in)
}
