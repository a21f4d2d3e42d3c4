package auth

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/waystation/waystation/internal/problem"
)

// Store is what the service needs of storage: keys, agents and the console's
// sign-ins.
type Store interface {
	KeyStore
	AgentStore
	WebSessionStore
}

// KeyStore keeps API keys, each known only by the keyed hash of its secret.
type KeyStore interface {
	// StoredKey is ErrKeyNotFound for a kid the store does not know.
	StoredKey(ctx context.Context, kid string) (StoredKey, error)
	// TouchKey records that kid was used.
	TouchKey(ctx context.Context, kid string) error
	// InsertKey is ErrTooManyKeys when userID already holds max unrevoked keys (its
	// agents' included); max 0 is no cap. Concurrent inserts never pass the cap.
	InsertKey(ctx context.Context, k NewKey, userID, agentID string, max int) (Key, error)
	Keys(ctx context.Context, userID string) ([]Key, error)
	// RevokeKey revokes kid of userID (and of agentID when given); ErrKeyNotFound
	// when there is no such key.
	RevokeKey(ctx context.Context, userID, agentID, kid string) error
}

// AgentStore keeps each user's agents.
type AgentStore interface {
	// Agent is ErrAgentNotFound for an agent that is not userID's.
	Agent(ctx context.Context, userID, id string) (Agent, error)
	Agents(ctx context.Context, userID string) ([]Agent, error)
	// CreateAgent is ErrAgentExists when userID has an agent of that name, and
	// ErrTooManyAgents when it has max agents already; max 0 is no cap. Concurrent
	// creations never pass the cap.
	CreateAgent(ctx context.Context, userID, name string, max int) (Agent, error)
	// SetAgentStatus pauses (AgentDisabled) or resumes (AgentActive) an agent of
	// userID: a paused agent's keys are refused as revoked until it is resumed.
	SetAgentStatus(ctx context.Context, userID, id, status string) (Agent, error)
}

// WebSessionStore keeps people's sign-ins to the approval pages.
type WebSessionStore interface {
	// CreateWebSession records a sign-in made with a user key or a passkey.
	CreateWebSession(ctx context.Context, tokenHash []byte, by SignIn, csrfToken string, ttl time.Duration) error
	// WebSession is ErrNoWebSession for a token the store does not know or whose
	// time ran out.
	WebSession(ctx context.Context, tokenHash []byte) (WebSession, error)
	DeleteWebSession(ctx context.Context, tokenHash []byte) error
}

// SignInAttempts counts the console's sign-in attempts per client address for every
// replica at once: a token bucket of burst attempts, refilled perMinute a minute.
type SignInAttempts interface {
	// TakeSignInAttempt is false, with how long until one is left, when address has
	// none left; a refused attempt takes nothing.
	TakeSignInAttempt(ctx context.Context, address string, burst, perMinute float64) (bool, time.Duration, error)
}

// Errors of Authenticate; their details are what the API answers.
var (
	errInvalidKey = problem.New(problem.InvalidAPIKey, "The API key is not valid.")
	errRevokedKey = problem.New(problem.KeyRevoked, "The API key was revoked.")
)

// Bearer is the token of an Authorization header's values: exactly one value, of
// the Bearer scheme (in any case); false for anything else. Every reader of API keys
// takes them through it.
func Bearer(authorization []string) (string, bool) {
	if len(authorization) != 1 {
		return "", false
	}
	scheme, token, _ := strings.Cut(authorization[0], " ")
	if !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	return token, true
}

// RequestKey is the API key of a request: the token of its Authorization values (see
// Bearer), or, on a route that also takes the key as Anthropic's clients send it, its
// X-Api-Key values (apiKey; nil elsewhere). sent is false when neither header is
// there; ok is false unless exactly one key came, in one of them or the same in
// both (older Anthropic clients send both when both their keys are set).
func RequestKey(authorization, apiKey []string) (token string, sent, ok bool) {
	switch {
	case len(authorization) == 0 && len(apiKey) == 0:
		return "", false, false
	case len(apiKey) == 0:
		token, ok = Bearer(authorization)
		return token, true, ok
	case len(apiKey) == 1 && len(authorization) == 0:
		return apiKey[0], true, apiKey[0] != ""
	case len(apiKey) == 1:
		if bearer, _ := Bearer(authorization); bearer != "" && bearer == apiKey[0] {
			return bearer, true, true
		}
		return "", true, false
	default:
		return "", true, false
	}
}

