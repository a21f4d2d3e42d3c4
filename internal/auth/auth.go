// Package auth is the authenticated API's domain: users own agents, API keys are
// scoped to a user or to one agent, and a key is known to the service only by a
// keyed hash of its secret.
package auth

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"time"

	"github.com/waystation/waystation/internal/problem"
)

// Scope is what a key may do: act as one agent, or as the user who owns agents.
type Scope string

const (
	ScopeAgent Scope = "agent"
	ScopeUser  Scope = "user"
)

// Valid reports whether s is a known scope.
func (s Scope) Valid() bool { return s == ScopeAgent || s == ScopeUser }

const (
	kidBytes    = 8  // 64 bits
	secretBytes = 32 // 256 bits
	// MinPepperLen is the shortest pepper accepted, in bytes.
	MinPepperLen = 32
)

var (
	// ErrMalformedKey is returned for a string that is not an API key.
	ErrMalformedKey = errors.New("auth: malformed API key")
	// ErrAgentNotFound is an agent that does not exist or belongs to another tenant.
	ErrAgentNotFound = problem.New(problem.NotFound, "No agent with this id is visible to this key.")
	// ErrKeyNotFound is a key that does not exist or belongs to another tenant.
	ErrKeyNotFound = problem.New(problem.NotFound, "No key with this kid is visible to this key.")
	// ErrAgentExists is an agent name the user already gave another agent.
	ErrAgentExists = problem.Invalid("An agent of this name exists.")
	// ErrTooManyKeys is a key past the cap on a user's unrevoked keys.
	ErrTooManyKeys = problem.New(problem.QuotaExceeded, "This user holds as many unrevoked API keys as one user may; revoke one to create another.")
	// ErrTooManyAgents is an agent past the cap on a user's agents.
	ErrTooManyAgents = problem.New(problem.QuotaExceeded, "This user has as many agents as one user may.")
	// ErrNoWebSession is a sign-in token the store does not know, or whose time ran
	// out.
	ErrNoWebSession = problem.New(problem.Unauthenticated, "Not signed in.")
)

// Principal is who a request acts for: the key's id and scope, its user, and for an
// agent key its agent.
type Principal struct {
	KID     string
	Scope   Scope
	UserID  string
	AgentID string // empty for a user key
}

// User owns agents, keys and sessions.
type User struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"createdAt"`
}

// Agent statuses: a disabled agent is paused by its person, and its keys are refused.
const (
	AgentActive   = "active"
	AgentDisabled = "disabled"
)

// Agent runs workflows for its user.
type Agent struct {
	ID     string `json:"id"`
	UserID string `json:"userId"`
	Name   string `json:"name"`
	Status string `json:"status"`
	// PausedReason says why the service paused the agent ("protected_values": its
	// requests held protected values it was never given, up to the budget); empty
	// when it is active or its person paused it.
	PausedReason string    `json:"pausedReason,omitempty"`
	CreatedAt    time.Time `json:"createdAt"`
}

// Key is a stored API key as listed: never its secret.
type Key struct {
	KID        string     `json:"kid"`
	Scope      Scope      `json:"scope"`
	UserID     string     `json:"userId"`
	AgentID    *string    `json:"agentId"`
	Prefix     string     `json:"prefix"`
	CreatedAt  time.Time  `json:"createdAt"`
	LastUsedAt *time.Time `json:"lastUsedAt"`
	RevokedAt  *time.Time `json:"revokedAt"`
	// Host is, for a grant, the name the MCP host registered under: the person
	// approved that host, and sees and revokes its grant by that name.
	Host string `json:"host,omitempty"`
}

// StoredKey is what verifying a key needs from the store.
type StoredKey struct {
	Principal
	SecretHash []byte
	Revoked    bool
}

// NewKey is a freshly generated key: Token is shown to its holder once, and only
// Hash is kept.
type NewKey struct {
	KID    string
	Scope  Scope
	Prefix string
	Token  string
	Hash   []byte
}

// Generate makes a key of scope s: sk_<scope>_<kid>_<secret> with a 64-bit kid and a
// 256-bit secret, both hex.
func Generate(s Scope, pepper []byte) (NewKey, error) {
	if !s.Valid() {
		return NewKey{}, errors.New("auth: unknown scope " + string(s))
	}
	var kid [kidBytes]byte
	var secret [secretBytes]byte
	if _, err := rand.Read(kid[:]); err != nil {
		return NewKey{}, err
	}
	if _, err := rand.Read(secret[:]); err != nil {
		return NewKey{}, err
	}
	k := NewKey{KID: hex.EncodeToString(kid[:]), Scope: s}
	k.Prefix = "sk_" + string(s) + "_" + k.KID
	k.Token = k.Prefix + "_" + hex.EncodeToString(secret[:])
	k.Hash = Hash(pepper, secret[:])
	return k, nil
}

// Parse splits a token into its scope, kid and secret. It checks the form only.
func Parse(token string) (s Scope, kid string, secret []byte, err error) {
	rest, ok := strings.CutPrefix(token, "sk_")
	if !ok {
		return "", "", nil, ErrMalformedKey
	}
	scope, rest, ok := strings.Cut(rest, "_")
	if !ok || !Scope(scope).Valid() {
		return "", "", nil, ErrMalformedKey
	}
	kid, sec, ok := strings.Cut(rest, "_")
	if !ok || len(kid) != 2*kidBytes || len(sec) != 2*secretBytes || !lowerHex(kid) || !lowerHex(sec) {
		return "", "", nil, ErrMalformedKey
	}
	secret, err = hex.DecodeString(sec)
	if err != nil {
		return "", "", nil, ErrMalformedKey
	}
	return Scope(scope), kid, secret, nil
}

func lowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// Hash is HMAC-SHA256(pepper, secret): a database dump alone cannot test guesses.
func Hash(pepper, secret []byte) []byte {
	m := hmac.New(sha256.New, pepper)
	m.Write(secret)
	return m.Sum(nil)
}

// Verify tells in constant time whether secret is the one behind stored.
func Verify(pepper, secret, stored []byte) bool {
	return hmac.Equal(Hash(pepper, secret), stored)
}
