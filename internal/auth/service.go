package auth

import (
	"context"
	"errors"
	"time"

	"github.com/waystation/waystation/internal/problem"
)

// ErrNoPepper is a key asked of a server without the secret keys are hashed with:
// it issues none, and no sign-in with a key is valid.
var ErrNoPepper = errors.New("auth: no pepper to hash keys with")

// Config is what the service is built with beyond its store.
type Config struct {
	// Pepper is the secret API keys are hashed with; without it no key is valid and
	// none is issued, so that what needs one fails closed.
	Pepper []byte
	// MaxKeys caps the unrevoked keys of a user and its agents, and MaxAgents its
	// agents (DefaultMaxKeys and DefaultMaxAgents when 0): past them creating one is
	// quota_exceeded, so minting keys buys no more of what callers share.
	MaxKeys, MaxAgents int
	// Passkeys keeps people's passkeys; without it they sign in with keys alone.
	Passkeys PasskeyStore
	// SignInAttempts counts sign-in attempts for every replica; without it each
	// replica counts its own alone.
	SignInAttempts SignInAttempts
}

// Service is the use cases of keys, agents and sign-ins, the same for every
// adapter: the API and its MCP tools authenticate by it, and the API and the
// console issue and revoke keys and add and pause agents through it, within the
// same caps.
type Service struct {
	keys     KeyStore
	agents   AgentStore
	sessions WebSessionStore
	cfg      Config
}

// NewService is the service over store (nil: no key is valid, as without a pepper)
// with cfg's caps, their defaults applied here.
func NewService(store Store, cfg Config) *Service {
	if cfg.MaxKeys <= 0 {
		cfg.MaxKeys = DefaultMaxKeys
	}
	if cfg.MaxAgents <= 0 {
		cfg.MaxAgents = DefaultMaxAgents
	}
	s := &Service{cfg: cfg}
	if store != nil {
		s.keys, s.agents, s.sessions = store, store, store
	}
	return s
}

// CheckPepper is ErrNoPepper on a server that can neither verify nor issue keys.
func (s *Service) CheckPepper() error {
	if s.cfg.Pepper == nil || s.keys == nil {
		return ErrNoPepper
	}
	return nil
}

// Authenticate is the stored key of token (see Authenticate): invalid_api_key
// without a pepper or a store.
func (s *Service) Authenticate(ctx context.Context, token string) (StoredKey, error) {
	return Authenticate(ctx, s.keys, s.cfg.Pepper, token)
}

// Use authenticates token for a call and records that its key was used.
func (s *Service) Use(ctx context.Context, token string) (Principal, error) {
	stored, err := s.Authenticate(ctx, token)
	if err != nil {
		return Principal{}, err
	}
	if err := s.keys.TouchKey(ctx, stored.KID); err != nil {
		return Principal{}, err
	}
	return stored.Principal, nil
}

// KeyLive reports whether the key p calls with is still there and not revoked (nor
// its agent paused), for a call that outlives its authentication.
func (s *Service) KeyLive(ctx context.Context, p Principal) bool {
	if s.keys == nil {
		return false
	}
	k, err := s.keys.StoredKey(ctx, p.KID)
	return err == nil && !k.Revoked
}

// IssueKey makes a key of scope for userID (and for agentID, one of theirs, when
// scope is agent) within the cap on a user's keys, and gives back its record and
// the token, which is shown once and never kept. ErrNoPepper on a server without
// one.
func (s *Service) IssueKey(ctx context.Context, userID string, scope Scope, agentID string) (Key, string, error) {
	if err := s.CheckPepper(); err != nil {
		return Key{}, "", err
	}
	return IssueKey(ctx, s.keys, s.agents, s.cfg.Pepper, userID, scope, agentID, s.cfg.MaxKeys)
}

// Keys lists userID's keys, its agents' included.
func (s *Service) Keys(ctx context.Context, userID string) ([]Key, error) {
	return s.keys.Keys(ctx, userID)
}

// RevokeKey revokes kid of userID (and of agentID when given).
func (s *Service) RevokeKey(ctx context.Context, userID, agentID, kid string) error {
	return s.keys.RevokeKey(ctx, userID, agentID, kid)
}

// Agent is agent id of userID; ErrAgentNotFound for one of another user's.
func (s *Service) Agent(ctx context.Context, userID, id string) (Agent, error) {
	return s.agents.Agent(ctx, userID, id)
}

