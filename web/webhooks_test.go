package web

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/waystation/waystation/internal/outbound"
	"github.com/waystation/waystation/internal/request"
	"github.com/waystation/waystation/internal/webhook"
)

// The console registers a webhook (its secret shown on that page alone), lists it with
// its deliveries, and deletes it, every form behind the CSRF token.
func TestConsoleRegistersListsAndDeletesWebhooks(t *testing.T) {
	e := newAppEnv(t, func(a *Approvals) {
		a.Webhooks = webhook.NewService(a.Requests.Store.(webhook.Store), webhook.Config{Sealer: a.Requests.Sealer.(webhook.Sealer)})
	})
	ada, adaKey := e.user("ada")
	scout, _ := e.agent(ada, "scout")
	b := e.browser()
	b.mustSignIn(adaKey, "")
	page := b.get("/app/webhooks")
	if page.status != http.StatusOK || !strings.Contains(page.body, `value="request.waiting_user"`) {
		t.Fatalf("webhooks page: %d", page.status)
	}
	form := url.Values{"url": {"https://ops.example/hook"}, "events": {"request.waiting_user", "payment.settled"}, "description": {"ops channel"}}
	if p := b.post("/app/webhooks", form); p.status != http.StatusForbidden {
		t.Errorf("without the CSRF token: %d", p.status)
	}
	form.Set("csrf", csrfOf(t, page))
	created := b.post("/app/webhooks", form)
	secret := regexp.MustCompile(`id="webhook-secret"[^>]*>(whsec_[A-Za-z0-9_-]+)<`).FindStringSubmatch(created.body)
	if created.status != http.StatusCreated || secret == nil || !strings.Contains(created.body, "https://ops.example/hook") {
		t.Fatalf("register: %d %.500s", created.status, created.body)
	}
	if again := b.get("/app/webhooks"); strings.Contains(again.body, secret[1]) || !strings.Contains(again.body, "payment.settled, request.waiting_user") {
		t.Error("the secret shows again, or the webhook is not listed")
	}
	bad := url.Values{"csrf": {csrfOf(t, page)}, "url": {"ftp://ops.example"}, "events": {"request.waiting_user"}}
	if p := b.post("/app/webhooks", bad); p.status != http.StatusUnprocessableEntity || !strings.Contains(p.body, "Nothing was registered") {
		t.Errorf("a bad URL: %d", p.status)
	}
	// A raised request queues a delivery, which the page lists.
	e.raise(scout, request.New{ClientRequestID: "r1", Kind: request.KindConfirm, Params: request.Params{Summary: "Buy it"}})
	list := b.get("/app/webhooks")
	if !strings.Contains(list.body, `data-label="Event">request.waiting_user`) || !strings.Contains(list.body, `data-label="Status">pending`) {
		t.Errorf("the delivery is not listed: %.2000s", list.body)
	}
	id := regexp.MustCompile(`action="/app/webhooks/([0-9a-f-]{36})/delete"`).FindStringSubmatch(list.body)
	if id == nil {
		t.Fatal("no delete form")
	}
	if p := b.post("/app/webhooks/"+id[1]+"/delete", url.Values{"csrf": {csrfOf(t, list)}}); p.status != http.StatusSeeOther {
		t.Fatalf("delete: %d", p.status)
	}
	if p := b.get("/app/webhooks"); strings.Contains(p.body, "https://ops.example/hook") {
		t.Error("the deleted webhook is still listed")
	}
}

// A webhook whose host every delivery will be refused on is registered, and the page
// that shows its secret says why its deliveries will fail.
func TestConsoleWarnsOfAWebhookHostDeliveriesWillBeRefusedOn(t *testing.T) {
	e := newAppEnv(t, func(a *Approvals) {
		a.Webhooks = webhook.NewService(a.Requests.Store.(webhook.Store), webhook.Config{Sealer: a.Requests.Sealer.(webhook.Sealer),
			Guard: outbound.New(outbound.Config{AllowHosts: []string{"localhost:4022"}})})
	})
	_, adaKey := e.user("ada")
	b := e.browser()
	b.mustSignIn(adaKey, "")
	for target, warned := range map[string]bool{"http://127.0.0.1:9/hook": true, "http://localhost:4022/hook": false} {
		page := b.get("/app/webhooks")
		p := b.post("/app/webhooks", url.Values{"csrf": {csrfOf(t, page)}, "url": {target}, "events": {"session.completed"}})
		if p.status != http.StatusCreated || strings.Contains(p.body, "will fail") != warned {
			t.Errorf("%s: %d, warned %v: %.1500s", target, p.status, !warned, p.body)
		}
	}
}
