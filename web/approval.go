package web

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/a-h/templ"
	"github.com/go-chi/chi/v5"

	"github.com/waystation/waystation/internal/app"
	"github.com/waystation/waystation/internal/auth"
	"github.com/waystation/waystation/internal/captcha"
	"github.com/waystation/waystation/internal/clientip"
	"github.com/waystation/waystation/internal/payment"
	"github.com/waystation/waystation/internal/problem"
	"github.com/waystation/waystation/internal/request"
	"github.com/waystation/waystation/internal/trace"
)

// Approvals is what the approval pages are served from: the domain's services, the
// very ones the API holds, and how the pages are reached. Without a pepper (see
// auth.Service) no key can be verified, so every sign-in with a key is refused: the
// pages fail closed, as the API does.
type Approvals struct {
	// Services are the use cases the pages serve. Without Traces (or its store) a
	// session's timeline shows the events alone; without Payments (or its store)
	// the console shows no payments, limits or spend; without Captchas (or its
	// store) a captcha request's page shows no image; without Guard the console
	// shows no detections of protected values.
	app.Services
	// TrustedProxies are those whose X-Forwarded-For names the client sign-in
	// attempts are counted for.
	TrustedProxies clientip.Proxies
	// SessionTTL is how long a sign-in lasts (default 12h).
	SessionTTL time.Duration
	// PublicURL, when set, is the origin the pages are published under: forms posted
	// from it are accepted even where a proxy rewrote the Host header.
	PublicURL string
	// LoopbackHTTP is for development on plain HTTP: clients on a loopback address
	// reaching the pages without TLS get cookies without Secure and without the
	// __Host- prefix, which a browser would refuse there. Everyone else, and every
	// client when it is false, gets __Host- cookies marked Secure.
	LoopbackHTTP bool
}

// Option adds to what NewServer wires.
type Option func(*Server)

// WithApprovals serves the approval pages under /app.
func WithApprovals(a Approvals) Option {
	return func(s *Server) {
		if a.SessionTTL <= 0 {
			a.SessionTTL = 12 * time.Hour
		}
		// Without these services their facts are not shown: a payment service
		// without a store keeps no payments, a CAPTCHA service no tasks, a trace
		// service no spans.
		if a.Payments == nil {
			a.Payments = &payment.Service{}
		}
		if a.Captchas == nil {
			a.Captchas = &captcha.Service{}
		}
		if a.Traces == nil {
			a.Traces = trace.NewService(nil, nil, trace.Config{})
		}
		s.approvals = &a
		s.signIns = newSignInLimiter()
	}
}

const (
	// sessionCookie holds a sign-in's token; signInCookie the token the sign-in form
	// must echo, since there is no session yet to bind it to.
	sessionCookie = "waystation_session"
	signInCookie  = "waystation_signin"
	appPath       = "/app"
	// maxForm bounds a form's body: 20 values of 4 KiB and room for the rest.
	maxForm = 256 << 10
	// waitingLimit is how many waiting requests the index lists.
	waitingLimit = 50
)

var uuidPattern = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// appHeaders marks every answer under /app, errors and redirects included, as
// private and unframeable: a page that approves with one click must never sit under
// another site's frame (clickjacking), leak its URL as a referrer, or stay in a
// cache.
func appHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !isApp(r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		h := w.Header()
		h.Set("Cache-Control", "no-store")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; script-src 'self'; connect-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Content-Type-Options", "nosniff")
		next.ServeHTTP(w, r)
	})
}

// isApp tells whether path is one of the approval pages' (or would be).
func isApp(path string) bool {
	return path == appPath || strings.HasPrefix(path, appPath+"/")
}

// sameOrigin refuses a form posted from another site before it is read, by the
// browser's Fetch Metadata (Sec-Fetch-Site) or, without it, by Origin against the
// request's host and PublicURL. It adds to the forms' CSRF tokens and SameSite
// cookies; a client that sends neither header (not a browser) passes to them.
func (s *Server) sameOrigin(next http.Handler) http.Handler {
	cop := http.NewCrossOriginProtection()
	if s.approvals.PublicURL != "" {
		if err := cop.AddTrustedOrigin(s.approvals.PublicURL); err != nil {
			s.log.Warn("approval pages: public URL is not an origin", "url", s.approvals.PublicURL, "err", err)
		}
	}
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := MessageView{Page: s.appPage("Refused"), Heading: "Nothing was changed",
			Message: "This form was sent from another site, so it was refused. Open the page here and send it again.",
			Back:    requestURL("")}
		s.renderApp(w, r, MessagePage(v), http.StatusForbidden)
	}))
	return cop.Handler(next)
}

