package oauth

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/waystation/waystation/internal/auth"
	"github.com/waystation/waystation/internal/clientip"
	"github.com/waystation/waystation/internal/problem"
)

// Config is what the service is built with beyond its store.
type Config struct {
	// Pepper is the secret codes and tokens are hashed with; without it the service
	// issues nothing and every token is invalid.
	Pepper []byte
	// Lifetimes (the Default... ones when 0).
	CodeTTL, RequestTTL, AccessTTL, RefreshTTL time.Duration
	// MaxClientsPerDay caps registrations in a day (MaxClientsPerDay when 0).
	MaxClientsPerDay int
	// MaxKeys caps a user's unrevoked keys, their grants included (the auth
	// service's default when 0).
	MaxKeys int
	// Registrations holds each address to a rate of registrations, so that one
	// address cannot use up the day's; nil means no limit of its own. An address is
	// the request's client as TrustedProxies tell it (see clientip).
	Registrations  Limiter
	TrustedProxies clientip.Proxies
}

// Limiter holds each caller to a rate, in buckets every replica shares.
type Limiter interface {
	// Take takes one from caller's bucket when it holds one; when it does not, wait
	// is how long until it will.
	Take(ctx context.Context, caller string) (wait time.Duration, ok bool)
}

// Service is the use cases of the authorization server, the same for the API that
// hosts call and the console where people answer them.
type Service struct {
	store Store
	// agents finds the agent a person chooses.
	agents *auth.Service
	cfg    Config
}

// NewService is the service over store, finding agents through agents; nil store: a
// service that is off (On is false).
func NewService(store Store, agents *auth.Service, cfg Config) *Service {
	if cfg.CodeTTL <= 0 {
		cfg.CodeTTL = DefaultCodeTTL
	}
	if cfg.RequestTTL <= 0 {
		cfg.RequestTTL = DefaultRequestTTL
	}
	if cfg.AccessTTL <= 0 {
		cfg.AccessTTL = DefaultAccessTTL
	}
	if cfg.RefreshTTL <= 0 {
		cfg.RefreshTTL = DefaultRefreshTTL
	}
	if cfg.MaxClientsPerDay <= 0 {
		cfg.MaxClientsPerDay = MaxClientsPerDay
	}
	if cfg.MaxKeys <= 0 {
		cfg.MaxKeys = auth.DefaultMaxKeys
	}
	return &Service{store: store, agents: agents, cfg: cfg}
}

// On tells whether the service can issue and check tokens.
func (s *Service) On() bool { return s != nil && s.store != nil && len(s.cfg.Pepper) > 0 }

// errOff is every use of a service that is off.
var errOff = fail(TemporarilyUnavailable, "This server does not issue OAuth tokens.")

// Register keeps a new public client of m (RFC 7591), sent from remoteAddr with
// forwardedFor (its X-Forwarded-For values).
func (s *Service) Register(ctx context.Context, m ClientMetadata, remoteAddr string, forwardedFor []string) (Client, error) {
	if !s.On() {
		return Client{}, errOff
	}
	if err := m.Check(); err != nil {
		return Client{}, err
	}
	if s.cfg.Registrations != nil {
		if wait, ok := s.cfg.Registrations.Take(ctx, "oauth-register:"+s.cfg.TrustedProxies.Of(remoteAddr, forwardedFor)); !ok {
			p := problem.New(problem.RateLimited, "This address registered hosts faster than its rate allows; register again after Retry-After.")
			p.RetryAfter = max(1, problem.Seconds(wait))
			return Client{}, p
		}
	}
	name := strings.TrimSpace(m.ClientName)
	if name == "" {
		name = "Unnamed host"
	}
	var id [16]byte
	rand.Read(id[:])
	c, err := s.store.CreateClient(ctx, Client{ID: hex.EncodeToString(id[:]), Name: name, RedirectURIs: m.RedirectURIs}, s.cfg.MaxClientsPerDay)
	if errors.Is(err, ErrTooManyClients) {
		return Client{}, problem.New(problem.RateLimited, "Too many hosts registered today; try again later.")
	}
	return c, err
}

