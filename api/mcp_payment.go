package api

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/waystation/waystation/internal/payment"
)

// The payment's tool: pay_seller, as POST /sessions/{id}/x402/payments.

// addPaymentTools adds the payment's tools.
func (s *Server) addPaymentTools(srv *mcp.Server) {
	addTool(srv, &mcp.Tool{Name: "pay_seller", OutputSchema: outputSchema("PaymentCreated", "Request"), Title: "Ask to pay a seller",
		Description: "Ask the service to pay a seller for one exact HTTP request, at most maximumDebit US dollars. The person approves the payment on its page (approvalUrl); the service then pays within the limits the person set and keeps the seller's answer, which claim_artifact gives you. With waitSeconds, waits for all that with progress notifications. You never hold a key or a signature." + noValues},
		s.toolPaySeller)
}

type payIn struct {
	SessionID       string     `json:"sessionId"`
	ClientRequestID string     `json:"clientRequestId" jsonschema:"makes a retry safe: the same id answers the same payment"`
	MaximumDebit    string     `json:"maximumDebit" jsonschema:"the most this payment may take, in US dollars, e.g. 0.05"`
	HTTPRequest     envelopeIn `json:"httpRequest" jsonschema:"the exact request to pay for; the seller's answer to it is what you claim"`
	TTLSeconds      *int64     `json:"ttlSeconds,omitempty" jsonschema:"how long the person has to approve (30 to 86400; default 900)"`
	Reason          string     `json:"reason,omitempty" jsonschema:"why, shown to the person"`
	WaitSeconds     int        `json:"waitSeconds,omitempty" jsonschema:"wait up to this many seconds (at most 600) for the person's approval and the payment, with progress notifications"`
}

type envelopeIn struct {
	Method  string            `json:"method,omitempty" jsonschema:"GET (default), POST, PUT, PATCH or DELETE"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers,omitempty"`
	Body    string            `json:"body,omitempty"`
}

// toolPaySeller asks to pay a seller as POST /sessions/{id}/x402/payments does, once
// per client id, and with waitSeconds waits for the payment's request as
// wait_request does.
func (s *Server) toolPaySeller(ctx context.Context, req *mcp.CallToolRequest, in payIn) (*mcp.CallToolResult, map[string]any, error) {
	sid, p, err := sessionPath(in.SessionID, "/x402/payments")
	if err != nil {
		return nil, nil, err
	}
	return s.waitRaised(ctx, req, in.SessionID, s.askToPay(ctx, sid, p, in), in.WaitSeconds, paymentRequestID)
}

// askToPay is the route's answer to the ask to pay that the arguments say, in
// session sid whose payments' path is p: refused at once on a server that cannot
// pay, or holding a protected value.
func (s *Server) askToPay(ctx context.Context, sid, p string, in payIn) apiAnswer {
	if err := s.svc.Payments.CheckPayer(); err != nil {
		return s.toolProblem(ctx, p, err)
	}
	var ask createPaymentRequest
	b, err := s.toolWrite(ctx, payment.Ask{ClientRequestID: in.ClientRequestID, MaximumDebit: in.MaximumDebit, TTLSeconds: in.TTLSeconds,
		Reason: in.Reason, HTTPRequest: payment.Envelope(in.HTTPRequest)}, &ask)
	if err == nil {
		err = s.checkAsk(ctx, ask.Ask)
	}
	if err != nil {
		return s.toolProblem(ctx, p, err)
	}
	return s.toolOnce(ctx, p, ask.clientKey(), b, http.StatusCreated, func() (any, error) {
		return s.askPayment(ctx, sid, ask.Ask)
	})
}

// paymentRequestID is the id of the request that POST
// /sessions/{id}/x402/payments answers (a replay's too).
func paymentRequestID(body []byte) string {
	var r struct {
		Request struct{ ID string }
	}
	json.Unmarshal(body, &r)
	return r.Request.ID
}
