// Package oauth is the service's OAuth 2.1 authorization server for MCP hosts: a
// host registers itself (RFC 7591), sends the person to the console, where they
// approve it and choose the agent it acts as, exchanges the code it gets with its
// PKCE verifier for tokens bound to one resource (RFC 8707), rotates its refresh
// token and may revoke them (RFC 7009). A grant is an agent key without a secret, so
// its tokens act exactly as the agent's key would.
package oauth

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Scopes the server grants. A host acts as one agent; nothing a person alone may do
// (approve, grant, issue keys) is ever a host's.
const ScopeAgent = "agent"

// SupportedScopes are the scopes a host may ask for.
var SupportedScopes = []string{ScopeAgent}

// Lifetimes of what the server issues, unless the service is told otherwise.
const (
	DefaultCodeTTL    = time.Minute
	DefaultRequestTTL = 10 * time.Minute
	DefaultAccessTTL  = time.Hour
	DefaultRefreshTTL = 30 * 24 * time.Hour
)

// Bounds on what a host may register.
const (
	MaxRedirectURIs  = 5
	MaxRedirectURI   = 2000
	MaxClientName    = 200
	MaxState         = 1000
	MaxClientsPerDay = 1000
	// RegistrationsPerHour is how many hosts one address may register in an hour,
	// in bursts of a quarter of it: a host registers once, and again only when it
	// forgets its client_id.
	RegistrationsPerHour = 20
)

// Token prefixes: they tell an OAuth token from an API key at a glance, and in a
// leaked log or repository for what it is.
const (
	AccessPrefix  = "wsat_"
	RefreshPrefix = "wsrt_"
	codePrefix    = "wsac_"
)

// IsToken reports whether token has the form of an access token (rather than an API
// key).
func IsToken(token string) bool { return strings.HasPrefix(token, AccessPrefix) }

// Error is an OAuth error as RFC 6749 (section 5.2 and 4.1.2.1), RFC 7591 (3.2.2)
// and RFC 8707 name them: Code is the error's code, Description says why for a
// developer, and Redirect tells an authorization error that may go back to the
// client's redirect URI from one that must not (its client or redirect URI is not
// known to be the client's).
type Error struct {
	Code        string
	Description string
	Redirect    bool
}

func (e *Error) Error() string { return "oauth: " + e.Code + ": " + e.Description }

// Error codes.
const (
	InvalidRequest          = "invalid_request"
	InvalidClient           = "invalid_client"
	InvalidGrant            = "invalid_grant"
	UnauthorizedClient      = "unauthorized_client"
	UnsupportedGrantType    = "unsupported_grant_type"
	UnsupportedResponseType = "unsupported_response_type"
	InvalidScope            = "invalid_scope"
	InvalidTarget           = "invalid_target"
	AccessDenied            = "access_denied"
	InvalidRedirectURI      = "invalid_redirect_uri"
	InvalidClientMetadata   = "invalid_client_metadata"
	TemporarilyUnavailable  = "temporarily_unavailable"
)

func fail(code, description string) *Error { return &Error{Code: code, Description: description} }

// AsError is err's OAuth error, if it is one.
func AsError(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}

// Client is a registered host.
type Client struct {
	ID           string
	Name         string
	RedirectURIs []string
	CreatedAt    time.Time
}

