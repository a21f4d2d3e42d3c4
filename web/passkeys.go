package web

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/waystation/waystation/internal/auth"
	"github.com/waystation/waystation/internal/problem"
)

// Passkeys: a signed-in person registers passkeys on /app/passkeys, then signs in
// with one alone. Each ceremony is two calls from the console's script: options
// (kept server-side under a token in a short-lived cookie, taken once) and the
// authenticator's answer. They carry the page's CSRF token in X-CSRF-Token and are
// answered in JSON; every other console page works without the script.

// detailOf is what a problem says, for a page or a ceremony call to show.
func detailOf(err error) string {
	p, _ := problem.As(err)
	return p.Detail
}

// noCeremony is the answer to an answer without its ceremony.
var noCeremony = detailOf(auth.ErrNoCeremony)

const (
	ceremonyCookie = "waystation_passkey"
	// maxCeremonyBody bounds an authenticator's answer.
	maxCeremonyBody = 64 << 10
)

// PasskeysView is the person's passkeys and the form that adds one.
type PasskeysView struct {
	Page
	Bar      AppBar
	Passkeys []PasskeyRow
	// Available is false where passkeys cannot work: the site's public origin is
	// unknown (PUBLIC_URL) and the browser is not on http://localhost.
	Available bool
	Message   string
}

// PasskeyRow is one passkey as listed.
type PasskeyRow struct {
	ID, Name, Created, LastUsed, Delete string
	Current                             bool
}

// relyingParty is the site passkeys are made for when r reaches it: the public origin
// when one is configured; otherwise, in development on plain HTTP, the address the
// loopback browser used (http://localhost:8080). Never an IP address, which WebAuthn
// refuses, and never from a header in production.
func (s *Server) relyingParty(r *http.Request) (auth.RelyingParty, bool) {
	if s.approvals.PublicURL != "" {
		return auth.RelyingPartyOf(s.approvals.PublicURL)
	}
	if s.plainHTTP(r) {
		return auth.RelyingPartyOf("http://" + r.Host)
	}
	return auth.RelyingParty{}, false
}

// passkeyAnswer answers a ceremony call in JSON.
func passkeyAnswer(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// passkeyRefusal answers a ceremony call that cannot go on, with what to do.
func passkeyRefusal(w http.ResponseWriter, status int, message string) {
	passkeyAnswer(w, status, map[string]string{"message": message})
}

// beginCeremony keeps c under a fresh token whose cookie the browser holds until the
// answer, and answers the options.
func (s *Server) beginCeremony(w http.ResponseWriter, r *http.Request, c auth.Ceremony, options []byte) {
	token := newToken()
	hash, _ := tokenHash(token)
	if err := s.approvals.Auth.SaveCeremony(r.Context(), hash, c); err != nil {
		s.fail(w, r, err)
		return
	}
	s.setCookie(w, r, ceremonyCookie, token, int(auth.CeremonyTTL/time.Second))
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.Write(options)
}

// takeCeremony reads the authenticator's answer and takes the ceremony it answers;
// false after answering.
func (s *Server) takeCeremony(w http.ResponseWriter, r *http.Request) (auth.Ceremony, []byte, bool) {
	answer, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxCeremonyBody))
	if err != nil {
		passkeyRefusal(w, http.StatusRequestEntityTooLarge, "The passkey's answer was too large.")
		return auth.Ceremony{}, nil, false
	}
	s.setCookie(w, r, ceremonyCookie, "", -1)
	c, err := s.cookie(r, ceremonyCookie)
	var hash []byte
	ok := err == nil
	if ok {
		hash, ok = tokenHash(c.Value)
	}
	if !ok {
		passkeyRefusal(w, http.StatusBadRequest, noCeremony)
		return auth.Ceremony{}, nil, false
	}
	cer, err := s.approvals.Auth.TakeCeremony(r.Context(), hash)
	if errors.Is(err, auth.ErrNoCeremony) {
		passkeyRefusal(w, http.StatusBadRequest, noCeremony)
		return cer, nil, false
	}
	if err != nil {
		s.fail(w, r, err)
		return cer, nil, false
	}
	return cer, answer, true
}