// sessionURL is the page of session id.
func sessionURL(id string) string { return appPath + "/sessions/" + id }

// requestURL is the page of request id; "" is the index.
func requestURL(id string) string {
	if id == "" {
		return appPath + "/requests"
	}
	if consent, ok := strings.CutPrefix(id, consentBack); ok {
		return appPath + consentPath + consent
	}
	return appPath + "/requests/" + id
}

// consentBack prefixes the id of a host's authorization request where sign-in leads
// back to its consent page, rather than to a request.
const consentBack = "oauth-"

// backOK tells whether back is where sign-in may lead: a request's id, or
// consentBack and an authorization request's.
func backOK(back string) bool {
	return uuidPattern.MatchString(strings.TrimPrefix(back, consentBack))
}

// newToken is 256 random bits in URL-safe base64.
func newToken() string {
	var b [32]byte
	rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// tokenHash is what the store knows of a session token: a database dump alone
// cannot sign anyone in.
func tokenHash(token string) ([]byte, bool) {
	b, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil || len(b) != 32 {
		return nil, false
	}
	sum := sha256.Sum256(b)
	return sum[:], true
}

func sameToken(a, b string) bool {
	return a != "" && subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// plainHTTP tells whether r's cookies go without Secure: only when the server was
// told it runs on plain HTTP for loopback clients, and r is one, without TLS. No
// request header decides it, so a client cannot talk the server out of Secure.
func (s *Server) plainHTTP(r *http.Request) bool {
	if !s.approvals.LoopbackHTTP || r.TLS != nil {
		return false
	}
	return clientip.Loopback(r.RemoteAddr)
}

// cookieName is the name a cookie has for r: with the __Host- prefix, which makes a
// browser keep it only if it is Secure, for this host alone and for every path, so
// that neither a sibling subdomain nor a plain-HTTP page can plant or shadow it.
func (s *Server) cookieName(r *http.Request, name string) string {
	if s.plainHTTP(r) {
		return name
	}
	return "__Host-" + name
}

func (s *Server) cookie(r *http.Request, name string) (*http.Cookie, error) {
	return r.Cookie(s.cookieName(r, name))
}

func (s *Server) setCookie(w http.ResponseWriter, r *http.Request, name, value string, maxAge int) {
	http.SetCookie(w, &http.Cookie{Name: s.cookieName(r, name), Value: value, Path: "/", MaxAge: maxAge,
		HttpOnly: true, Secure: !s.plainHTTP(r), SameSite: http.SameSiteStrictMode})
}

// errSignedOut is a browser without a live sign-in; errKeyRevoked one whose key was
// revoked since.
var (
	errSignedOut  = errors.New("web: not signed in")
	errKeyRevoked = errors.New("web: the key behind the sign-in was revoked")
)

// webSession is the sign-in of r's browser, checked against its key on every call.
// A sign-in whose key was revoked is ended on the spot.
func (s *Server) webSession(r *http.Request) (auth.WebSession, error) {
	c, err := s.cookie(r, sessionCookie)
	if err != nil {
		return auth.WebSession{}, errSignedOut
	}
	hash, ok := tokenHash(c.Value)
	if !ok {
		return auth.WebSession{}, errSignedOut
	}
	ws, err := s.approvals.Auth.WebSession(r.Context(), hash)
	if errors.Is(err, auth.ErrNoWebSession) {
		return ws, errSignedOut
	}
	if err != nil {
		return ws, err
	}
	if ws.Revoked || ws.Scope != auth.ScopeUser {
		if err := s.approvals.Auth.EndWebSession(r.Context(), hash); err != nil {
			return ws, err
		}
		return ws, errKeyRevoked
	}
	return ws, nil
}

// signedIn returns the browser's sign-in, or answers with the sign-in form (status
// for a browser without one) and false. requestID is where sign-in leads back to.
func (s *Server) signedIn(w http.ResponseWriter, r *http.Request, requestID string, status int) (auth.WebSession, bool) {
	ws, err := s.webSession(r)
	switch {
	case err == nil:
		return ws, true
	case errors.Is(err, errKeyRevoked):
		s.setCookie(w, r, sessionCookie, "", -1)
		s.signInForm(w, r, requestID, "The key you signed in with was revoked, so you were signed out. Sign in with a valid user key.", status)
	case errors.Is(err, errSignedOut):
		msg := ""
		if r.Method == http.MethodPost {
			msg = "You are not signed in, so nothing was changed. Sign in and try again."
		}
		s.signInForm(w, r, requestID, msg, status)
	default:
		s.fail(w, r, err)
	}
	return ws, false
}

// signInForm answers the sign-in page with a fresh form token, kept in a cookie the
// form must match (a cross-site form cannot read it, nor send it: SameSite=Strict).
func (s *Server) signInForm(w http.ResponseWriter, r *http.Request, requestID, message string, status int) {
	token := newToken()
	if c, err := s.cookie(r, signInCookie); err == nil {
		if _, ok := tokenHash(c.Value); ok {
			token = c.Value // keep it, so that a second open form still works
		}
	}
	s.setCookie(w, r, signInCookie, token, int(time.Hour/time.Second))
	v := SignInView{Page: s.appPage("Sign in"), RequestID: requestID, CSRF: token, Message: message}
	if _, ok := s.relyingParty(r); ok && s.approvals.Auth.PasskeysOn() {
		v.Page.Script = passkeyScriptURL
		v.Passkey = appPath + "/sign-in/passkey"
		if requestID != "" {
			v.Passkey += "?request=" + requestID
		}
	}
	s.renderApp(w, r, SignInPage(v), status)
}

// renderApp answers an approval page; appHeaders set the rest of the headers.
func (s *Server) renderApp(w http.ResponseWriter, r *http.Request, c templ.Component, status int) {
	var b bytes.Buffer
	if err := c.Render(r.Context(), &b); err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header()["Content-Type"] = typeHTML
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		w.Write(b.Bytes())
	}
}

func (s *Server) appPage(title string) Page {
	return newPage(s.snapshots.Current(), title, "", "")
}

// parseForm reads a POSTed form of bounded size; false after answering 400.
func parseForm(w http.ResponseWriter, r *http.Request) bool {
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "The form could not be read.", http.StatusBadRequest)
		return false
	}
	return true
}

