package api

import (
	"context"
	"net/http"

	"github.com/waystation/waystation/internal/auth"
	"github.com/waystation/waystation/internal/problem"
	"github.com/waystation/waystation/internal/webhook"
)

// WebhookStore keeps a user's webhooks and their deliveries.
type WebhookStore interface {
	CreateWebhook(ctx context.Context, p auth.Principal, id string, n webhook.New, secret webhook.Sealed) (webhook.Webhook, error)
	Webhooks(ctx context.Context, p auth.Principal) ([]webhook.Webhook, error)
	DeleteWebhook(ctx context.Context, p auth.Principal, id string) error
	Deliveries(ctx context.Context, p auth.Principal, id string, limit int) ([]webhook.Delivery, error)
}

var errNoWebhooks = problem.New(problem.NotFound, "This server keeps no webhooks.")

type createWebhookRequest struct{ webhook.New }

func (c *createWebhookRequest) validate() error { return c.New.Validate() }

// createdWebhook is a new webhook with its secret, shown this once, and what will go
// wrong with it.
type createdWebhook struct {
	webhook.Webhook
	Secret   string   `json:"secret"`
	Warnings []string `json:"warnings"`
}

// handleCreateWebhook registers a webhook of the user; its secret, which signs every
// delivery, is answered this once and kept sealed. A URL that every delivery will be
// refused on is kept all the same (the operator may allow its host later), with a
// warning.
func (s *Server) handleCreateWebhook() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.auth.Webhooks == nil || s.auth.Sealer == nil {
			s.error(w, r, errNoWebhooks)
			return
		}
		var req createWebhookRequest
		if _, err := s.readJSON(w, r, &req); err != nil {
			s.error(w, r, err)
			return
		}
		out, secret, err := webhook.Register(r.Context(), s.auth.Webhooks, s.auth.Sealer, principal(r), req.New)
		if err != nil {
			s.error(w, r, err)
			return
		}
		writeJSON(w, http.StatusCreated, createdWebhook{Webhook: out, Secret: secret,
			Warnings: webhook.Warnings(r.Context(), s.auth.WebhookGuard, out.URL)})
	}
}

type webhookPage struct {
	Items []webhook.Webhook `json:"items"`
}

func (s *Server) handleWebhooks() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.auth.Webhooks == nil {
			s.error(w, r, errNoWebhooks)
			return
		}
		items, err := s.auth.Webhooks.Webhooks(r.Context(), principal(r))
		if err != nil {
			s.error(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, webhookPage{Items: nonNil(items)})
	}
}

// webhookID is the {id} of a webhooks path, or a 404.
func webhookID(r *http.Request) (string, error) { return uuidParam(r, "id", webhook.ErrNotFound) }

func (s *Server) handleDeleteWebhook() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.auth.Webhooks == nil {
			s.error(w, r, errNoWebhooks)
			return
		}
		id, err := webhookID(r)
		if err != nil {
			s.error(w, r, err)
			return
		}
		if err := s.auth.Webhooks.DeleteWebhook(r.Context(), principal(r), id); err != nil {
			s.error(w, r, err)
			return
		}
		w.Header()["Cache-Control"] = hdrNoStore
		w.WriteHeader(http.StatusNoContent)
	}
}

type deliveryPage struct {
	Items []webhook.Delivery `json:"items"`
}

func (s *Server) handleDeliveries() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.auth.Webhooks == nil {
			s.error(w, r, errNoWebhooks)
			return
		}
		id, err := webhookID(r)
		if err != nil {
			s.error(w, r, err)
			return
		}
		limit, err := limitQuery(r)
		if err != nil {
			s.error(w, r, err)
			return
		}
		items, err := s.auth.Webhooks.Deliveries(r.Context(), principal(r), id, limit)
		if err != nil {
			s.error(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, deliveryPage{Items: nonNil(items)})
	}
}
