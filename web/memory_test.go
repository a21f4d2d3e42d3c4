package web

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/waystation/waystation/internal/memory"
	"github.com/waystation/waystation/internal/trace"
)

// The console saves an item whose value goes sealed and never comes back on a page,
// lists it by what it holds, and archives it, every form behind the CSRF token.
func TestConsoleSavesListsAndArchivesMemory(t *testing.T) {
	e := newAppEnv(t, func(a *Approvals) {
		a.Memory = memory.NewService(a.Requests.Store.(memory.Store), memory.Config{Sealer: a.Requests.Sealer.(memory.Sealer)})
	})
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

// An item is changed from its form on the console: its name, sites and asking, a new
// value typed for a field (sealed, never shown back), a value forgotten. A form drawn
// from an older revision changes nothing, and a read-only item stays as it is until
// its box is unticked.
func TestConsoleChangesMemoryItems(t *testing.T) {
	var sealer memory.Opener
	e := newAppEnv(t, func(a *Approvals) {
		a.Memory = memory.NewService(a.Requests.Store.(memory.Store), memory.Config{Sealer: a.Requests.Sealer.(memory.Sealer)})
		sealer = a.Requests.Sealer.(memory.Opener)
	})
	ada, adaKey := e.user("ada")
	ctx := context.Background()
	b := e.browser()
	b.mustSignIn(adaKey, "")
	const first, second = "12 Canary Row", "7 Second Canary Lane"
	csrf := csrfOf(t, b.get("/app/memory"))
	if p := b.post("/app/memory", url.Values{"csrf": {csrf}, "label": {"Home"}, "fieldRef": {"address"}, "fieldLabel": {"Street address"},
		"valueType": {"address"}, "value": {first}, "askBeforeUse": {"true"}}); p.status != http.StatusSeeOther {
		t.Fatalf("save: %d", p.status)
	}
	list := b.get("/app/memory")
	m := regexp.MustCompile(`action="/app/memory/([0-9a-f-]{36})"`).FindStringSubmatch(list.body)
	if m == nil || !strings.Contains(list.body, `name="revision" value="1"`) {
		t.Fatalf("no change form: %.2000s", list.body)
	}
	id := m[1]
	edit := url.Values{"csrf": {csrf}, "revision": {"1"}, "label": {"Home, new"}, "sites": {"shop.example, https://Tide.Example/x"},
		"label.address": {"Street"}, "value.address": {second}}
	if p := b.post("/app/memory/"+id, url.Values{"revision": {"1"}, "label": {"x"}}); p.status != http.StatusForbidden {
		t.Errorf("without the CSRF token: %d", p.status)
	}
	if p := b.post("/app/memory/"+id, edit); p.status != http.StatusSeeOther {
		t.Fatalf("change: %d %.600s", p.status, p.body)
	}
	st, err := e.store.StoredItem(ctx, ada.UserID, id)
	if err != nil {
		t.Fatal(err)
	}
	v := st.Fields[0].Value
	got, err := sealer.Open(v.KeyID, v.Nonce, v.Ciphertext, memory.AAD(ada.UserID, id, "address"))
	if err != nil || string(got) != second || st.Label != "Home, new" || st.Fields[0].Label != "Street" || st.AskBeforeUse ||
		strings.Join(st.Hosts, " ") != "shop.example tide.example" || st.Revision != 2 {
		t.Fatalf("after the change: %+v value %q %v", st.Item, got, err)
	}
	// The same form again, drawn from revision 1: nothing changes.
	edit.Set("label", "Stale")
	if p := b.post("/app/memory/"+id, edit); p.status != http.StatusConflict || !strings.Contains(p.body, "changed since you opened this page") {
		t.Errorf("a stale form: %d", p.status)
	}
	// Forgetting the value; an empty value box keeps nothing else from changing.
	if p := b.post("/app/memory/"+id, url.Values{"csrf": {csrf}, "revision": {"2"}, "label": {"Home, new"}, "label.address": {"Street"}, "forget.address": {"true"}, "readOnly": {"true"}}); p.status != http.StatusSeeOther {
		t.Fatalf("forget: %d %.400s", p.status, p.body)
	}
	page := b.get("/app/memory")
	if !strings.Contains(page.body, "Street (address, empty)") || strings.Contains(page.body, first) || strings.Contains(page.body, second) {
		t.Errorf("after forgetting: %.2000s", page.body)
	}
	// Read-only now: a change that keeps it read-only is refused; unticking it passes.
	if p := b.post("/app/memory/"+id, url.Values{"csrf": {csrf}, "revision": {"3"}, "label": {"Renamed"}, "readOnly": {"true"}}); p.status != http.StatusUnprocessableEntity || !strings.Contains(p.body, "is read-only") {
		t.Errorf("changing a read-only item: %d", p.status)
	}
	if p := b.post("/app/memory/"+id, url.Values{"csrf": {csrf}, "revision": {"3"}, "label": {"Renamed"}}); p.status != http.StatusSeeOther {
		t.Errorf("unticking read-only: %d %.400s", p.status, p.body)
	}
	for name, form := range map[string]url.Values{
		"no revision": {"csrf": {csrf}, "label": {"x"}},
		"empty label": {"csrf": {csrf}, "revision": {"4"}, "label": {""}},
		"bad site":    {"csrf": {csrf}, "revision": {"4"}, "label": {"x"}, "sites": {"not a host!"}},
	} {
		if p := b.post("/app/memory/"+id, form); p.status != http.StatusUnprocessableEntity || !strings.Contains(p.body, "Nothing was changed") {
			t.Errorf("%s: %d", name, p.status)
		}
	}
	if p := b.post("/app/memory/00000000-0000-4000-8000-000000000000", url.Values{"csrf": {csrf}, "revision": {"1"}, "label": {"x"}}); p.status != http.StatusNotFound {
		t.Errorf("an unknown item: %d", p.status)
	}
}

// TestTheTimelineBlanksAValueSavedAfterItsSpanWasKept: a span the agent sent before
// the person saved a value holds that value in the store; the session's timeline
// shows it blanked with the values as they are now.
func TestTheTimelineBlanksAValueSavedAfterItsSpanWasKept(t *testing.T) {
	e := newAppEnv(t, func(a *Approvals) {
		a.Memory = memory.NewService(a.Requests.Store.(memory.Store), memory.Config{Sealer: a.Requests.Sealer.(memory.Sealer)})
	})
	ctx := context.Background()
	ada, adaKey := e.user("ada")
	scout, _ := e.agent(ada, "scout")
	pm := e.raise(scout, provideMissing("pm"))
	const canary = "12 Canary Row, Tidewater"
	now := uint64(time.Now().UnixNano())
	if _, _, err := e.store.SaveSpans(ctx, scout, []trace.Span{{SessionID: pm.SessionID, TraceID: "4bf92f3577b34da6a3ce929d0e0e4736",
		SpanID: "00f067aa0ba902b7", Name: "ship to " + canary, Start: now, End: now + 1000}}, 0); err != nil {
		t.Fatal(err)
	}
	b := e.browser()
	b.mustSignIn(adaKey, "")
	form := url.Values{"csrf": {csrfOf(t, b.get("/app/memory"))}, "label": {"Home"}, "fieldRef": {"address"}, "fieldLabel": {"Street address"},
		"valueType": {"address"}, "value": {canary}, "askBeforeUse": {"true"}}
	if p := b.post("/app/memory", form); p.status != http.StatusSeeOther {
		t.Fatalf("save: %d %.500s", p.status, p.body)
	}
	p := b.get(sessionURL(pm.SessionID))
	if p.status != 200 || strings.Contains(p.body, "Canary Row") || !strings.Contains(p.body, "ship to [redacted]") {
		t.Errorf("timeline %d: %.3000s", p.status, p.body)
	}
}