// Authorize checks an authorization request and keeps it for the person's answer.
// resources are the resources the server guards, the first the default. An error
// whose Redirect is false must be shown, never sent to the redirect URI: the client
// or the redirect URI is not known to be the client's.
func (s *Service) Authorize(ctx context.Context, p AuthorizeParams, resources []string) (Request, error) {
	if !s.On() {
		return Request{}, errOff
	}
	if p.ClientID == "" {
		return Request{}, fail(InvalidRequest, "client_id is missing.")
	}
	c, err := s.store.Client(ctx, p.ClientID)
	if errors.Is(err, ErrClientNotFound) {
		return Request{}, fail(InvalidClient, "No client has this client_id: register first.")
	}
	if err != nil {
		return Request{}, err
	}
	if !c.RedirectURI(p.RedirectURI) {
		return Request{}, fail(InvalidRequest, "redirect_uri is not one the client registered (compared exactly).")
	}
	back := func(code, why string) error { return &Error{Code: code, Description: why, Redirect: true} }
	switch {
	case p.ResponseType != "code":
		return Request{}, back(UnsupportedResponseType, "response_type must be code.")
	case p.CodeChallengeMethod != "S256":
		return Request{}, back(InvalidRequest, "code_challenge_method must be S256: PKCE is required, and plain is not taken.")
	case !challengeOK(p.CodeChallenge):
		return Request{}, back(InvalidRequest, "code_challenge must be the 43-character base64url SHA-256 of the verifier.")
	case len(p.State) > MaxState:
		return Request{}, back(InvalidRequest, "state is longer than 1000 bytes.")
	case p.Resources > 1:
		return Request{}, back(InvalidTarget, "Send one resource: a token is bound to one.")
	}
	resource := resources[0]
	if p.Resource != "" {
		if !slices.Contains(resources, p.Resource) {
			return Request{}, back(InvalidTarget, "resource is not one this server guards.")
		}
		resource = p.Resource
	}
	scopes, err := parseScope(p.Scope)
	if err != nil {
		return Request{}, err
	}
	r := Request{Client: c, RedirectURI: p.RedirectURI, CodeChallenge: p.CodeChallenge, Scopes: scopes, Resource: resource, State: p.State,
		ExpiresAt: time.Now().Add(s.cfg.RequestTTL)}
	if r.ID, err = s.store.CreateAuthorization(ctx, r); err != nil {
		return Request{}, err
	}
	return r, nil
}

// parseScope is the scopes of a scope parameter: the supported ones, agent when it is
// empty.
func parseScope(scope string) ([]string, error) {
	if strings.TrimSpace(scope) == "" {
		return []string{ScopeAgent}, nil
	}
	var out []string
	for _, sc := range strings.Fields(scope) {
		if !slices.Contains(SupportedScopes, sc) {
			return nil, &Error{Code: InvalidScope, Description: "Scopes this server grants: " + strings.Join(SupportedScopes, " ") + ".", Redirect: true}
		}
		if !slices.Contains(out, sc) {
			out = append(out, sc)
		}
	}
	return out, nil
}

// AuthorizationRequest is the request id waiting for the person's answer, for the
// consent page.
func (s *Service) AuthorizationRequest(ctx context.Context, id string) (Request, error) {
	if !s.On() {
		return Request{}, ErrRequestNotFound
	}
	return s.store.AuthorizationRequest(ctx, id)
}

// Approve answers request id for userID, whose agent agentID the host will act as:
// it issues a code bound to the client, its redirect URI, the PKCE challenge, the
// resource, the agent and the scopes, and gives back where the person's browser goes
// with it. ErrRequestNotFound for a request answered before or out of time.
func (s *Service) Approve(ctx context.Context, userID, id, agentID string) (string, error) {
	if !s.On() {
		return "", ErrRequestNotFound
	}
	if _, err := s.agents.Agent(ctx, userID, agentID); err != nil {
		return "", err
	}
	r, err := s.store.TakeAuthorization(ctx, id)
	if err != nil {
		return "", err
	}
	code := newSecret(codePrefix)
	c := Code{Hash: hash(s.cfg.Pepper, code), ClientID: r.Client.ID, RedirectURI: r.RedirectURI, CodeChallenge: r.CodeChallenge,
		Scopes: r.Scopes, Resource: r.Resource, UserID: userID, AgentID: agentID, ExpiresAt: time.Now().Add(s.cfg.CodeTTL)}
	if err := s.store.CreateCode(ctx, c); err != nil {
		return "", err
	}
	return withQuery(r.RedirectURI, "code", code, "state", r.State, "iss", Issuer(r.Resource)), nil
}