// idParam is the id of the path (a request's, an item's), lower-cased; false if it
// is not a UUID.
func idParam(r *http.Request) (string, bool) {
	id := chi.URLParam(r, "id")
	return strings.ToLower(id), uuidPattern.MatchString(id)
}

// handleSignInPage shows the sign-in form at its own address, so that a person can
// sign in before a request waits for them (with ?request=<id>, the form leads back to
// it); a browser already signed in goes straight on.
func (s *Server) handleSignInPage() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		back := strings.ToLower(r.URL.Query().Get("request"))
		if !backOK(back) {
			back = ""
		}
		if _, ok := s.signedIn(w, r, back, http.StatusOK); ok {
			http.Redirect(w, r, requestURL(back), http.StatusSeeOther)
		}
	}
}

// handleSignIn turns a user key into a sign-in. Agent keys are refused outright: an
// agent that holds an approval link must not be able to approve its own request.
func (s *Server) handleSignIn() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !parseForm(w, r) {
			return
		}
		back := r.PostForm.Get("request")
		if back != "" && !backOK(back) {
			back = ""
		}
		refuse := func(msg string) { s.signInForm(w, r, back, msg, http.StatusForbidden) }
		ok, wait, err := s.allowSignIn(r)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		if !ok {
			w.Header().Set("Retry-After", retryText(wait))
			s.signInForm(w, r, back, "Too many sign-in attempts from your address: try again in "+secondsText(wait)+".", http.StatusTooManyRequests)
			return
		}
		c, err := s.cookie(r, signInCookie)
		if err != nil || !sameToken(c.Value, r.PostForm.Get("csrf")) {
			refuse("The sign-in form was out of date or sent from another site. Sign in again.")
			return
		}
		key := strings.TrimSpace(r.PostForm.Get("key"))
		scope, _, _, err := auth.Parse(key)
		if err != nil {
			refuse("That is not a Waystation key. Paste your user key, which starts with sk_user_.")
			return
		}
		if scope == auth.ScopeAgent {
			refuse("That is an agent key. Agent keys cannot sign in here: only the person who owns the agent decides its requests. Sign in with your user key (sk_user_…).")
			return
		}
		if s.approvals.Auth.CheckPepper() != nil {
			refuse("Signing in is not set up on this server.")
			return
		}
		stored, err := s.approvals.Auth.Authenticate(r.Context(), key)
		switch problem.CodeOf(err) {
		case "":
			if err != nil {
				s.fail(w, r, err)
				return
			}
		case problem.InvalidAPIKey:
			refuse("That key is not valid.")
			return
		case problem.KeyRevoked:
			refuse("That key was revoked. Sign in with a valid user key.")
			return
		default:
			s.fail(w, r, err)
			return
		}
		if err := s.startSignIn(w, r, auth.SignIn{KID: stored.KID}); err != nil {
			s.fail(w, r, err)
			return
		}
		http.Redirect(w, r, requestURL(back), http.StatusSeeOther)
	}
}

