package api

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/waystation/waystation/internal/catalog"
	"github.com/waystation/waystation/internal/problem"
	"github.com/waystation/waystation/internal/trust"
	"github.com/waystation/waystation/internal/x402"
)

// Prober calls a seller's endpoint as the directory's prober does: through its
// SSRF-safe dialer, never paying.
type Prober interface {
	Probe(ctx context.Context, t trust.Target) trust.Result
}

type quoteRequest struct {
	URL    string `json:"url"`
	Method string `json:"method"`
}

func (q *quoteRequest) validate() error {
	if err := httpURL("url", q.URL); err != nil {
		return err
	}
	switch strings.ToUpper(q.Method) {
	case "", http.MethodGet, http.MethodPost, http.MethodHead:
	default:
		return problem.Invalid("method must be GET, POST or HEAD: a quote never sends anything that changes the seller's state.")
	}
	return nil
}

type quotedOffer struct {
	Version           int    `json:"x402Version"`
	Scheme            string `json:"scheme"`
	Network           string `json:"network"`
	Asset             string `json:"asset"`
	PayTo             string `json:"payTo"`
	Amount            string `json:"amount"`
	MaxTimeoutSeconds int    `json:"maxTimeoutSeconds"`
	Resource          string `json:"resource"`
}

// debit is what paying the offer takes from the payer: the seller's amount, as the
// service adds no fee of its own.
type debit struct {
	Amount  string  `json:"amount"`
	Value   *string `json:"value"`
	Symbol  *string `json:"symbol"`
	Asset   string  `json:"asset"`
	Network string  `json:"network"`
	Fee     string  `json:"fee"`
	Testnet bool    `json:"testnet"`
}

type quote struct {
	URL        string        `json:"url"`
	Outcome    string        `json:"outcome"`
	HTTPStatus int           `json:"httpStatus"`
	Offer      *quotedOffer  `json:"offer"`
	Debit      *debit        `json:"debit"`
	ExpiresAt  *time.Time    `json:"expiresAt"`
	Reason     *string       `json:"reason"`
	Merchant   merchantCheck `json:"merchant"`
	QuotedAt   time.Time     `json:"quotedAt"`
}

// handleQuote probes the seller behind url, never paying, and answers its x402
// offer, what paying it would debit and until when, with the directory's advisory
// verdict on the seller and why.
func (s *Server) handleQuote() http.HandlerFunc {
	return s.serve(func(w http.ResponseWriter, r *http.Request) error {
		var req quoteRequest
		if _, err := s.readJSON(w, r, &req); err != nil {
			return err
		}
		out, err := s.quote(r.Context(), req)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, out)
		return nil
	})
}

// quote probes the seller behind req's url, never paying: see handleQuote.
func (s *Server) quote(ctx context.Context, req quoteRequest) (quote, error) {
	u, _ := url.Parse(req.URL)
	check, err := s.checkMerchant(u)
	if err != nil {
		return quote{}, err
	}
	host, _ := catalog.NormalizeHostname(u.Hostname())
	res := s.svc.Prober.Probe(ctx, trust.Target{Hostname: host, Method: strings.ToUpper(req.Method), URL: req.URL})
	out := quote{URL: req.URL, Outcome: res.Outcome, HTTPStatus: res.HTTPStatus, Merchant: check, QuotedAt: res.ProbedAt}
	if res.Reason != "" {
		out.Reason = &res.Reason
	}
	if o := res.Offer; o != nil {
		out.Offer = &quotedOffer{Version: o.Version, Scheme: o.Scheme, Network: o.Network, Asset: o.Asset, PayTo: o.PayTo,
			Amount: o.Amount, MaxTimeoutSeconds: o.MaxTimeoutSeconds, Resource: o.Resource}
		d := &debit{Amount: o.Amount, Asset: o.Asset, Network: o.Network, Fee: "0"}
		if a, ok := x402.LookupAsset(o.Network, o.Asset); ok {
			d.Symbol, d.Testnet = &a.Symbol, a.Testnet
			if v, ok := x402.DecimalValue(o.Amount, a.Decimals); ok {
				d.Value = &v
			}
		}
		if o.Amount != "" {
			out.Debit = d
		}
		if o.MaxTimeoutSeconds > 0 {
			at := res.ProbedAt.Add(time.Duration(o.MaxTimeoutSeconds) * time.Second)
			out.ExpiresAt = &at
		}
	}
	return out, nil
}
