package web

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/waystation/waystation/internal/app"
	"github.com/waystation/waystation/internal/auth"
	"github.com/waystation/waystation/internal/memory"
	"github.com/waystation/waystation/internal/postgres"
	"github.com/waystation/waystation/internal/postgres/pgtest"
	"github.com/waystation/waystation/internal/request"
	"github.com/waystation/waystation/internal/session"
	"github.com/waystation/waystation/internal/trace"
	"github.com/waystation/waystation/internal/vault"
)

var testPepper = []byte("web-tests-pepper-of-at-least-32-bytes")

// appEnv is the approval pages on a fresh database, behind a real HTTP server.
type appEnv struct {
	t     *testing.T
	store *postgres.Store
	db    *pgx.Conn
	base  string
	// bodies is every page any browser of the test received, to prove that no
	// provided value ever comes back.
	bodies []string
}

// newAppEnv serves the approval pages as for development on plain HTTP: the tests'
// clients reach them on loopback without TLS. opts change the Approvals.
func newAppEnv(t *testing.T, opts ...func(*Approvals)) *appEnv {
	t.Helper()
	ctx := context.Background()
	dbURL := pgtest.URL(t)
	store, err := postgres.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	db, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close(context.Background()) })
	v, err := vault.Parse(testVaultKey)
	if err != nil {
		t.Fatal(err)
	}
	a := storeApprovals(store)
	a.Requests.Sealer, a.LoopbackHTTP = v, true
	a.Traces = trace.NewService(store, memory.Protected{Store: store, Opener: v}, trace.Config{})
	for _, o := range opts {
		o(&a)
	}
	srv := NewServer(slog.New(slog.DiscardHandler), fixed{testSnapshot(t)}, testViews, nil, WithApprovals(a))
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	return &appEnv{t: t, store: store, db: db, base: hs.URL}
}

// storeApprovals is the approval pages' services over store: sign-ins, sessions and
// requests.
func storeApprovals(store *postgres.Store) Approvals {
	v, err := vault.Parse(testVaultKey)
	if err != nil {
		panic(err)
	}
	protected := memory.Protected{Store: store, Opener: v}
	return Approvals{Services: app.Services{Auth: auth.NewService(store, auth.Config{Pepper: testPepper}), Sessions: &session.Service{Store: store, Protected: protected},
		Requests: &request.Service{Store: store, Protected: protected}}}
}

// testVaultKey is the key the pages' tests seal values under.
const testVaultKey = "t1:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="

// withAuth builds a's auth service anew over its store, with change made to the
// tests' config.
func withAuth(a *Approvals, change func(*auth.Config)) {
	cfg := auth.Config{Pepper: testPepper}
	change(&cfg)
	a.Auth = auth.NewService(a.Requests.Store.(auth.Store), cfg)
}

// user makes a user and its key.
func (e *appEnv) user(name string) (auth.Principal, string) {
	e.t.Helper()
	ctx := context.Background()
	u, err := e.store.EnsureUser(ctx, name)
	if err != nil {
		e.t.Fatal(err)
	}
	k, err := auth.Generate(auth.ScopeUser, testPepper)
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.store.InsertKey(ctx, k, u.ID, "", 0); err != nil {
		e.t.Fatal(err)
	}
	return auth.Principal{KID: k.KID, Scope: auth.ScopeUser, UserID: u.ID}, k.Token
}

// agent makes an agent of user and its key.
func (e *appEnv) agent(user auth.Principal, name string) (auth.Principal, string) {
	e.t.Helper()
	ctx := context.Background()
	a, err := e.store.EnsureAgent(ctx, user.UserID, name)
	if err != nil {
		e.t.Fatal(err)
	}
	k, err := auth.Generate(auth.ScopeAgent, testPepper)
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.store.InsertKey(ctx, k, user.UserID, a.ID, 0); err != nil {
		e.t.Fatal(err)
	}
	return auth.Principal{KID: k.KID, Scope: auth.ScopeAgent, UserID: user.UserID, AgentID: a.ID}, k.Token
}

