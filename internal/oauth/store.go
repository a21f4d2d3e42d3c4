package oauth

import (
	"context"
	"errors"
)

// Errors of the store.
var (
	ErrClientNotFound  = errors.New("oauth: no such client")
	ErrTooManyClients  = errors.New("oauth: too many clients registered of late")
	ErrRequestNotFound = errors.New("oauth: no such authorization request, or its time ran out")
	ErrCodeNotFound    = errors.New("oauth: no such code, or its time ran out")
	ErrCodeReplayed    = errors.New("oauth: code used before")
	ErrTokenNotFound   = errors.New("oauth: no such token, or its time ran out")
	ErrTokenReplayed   = errors.New("oauth: refresh token used before")
	ErrOtherResource   = errors.New("oauth: token of another resource")
)

// Store keeps clients, authorization requests, codes, grants and tokens. Codes and
// tokens are known only by their keyed hashes.
type Store interface {
	// CreateClient is ErrTooManyClients when max clients were registered in the last
	// day (max 0: no cap).
	CreateClient(ctx context.Context, c Client, max int) (Client, error)
	// Client is ErrClientNotFound for an id the store does not know.
	Client(ctx context.Context, id string) (Client, error)
	// CreateAuthorization keeps an authorization request, and gives back its id.
	CreateAuthorization(ctx context.Context, r Request) (string, error)
	// AuthorizationRequest is the request id with its client; ErrRequestNotFound
	// when it is unknown, answered or out of time.
	AuthorizationRequest(ctx context.Context, id string) (Request, error)
	// TakeAuthorization is AuthorizationRequest and forgets it, so that it is answered once.
	TakeAuthorization(ctx context.Context, id string) (Request, error)
	CreateCode(ctx context.Context, c Code) error
	// TakeCode marks the code of hash used and gives it back; ErrCodeNotFound when it
	// is unknown or out of time; ErrCodeReplayed when it was taken before, having
	// revoked the grant its first use made, and whatever grant it will make.
	TakeCode(ctx context.Context, hash []byte) (Code, error)
	// CreateGrant makes the grant of the code of hash (taken) and its first tokens;
	// ErrCodeReplayed when the code was presented again meanwhile; auth.ErrTooManyKeys
	// when the user holds max unrevoked keys, their grants included (max 0: no cap).
	CreateGrant(ctx context.Context, code []byte, g Grant, access, refresh Token, max int) error
	// AccessToken is the access token of hash, its grant, and whether the grant is
	// revoked (or its agent paused); ErrTokenNotFound when it is unknown or out of
	// time.
	AccessToken(ctx context.Context, hash []byte) (Token, Grant, bool, error)
	// RotateRefresh spends the refresh token of hash, which must be clientID's (and
	// resource's, unless it is ""), and keeps the grant's next tokens, bound to the
	// spent one's resource and scopes; it gives back the spent one. ErrTokenNotFound
	// when it is unknown, out of time, another client's, or its grant is revoked;
	// ErrOtherResource when it is another resource's; ErrTokenReplayed when it was
	// spent before, having revoked its grant.
	RotateRefresh(ctx context.Context, hash []byte, clientID, resource string, access, refresh Token) (Token, Grant, error)
	// RevokeToken revokes the grant of the token of hash, when it is clientID's;
	// unknown tokens are no error.
	RevokeToken(ctx context.Context, hash []byte, clientID string) error
}
