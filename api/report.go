package api

import (
	"net/http"

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