// raise opens a session for agent and raises a request in it.
func (e *appEnv) raise(agent auth.Principal, n request.New) request.Request {
	e.t.Helper()
	ctx := context.Background()
	s, err := e.store.CreateSession(ctx, agent, session.New{Type: "checkout", Description: "Buy a rain forecast", ClientSessionID: n.ClientRequestID}, 0)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := n.Validate(); err != nil {
		e.t.Fatal(err)
	}
	r, err := e.store.CreateRequest(ctx, agent, s.ID, n, 0)
	if err != nil {
		e.t.Fatal(err)
	}
	return r
}

func (e *appEnv) status(p auth.Principal, id string) string {
	e.t.Helper()
	r, err := e.store.Request(context.Background(), p, "", id)
	if err != nil {
		e.t.Fatal(err)
	}
	return r.Status
}

// transitions lists the request.status_changed events of a request's session as
// from>to.
func (e *appEnv) transitions(p auth.Principal, r request.Request) []string {
	e.t.Helper()
	events, _, err := e.store.Events(context.Background(), p, r.SessionID, 0, 100)
	if err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for _, ev := range events {
		if ev.Type == request.EventStatusChanged {
			var d struct {
				RequestID string  `json:"requestId"`
				From      *string `json:"from"`
				To        string  `json:"to"`
			}
			if err := json.Unmarshal(ev.Data, &d); err != nil {
				e.t.Fatal(err)
			}
			if d.RequestID != r.ID {
				continue
			}
			from := ""
			if d.From != nil {
				from = *d.From
			}
			out = append(out, from+">"+d.To)
		}
	}
	return out
}

// browser is one person's browser: a cookie jar, redirects not followed.
type browser struct {
	e *appEnv
	c *http.Client
}

func (e *appEnv) browser() *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{e: e, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}}
}

type page struct {
	status int
	header http.Header
	body   string
}

