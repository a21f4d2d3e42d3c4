package search

import (
	"context"
	"errors"
	"log/slog"
	"strings"

	"github.com/waystation/waystation/internal/clientip"
	"github.com/waystation/waystation/internal/directory"
	"github.com/waystation/waystation/internal/problem"
	"github.com/waystation/waystation/internal/ratelimit"
)

// MaxQueryBytes bounds a query, in UTF-8 bytes after trimming: the API refuses a
// longer one and the search page asks for a shorter one.
const MaxQueryBytes = 1024

// Service is search as its callers meet it: who is asking, that caller's rate, the
// shared daily allowance, then the engine. The API's route and the search page both
// call it, so a program and a person get the same ranking and the same limits.
type Service struct {
	// Engine answers queries; nil means search is not configured, and every query is
	// refused as search_unavailable.
	Engine *Engine
	// Limiter holds each caller to its rate; nil means no per-caller limit.
	Limiter *ratelimit.Limiter
	// TrustedProxies are the networks whose X-Forwarded-For names the caller.
	TrustedProxies clientip.Proxies
	// RetryAfter, in seconds, is what a search refused for want of a model says
	// (default 60).
	RetryAfter int
	Log        *slog.Logger
}

// Caller is who sends a search: the user of the valid API key it carried, when it
// carried one (all the keys of a user and of its agents share one bucket and one share
// of the allowance, so that minting keys buys no more searches); else the address it
// came from, and the X-Forwarded-For values a trusted proxy added.
type Caller struct {
	User         string
	RemoteAddr   string
	ForwardedFor []string
}

// Answer is a search's result and the caller's rate-limit state after it.
type Answer struct {
	Result
	// Rate is the caller's bucket after this query; Rate.Limit is 0 when no
	// per-caller limit applies.
	Rate ratelimit.Decision
	// Keyed is true when the caller was named by a valid API key rather than by its
	// address: the answer is then that caller's (the key's user's) alone.
	Keyed bool
}

// Search answers q over the methods of snap that pass f for caller c. Refusals are
// problems: rate_limited (the caller's bucket is empty), search_allowance_exhausted
// (today's novel embeddings, or the caller's share of them, are spent) and
// search_unavailable (no model can answer), each with its Retry-After. The Answer's Rate is set even on a refusal.
func (s *Service) Search(ctx context.Context, c Caller, snap *directory.Snapshot, q string, f directory.Filter) (Answer, error) {
	return s.SearchPhrased(ctx, c, snap, q, nil, f)
}

// SearchPhrased is Search with the caller's own phrasings of q beside it
// (Engine.SearchPhrased): every phrasing that costs a new embedding takes one more
// query from the caller's rate, and one more from the allowance, as q does.
func (s *Service) SearchPhrased(ctx context.Context, c Caller, snap *directory.Snapshot, q string, rewrites []string, f directory.Filter) (Answer, error) {
	if s == nil || s.Engine == nil {
		p := problem.New(problem.SearchUnavailable, "Search is not configured on this server; the list works without q.")
		p.RetryAfter = s.retryAfter()
		return Answer{}, p
	}
	var a Answer
	caller := s.caller(c)
	a.Keyed = strings.HasPrefix(caller, "user:")
	a.Rate = s.Limiter.Allow(ctx, caller)
	if len(rewrites) > 0 && a.Rate.OK {
		for range s.Engine.Novel(snap, q, rewrites) - 1 {
			if a.Rate = s.Limiter.Allow(ctx, caller); !a.Rate.OK {
				break
			}
		}
	}
	if !a.Rate.OK {
		s.observe(OutcomeRateLimited, "")
		p := problem.New(problem.RateLimited, "Too many searches from this caller; the list works without q.")
		p.RetryAfter = max(1, problem.Seconds(a.Rate.RetryAfter))
		return a, p
	}
	res, err := s.Engine.SearchPhrased(ctx, caller, snap, q, rewrites, f)
	switch {
	case errors.Is(err, ErrAllowanceExhausted):
		s.observe(OutcomeAllowanceExhausted, "")
		p := problem.New(problem.AllowanceExhausted, "Today's allowance of new search embeddings, or this caller's share of it, is spent; exact names (a slug, a method or a provider) still answer, as do queries this server has embedded since it started, and the list works without q.")
		p.RetryAfter = max(1, problem.Seconds(s.Engine.RetryAfter()))
		return a, p
	case err != nil && ctx.Err() == nil:
		s.observe(OutcomeUnavailable, "")
		if s.Log != nil {
			s.Log.WarnContext(ctx, "search unavailable", "err", err)
		}
		p := problem.Wrap(problem.SearchUnavailable, "No embedding model can answer now; the list works without q.", err)
		p.RetryAfter = s.retryAfter()
		return a, p
	case err != nil:
		s.observe(OutcomeCanceled, "")
		return a, err // the caller left
	}
	switch {
	case res.Match != MatchNone && res.Match != MatchSemantic:
		s.observe(OutcomeExact, res.Model)
	case len(res.Hits) > 0:
		s.observe(OutcomeMatched, res.Model)
	default:
		s.observe(OutcomeUnmatched, res.Model)
	}
	a.Result = res
	return a, nil
}

// observe tells the engine's observer, if any, a search's outcome.
func (s *Service) observe(outcome, model string) {
	if o := s.Engine.cfg.Observer; o != nil {
		o.Searched(outcome, model)
	}
}

// Status is the engine's: "ok", "degraded" or "unavailable".
func (s *Service) Status() string {
	if s == nil {
		return "unavailable"
	}
	return s.Engine.Status()
}

func (s *Service) retryAfter() int {
	if s == nil || s.RetryAfter <= 0 {
		return 60
	}
	return s.RetryAfter
}

// caller names who a search is charged to: the key's user when there is one, else
// the client (see clientip).
func (s *Service) caller(c Caller) string {
	if c.User != "" {
		return "user:" + c.User
	}
	return s.TrustedProxies.Of(c.RemoteAddr, c.ForwardedFor)
}
