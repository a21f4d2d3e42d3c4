package request

import (
	"context"
	"time"

	"github.com/waystation/waystation/internal/auth"
	"github.com/waystation/waystation/internal/redact"
	"github.com/waystation/waystation/internal/session"
)

// Recheck is how often a wait on a request in the service's hands (approved,
// executing) reads it again should a wake-up be missed.
const Recheck = 2 * time.Second

// Service is the use cases of the agent that raises requests, the same for every
// adapter: raise one, follow it to its end, claim what it yielded.
type Service struct {
	Store Store
	// Protected gives a user's protected values: every request read back is cleaned
	// with them as they are now, since what was written before a value was saved
	// holds it still. Without it (or when they cannot be loaded) reads fail closed
	// as redaction_unavailable.
	Protected redact.Source
	// Sealer encrypts the values people provide through requests; without it such
	// approvals fail with ErrNoSealer.
	Sealer Sealer
	// Approved, when set, hears of every approval left for the system to carry out
	// (a payment), once it is stored: whichever adapter the person decided through,
	// the same thing happens next.
	Approved func(Request)
}

// Clean blanks set's values in every text of the request an agent wrote (its
// client id, context, fields, options and parameters), in place.
func (r *Request) Clean(set *redact.Set) {
	c, p := &r.Context, &r.Params
	set.Strings(&r.ClientRequestID, &c.URL, &c.PageTitle, &c.MerchantName, &c.Reason,
		&p.Summary, &p.Amount, &p.Currency, &p.Recipient, &p.Purpose)
	for i := range r.Fields {
		set.Strings(&r.Fields[i].Key, &r.Fields[i].Label)
	}
	for i := range r.Options {
		o := &r.Options[i]
		set.Strings(&o.ID, &o.Label, &o.Description)
	}
}

// clean loads user's values, as they are now, to clean what is read back (see
// redact.Load).
func (s *Service) clean(ctx context.Context, user string) (*redact.Set, error) {
	return redact.Load(ctx, s.Protected, user, "nothing of the request is answered")
}

// cleaned is r cleaned with the values of now of its user (see clean), or err.
func (s *Service) cleaned(ctx context.Context, r Request, err error) (Request, error) {
	if err != nil {
		return r, err
	}
	set, err := s.clean(ctx, r.UserID)
	if err != nil {
		return Request{}, err
	}
	r.Clean(set)
	return r, nil
}

// cleanedAll is rs cleaned with the values of now of user (see clean), or err.
func (s *Service) cleanedAll(ctx context.Context, user string, rs []Request, err error) ([]Request, error) {
	if err != nil || len(rs) == 0 {
		return rs, err
	}
	set, err := s.clean(ctx, user)
	if err != nil {
		return nil, err
	}
	for i := range rs {
		rs[i].Clean(set)
	}
	return rs, nil
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
	pending = !Terminal(r.Status)
	r, err = s.cleaned(ctx, r, err)
	return r, pending, recheck, err
}

// Claim hands request id's value-free artifact to its agent p, once, with when it
// was claimed.
func (s *Service) Claim(ctx context.Context, p auth.Principal, sessionID, id string) (Artifact, time.Time, error) {
	return s.Store.ClaimArtifact(ctx, p, sessionID, id)
}

// Requests lists session sessionID's requests, limit after the cursor.
func (s *Service) Requests(ctx context.Context, p auth.Principal, sessionID string, after *session.Cursor, limit int) ([]Request, *session.Cursor, error) {
	rs, next, err := s.Store.Requests(ctx, p, sessionID, after, limit)
	rs, err = s.cleanedAll(ctx, p.UserID, rs, err)
	if err != nil {
		return nil, nil, err
	}
	return rs, next, nil
}

// Cancel withdraws request id of session sessionID on its agent p's word.
func (s *Service) Cancel(ctx context.Context, p auth.Principal, sessionID, id string) (Request, error) {
	r, err := s.Store.CancelRequest(ctx, p, sessionID, id)
	return s.cleaned(ctx, r, err)
}

// Request is request id of user p's, in any of their agents' sessions, for the
// person to decide.
func (s *Service) Request(ctx context.Context, p auth.Principal, id string) (Request, error) {
	r, err := s.Store.Request(ctx, p, "", id)
	return s.cleaned(ctx, r, err)
}

// Waiting lists the requests waiting for userID's decision, newest first, at most
// limit.
func (s *Service) Waiting(ctx context.Context, userID string, limit int) ([]Request, error) {
	rs, err := s.Store.WaitingRequests(ctx, userID, limit)
	return s.cleanedAll(ctx, userID, rs, err)
}

// Decide answers request id (in session sessionID, or any when "") for user p (see
// Decider.Decide), with the service's sealer and approval hook.
func (s *Service) Decide(ctx context.Context, p auth.Principal, sessionID, id string, dec Decision) (Request, error) {
	return Decider{Store: s.Store, Sealer: s.Sealer, Approved: s.Approved}.Decide(ctx, p, sessionID, id, dec)
}