func (b *browser) do(method, path string, form url.Values, hdr ...string) page {
	b.e.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, _ := http.NewRequest(method, b.e.base+path, body)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := b.c.Do(req)
	if err != nil {
		b.e.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	b.e.bodies = append(b.e.bodies, string(raw))
	return page{res.StatusCode, res.Header, string(raw)}
}

func (b *browser) get(path string) page { return b.do(http.MethodGet, path, nil) }
func (b *browser) post(path string, form url.Values) page {
	return b.do(http.MethodPost, path, form)
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func csrfOf(t *testing.T, p page) string {
	t.Helper()
	m := csrfField.FindStringSubmatch(p.body)
	if m == nil {
		t.Fatalf("no CSRF token in the page (%d): %.400s", p.status, p.body)
	}
	return m[1]
}

// signIn signs in with key from the sign-in form of request id's page.
func (b *browser) signIn(key, id string) page {
	b.e.t.Helper()
	form := b.get(requestURL(id))
	return b.post("/app/sign-in", url.Values{"csrf": {csrfOf(b.e.t, form)}, "key": {key}, "request": {id}})
}

func (b *browser) mustSignIn(key, id string) {
	b.e.t.Helper()
	if p := b.signIn(key, id); p.status != http.StatusSeeOther || p.header.Get("Location") != requestURL(id) {
		b.e.t.Fatalf("sign-in: %d to %q: %.300s", p.status, p.header.Get("Location"), p.body)
	}
}

func provideMissing(id string) request.New {
	return request.New{ClientRequestID: id, Kind: request.KindProvideMissing,
		Context: request.Context{URL: "https://rain.example/checkout", PageTitle: "Checkout", MerchantName: "Rain", Reason: "The checkout asks for an email and a card"},
		Fields:  []request.Field{{Key: "email", Label: "Email", Type: "email"}, {Key: "card", Label: "Card number", Type: "card_number"}}}
}

func TestApprovalPageSignsInWithAUserKeyAndRefusesAgentKeys(t *testing.T) {
	e := newAppEnv(t)
	ada, adaKey := e.user("ada")
	scout, scoutKey := e.agent(ada, "scout")
	r := e.raise(scout, provideMissing("r1"))
	b := e.browser()

	p := b.get(requestURL(r.ID))
	if p.status != http.StatusOK || !strings.Contains(p.body, `action="/app/sign-in"`) || !strings.Contains(p.body, `name="request" value="`+r.ID+`"`) {
		t.Fatalf("signed out: %d %.300s", p.status, p.body)
	}
	if strings.Contains(p.body, "Rain") {
		t.Error("the sign-in form shows the request")
	}
	for k, want := range map[string]string{
		"Cache-Control": "no-store", "X-Frame-Options": "DENY", "Referrer-Policy": "no-referrer", "X-Content-Type-Options": "nosniff",
	} {
		if got := p.header.Get(k); got != want {
			t.Errorf("%s: %q, want %q", k, got, want)
		}
	}
	if csp := p.header.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'none'") || !strings.Contains(csp, "form-action 'self'") {
		t.Errorf("CSP %q", csp)
	}

	for name, key := range map[string]string{
		"agent key":    scoutKey,
		"garbage":      "hello",
		"unknown key":  "sk_user_0123456789abcdef_" + strings.Repeat("ab", 32),
		"wrong secret": adaKey[:len(adaKey)-4] + "0000",
	} {
		p := b.signIn(key, r.ID)
		if p.status != http.StatusForbidden || strings.Contains(p.body, "Rain") {
			t.Errorf("%s: %d", name, p.status)
		}
		if name == "agent key" && !strings.Contains(p.body, "Agent keys cannot sign in") {
			t.Errorf("agent key refused without saying why: %.500s", p.body)
		}
		if p := b.get(requestURL(r.ID)); !strings.Contains(p.body, `action="/app/sign-in"`) {
			t.Errorf("%s signed in", name)
		}
	}
	// A sign-in form sent without its cookie (from another site) is refused.
	form := b.get(requestURL(r.ID))
	other := e.browser()
	if p := other.post("/app/sign-in", url.Values{"csrf": {csrfOf(t, form)}, "key": {adaKey}}); p.status != http.StatusForbidden {
		t.Errorf("sign-in without the form's cookie: %d", p.status)
	}
	if p := b.post("/app/sign-in", url.Values{"key": {adaKey}}); p.status != http.StatusForbidden {
		t.Errorf("sign-in without the form's token: %d", p.status)
	}

	p = b.signIn(adaKey, r.ID)
	if p.status != http.StatusSeeOther || p.header.Get("Location") != requestURL(r.ID) {
		t.Fatalf("user key: %d to %q", p.status, p.header.Get("Location"))
	}
	cookie := p.header.Get("Set-Cookie")
	for _, want := range []string{"waystation_session=", "Path=/;", "HttpOnly", "SameSite=Strict", "Max-Age=43200"} {
		if !strings.Contains(strings.Join(p.header.Values("Set-Cookie"), "\n"), want) {
			t.Errorf("session cookie lacks %s: %q", want, cookie)
		}
	}
	if strings.Contains(strings.Join(p.header.Values("Set-Cookie"), "\n"), "Secure") {
		t.Error("Secure cookie over plain HTTP")
	}
	p = b.get(requestURL(r.ID))
	for _, want := range []string{"scout", "Buy a rain forecast", "Provide missing details", "The checkout asks for an email and a card",
		"Rain", "Checkout", "https://rain.example/checkout", `type="email"`, `type="password"`, `autocomplete="off"`, "Expires", "Approve", "Deny"} {
		if !strings.Contains(p.body, want) {
			t.Errorf("request page lacks %q", want)
		}
	}
}

// /app/sign-in is a page of its own: the form for a browser without a sign-in (leading
// back to the request it names), and straight on for one that has it.
func TestSignInPageShowsTheFormAndSendsTheSignedInOn(t *testing.T) {
	e := newAppEnv(t)
	ada, adaKey := e.user("ada")
	scout, _ := e.agent(ada, "scout")
	r := e.raise(scout, provideMissing("r1"))
	b := e.browser()

	p := b.get("/app/sign-in")
	if p.status != http.StatusOK || !strings.HasPrefix(p.header.Get("Content-Type"), "text/html") ||
		!strings.Contains(p.body, `action="/app/sign-in"`) || p.header.Get("Cache-Control") != "no-store" {
		t.Fatalf("GET /app/sign-in: %d %q %.300s", p.status, p.header.Get("Content-Type"), p.body)
	}
	if strings.Contains(p.body, `name="request"`) {
		t.Errorf("the bare form leads back to a request: %.500s", p.body)
	}
	if p := b.do(http.MethodHead, "/app/sign-in", nil); p.status != http.StatusOK || p.body != "" {
		t.Errorf("HEAD /app/sign-in: %d %q", p.status, p.body)
	}
	// A request named in the query is where the form leads; anything else is dropped.
	if p := b.get("/app/sign-in?request=" + strings.ToUpper(r.ID)); !strings.Contains(p.body, `name="request" value="`+r.ID+`"`) {
		t.Errorf("the form does not lead back to the request: %.500s", p.body)
	}
	if p := b.get("/app/sign-in?request=https://evil.example/"); p.status != http.StatusOK || strings.Contains(p.body, "evil.example") {
		t.Errorf("a foreign request parameter: %d %.500s", p.status, p.body)
	}

	// The form it shows signs in, and then the page sends the person on.
	form := b.get("/app/sign-in")
	if p := b.post("/app/sign-in", url.Values{"csrf": {csrfOf(t, form)}, "key": {adaKey}}); p.status != http.StatusSeeOther || p.header.Get("Location") != requestURL("") {
		t.Fatalf("sign-in from the page: %d to %q", p.status, p.header.Get("Location"))
	}
	if p := b.get("/app/sign-in"); p.status != http.StatusSeeOther || p.header.Get("Location") != requestURL("") {
		t.Errorf("signed in: %d to %q", p.status, p.header.Get("Location"))
	}
	if p := b.get("/app/sign-in?request=" + r.ID); p.status != http.StatusSeeOther || p.header.Get("Location") != requestURL(r.ID) {
		t.Errorf("signed in, with a request: %d to %q", p.status, p.header.Get("Location"))
	}
}

func TestRevokingTheKeyEndsTheSignInOnTheNextLoad(t *testing.T) {
	e := newAppEnv(t)
	ada, adaKey := e.user("ada")
	scout, _ := e.agent(ada, "scout")
	r := e.raise(scout, provideMissing("r1"))
	b := e.browser()
	b.mustSignIn(adaKey, r.ID)
	if p := b.get(requestURL(r.ID)); !strings.Contains(p.body, "scout") {
		t.Fatal("not signed in")
	}
	if err := e.store.RevokeKey(context.Background(), ada.UserID, "", ada.KID); err != nil {
		t.Fatal(err)
	}
	p := b.get(requestURL(r.ID))
	if p.status != http.StatusOK || !strings.Contains(p.body, "was revoked") || strings.Contains(p.body, "scout") {
		t.Fatalf("after revocation: %d %.400s", p.status, p.body)
	}
	var n int
	if err := e.db.QueryRow(context.Background(), `SELECT count(*) FROM web_sessions`).Scan(&n); err != nil || n != 0 {
		t.Errorf("%d web sessions left (%v)", n, err)
	}
	if p := b.signIn(adaKey, r.ID); p.status != http.StatusForbidden || !strings.Contains(p.body, "revoked") {
		t.Errorf("sign-in with the revoked key: %d", p.status)
	}
}

func TestFormsWithoutTheSignInsCSRFTokenAre403AndChangeNothing(t *testing.T) {
	e := newAppEnv(t)
	ada, adaKey := e.user("ada")
	scout, _ := e.agent(ada, "scout")
	r := e.raise(scout, request.New{ClientRequestID: "c1", Kind: request.KindConfirm, Params: request.Params{Summary: "Pay Rain", Amount: "2.50", Currency: "USDC", Recipient: "rain.example"}})
	b := e.browser()
	b.mustSignIn(adaKey, r.ID)
	other := e.browser()
	other.mustSignIn(adaKey, r.ID)
	otherToken := csrfOf(t, other.get(requestURL(r.ID)))
	before := e.transitions(ada, r)

	for name, form := range map[string]url.Values{
		"no token":              {"decision": {"approve"}},
		"wrong token":           {"decision": {"approve"}, "csrf": {"x"}},
		"another sign-in's one": {"decision": {"approve"}, "csrf": {otherToken}},
	} {
		if p := b.post(requestURL(r.ID)+"/decision", form); p.status != http.StatusForbidden || !strings.Contains(p.body, "Nothing was changed") {
			t.Errorf("%s: %d", name, p.status)
		}
	}
	// A browser that is not signed in gets the sign-in form, with 403.
	if p := e.browser().post(requestURL(r.ID)+"/decision", url.Values{"decision": {"approve"}, "csrf": {otherToken}}); p.status != http.StatusForbidden || !strings.Contains(p.body, "not signed in") {
		t.Errorf("signed out: %d", p.status)
	}
	if p := b.post("/app/sign-out", url.Values{}); p.status != http.StatusForbidden {
		t.Errorf("sign-out without a token: %d", p.status)
	}
	if got := e.status(ada, r.ID); got != request.StatusWaitingUser {
		t.Errorf("status %s", got)
	}
	if after := e.transitions(ada, r); len(after) != len(before) {
		t.Errorf("events %v, before %v", after, before)
	}
	if p := b.get(requestURL(r.ID)); !strings.Contains(p.body, "Pay Rain") || !strings.Contains(p.body, "2.50 USDC") || !strings.Contains(p.body, "rain.example") {
		t.Errorf("still signed in and showing the confirmation: %.300s", p.body)
	}
}

func TestAnotherUsersRequestIs404LikeAnUnknownOne(t *testing.T) {
	e := newAppEnv(t)
	ada, _ := e.user("ada")
	_, bobKey := e.user("bob")
	scout, _ := e.agent(ada, "scout")
	r := e.raise(scout, provideMissing("r1"))
	b := e.browser()
	b.mustSignIn(bobKey, r.ID)
	p := b.get(requestURL(r.ID))
	if p.status != http.StatusNotFound || strings.Contains(p.body, "scout") || strings.Contains(p.body, "Rain") {
		t.Fatalf("ada's request to bob: %d %.300s", p.status, p.body)
	}
	unknown := b.get(requestURL("00000000-0000-4000-8000-000000000000"))
	if unknown.status != http.StatusNotFound || unknown.body != p.body {
		t.Errorf("unknown request: %d, page differs from another user's", unknown.status)
	}
	if p := b.get(requestURL("nope")); p.status != http.StatusNotFound {
		t.Errorf("malformed id: %d", p.status)
	}
	token := csrfOf(t, b.get("/app/requests"))
	if p := b.post(requestURL(r.ID)+"/decision", url.Values{"csrf": {token}, "decision": {"deny"}}); p.status != http.StatusNotFound {
		t.Errorf("bob denies ada's request: %d", p.status)
	}
	if got := e.status(ada, r.ID); got != request.StatusWaitingUser {
		t.Errorf("status %s", got)
	}
	if p := b.get("/app/requests"); strings.Contains(p.body, r.ID) {
		t.Error("bob's index lists ada's request")
	}
}

func TestDecisionsMoveTheRequestAndNeverShowTheValues(t *testing.T) {
	e := newAppEnv(t)
	ctx := context.Background()
	ada, adaKey := e.user("ada")
	scout, _ := e.agent(ada, "scout")
	b := e.browser()
	b.mustSignIn(adaKey, "")
	const email, card = "canary.ada@example.org", "4111111111111111"

	// provide_missing: a missing value is refused in words, then both are sealed.
	pm := e.raise(scout, provideMissing("pm"))
	token := csrfOf(t, b.get(requestURL(pm.ID)))
	p := b.post(requestURL(pm.ID)+"/decision", url.Values{"csrf": {token}, "decision": {"approve"}, "value.email": {email}})
	if p.status != http.StatusUnprocessableEntity || !strings.Contains(p.body, "card is missing") {
		t.Errorf("a missing value: %d %.300s", p.status, p.body)
	}
	if got := e.status(ada, pm.ID); got != request.StatusWaitingUser {
		t.Fatalf("after a refused approval: %s", got)
	}
	p = b.post(requestURL(pm.ID)+"/decision", url.Values{"csrf": {token}, "decision": {"approve"}, "value.email": {email}, "value.card": {card}})
	if p.status != http.StatusSeeOther || p.header.Get("Location") != requestURL(pm.ID) {
		t.Fatalf("approve: %d %q", p.status, p.header.Get("Location"))
	}
	p = b.get(requestURL(pm.ID))
	if !strings.Contains(p.body, `data-status="fulfilled"`) || strings.Contains(p.body, `name="decision"`) {
		t.Errorf("after approval: %.600s", p.body)
	}
	if got := e.transitions(ada, pm); strings.Join(got, ",") != ">waiting_user,waiting_user>approved,approved>fulfilled" {
		t.Errorf("events %v", got)
	}
	values, err := e.store.SessionValues(ctx, pm.SessionID)
	if err != nil || len(values) != 2 {
		t.Fatalf("stored values %d: %v", len(values), err)
	}
	for _, v := range values {
		if strings.Contains(string(v.Ciphertext), email) || strings.Contains(string(v.Ciphertext), card) {
			t.Error("a value is stored in the clear")
		}
	}
	art, _, err := e.store.ClaimArtifact(ctx, scout, pm.SessionID, pm.ID)
	if err != nil || art.Type != request.ArtifactReference || len(art.Reference.Handles) != 2 {
		t.Fatalf("artifact %+v: %v", art, err)
	}
	// A second decision is refused in words.
	p = b.post(requestURL(pm.ID)+"/decision", url.Values{"csrf": {token}, "decision": {"deny"}})
	if p.status != http.StatusConflict || !strings.Contains(p.body, "no longer waits") {
		t.Errorf("second decision: %d", p.status)
	}

	// choice: the picked option becomes the artifact.
	ch := e.raise(scout, request.New{ClientRequestID: "ch", Kind: request.KindChoice, Context: request.Context{Reason: "Which delivery?"},
		Options: []request.Option{{ID: "fast", Label: "Fast", Description: "Tomorrow"}, {ID: "slow", Label: "Slow"}}})
	p = b.get(requestURL(ch.ID))
	if !strings.Contains(p.body, `type="radio" name="choice" id="choice-fast" value="fast"`) || !strings.Contains(p.body, "Tomorrow") {
		t.Errorf("choice page: %.800s", p.body)
	}
	if p := b.post(requestURL(ch.ID)+"/decision", url.Values{"csrf": {token}, "decision": {"approve"}, "choice": {"slow"}}); p.status != http.StatusSeeOther {
		t.Fatalf("choose: %d %.300s", p.status, p.body)
	}
	art, _, err = e.store.ClaimArtifact(ctx, scout, ch.SessionID, ch.ID)
	if err != nil || art.Choice == nil || art.Choice.SelectedOptionID != "slow" {
		t.Errorf("choice artifact %+v: %v", art, err)
	}

	// ask_before_use shows the fields and the purpose; a denial ends it.
	ab := e.raise(scout, request.New{ClientRequestID: "ab", Kind: request.KindAskBeforeUse, Params: request.Params{Purpose: "Fill the shipping form"},
		Fields: []request.Field{{Key: "address", Label: "Home address", Type: "address"}}})
	p = b.get(requestURL(ab.ID))
	if !strings.Contains(p.body, "Fill the shipping form") || !strings.Contains(p.body, "Home address") || strings.Contains(p.body, `name="value.address"`) {
		t.Errorf("ask_before_use page: %.800s", p.body)
	}
	if p := b.post(requestURL(ab.ID)+"/decision", url.Values{"csrf": {token}, "decision": {"deny"}}); p.status != http.StatusSeeOther {
		t.Fatalf("deny: %d", p.status)
	}
	if p := b.get(requestURL(ab.ID)); !strings.Contains(p.body, `data-status="denied"`) {
		t.Error("denied request not shown as denied")
	}
	if got := e.transitions(ada, ab); strings.Join(got, ",") != ">waiting_user,waiting_user>denied" {
		t.Errorf("events %v", got)
	}

	// An expired request cannot be decided, and the page says so.
	ex := e.raise(scout, request.New{ClientRequestID: "ex", Kind: request.KindConfirm, Params: request.Params{Summary: "Late"}})
	if _, err := e.db.Exec(ctx, `UPDATE requests SET expires_at = now() - interval '1 second' WHERE id = $1`, ex.ID); err != nil {
		t.Fatal(err)
	}
	p = b.post(requestURL(ex.ID)+"/decision", url.Values{"csrf": {token}, "decision": {"approve"}})
	if p.status != http.StatusConflict || !strings.Contains(p.body, "expired") || !strings.Contains(p.body, `data-status="expired"`) {
		t.Errorf("expired: %d %.400s", p.status, p.body)
	}

	// A canceled request shows as canceled.
	cn := e.raise(scout, request.New{ClientRequestID: "cn", Kind: request.KindConfirm, Params: request.Params{Summary: "Maybe"}})
	if _, err := e.store.CancelRequest(ctx, scout, cn.SessionID, cn.ID); err != nil {
		t.Fatal(err)
	}
	if p := b.get(requestURL(cn.ID)); !strings.Contains(p.body, `data-status="canceled"`) || strings.Contains(p.body, `name="decision"`) {
		t.Error("canceled request not shown as canceled")
	}

	for i, body := range e.bodies {
		if strings.Contains(body, email) || strings.Contains(body, card) || strings.Contains(body, "canary") {
			t.Errorf("response %d carries a provided value", i)
		}
	}
}

func TestWaitingRequestsListsTheUsersOpenRequestsNewestFirst(t *testing.T) {
	e := newAppEnv(t)
	ctx := context.Background()
	ada, adaKey := e.user("ada")
	bob, _ := e.user("bob")
	scout, _ := e.agent(ada, "scout")
	bobs, _ := e.agent(bob, "bobs")
	first := e.raise(scout, request.New{ClientRequestID: "a", Kind: request.KindConfirm, Params: request.Params{Summary: "First thing"}})
	second := e.raise(scout, request.New{ClientRequestID: "b", Kind: request.KindConfirm, Params: request.Params{Summary: "Second thing"}})
	done := e.raise(scout, request.New{ClientRequestID: "c", Kind: request.KindConfirm, Params: request.Params{Summary: "Done thing"}})
	if _, err := e.store.CancelRequest(ctx, scout, done.SessionID, done.ID); err != nil {
		t.Fatal(err)
	}
	other := e.raise(bobs, request.New{ClientRequestID: "d", Kind: request.KindConfirm, Params: request.Params{Summary: "Bob's thing"}})

	b := e.browser()
	b.mustSignIn(adaKey, "")
	p := b.get("/app/requests")
	i, j := strings.Index(p.body, second.ID), strings.Index(p.body, first.ID)
	if p.status != http.StatusOK || i < 0 || j < 0 || i > j {
		t.Fatalf("index: %d, second at %d, first at %d", p.status, i, j)
	}
	if strings.Contains(p.body, done.ID) || strings.Contains(p.body, other.ID) {
		t.Error("the index lists a closed request or another user's")
	}
	// Below the requests, the user's recent sessions, each linking to its timeline.
	if !strings.Contains(p.body, `id="session-list"`) || !strings.Contains(p.body, sessionURL(first.SessionID)) || !strings.Contains(p.body, sessionURL(done.SessionID)) ||
		strings.Contains(p.body, sessionURL(other.SessionID)) {
		t.Error("the console's sessions are not the user's")
	}

	// Signing out ends the sign-in; the old cookie no longer works.
	token := csrfOf(t, p)
	if p := b.post("/app/sign-out", url.Values{"csrf": {token}}); p.status != http.StatusSeeOther || p.header.Get("Location") != "/app/requests" {
		t.Fatalf("sign-out: %d", p.status)
	}
	if p := b.get("/app/requests"); !strings.Contains(p.body, `action="/app/sign-in"`) {
		t.Error("still signed in after signing out")
	}
	var n int
	if err := e.db.QueryRow(ctx, `SELECT count(*) FROM web_sessions`).Scan(&n); err != nil || n != 0 {
		t.Errorf("%d web sessions after sign-out (%v)", n, err)
	}
}

func TestPagesWithoutTheAppHaveNoApprovalPages(t *testing.T) {
	srv := NewServer(slog.New(slog.DiscardHandler), fixed{testSnapshot(t)}, testViews, nil)
	if res := get(t, srv, "/app/requests"); res.StatusCode != http.StatusNotFound {
		t.Errorf("/app/requests without the app: %d", res.StatusCode)
	}
}

// The page offers to save provided values for next time: saved, they become a
// memory item of the user for the request's site, asking before use unless the
// person unticked it; unsaved, nothing is kept beyond the session.
func TestProvidedValuesCanBeSavedFromThePage(t *testing.T) {
	e := newAppEnv(t)
	ctx := context.Background()
	ada, adaKey := e.user("ada")
	scout, _ := e.agent(ada, "scout")
	b := e.browser()
	b.mustSignIn(adaKey, "")

	for i, c := range []struct {
		form url.Values
		ask  *bool
	}{
		{url.Values{}, nil},
		{url.Values{"save": {"true"}, "askBeforeUse": {"true"}}, ptr(true)},
		{url.Values{"save": {"true"}}, ptr(false)},
	} {
		pm := e.raise(scout, provideMissing("pm"+strconv.Itoa(i)))
		page := b.get(requestURL(pm.ID))
		if !strings.Contains(page.body, `name="save"`) || !strings.Contains(page.body, `name="askBeforeUse"`) {
			t.Fatalf("the form offers no saving: %.300s", page.body)
		}
		c.form.Set("csrf", csrfOf(t, page))
		c.form.Set("decision", "approve")
		c.form.Set("value.email", "saved"+strconv.Itoa(i)+"@example.org")
		c.form.Set("value.card", "4111111111111111")
		if p := b.post(requestURL(pm.ID)+"/decision", c.form); p.status != http.StatusSeeOther {
			t.Fatalf("approve %d: %d %.300s", i, p.status, p.body)
		}
		items, _, err := e.store.Items(ctx, ada.UserID, memory.Scope{Host: "rain.example"}, nil, 50)
		if err != nil {
			t.Fatal(err)
		}
		if c.ask == nil {
			if len(items) != 0 {
				t.Errorf("unsaved values became %d items", len(items))
			}
			continue
		}
		it := items[0]
		if it.Label != "Rain" || it.AskBeforeUse != *c.ask || len(it.Fields) != 2 || it.Fields[0].Value == nil {
			t.Errorf("saved item %d: %+v", i, it.View())
		}
	}
}

func ptr[T any](v T) *T { return &v }

// The session page shows its person the session's events and the agent's spans in
// time order, a request's transitions linking to the request; another user's session
// is a 404 like an unknown one.
func TestSessionPageShowsATimelineOfEventsRequestsAndSpans(t *testing.T) {
	e := newAppEnv(t)
	ctx := context.Background()
	ada, adaKey := e.user("ada")
	scout, _ := e.agent(ada, "scout")
	_, bobKey := e.user("bob")
	pm := e.raise(scout, provideMissing("pm"))
	later := uint64(time.Now().Add(time.Second).UnixNano())
	if _, _, err := e.store.SaveSpans(ctx, scout, []trace.Span{{SessionID: pm.SessionID, TraceID: "4bf92f3577b34da6a3ce929d0e0e4736",
		SpanID: "00f067aa0ba902b7", Name: "fill the checkout form", Start: later, End: later + uint64(1500*time.Millisecond), Status: trace.Status{Code: 2}}}, 0); err != nil {
		t.Fatal(err)
	}
	b := e.browser()
	if p := b.get(sessionURL(pm.SessionID)); !strings.Contains(p.body, `action="/app/sign-in"`) || strings.Contains(p.body, "fill the checkout form") {
		t.Fatalf("signed out: %d", p.status)
	}
	b.mustSignIn(adaKey, "")
	p := b.get(sessionURL(pm.SessionID))
	if p.status != 200 || p.header.Get("Cache-Control") != "no-store" {
		t.Fatalf("session page: %d", p.status)
	}
	opened, asked, span := strings.Index(p.body, "session.opened"), strings.Index(p.body, "Provide missing details: waiting_user"), strings.Index(p.body, "fill the checkout form")
	if opened < 0 || asked < opened || span < asked || !strings.Contains(p.body, `href="`+requestURL(pm.ID)+`"`) ||
		!strings.Contains(p.body, "1.5s · error") || !strings.Contains(p.body, "Buy a rain forecast") {
		t.Errorf("timeline: %d %d %d\n%.3000s", opened, asked, span, p.body)
	}
	if r := b.get(requestURL(pm.ID)); !strings.Contains(r.body, `href="`+sessionURL(pm.SessionID)+`"`) {
		t.Error("the request page does not link its session")
	}
	other := e.browser()
	other.mustSignIn(bobKey, "")
	if p := other.get(sessionURL(pm.SessionID)); p.status != http.StatusNotFound || strings.Contains(p.body, "fill the checkout form") {
		t.Errorf("another user's session: %d", p.status)
	}
	if p := b.get("/app/sessions/not-a-uuid"); p.status != http.StatusNotFound {
		t.Errorf("not a session id: %d", p.status)
	}
}
