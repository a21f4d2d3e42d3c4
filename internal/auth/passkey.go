package auth

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net"
	"strings"
	"time"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/webauthn"

	"github.com/waystation/waystation/internal/problem"
)

// Passkeys are WebAuthn credentials a person registers after a first sign-in with a
// user key, and then signs in to the console with alone. The ceremonies are the
// go-webauthn library's; what is kept of a passkey is its public record, under the
// relying party (the site's host name) it was made for.

// RelyingParty is the site passkeys are made for and used at: ID is its host name
// (never an IP address, which WebAuthn refuses), Origin the scheme, host and port
// pages are served from.
type RelyingParty struct {
	ID     string
	Origin string
}

// RelyingPartyOf is the relying party of origin (scheme://host[:port]); false when
// the host is an IP address or the origin is not one.
func RelyingPartyOf(origin string) (RelyingParty, bool) {
	scheme, rest, ok := strings.Cut(origin, "://")
	if !ok || (scheme != "http" && scheme != "https") || rest == "" || strings.ContainsAny(rest, "/?#@") {
		return RelyingParty{}, false
	}
	host := rest
	if h, _, err := net.SplitHostPort(rest); err == nil {
		host = h
	}
	host = strings.ToLower(host)
	if host == "" || net.ParseIP(strings.Trim(host, "[]")) != nil {
		return RelyingParty{}, false
	}
	return RelyingParty{ID: host, Origin: scheme + "://" + strings.ToLower(rest)}, true
}

// Passkey is a registered credential as the console lists it.
type Passkey struct {
	ID         string
	UserID     string
	Name       string
	CreatedAt  time.Time
	LastUsedAt *time.Time
	// CredentialID is the authenticator's id of the credential; Credential the
	// library's record of it (public key, flags, signature counter) as JSON.
	CredentialID []byte
	Credential   []byte
}

// Ceremony is what is kept between a ceremony's options and the authenticator's
// answer: the library's session data, and for a registration the user and the name
// the passkey will have.
type Ceremony struct {
	UserID  string
	Name    string
	Session []byte
}

// SignIn is what a console sign-in was made with: a user key, or a passkey.
type SignIn struct {
	KID       string
	PasskeyID string
}

// MaxPasskeys is how many passkeys one person may register.
const MaxPasskeys = 20

// CeremonyTTL is how long a ceremony waits for the authenticator's answer.
const CeremonyTTL = 5 * time.Minute

var (
	ErrPasskeyNotFound = problem.New(problem.NotFound, "No passkey of yours has this id.")
	ErrTooManyPasskeys = problem.New(problem.QuotaExceeded, "You have as many passkeys as one person may; delete one to add another.")
	ErrPasskeyExists   = problem.Invalid("This passkey is registered already.")
	ErrNoCeremony      = problem.New(problem.Unauthenticated, "The passkey prompt ran out of time or was answered already; start again.")
	// ErrPasskeyRefused is an answer that does not verify: a wrong signature, origin,
	// challenge or user, an unknown credential, or a counter that went back (a
	// cloned authenticator).
	ErrPasskeyRefused = problem.New(problem.Unauthenticated, "The passkey could not be verified.")
)

// passkeyUser is a person as the library sees them: a stable, random handle (the
// user's UUID, which says nothing of them) and their credentials.
type passkeyUser struct {
	handle []byte
	name   string
	creds  []webauthn.Credential
}

func (u passkeyUser) WebAuthnID() []byte                         { return u.handle }
func (u passkeyUser) WebAuthnName() string                       { return u.name }
func (u passkeyUser) WebAuthnDisplayName() string                { return u.name }
func (u passkeyUser) WebAuthnCredentials() []webauthn.Credential { return u.creds }

// userHandle is userID's WebAuthn handle: its 16 bytes.
func userHandle(userID string) ([]byte, error) {
	b, err := hex.DecodeString(strings.ReplaceAll(userID, "-", ""))
	if err != nil || len(b) != 16 {
		return nil, errors.New("auth: user id is not a UUID")
	}
	return b, nil
}

func relyingParty(rp RelyingParty) (*webauthn.WebAuthn, error) {
	return webauthn.New(&webauthn.Config{
		RPID:          rp.ID,
		RPDisplayName: "Waystation",
		RPOrigins:     []string{rp.Origin},
		// A passkey is the whole sign-in, so the authenticator must verify the person
		// (PIN, biometrics) and hold the credential itself (discoverable).
		AuthenticatorSelection: protocol.AuthenticatorSelection{
			ResidentKey:      protocol.ResidentKeyRequirementRequired,
			UserVerification: protocol.VerificationRequired,
		},
		Timeouts: webauthn.TimeoutsConfig{
			Login:        webauthn.TimeoutConfig{Enforce: true, Timeout: CeremonyTTL},
			Registration: webauthn.TimeoutConfig{Enforce: true, Timeout: CeremonyTTL},
		},
	})
}

