package api

import (
	"net/http"
	"strconv"

	"github.com/waystation/waystation/internal/directory"
	"github.com/waystation/waystation/internal/payment"
)

type reportRequest struct{ payment.ReportInput }

func (r *reportRequest) validate() error { return r.ReportInput.Validate() }

// handleReportDelivery records what the seller gave for one of the caller's settled
// payments: its agent or its person reports it, once.
func (s *Server) handleReportDelivery() http.HandlerFunc {
	return s.serve(func(w http.ResponseWriter, r *http.Request) error {
		sid, err := sessionID(r)
		if err != nil {
			return err
		}
		id, err := uuidParam(r, "pid", payment.ErrNotFound)
		if err != nil {
			return err
		}
		var req reportRequest
		if _, err := s.readJSON(w, r, &req); err != nil {
			return err
		}
		out, err := s.svc.Payments.Report(r.Context(), principal(r), sid, id, req.ReportInput)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusCreated, out)
		return nil
	})
}

// evidenceReasons say in words what paying agents reported of a seller and the use
// the service saw of it, for the merchant check.
func evidenceReasons(t directory.Trust) []string {
	var out []string
	if r := t.Reports; r != nil {
		s := "Delivery reports: " + strconv.Itoa(r.Counted) + " counted (one per person and day) from " + strconv.Itoa(r.Payers) +
			" people, weighing " + r.Paid + " USD: " + strconv.Itoa(r.Delivered) + " delivered, " + strconv.Itoa(r.Wrong) +
			" wrong or useless, " + strconv.Itoa(r.NotDelivered) + " not delivered"
		if r.MovesScore {
			s += "; they count in the score."
		} else {
			s += "; too few to count in the score."
		}
		out = append(out, s)
	}
	if d := t.Demand; d != nil {
		out = append(out, "Paid through this service "+strconv.Itoa(d.Settled)+" time(s) in 30 days by "+strconv.Itoa(d.Payers)+
			" people, "+strconv.Itoa(d.Repeat)+" of them on more than one day.")
	}
	return out
}
