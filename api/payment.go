package api

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/waystation/waystation/internal/auth"
	"github.com/waystation/waystation/internal/payment"
)

type createPaymentRequest struct{ payment.Ask }

func (c *createPaymentRequest) validate() error { return c.Ask.Validate() }

func (c *createPaymentRequest) clientKey() string { return "clientRequestId:" + c.ClientRequestID }

// paymentCreated is the answer to an ask to pay: the authorize_payment request the
// person decides, and the payment, the operation to follow.
type paymentCreated struct {
	Request requestJSON     `json:"request"`
	Payment payment.Payment `json:"payment"`
}

// handleCreatePayment reads the seller's offer for the agent's exact request and
// raises the authorize_payment request its person decides, once per clientRequestId.
func (s *Server) handleCreatePayment() http.HandlerFunc {
	return s.serve(func(w http.ResponseWriter, r *http.Request) error {
		var req createPaymentRequest
		id, body, err := s.readSessionRequest(w, r, &req)
		if err != nil {
			return err
		}
		if err := s.checkAsk(r.Context(), req.Ask); err != nil {
			return err
		}
		route := "POST /sessions/" + id + "/x402/payments"
		s.once(w, r, route, req.clientKey(), body, s.svc.clientIDTTL(), func(w http.ResponseWriter) error {
			out, err := s.askPayment(r.Context(), id, req.Ask)
			if err != nil {
				return err
			}
			writeJSON(w, http.StatusCreated, out)
			return nil
		})
		return nil
	})
}

// checkAsk refuses an ask to pay holding one of the user's protected values in the
// form it is kept: the request is kept and shown to the person.
func (s *Server) checkAsk(ctx context.Context, ask payment.Ask) error {
	written, _ := json.Marshal(ask)
	return s.checkProtected(ctx, written)
}

// askPayment reads the directory's word on the seller of ask and asks the payment
// service to pay it in session sid (see payment.Service.Ask), answering as the API
// shows it.
func (s *Server) askPayment(ctx context.Context, sid string, ask payment.Ask) (paymentCreated, error) {
	u, _ := url.Parse(ask.HTTPRequest.URL)
	check, err := s.checkMerchant(u)
	if err != nil {
		return paymentCreated{}, err
	}
	v := payment.Verdict{Verdict: check.Verdict, Score: check.Score, Listed: check.Listed}
	pay, rq, err := s.svc.Payments.Ask(ctx, principalOf(ctx), sid, ask, v, s.svc.Sessions.Limits.Events)
	if err != nil {
		return paymentCreated{}, err
	}
	return paymentCreated{Request: s.requestBody(rq), Payment: pay}, nil
}

// handlePayment answers a payment's state.
func (s *Server) handlePayment() http.HandlerFunc {
	return s.serve(func(w http.ResponseWriter, r *http.Request) error {
		sid, err := sessionID(r)
		if err != nil {
			return err
		}
		id, err := uuidParam(r, "pid", payment.ErrNotFound)
		if err != nil {
			return err
		}
		pay, err := s.svc.Payments.Payment(r.Context(), principal(r), sid, id)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, pay)
		return nil
	})
}

// agentID is the {id} of an agents path, or a 404.
func agentID(r *http.Request) (string, error) { return uuidParam(r, "id", auth.ErrAgentNotFound) }

// handleSpendingLimits answers one of the user's agents' spending limits and spend.
func (s *Server) handleSpendingLimits() http.HandlerFunc {
	return s.serve(func(w http.ResponseWriter, r *http.Request) error {
		id, err := agentID(r)
		if err != nil {
			return err
		}
		p := principal(r)
		if _, err := s.svc.Auth.Agent(r.Context(), p.UserID, id); err != nil {
			return err
		}
		out, err := s.svc.Payments.Limits(r.Context(), id)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, out)
		return nil
	})
}

type limitsRequest struct{ payment.LimitsInput }

func (l *limitsRequest) validate() error {
	_, err := l.LimitsInput.Limits()
	return err
}

// handleSetSpendingLimits sets what one of the user's agents may spend.
func (s *Server) handleSetSpendingLimits() http.HandlerFunc {
	return s.serve(func(w http.ResponseWriter, r *http.Request) error {
		id, err := agentID(r)
		if err != nil {
			return err
		}
		var req limitsRequest
		if _, err := s.readJSON(w, r, &req); err != nil {
			return err
		}
		l, _ := req.LimitsInput.Limits()
		out, err := s.svc.Payments.SetLimits(r.Context(), principal(r), id, l)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, out)
		return nil
	})
}
