package auth

import "time"

// WebSession is a person's sign-in to the approval pages, held by the browser as a
// random token the store knows only by its SHA-256. It stays bound to the user key or
// passkey it was made with, so that revoking the key or deleting the passkey ends the
// sign-in on the next page load. A passkey's sign-in has no KID.
type WebSession struct {
	Principal
	// UserName is the person's name, as their passkeys carry it.
	UserName string
	// Passkey names the passkey the person signed in with, when they did.
	PasskeyID, PasskeyName string
	// CSRFToken is what every form of the session must carry: a cross-site form has
	// the browser's cookie but cannot read the token.
	CSRFToken string
	ExpiresAt time.Time
	// Revoked is true once the key behind the session was revoked.
	Revoked bool
}