// records decodes stored passkeys into the library's credentials.
func records(keys []Passkey) ([]webauthn.Credential, error) {
	out := make([]webauthn.Credential, 0, len(keys))
	for _, k := range keys {
		var c webauthn.Credential
		if err := json.Unmarshal(k.Credential, &c); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// BeginPasskeyRegistration is the options a browser's navigator.credentials.create
// takes (JSON, {"publicKey": …}) and the session data its answer is checked against.
// Passkeys the user has already are excluded, so one authenticator is not registered
// twice.
func BeginPasskeyRegistration(rp RelyingParty, userID, userName string, existing []Passkey) (options, session []byte, err error) {
	w, err := relyingParty(rp)
	if err != nil {
		return nil, nil, err
	}
	handle, err := userHandle(userID)
	if err != nil {
		return nil, nil, err
	}
	creds, err := records(existing)
	if err != nil {
		return nil, nil, err
	}
	exclude := make([]protocol.CredentialDescriptor, len(creds))
	for i, c := range creds {
		exclude[i] = c.Descriptor()
	}
	creation, data, err := w.BeginRegistration(passkeyUser{handle: handle, name: userName, creds: creds}, webauthn.WithExclusions(exclude))
	return encodeCeremony(creation, data, err)
}

// encodeCeremony is a ceremony's options and session data as JSON.
func encodeCeremony(options any, data *webauthn.SessionData, err error) ([]byte, []byte, error) {
	if err != nil {
		return nil, nil, err
	}
	o, err := json.Marshal(options)
	if err != nil {
		return nil, nil, err
	}
	d, err := json.Marshal(data)
	if err != nil {
		return nil, nil, err
	}
	return o, d, nil
}

// FinishPasskeyRegistration checks the authenticator's answer (the credential's JSON)
// against the ceremony and gives back the new passkey's id and record.
// ErrPasskeyRefused when it does not verify.
func FinishPasskeyRegistration(rp RelyingParty, userID, userName string, session, answer []byte) (credentialID, credential []byte, err error) {
	w, err := relyingParty(rp)
	if err != nil {
		return nil, nil, err
	}
	handle, err := userHandle(userID)
	if err != nil {
		return nil, nil, err
	}
	var data webauthn.SessionData
	if err := json.Unmarshal(session, &data); err != nil {
		return nil, nil, err
	}
	parsed, err := protocol.ParseCredentialCreationResponseBytes(answer)
	if err != nil {
		return nil, nil, ErrPasskeyRefused
	}
	c, err := w.CreateCredential(passkeyUser{handle: handle, name: userName}, data, parsed)
	if err != nil {
		return nil, nil, ErrPasskeyRefused
	}
	if credential, err = json.Marshal(c); err != nil {
		return nil, nil, err
	}
	return c.ID, credential, nil
}

// BeginPasskeySignIn is the options for navigator.credentials.get with no user named:
// the authenticator offers the passkeys it holds for this site.
func BeginPasskeySignIn(rp RelyingParty) (options, session []byte, err error) {
	w, err := relyingParty(rp)
	if err != nil {
		return nil, nil, err
	}
	assertion, data, err := w.BeginDiscoverableLogin()
	return encodeCeremony(assertion, data, err)
}

// FinishPasskeySignIn checks a sign-in answer against the ceremony and the stored
// passkey it names, records the use (and the new signature counter), and gives back
// the passkey. ErrPasskeyRefused when it does not verify, names a passkey the store
// does not know, or comes from an authenticator whose counter went back.
func FinishPasskeySignIn(ctx context.Context, store PasskeyStore, rp RelyingParty, session, answer []byte) (Passkey, error) {
	w, err := relyingParty(rp)
	if err != nil {
		return Passkey{}, err
	}
	var data webauthn.SessionData
	if err := json.Unmarshal(session, &data); err != nil {
		return Passkey{}, err
	}
	parsed, err := protocol.ParseCredentialRequestResponseBytes(answer)
	if err != nil {
		return Passkey{}, ErrPasskeyRefused
	}
	var found Passkey
	var storeErr error
	lookup := func(rawID, handle []byte) (webauthn.User, error) {
		p, err := store.PasskeyByCredential(ctx, rp.ID, rawID)
		if err != nil {
			storeErr = err
			return nil, err
		}
		want, err := userHandle(p.UserID)
		if err != nil || !bytes.Equal(want, handle) {
			storeErr = ErrPasskeyRefused
			return nil, ErrPasskeyRefused
		}
		creds, err := records([]Passkey{p})
		if err != nil {
			storeErr = err
			return nil, err
		}
		found = p
		return passkeyUser{handle: want, creds: creds}, nil
	}
	_, c, err := w.ValidatePasskeyLogin(lookup, data, parsed)
	if err != nil {
		if storeErr != nil && !errors.Is(storeErr, ErrPasskeyNotFound) && !errors.Is(storeErr, ErrPasskeyRefused) {
			return Passkey{}, storeErr
		}
		return Passkey{}, ErrPasskeyRefused
	}
	if c.Authenticator.CloneWarning {
		return Passkey{}, ErrPasskeyRefused
	}
	record, err := json.Marshal(c)
	if err != nil {
		return Passkey{}, err
	}
	if err := store.UsedPasskey(ctx, found.ID, record); err != nil {
		return Passkey{}, err
	}
	found.Credential = record
	return found, nil
}
