package web

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/waystation/waystation/internal/memory"
)

// The console saves an item whose value goes sealed and never comes back on a page,
// lists it by what it holds, and archives it, every form behind the CSRF token.
func TestConsoleSavesListsAndArchivesMemory(t *testing.T) {
	e := newAppEnv(t, func(a *Approvals) { a.Memory = a.Requests.(memory.Store) })
	_, adaKey := e.user("ada")
	b := e.browser()
	b.mustSignIn(adaKey, "")
	page := b.get("/app/memory")
	const canary = "12 Canary Row, Tidewater"
	form := url.Values{"label": {"Home"}, "site": {"https://Shop.Example/checkout"}, "fieldRef": {"address"}, "fieldLabel": {"Street address"},
		"valueType": {"address"}, "value": {canary}, "askBeforeUse": {"true"}}
	if p := b.post("/app/memory", form); p.status != http.StatusForbidden {
		t.Errorf("without the CSRF token: %d", p.status)
	}
	form.Set("csrf", csrfOf(t, page))
	if p := b.post("/app/memory", form); p.status != http.StatusSeeOther {
		t.Fatalf("save: %d %.500s", p.status, p.body)
	}
	list := b.get("/app/memory")
	if !strings.Contains(list.body, "Home") || !strings.Contains(list.body, "shop.example") || !strings.Contains(list.body, "Street address (address, saved)") ||
		!strings.Contains(list.body, "asks you before each use") || strings.Contains(list.body, canary) {
		t.Fatalf("the list: %.2000s", list.body)
	}
	bad := url.Values{"csrf": {csrfOf(t, list)}, "label": {"X"}, "fieldRef": {"a b"}, "fieldLabel": {"A"}, "valueType": {"text"}, "value": {"v"}}
	if p := b.post("/app/memory", bad); p.status != http.StatusUnprocessableEntity || !strings.Contains(p.body, "Nothing was saved") {
		t.Errorf("a bad field name: %d", p.status)
	}
	id := regexp.MustCompile(`action="/app/memory/([0-9a-f-]{36})/archive"`).FindStringSubmatch(list.body)
	if id == nil {
		t.Fatal("no archive form")
	}
	if p := b.post("/app/memory/"+id[1]+"/archive", url.Values{"csrf": {csrfOf(t, list)}}); p.status != http.StatusSeeOther {
		t.Fatalf("archive: %d", p.status)
	}
	if p := b.get("/app/memory"); strings.Contains(p.body, "Street address (address") {
		t.Error("the archived item is still listed")
	}
}