// signInCall checks a sign-in ceremony call before anything is read: it counts
// against the caller's sign-in limit, carries the sign-in form's token (there is no
// session to bind it to yet) and reaches the site where passkeys work. False after
// answering.
func (s *Server) signInCall(w http.ResponseWriter, r *http.Request) (auth.RelyingParty, bool) {
	ok, wait, err := s.allowSignIn(r)
	if err != nil {
		s.fail(w, r, err)
		return auth.RelyingParty{}, false
	}
	if !ok {
		w.Header().Set("Retry-After", retryText(wait))
		passkeyRefusal(w, http.StatusTooManyRequests, "Too many sign-in attempts from your address: try again in "+secondsText(wait)+".")
		return auth.RelyingParty{}, false
	}
	if c, err := s.cookie(r, signInCookie); err != nil || !sameToken(c.Value, r.Header.Get("X-CSRF-Token")) {
		passkeyRefusal(w, http.StatusForbidden, "The sign-in page was out of date or this came from another site. Reload the page and try again.")
		return auth.RelyingParty{}, false
	}
	rp, ok := s.relyingParty(r)
	if !ok {
		passkeyRefusal(w, http.StatusConflict, "Passkeys do not work at this address; sign in with your user key.")
	}
	return rp, ok
}

// handlePasskeySignInOptions begins a sign-in with a passkey: any of this site's
// passkeys the authenticator holds may answer.
func (s *Server) handlePasskeySignInOptions() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		rp, ok := s.signInCall(w, r)
		if !ok {
			return
		}
		options, session, err := auth.BeginPasskeySignIn(rp)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		s.beginCeremony(w, r, auth.Ceremony{Session: session}, options)
	}
}

// handlePasskeySignIn checks the authenticator's answer and signs the browser in as
// the passkey's person. The answer leads back to the request the form came from.
func (s *Server) handlePasskeySignIn() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		rp, ok := s.signInCall(w, r)
		if !ok {
			return
		}
		cer, answer, ok := s.takeCeremony(w, r)
		if !ok {
			return
		}
		if cer.UserID != "" {
			passkeyRefusal(w, http.StatusBadRequest, noCeremony)
			return
		}
		pk, err := s.approvals.Auth.FinishPasskeySignIn(r.Context(), rp, cer.Session, answer)
		if errors.Is(err, auth.ErrPasskeyRefused) {
			passkeyRefusal(w, http.StatusUnauthorized, "That passkey is not one of this site's, or it could not be verified. Sign in with your user key, then add the passkey again.")
			return
		}
		if err != nil {
			s.fail(w, r, err)
			return
		}
		if err := s.startSignIn(w, r, auth.SignIn{PasskeyID: pk.ID}); err != nil {
			s.fail(w, r, err)
			return
		}
		back := r.URL.Query().Get("request")
		if !backOK(back) {
			back = ""
		}
		passkeyAnswer(w, http.StatusOK, map[string]string{"next": requestURL(back)})
	}
}

// ceremonyCall is a signed-in person's ceremony call carrying their CSRF token;
// false after answering.
func (s *Server) ceremonyCall(w http.ResponseWriter, r *http.Request) (auth.WebSession, auth.RelyingParty, bool) {
	ws, err := s.webSession(r)
	if errors.Is(err, errSignedOut) || errors.Is(err, errKeyRevoked) {
		passkeyRefusal(w, http.StatusUnauthorized, "You are not signed in. Sign in and try again.")
		return ws, auth.RelyingParty{}, false
	}
	if err != nil {
		s.fail(w, r, err)
		return ws, auth.RelyingParty{}, false
	}
	if !sameToken(ws.CSRFToken, r.Header.Get("X-CSRF-Token")) {
		passkeyRefusal(w, http.StatusForbidden, "The page was out of date or this came from another site. Reload the page and try again.")
		return ws, auth.RelyingParty{}, false
	}
	rp, ok := s.relyingParty(r)
	if !ok {
		passkeyRefusal(w, http.StatusConflict, "Passkeys do not work at this address.")
		return ws, rp, false
	}
	return ws, rp, true
}

// passkeyName is the name the person gave a new passkey, trimmed; "" when it is not
// one (empty, over 100 characters, or with control characters).
func passkeyName(v string) string {
	v = strings.TrimSpace(v)
	if v == "" || utf8.RuneCountInString(v) > 100 || !utf8.ValidString(v) || strings.ContainsFunc(v, func(c rune) bool { return c < ' ' || c == 0x7f }) {
		return ""
	}
	return v
}