// ClientMetadata is what a host asks to be registered with (RFC 7591, section 2):
// only the fields the server reads; the rest it ignores, and answers what it keeps.
type ClientMetadata struct {
	RedirectURIs            []string `json:"redirect_uris"`
	ClientName              string   `json:"client_name"`
	GrantTypes              []string `json:"grant_types"`
	ResponseTypes           []string `json:"response_types"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
	Scope                   string   `json:"scope"`
}

// Check refuses metadata the server will not register: a redirect URI that is not
// https, nor http on a loopback address, or that has a fragment; too many or too long
// ones; grant or response types it does not serve; a confidential client (every host
// is public and proves itself with PKCE).
func (m ClientMetadata) Check() error {
	if len(m.RedirectURIs) == 0 || len(m.RedirectURIs) > MaxRedirectURIs {
		return fail(InvalidRedirectURI, "redirect_uris must list 1 to 5 URIs.")
	}
	for _, u := range m.RedirectURIs {
		if err := checkRedirectURI(u); err != nil {
			return err
		}
	}
	if strings.TrimSpace(m.ClientName) == "" && m.ClientName != "" || len(m.ClientName) > MaxClientName || !printable(m.ClientName) {
		return fail(InvalidClientMetadata, "client_name must be at most 200 bytes of printable text.")
	}
	for _, g := range m.GrantTypes {
		if g != "authorization_code" && g != "refresh_token" {
			return fail(InvalidClientMetadata, "grant_types may hold authorization_code and refresh_token only.")
		}
	}
	for _, t := range m.ResponseTypes {
		if t != "code" {
			return fail(InvalidClientMetadata, "response_types may hold code only.")
		}
	}
	if a := m.TokenEndpointAuthMethod; a != "" && a != "none" {
		return fail(InvalidClientMetadata, "token_endpoint_auth_method must be none: hosts are public clients and prove themselves with PKCE.")
	}
	return nil
}

// checkRedirectURI refuses a redirect URI that is not absolute https, or http on a
// loopback address (a native host's local listener), or that has a fragment or user
// information.
func checkRedirectURI(raw string) error {
	bad := func(why string) error { return fail(InvalidRedirectURI, "redirect URI "+why) }
	if len(raw) > MaxRedirectURI {
		return bad("is longer than 2000 bytes.")
	}
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Host == "" || u.Opaque != "" {
		return bad("is not an absolute URL.")
	}
	if u.Fragment != "" || strings.Contains(raw, "#") {
		return bad("has a fragment.")
	}
	if u.User != nil {
		return bad("has user information.")
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		if loopback(u.Hostname()) {
			return nil
		}
		return bad("is http on a host that is not loopback: use https, or http on 127.0.0.1, [::1] or localhost.")
	}
	return bad("is neither https nor loopback http.")
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func printable(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0x7f || r == '\uFFFD' {
			return false
		}
	}
	return true
}

// RedirectURI is the one of c's redirect URIs that is exactly uri; false when none is
// (RFC 6749's simple string comparison: no prefix, no normalisation).
func (c Client) RedirectURI(uri string) bool { return slices.Contains(c.RedirectURIs, uri) }

// AuthorizeParams are the query of an authorization request.
type AuthorizeParams struct {
	ResponseType, ClientID, RedirectURI, Scope, State string
	CodeChallenge, CodeChallengeMethod, Resource      string
	// Resources counts the resource parameters the request carried.
	Resources int
}

// TokenParams are the form of a token request.
type TokenParams struct {
	GrantType, Code, RedirectURI, ClientID, CodeVerifier, RefreshToken, Resource, Scope string
	// Resources counts the resource parameters the request carried.
	Resources int
}

// Tokens are what a token request is answered with (RFC 6749, section 5.1).
type Tokens struct {
	AccessToken  string `json:"access_token"`
	TokenType    string `json:"token_type"`
	ExpiresIn    int    `json:"expires_in"`
	RefreshToken string `json:"refresh_token"`
	Scope        string `json:"scope"`
}

// Request is an authorization request waiting for the person's answer, with its
// client.
type Request struct {
	ID            string
	Client        Client
	RedirectURI   string
	CodeChallenge string
	Scopes        []string
	Resource      string
	State         string
	ExpiresAt     time.Time
}

// RedirectHost is the host of the request's redirect URI, which the person is shown:
// where their consent will send the code.
func (r Request) RedirectHost() string {
	u, err := url.Parse(r.RedirectURI)
	if err != nil {
		return r.RedirectURI
	}
	return u.Host
}

// Code is an authorization code as kept: never the code itself.
type Code struct {
	Hash          []byte
	ClientID      string
	RedirectURI   string
	CodeChallenge string
	Scopes        []string
	Resource      string
	UserID        string
	AgentID       string
	ExpiresAt     time.Time
}

// Token is an access or refresh token as kept.
type Token struct {
	Hash      []byte
	Refresh   bool
	Resource  string
	Scopes    []string
	ExpiresAt time.Time
}

// Grant is what an exchange makes: the key without a secret the tokens act as.
type Grant struct {
	KID      string
	ClientID string
	UserID   string
	AgentID  string
}

// newSecret is prefix and 256 random bits in URL-safe base64.
func newSecret(prefix string) string {
	var b [32]byte
	rand.Read(b[:])
	return prefix + base64.RawURLEncoding.EncodeToString(b[:])
}

// hash is the keyed hash a code or token is known by: HMAC-SHA256(pepper, token),
// so that a dump of the tables alone lets no one test guesses.
func hash(pepper []byte, token string) []byte {
	m := hmac.New(sha256.New, pepper)
	m.Write([]byte(token))
	return m.Sum(nil)
}

// S256 is the PKCE challenge of verifier (RFC 7636, section 4.2).
func S256(verifier string) string {
	sum := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// verifierOK checks a code verifier's form (RFC 7636, section 4.1: 43 to 128
// unreserved characters) and that its S256 challenge is challenge, in constant time.
func verifierOK(verifier, challenge string) bool {
	if len(verifier) < 43 || len(verifier) > 128 {
		return false
	}
	for _, c := range []byte(verifier) {
		if !unreserved(c) {
			return false
		}
	}
	return subtle.ConstantTimeCompare([]byte(S256(verifier)), []byte(challenge)) == 1
}

func unreserved(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~'
}

// challengeOK checks an S256 challenge's form: 43 base64url characters.
func challengeOK(c string) bool {
	if len(c) != 43 {
		return false
	}
	_, err := base64.RawURLEncoding.DecodeString(c)
	return err == nil
}
