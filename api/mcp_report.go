package api

import (
	"context"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The report's tool: report_delivery, as POST /sessions/{id}/x402/payments/{pid}/report.

// addReportTools adds the report's tool.
func (s *Server) addReportTools(srv *mcp.Server) {
	addTool(srv, &mcp.Tool{Name: "report_delivery", OutputSchema: outputSchema("DeliveryReport"), Title: "Report a delivery",
		Description: "Say what a seller gave for one of your settled payments, once per payment: delivered (as described), wrong (delivered but wrong or useless) or not_delivered, with a reason code. Codes only, no text. It feeds the seller's public trust record (check_merchant) and changes no payment." + noValues},
		s.toolReportDelivery)
}

type reportIn struct {
	SessionID string `json:"sessionId"`
	PaymentID string `json:"paymentId" jsonschema:"the payment's id, as pay_seller answered it"`
	Outcome   string `json:"outcome" jsonschema:"delivered, wrong or not_delivered"`
	Reason    string `json:"reason,omitempty" jsonschema:"delivered: as_described (default); wrong: wrong_content, malformed, incomplete, stale or not_as_described; not_delivered: error_answer, empty_answer, no_answer or asked_to_pay_again"`
}

// toolReportDelivery reports a settled payment's delivery as the route does.
func (s *Server) toolReportDelivery(ctx context.Context, _ *mcp.CallToolRequest, in reportIn) (*mcp.CallToolResult, map[string]any, error) {
	if err := idArg("paymentId", in.PaymentID, "the id pay_seller answered"); err != nil {
		return nil, nil, err
	}
	sid, p, err := sessionPath(in.SessionID, "/x402/payments/"+in.PaymentID+"/report")
	if err != nil {
		return nil, nil, err
	}
	var req reportRequest
	if _, err := s.toolWrite(ctx, map[string]string{"outcome": in.Outcome, "reason": in.Reason}, &req); err != nil {
		return toolResult(s.toolProblem(ctx, p, err))
	}
	out, err := s.svc.Payments.Report(ctx, principalOf(ctx), sid, in.PaymentID, req.ReportInput)
	return toolResult(s.toolAnswer(ctx, p, http.StatusCreated, out, err))
}