// Agents lists userID's agents.
func (s *Service) Agents(ctx context.Context, userID string) ([]Agent, error) {
	return s.agents.Agents(ctx, userID)
}

// CreateAgent checks name and adds an agent of that name to userID's, within the
// cap on a user's agents.
func (s *Service) CreateAgent(ctx context.Context, userID, name string) (Agent, error) {
	if err := CheckAgentName(name); err != nil {
		return Agent{}, err
	}
	return s.agents.CreateAgent(ctx, userID, name, s.cfg.MaxAgents)
}

// SetAgentStatus pauses (AgentDisabled) or resumes (AgentActive) agent id of
// userID.
func (s *Service) SetAgentStatus(ctx context.Context, userID, id, status string) (Agent, error) {
	if status != AgentActive && status != AgentDisabled {
		return Agent{}, problem.Invalid(`status must be "active" or "disabled".`)
	}
	return s.agents.SetAgentStatus(ctx, userID, id, status)
}

// StartWebSession records a sign-in to the console made by, lasting ttl, under the
// hash of its token.
func (s *Service) StartWebSession(ctx context.Context, tokenHash []byte, by SignIn, csrfToken string, ttl time.Duration) error {
	return s.sessions.CreateWebSession(ctx, tokenHash, by, csrfToken, ttl)
}

// WebSession is the sign-in of a token's hash; ErrNoWebSession for one the store
// does not know or whose time ran out.
func (s *Service) WebSession(ctx context.Context, tokenHash []byte) (WebSession, error) {
	return s.sessions.WebSession(ctx, tokenHash)
}

// EndWebSession ends the sign-in of a token's hash.
func (s *Service) EndWebSession(ctx context.Context, tokenHash []byte) error {
	return s.sessions.DeleteWebSession(ctx, tokenHash)
}

// TakeSignInAttempt counts a sign-in attempt from address for every replica, burst
// at once and perMinute a minute: false, with how long to wait, when none is left.
// Without a store that counts them, every attempt passes here.
func (s *Service) TakeSignInAttempt(ctx context.Context, address string, burst, perMinute float64) (bool, time.Duration, error) {
	if s.cfg.SignInAttempts == nil {
		return true, 0, nil
	}
	return s.cfg.SignInAttempts.TakeSignInAttempt(ctx, address, burst, perMinute)
}

// PasskeysOn tells whether people may sign in with passkeys here.
func (s *Service) PasskeysOn() bool { return s.cfg.Passkeys != nil }

// Passkeys lists userID's passkeys, oldest first.
func (s *Service) Passkeys(ctx context.Context, userID string) ([]Passkey, error) {
	return s.cfg.Passkeys.Passkeys(ctx, userID)
}

// AddPasskey keeps p, registered with rp, within the cap on a user's passkeys.
func (s *Service) AddPasskey(ctx context.Context, rpID string, p Passkey) (Passkey, error) {
	return s.cfg.Passkeys.AddPasskey(ctx, rpID, p, MaxPasskeys)
}

// DeletePasskey removes passkey id of userID and ends the sign-ins made with it.
func (s *Service) DeletePasskey(ctx context.Context, userID, id string) error {
	return s.cfg.Passkeys.DeletePasskey(ctx, userID, id)
}

// FinishPasskeySignIn checks a sign-in ceremony's answer (see FinishPasskeySignIn).
func (s *Service) FinishPasskeySignIn(ctx context.Context, rp RelyingParty, session, answer []byte) (Passkey, error) {
	return FinishPasskeySignIn(ctx, s.cfg.Passkeys, rp, session, answer)
}

// SaveCeremony keeps a passkey ceremony in flight under its token's hash.
func (s *Service) SaveCeremony(ctx context.Context, tokenHash []byte, c Ceremony) error {
	return s.cfg.Passkeys.SaveCeremony(ctx, tokenHash, c, CeremonyTTL)
}

// TakeCeremony returns the ceremony of a token's hash and forgets it;
// ErrNoCeremony when it is unknown, taken or out of time.
func (s *Service) TakeCeremony(ctx context.Context, tokenHash []byte) (Ceremony, error) {
	return s.cfg.Passkeys.TakeCeremony(ctx, tokenHash)
}
