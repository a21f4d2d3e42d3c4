package web

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/waystation/waystation/internal/auth"
	"github.com/waystation/waystation/internal/problem"
	"github.com/waystation/waystation/internal/webhook"
)

// WebhooksView is the console's webhooks page.
type WebhooksView struct {
	Page
	Bar     AppBar
	Hooks   []WebhookRow
	Events  []string
	Message string
	// Secret is a new webhook's secret, shown on the page that created it, once.
	Secret string
}

// WebhookRow is one webhook with its newest deliveries.
type WebhookRow struct {
	ID, URL, Events, Description, Created, DeleteAction string
	Deliveries                                          []DeliveryRow
}

// DeliveryRow is one delivery of a webhook.
type DeliveryRow struct {
	Event, Status, Attempts, Last, When string
}

// webhookDeliveriesShown is how many deliveries the page shows a webhook.
const webhookDeliveriesShown = 10

func (s *Server) webhooksPage(w http.ResponseWriter, r *http.Request, ws auth.WebSession, message, secret string, status int) {
	hooks, err := s.approvals.Webhooks.List(r.Context(), ws.Principal)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	v := WebhooksView{Page: s.appPage("Webhooks"), Bar: appBar(ws), Events: webhook.Events, Message: message, Secret: secret}
	for _, h := range hooks {
		row := WebhookRow{ID: h.ID, URL: h.URL, Events: strings.Join(h.Events, ", "), Description: h.Description, Created: formatTime(h.CreatedAt),
			DeleteAction: appPath + "/webhooks/" + h.ID + "/delete"}
		dl, err := s.approvals.Webhooks.Deliveries(r.Context(), ws.Principal, h.ID, webhookDeliveriesShown)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		for _, d := range dl {
			dr := DeliveryRow{Event: d.Event, Status: d.Status, Attempts: strconv.Itoa(d.Attempts), Last: "-", When: formatTime(d.CreatedAt)}
			switch {
			case d.LastError != nil:
				dr.Last = *d.LastError
			case d.LastStatus != nil:
				dr.Last = strconv.Itoa(*d.LastStatus)
			}
			row.Deliveries = append(row.Deliveries, dr)
		}
		v.Hooks = append(v.Hooks, row)
	}
	s.renderApp(w, r, WebhooksPage(v), status)
}

func (s *Server) handleWebhooks() http.HandlerFunc {
	return s.consolePage(func(w http.ResponseWriter, r *http.Request, ws auth.WebSession, message string, status int) {
		s.webhooksPage(w, r, ws, message, "", status)
	})
}

// consoleForm reads a console form of the signed-in user, checking its CSRF token;
// false after answering.
func (s *Server) consoleForm(w http.ResponseWriter, r *http.Request) (auth.WebSession, bool) {
	if !parseForm(w, r) {
		return auth.WebSession{}, false
	}
	ws, ok := s.signedIn(w, r, "", http.StatusForbidden)
	if !ok {
		return ws, false
	}
	if !sameToken(ws.CSRFToken, r.PostForm.Get("csrf")) {
		s.forbidden(w, r)
		return ws, false
	}
	return ws, true
}

// consoleItemForm is consoleForm for a form about one of the person's things, named
// by the path's {id} (lower-cased): an id that is not one is a 404 before the form is
// read.
func (s *Server) consoleItemForm(w http.ResponseWriter, r *http.Request) (string, auth.WebSession, bool) {
	id, ok := idParam(r)
	if !ok {
		s.appNotFound(w, r)
		return "", auth.WebSession{}, false
	}
	ws, ok := s.consoleForm(w, r)
	return id, ws, ok
}

// handleCreateWebhook registers a webhook from the form and shows its secret once.
func (s *Server) handleCreateWebhook() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ws, ok := s.consoleForm(w, r)
		if !ok {
			return
		}
		n := webhook.New{URL: strings.TrimSpace(r.PostForm.Get("url")), Events: r.PostForm["events"], Description: r.PostForm.Get("description")}
		reg, err := s.approvals.Webhooks.Register(r.Context(), ws.Principal, n)
		f := form{page: func(message string, status int) { s.webhooksPage(w, r, ws, message, "", status) }, refusals: []refusal{
			{err: webhook.ErrNoSealer, message: "This server has no key to keep webhook secrets sealed, so it registers none.", status: http.StatusServiceUnavailable},
			{code: problem.ValidationFailed, message: "Nothing was registered: ", detail: true, status: http.StatusUnprocessableEntity},
			{code: problem.QuotaExceeded, message: "Nothing was registered: ", detail: true, status: http.StatusConflict},
		}}
		s.answer(w, r, f, err, func() {
			msg := "Registered. Copy its secret now: it is shown this once."
			for _, warning := range reg.Warnings {
				msg += " " + warning
			}
			s.webhooksPage(w, r, ws, msg, reg.Secret, http.StatusCreated)
		})
	}
}

// handleDeleteWebhook stops one of the person's webhooks.
func (s *Server) handleDeleteWebhook() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id, ws, ok := s.consoleItemForm(w, r)
		if !ok {
			return
		}
		err := s.approvals.Webhooks.Delete(r.Context(), ws.Principal, id)
		s.answer(w, r, form{}, err, seeOther(w, r, appPath+"/webhooks"))
	}
}