// Deny answers request id with the person's refusal, and gives back where their
// browser goes to tell the host.
func (s *Service) Deny(ctx context.Context, id string) (string, error) {
	if !s.On() {
		return "", ErrRequestNotFound
	}
	r, err := s.store.TakeAuthorization(ctx, id)
	if err != nil {
		return "", err
	}
	return withQuery(r.RedirectURI, "error", AccessDenied, "error_description", "The person did not approve the host.", "state", r.State,
		"iss", Issuer(r.Resource)), nil
}

// ErrorRedirect is where an authorization error e of a request that redirects goes,
// from the authorization server issuer.
func ErrorRedirect(redirectURI, state, issuer string, e *Error) string {
	return withQuery(redirectURI, "error", e.Code, "error_description", e.Description, "state", state, "iss", issuer)
}

// Issuer is the authorization server of resource, which guards its own origin's
// resources: the origin. Every authorization response names it (RFC 9207), so
// that a host that uses several servers cannot take one's code for another's.
func Issuer(resource string) string {
	u, err := url.Parse(resource)
	if err != nil {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

// withQuery is uri with the pairs kv added to its query; a pair of empty value (a
// state not sent) is left out.
func withQuery(uri string, kv ...string) string {
	u, err := url.Parse(uri)
	if err != nil {
		return uri // registered URIs parse; Check saw to it
	}
	q := u.Query()
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			q.Set(kv[i], kv[i+1])
		}
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// Token answers a token request (RFC 6749, section 4.1.3 and 6; RFC 8707): the
// authorization code grant with PKCE, or a refresh token, which rotates. resources
// are the resources the server guards.
func (s *Service) Token(ctx context.Context, p TokenParams, resources []string) (Tokens, error) {
	if !s.On() {
		return Tokens{}, errOff
	}
	if p.ClientID == "" {
		return Tokens{}, fail(InvalidClient, "client_id is missing: hosts are public clients and name themselves.")
	}
	if _, err := s.store.Client(ctx, p.ClientID); errors.Is(err, ErrClientNotFound) {
		return Tokens{}, fail(InvalidClient, "No client has this client_id.")
	} else if err != nil {
		return Tokens{}, err
	}
	if p.Resources > 1 {
		return Tokens{}, fail(InvalidTarget, "Send one resource: a token is bound to one.")
	}
	if p.Resource != "" && !slices.Contains(resources, p.Resource) {
		return Tokens{}, fail(InvalidTarget, "resource is not one this server guards.")
	}
	switch p.GrantType {
	case "authorization_code":
		return s.exchange(ctx, p)
	case "refresh_token":
		return s.refresh(ctx, p)
	case "":
		return Tokens{}, fail(InvalidRequest, "grant_type is missing.")
	}
	return Tokens{}, fail(UnsupportedGrantType, "grant_type must be authorization_code or refresh_token.")
}

var errBadCode = fail(InvalidGrant, "The code is not valid: unknown, used, out of time, or issued to another client, redirect URI or resource, or the code_verifier does not match.")

func (s *Service) exchange(ctx context.Context, p TokenParams) (Tokens, error) {
	if p.Code == "" || p.CodeVerifier == "" || p.RedirectURI == "" {
		return Tokens{}, fail(InvalidRequest, "code, code_verifier and redirect_uri are required.")
	}
	c, err := s.store.TakeCode(ctx, hash(s.cfg.Pepper, p.Code))
	if errors.Is(err, ErrCodeNotFound) || errors.Is(err, ErrCodeReplayed) {
		return Tokens{}, errBadCode
	}
	if err != nil {
		return Tokens{}, err
	}
	// The code is spent whatever follows: a stolen code gets one guess at its
	// verifier.
	if c.ClientID != p.ClientID || c.RedirectURI != p.RedirectURI || !verifierOK(p.CodeVerifier, c.CodeChallenge) {
		return Tokens{}, errBadCode
	}
	if p.Resource != "" && p.Resource != c.Resource {
		return Tokens{}, fail(InvalidTarget, "resource is not the one the person approved.")
	}
	var kid [8]byte
	rand.Read(kid[:])
	g := Grant{KID: hex.EncodeToString(kid[:]), ClientID: c.ClientID, UserID: c.UserID, AgentID: c.AgentID}
	access, refresh, out := s.newTokens(c.Resource, c.Scopes)
	err = s.store.CreateGrant(ctx, c.Hash, g, access, refresh, s.cfg.MaxKeys)
	if errors.Is(err, ErrCodeReplayed) {
		return Tokens{}, errBadCode
	}
	if errors.Is(err, auth.ErrTooManyKeys) {
		return Tokens{}, fail(InvalidGrant, "The person holds as many keys and grants as one may; they must revoke one on the console first.")
	}
	if err != nil {
		return Tokens{}, err
	}
	return out, nil
}

func (s *Service) refresh(ctx context.Context, p TokenParams) (Tokens, error) {
	if p.RefreshToken == "" {
		return Tokens{}, fail(InvalidRequest, "refresh_token is missing.")
	}
	if _, err := parseScope(p.Scope); err != nil {
		return Tokens{}, fail(InvalidScope, "A refresh may narrow the scopes, never widen them.")
	}
	// The new tokens keep the old one's resource and scopes, which the store fills in.
	access, refresh, out := s.newTokens("", nil)
	old, _, err := s.store.RotateRefresh(ctx, hash(s.cfg.Pepper, p.RefreshToken), p.ClientID, p.Resource, access, refresh)
	if errors.Is(err, ErrTokenNotFound) || errors.Is(err, ErrTokenReplayed) {
		return Tokens{}, fail(InvalidGrant, "The refresh token is not valid: unknown, used before (which revokes its grant), out of time, revoked, or another client's.")
	}
	if errors.Is(err, ErrOtherResource) {
		return Tokens{}, fail(InvalidTarget, "resource is not the one the person approved.")
	}
	if err != nil {
		return Tokens{}, err
	}
	out.Scope = strings.Join(old.Scopes, " ")
	return out, nil
}

// newTokens makes an access and a refresh token for resource and scopes: as kept,
// and as answered.
func (s *Service) newTokens(resource string, scopes []string) (access, refresh Token, out Tokens) {
	now := time.Now()
	at, rt := newSecret(AccessPrefix), newSecret(RefreshPrefix)
	access = Token{Hash: hash(s.cfg.Pepper, at), Resource: resource, Scopes: scopes, ExpiresAt: now.Add(s.cfg.AccessTTL)}
	refresh = Token{Hash: hash(s.cfg.Pepper, rt), Refresh: true, Resource: resource, Scopes: scopes, ExpiresAt: now.Add(s.cfg.RefreshTTL)}
	out = Tokens{AccessToken: at, TokenType: "Bearer", ExpiresIn: int(s.cfg.AccessTTL / time.Second), RefreshToken: rt, Scope: strings.Join(scopes, " ")}
	return access, refresh, out
}

// Revoke revokes the grant of token, an access or a refresh token of clientID
// (RFC 7009): every token of the grant ends at once, and so do the streams and waits
// they hold. An unknown token is no error.
func (s *Service) Revoke(ctx context.Context, token, clientID string) error {
	if !s.On() {
		return errOff
	}
	if clientID == "" {
		return fail(InvalidClient, "client_id is missing: hosts are public clients and name themselves.")
	}
	if token == "" {
		return fail(InvalidRequest, "token is missing.")
	}
	return s.store.RevokeToken(ctx, hash(s.cfg.Pepper, token), clientID)
}

// Errors of Use; their details are what the API answers.
var (
	errInvalidToken = problem.New(problem.InvalidAPIKey, "The access token is not valid: unknown, out of time, or issued for another resource.")
	errRevokedToken = problem.New(problem.KeyRevoked, "The access token was revoked, or its agent paused.")
)

// Use authenticates an access token for a call to resource: the principal of its
// grant, which acts as the grant's agent, as that agent's key would.
func (s *Service) Use(ctx context.Context, token, resource string) (auth.Principal, error) {
	if !s.On() || !IsToken(token) {
		return auth.Principal{}, errInvalidToken
	}
	t, g, revoked, err := s.store.AccessToken(ctx, hash(s.cfg.Pepper, token))
	if errors.Is(err, ErrTokenNotFound) {
		return auth.Principal{}, errInvalidToken
	}
	if err != nil {
		return auth.Principal{}, err
	}
	if t.Resource != resource {
		return auth.Principal{}, errInvalidToken
	}
	if revoked {
		return auth.Principal{}, errRevokedToken
	}
	return auth.Principal{KID: g.KID, Scope: auth.ScopeAgent, UserID: g.UserID, AgentID: g.AgentID}, nil
}