// Authenticate checks a token against the store and the pepper: the stored key of a
// valid, unrevoked key of the scope the token names. Errors are problems: a token
// that is malformed, unknown, of another scope or whose secret does not match is
// invalid_api_key; a revoked key (or a paused agent's) is key_revoked; anything else
// comes from the store. Without a pepper no key is valid: the API fails closed.
func Authenticate(ctx context.Context, store KeyStore, pepper []byte, token string) (StoredKey, error) {
	scope, kid, secret, err := Parse(strings.TrimSpace(token))
	if err != nil || store == nil || pepper == nil {
		return StoredKey{}, errInvalidKey
	}
	stored, err := store.StoredKey(ctx, kid)
	if errors.Is(err, ErrKeyNotFound) {
		return StoredKey{}, errInvalidKey
	}
	if err != nil {
		return StoredKey{}, err
	}
	if !Verify(pepper, secret, stored.SecretHash) || stored.Scope != scope {
		return StoredKey{}, errInvalidKey
	}
	if stored.Revoked {
		return StoredKey{}, errRevokedKey
	}
	return stored, nil
}

// Caps on what one user holds, unless the service is told otherwise.
const (
	DefaultMaxKeys   = 20
	DefaultMaxAgents = 20
)

// CheckAgentName refuses an agent name that is empty, only spaces or over 200 bytes.
func CheckAgentName(name string) error {
	if strings.TrimSpace(name) == "" || len(name) > 200 {
		return problem.Invalid("name must be 1 to 200 bytes, not only spaces.")
	}
	return nil
}

// IssueKey makes a key of scope for userID (and for agentID, one of theirs, when
// scope is agent), keeps its hash, and gives back its record and the token, which is
// shown once and never kept. ErrTooManyKeys past max unrevoked keys.
func IssueKey(ctx context.Context, keys KeyStore, agents AgentStore, pepper []byte, userID string, scope Scope, agentID string, max int) (Key, string, error) {
	if scope == ScopeAgent {
		if _, err := agents.Agent(ctx, userID, agentID); err != nil {
			if errors.Is(err, ErrAgentNotFound) {
				err = problem.Invalid("agentId names none of your agents.")
			}
			return Key{}, "", err
		}
	}
	nk, err := Generate(scope, pepper)
	if err != nil {
		return Key{}, "", err
	}
	k, err := keys.InsertKey(ctx, nk, userID, agentID, max)
	if err != nil {
		return Key{}, "", err
	}
	return k, nk.Token, nil
}

// PasskeyStore keeps passkeys and the ceremonies in flight.
type PasskeyStore interface {
	// Passkeys lists userID's passkeys, oldest first.
	Passkeys(ctx context.Context, userID string) ([]Passkey, error)
	// PasskeyByCredential is ErrPasskeyNotFound for a credential the store does not
	// know under rpID.
	PasskeyByCredential(ctx context.Context, rpID string, credentialID []byte) (Passkey, error)
	// AddPasskey is ErrTooManyPasskeys when the user holds max already, and
	// ErrPasskeyExists for a credential registered before.
	AddPasskey(ctx context.Context, rpID string, p Passkey, max int) (Passkey, error)
	// UsedPasskey records a sign-in with id and the credential's new record.
	UsedPasskey(ctx context.Context, id string, credential []byte) error
	// DeletePasskey removes id of userID and ends the sign-ins made with it;
	// ErrPasskeyNotFound when there is no such passkey.
	DeletePasskey(ctx context.Context, userID, id string) error
	SaveCeremony(ctx context.Context, tokenHash []byte, c Ceremony, ttl time.Duration) error
	// TakeCeremony returns the ceremony and forgets it, so that an answer counts
	// once; ErrNoCeremony when it is unknown, taken or out of time.
	TakeCeremony(ctx context.Context, tokenHash []byte) (Ceremony, error)
}