// handlePasskeyOptions begins registering a passkey for the signed-in person.
func (s *Server) handlePasskeyOptions() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ws, rp, ok := s.ceremonyCall(w, r)
		if !ok {
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxForm)
		if err := r.ParseForm(); err != nil {
			passkeyRefusal(w, http.StatusBadRequest, "The form could not be read.")
			return
		}
		name := passkeyName(r.PostForm.Get("name"))
		if name == "" {
			passkeyRefusal(w, http.StatusUnprocessableEntity, "Give the passkey a name of 1 to 100 characters, such as the device it is on.")
			return
		}
		existing, err := s.approvals.Auth.Passkeys(r.Context(), ws.UserID)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		if len(existing) >= auth.MaxPasskeys {
			passkeyRefusal(w, http.StatusConflict, detailOf(auth.ErrTooManyPasskeys))
			return
		}
		options, session, err := auth.BeginPasskeyRegistration(rp, ws.UserID, ws.UserName, existing)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		s.beginCeremony(w, r, auth.Ceremony{UserID: ws.UserID, Name: name, Session: session}, options)
	}
}

// handleAddPasskey checks the authenticator's answer and keeps the new passkey.
func (s *Server) handleAddPasskey() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ws, rp, ok := s.ceremonyCall(w, r)
		if !ok {
			return
		}
		cer, answer, ok := s.takeCeremony(w, r)
		if !ok {
			return
		}
		if cer.UserID != ws.UserID {
			passkeyRefusal(w, http.StatusBadRequest, noCeremony)
			return
		}
		id, record, err := auth.FinishPasskeyRegistration(rp, ws.UserID, ws.UserName, cer.Session, answer)
		if errors.Is(err, auth.ErrPasskeyRefused) {
			passkeyRefusal(w, http.StatusUnprocessableEntity, "The passkey's answer could not be verified, so nothing was added.")
			return
		}
		if err != nil {
			s.fail(w, r, err)
			return
		}
		pk, err := s.approvals.Auth.AddPasskey(r.Context(), rp.ID, auth.Passkey{UserID: ws.UserID, Name: cer.Name, CredentialID: id, Credential: record})
		switch problem.CodeOf(err) {
		case "":
			if err != nil {
				s.fail(w, r, err)
				return
			}
		case problem.ValidationFailed, problem.QuotaExceeded:
			passkeyRefusal(w, http.StatusConflict, detailOf(err))
			return
		default:
			s.fail(w, r, err)
			return
		}
		passkeyAnswer(w, http.StatusCreated, map[string]string{"next": appPath + "/passkeys?added=" + pk.ID})
	}
}

// handlePasskeys lists the person's passkeys with the form that adds one.
func (s *Server) handlePasskeys() http.HandlerFunc {
	return s.consolePage(s.passkeysPage)
}

func (s *Server) passkeysPage(w http.ResponseWriter, r *http.Request, ws auth.WebSession, message string, status int) {
	keys, err := s.approvals.Auth.Passkeys(r.Context(), ws.UserID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	_, available := s.relyingParty(r)
	p := s.appPage("Passkeys")
	p.Script = passkeyScriptURL
	v := PasskeysView{Page: p, Bar: appBar(ws), Available: available, Message: message}
	added := r.URL.Query().Get("added")
	for _, k := range keys {
		if k.ID == added && message == "" {
			v.Message = "Added the passkey “" + k.Name + "”: you can sign in with it from now on."
		}
		row := PasskeyRow{ID: k.ID, Name: k.Name, Created: formatTime(k.CreatedAt), LastUsed: "never",
			Delete: appPath + "/passkeys/" + k.ID + "/delete", Current: k.ID == ws.PasskeyID}
		if k.LastUsedAt != nil {
			row.LastUsed = formatTime(*k.LastUsedAt)
		}
		v.Passkeys = append(v.Passkeys, row)
	}
	s.renderApp(w, r, PasskeysPage(v), status)
}

// handleDeletePasskey removes a passkey; the sign-ins it made end with it.
func (s *Server) handleDeletePasskey() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id, ws, ok := s.consoleItemForm(w, r)
		if !ok {
			return
		}
		err := s.approvals.Auth.DeletePasskey(r.Context(), ws.UserID, id)
		if errors.Is(err, auth.ErrPasskeyNotFound) {
			s.appNotFound(w, r)
			return
		}
		if err != nil {
			s.fail(w, r, err)
			return
		}
		http.Redirect(w, r, appPath+"/passkeys", http.StatusSeeOther)
	}
}
