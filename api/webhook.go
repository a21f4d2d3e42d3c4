package api

import (
	"net/http"

	"github.com/waystation/waystation/internal/webhook"
)

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
// delivery, is answered this once and kept sealed; a URL every delivery will be
// refused on is kept with a warning (see webhook.Service.Register).
func (s *Server) handleCreateWebhook() http.HandlerFunc {
	return s.serve(func(w http.ResponseWriter, r *http.Request) error {
		var req createWebhookRequest
		if _, err := s.readJSON(w, r, &req); err != nil {
			return err
		}
		reg, err := s.svc.Webhooks.Register(r.Context(), principal(r), req.New)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusCreated, createdWebhook{Webhook: reg.Webhook, Secret: reg.Secret, Warnings: reg.Warnings})
		return nil
	})
}

type webhookPage struct {
	Items []webhook.Webhook `json:"items"`
}

func (s *Server) handleWebhooks() http.HandlerFunc {
	return s.serve(func(w http.ResponseWriter, r *http.Request) error {
		items, err := s.svc.Webhooks.List(r.Context(), principal(r))
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, webhookPage{Items: nonNil(items)})
		return nil
	})
}

// webhookID is the {id} of a webhooks path, or a 404.
func webhookID(r *http.Request) (string, error) { return uuidParam(r, "id", webhook.ErrNotFound) }

func (s *Server) handleDeleteWebhook() http.HandlerFunc {
	return s.serve(func(w http.ResponseWriter, r *http.Request) error {
		id, err := webhookID(r)
		if err != nil {
			return err
		}
		if err := s.svc.Webhooks.Delete(r.Context(), principal(r), id); err != nil {
			return err
		}
		w.Header()["Cache-Control"] = hdrNoStore
		w.WriteHeader(http.StatusNoContent)
		return nil
	})
}

type deliveryPage struct {
	Items []webhook.Delivery `json:"items"`
}

func (s *Server) handleDeliveries() http.HandlerFunc {
	return s.serve(func(w http.ResponseWriter, r *http.Request) error {
		id, err := webhookID(r)
		if err != nil {
			return err
		}
		limit, err := limitQuery(r)
		if err != nil {
			return err
		}
		items, err := s.svc.Webhooks.Deliveries(r.Context(), principal(r), id, limit)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, deliveryPage{Items: nonNil(items)})
		return nil
	})
}