// startSignIn signs r's browser in with by: the sign-in it had ends, a new one begins
// with a fresh token and CSRF token, and the sign-in form's token is spent.
func (s *Server) startSignIn(w http.ResponseWriter, r *http.Request, by auth.SignIn) error {
	if old, err := s.cookie(r, sessionCookie); err == nil {
		if hash, ok := tokenHash(old.Value); ok {
			if err := s.approvals.Auth.EndWebSession(r.Context(), hash); err != nil {
				return err
			}
		}
	}
	token := newToken()
	hash, _ := tokenHash(token)
	if err := s.approvals.Auth.StartWebSession(r.Context(), hash, by, newToken(), s.approvals.SessionTTL); err != nil {
		return err
	}
	s.setCookie(w, r, sessionCookie, token, int(s.approvals.SessionTTL/time.Second))
	s.setCookie(w, r, signInCookie, "", -1)
	return nil
}

// handleSignOut ends the browser's sign-in.
func (s *Server) handleSignOut() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !parseForm(w, r) {
			return
		}
		ws, ok := s.signedIn(w, r, "", http.StatusForbidden)
		if !ok {
			return
		}
		if !sameToken(ws.CSRFToken, r.PostForm.Get("csrf")) {
			s.forbidden(w, r)
			return
		}
		c, _ := s.cookie(r, sessionCookie)
		hash, _ := tokenHash(c.Value)
		if err := s.approvals.Auth.EndWebSession(r.Context(), hash); err != nil {
			s.fail(w, r, err)
			return
		}
		s.setCookie(w, r, sessionCookie, "", -1)
		http.Redirect(w, r, requestURL(""), http.StatusSeeOther)
	}
}

// forbidden answers a form without the sign-in's CSRF token: it may come from
// another site, so nothing is changed.
func (s *Server) forbidden(w http.ResponseWriter, r *http.Request) {
	v := MessageView{Page: s.appPage("Refused"), Heading: "Nothing was changed",
		Message: "The form did not carry this sign-in's token: it is out of date or was sent from another site.",
		Back:    requestURL(chi.URLParam(r, "id"))}
	if _, ok := idParam(r); !ok {
		v.Back = requestURL("")
	}
	s.renderApp(w, r, MessagePage(v), http.StatusForbidden)
}

// appNotFound answers a request or session that does not exist or belongs to someone
// else, alike, so that the page tells nothing about other people's.
func (s *Server) appNotFound(w http.ResponseWriter, r *http.Request) {
	v := MessageView{Page: s.appPage("Not found"), Heading: "Not found",
		Message: "Nothing of yours is at this address: no request or session of yours has this id.", Back: requestURL("")}
	s.renderApp(w, r, MessagePage(v), http.StatusNotFound)
}

// handleRequests lists the signed-in user's requests still waiting, newest first.
func (s *Server) handleRequests() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ws, ok := s.signedIn(w, r, "", http.StatusOK)
		if !ok {
			return
		}
		items, err := s.approvals.Requests.Waiting(r.Context(), ws.UserID, waitingLimit)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		agents, err := s.approvals.Auth.Agents(r.Context(), ws.UserID)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		v := requestsView(s.appPage("Waiting requests"), ws, items, agents)
		sessions, _, err := s.approvals.Sessions.Sessions(r.Context(), ws.Principal, nil, recentSessions)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		names := map[string]string{}
		for _, a := range agents {
			names[a.ID] = agentName(a)
		}
		for _, se := range sessions {
			v.Sessions = append(v.Sessions, SessionRow{URL: sessionURL(se.ID), Description: se.Description, Agent: names[se.AgentID],
				Status: se.Status, Updated: formatTime(se.UpdatedAt)})
		}
		s.renderApp(w, r, RequestsPage(v), http.StatusOK)
	}
}

// handleRequest shows one request of the signed-in user: what it asks, and the
// decision form while it waits, or how it ended.
func (s *Server) handleRequest() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id, ok := idParam(r)
		if !ok {
			s.appNotFound(w, r)
			return
		}
		ws, ok := s.signedIn(w, r, id, http.StatusOK)
		if !ok {
			return
		}
		s.requestPage(w, r, ws, id, "", http.StatusOK)
	}
}

