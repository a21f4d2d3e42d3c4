package request

import (
	"context"
	"time"

	"github.com/waystation/waystation/internal/auth"
	"github.com/waystation/waystation/internal/session"
)

// Recheck is how often a wait on a request in the service's hands (approved,
// executing) reads it again should a wake-up be missed.
const Recheck = 2 * time.Second

// Service is the use cases of the agent that raises requests, the same for every
// adapter: raise one, follow it to its end, claim what it yielded.
type Service struct {
	Store Store
}

// Raise checks n and raises it in session sessionID of agent p, once per client
// request id; maxEvents is the session's cap of events (0: none).
func (s *Service) Raise(ctx context.Context, p auth.Principal, sessionID string, n New, maxEvents int) (Request, error) {
	if err := n.Validate(); err != nil {
		return Request{}, err
	}
	return s.Store.CreateRequest(ctx, p, sessionID, n, maxEvents)
}

// Poll reads request id of session sessionID for a wait on it: the request,
// whether it has yet to end, and when to read it again at the latest should no
// session event wake the wait (its expiry while it waits for its user, a while
// when it is in the service's hands).
func (s *Service) Poll(ctx context.Context, p auth.Principal, sessionID, id string) (r Request, pending bool, recheck time.Time, err error) {
	r, err = s.Store.Request(ctx, p, sessionID, id)
	recheck = r.ExpiresAt
	if r.Status != StatusWaitingUser {
		recheck = time.Now().Add(Recheck)
	}
	return r, !Terminal(r.Status), recheck, err
}

// Claim hands request id's value-free artifact to its agent p, once, with when it
// was claimed.
func (s *Service) Claim(ctx context.Context, p auth.Principal, sessionID, id string) (Artifact, time.Time, error) {
	return s.Store.ClaimArtifact(ctx, p, sessionID, id)
}

// Requests lists session sessionID's requests, limit after the cursor.
func (s *Service) Requests(ctx context.Context, p auth.Principal, sessionID string, after *session.Cursor, limit int) ([]Request, *session.Cursor, error) {
	return s.Store.Requests(ctx, p, sessionID, after, limit)
}

// Cancel withdraws request id of session sessionID on its agent p's word.
func (s *Service) Cancel(ctx context.Context, p auth.Principal, sessionID, id string) (Request, error) {
	return s.Store.CancelRequest(ctx, p, sessionID, id)
}

// Request is request id of user p's, in any of their agents' sessions, for the
// person to decide.
func (s *Service) Request(ctx context.Context, p auth.Principal, id string) (Request, error) {
	return s.Store.Request(ctx, p, "", id)
}

// Waiting lists the requests waiting for userID's decision, newest first, at most
// limit.
func (s *Service) Waiting(ctx context.Context, userID string, limit int) ([]Request, error) {
	return s.Store.WaitingRequests(ctx, userID, limit)
}

// Decider decides the requests of the service's store (see Decider): provided
// values sealed with sealer, approved told of each approval.
func (s *Service) Decider(sealer Sealer, approved func(Request)) Decider {
	return Decider{Store: s.Store, Sealer: sealer, Approved: approved}
}