// requestPage answers the page of request id with message on top.
func (s *Server) requestPage(w http.ResponseWriter, r *http.Request, ws auth.WebSession, id, message string, status int) {
	ctx := r.Context()
	req, err := s.approvals.Requests.Request(ctx, ws.Principal, id)
	if !s.found(w, r, err) {
		return
	}
	agent, err := s.approvals.Auth.Agent(ctx, ws.UserID, req.AgentID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	sess, err := s.approvals.Sessions.Session(ctx, ws.Principal, req.SessionID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	v := requestView(s.appPage("Request from "+agent.Name), ws, req, agent, sess, time.Now())
	v.Message = message
	switch req.Kind {
	case request.KindAuthorizePayment:
		pay, lim, err := s.approvals.Payments.RequestPayment(ctx, ws.Principal, req.ID, req.AgentID)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		v.Payment = paymentView(pay, lim)
	case request.KindCaptcha:
		task, err := s.approvals.Captchas.RequestTask(ctx, ws.Principal, req.ID)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		v.Captcha = captchaView(task)
	}
	s.renderApp(w, r, RequestPage(v), status)
}

// handleDecision applies the signed-in user's decision through the same request
// service as the API, so the state machine, expiry, sealing and what follows an
// approval are one. Provided values go from the form to the sealer and nowhere else:
// not into a page, a log or a URL.
func (s *Server) handleDecision() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id, ok := idParam(r)
		if !ok {
			s.appNotFound(w, r)
			return
		}
		if !parseForm(w, r) {
			return
		}
		ws, ok := s.signedIn(w, r, id, http.StatusForbidden)
		if !ok {
			return
		}
		if !sameToken(ws.CSRFToken, r.PostForm.Get("csrf")) {
			s.forbidden(w, r)
			return
		}
		_, err := s.approvals.Requests.Decide(r.Context(), ws.Principal, "", id, decisionFrom(r.PostForm))
		if errors.Is(err, request.ErrNoSealer) {
			s.log.Error("approval page: no key to seal provided values")
		}
		f := form{page: func(message string, status int) { s.requestPage(w, r, ws, id, message, status) }, refusals: []refusal{
			{code: problem.RequestExpired, message: "This request expired before your decision reached it: nothing was approved.", status: http.StatusConflict},
			{code: problem.InvalidStateTransition, message: "This request no longer waits for a decision: nothing was changed.", status: http.StatusConflict},
			{code: problem.OverrideRequired, message: "The directory says to avoid this seller: tick the override to pay it anyway. Nothing was approved.", status: http.StatusUnprocessableEntity},
			{code: problem.ValidationFailed, message: "Nothing was sent: ", detail: true, status: http.StatusUnprocessableEntity},
			{err: request.ErrNoSealer, message: "This server has no key to keep provided values sealed, so it cannot take them. Nothing was sent.", status: http.StatusServiceUnavailable},
		}}
		s.answer(w, r, f, err, seeOther(w, r, requestURL(id)))
	}
}

// decisionFrom reads the decision form: the button pressed, the chosen option and
// the provided values (inputs named value.<field key>). A denial carries neither.
func decisionFrom(form url.Values) request.Decision {
	d := request.Decision{Decision: form.Get("decision")}
	if d.Decision != request.Approve {
		return d
	}
	d.SelectedChoiceID = form.Get("choice")
	d.OverrideVerdict = form.Get("overrideVerdict") == "true"
	if form.Get("save") == "true" {
		d.Save = true
		ask := form.Get("askBeforeUse") == "true"
		d.AskBeforeUse = &ask
	}
	for k, vs := range form {
		if key, ok := strings.CutPrefix(k, "value."); ok && len(vs) > 0 {
			if d.Values == nil {
				d.Values = map[string]string{}
			}
			d.Values[key] = vs[0]
		}
	}
	return d
}

// recentSessions is how many sessions the console's home lists.
const recentSessions = 20

// timelineLimit bounds the events and the spans a session page shows.
const timelineLimit = 500

// handleSession shows one of the signed-in user's sessions as a timeline.
func (s *Server) handleSession() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id, ok := idParam(r)
		if !ok {
			s.appNotFound(w, r)
			return
		}
		ws, ok := s.signedIn(w, r, "", http.StatusOK)
		if !ok {
			return
		}
		ctx := r.Context()
		events, sess, err := s.approvals.Sessions.Events(ctx, ws.Principal, id, 0, timelineLimit)
		if !s.found(w, r, err) {
			return
		}
		agent, err := s.approvals.Auth.Agent(ctx, ws.UserID, sess.AgentID)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		spans, more, err := s.approvals.Traces.Spans(ctx, ws.Principal, id, nil, timelineLimit)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		limited := more != nil || int64(len(events)) < sess.LastEventSeq
		v := sessionView(s.appPage(sess.Description), ws, sess, agent, events, spans, limited)
		s.renderApp(w, r, SessionPage(v), http.StatusOK)
	}
}
