// Package ratelimit holds callers to a rate: token buckets per caller, shared by
// every replica through a store, kept in the replica while the store fails. Search
// and origin submissions take from it alike.
package ratelimit

import (
	"context"
	"math"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/time/rate"
)

// Limiter is a token bucket per caller: a rate a minute, in bursts. With
// a Shared store the buckets are every replica's at once, so that N replicas give a
// caller the rate, not N times it; without one, or while the store fails, they live
// in this replica, in a bounded LRU, so that a flood of distinct callers costs
// bounded memory (a forgotten caller starts again with a full bucket).
type Limiter struct {
	every rate.Limit
	burst int
	mu    sync.Mutex
	lims  *lru.Cache[string, *rate.Limiter]
	now   func() time.Time
	// Shared, when set, keeps the buckets where every replica takes from them.
	Shared Store
}

// Store keeps callers' buckets for every replica.
type Store interface {
	// TakeToken takes one token from caller's bucket of burst tokens that fills one
	// every interval, if it holds one; it answers when the bucket is full again and
	// whether it held one.
	TakeToken(ctx context.Context, caller string, now time.Time, interval time.Duration, burst int) (full time.Time, ok bool, err error)
}

// sharedTimeout bounds one take from the shared store; past it the replica's own
// bucket decides.
const sharedTimeout = 250 * time.Millisecond

// Window is how long an empty bucket takes to fill again: the time over which its
// burst is allowed, as a quota policy's window.
func (l *Limiter) Window() time.Duration {
	if l == nil || l.every == rate.Inf {
		return 0
	}
	return time.Duration(float64(l.burst) / float64(l.every) * float64(time.Second))
}

// Decision is the outcome of one Allow.
type Decision struct {
	OK bool
	// Limit is the bucket's size, Remaining the whole tokens left after this call;
	// Reset is how long until the bucket is full again, RetryAfter how long until the
	// next take would be allowed (when refused).
	Limit, Remaining  int
	Reset, RetryAfter time.Duration
}

// NewLimiter makes a limiter of perMinute tokens a minute with bursts of burst
// (default a sixth of the minute's), remembering at most callers buckets. perMinute
// <= 0 disables limiting.
func NewLimiter(perMinute float64, burst, callers int, now func() time.Time) *Limiter {
	if burst <= 0 {
		burst = max(1, int(math.Ceil(perMinute/6)))
	}
	if callers <= 0 {
		callers = 100_000
	}
	if now == nil {
		now = time.Now
	}
	c, _ := lru.New[string, *rate.Limiter](callers)
	l := &Limiter{every: rate.Inf, burst: burst, lims: c, now: now}
	if perMinute > 0 {
		l.every = rate.Limit(perMinute / 60)
	}
	return l
}

// Allow takes one token from caller's bucket: the shared one when there is a Shared
// store that answers, else this replica's.
func (l *Limiter) Allow(ctx context.Context, caller string) Decision {
	if l == nil || l.every == rate.Inf {
		return Decision{OK: true}
	}
	now := l.now()
	if l.Shared != nil {
		ctx, cancel := context.WithTimeout(ctx, sharedTimeout)
		full, ok, err := l.Shared.TakeToken(ctx, caller, now, l.interval(), l.burst)
		cancel()
		if err == nil {
			return l.shared(now, full, ok)
		}
	}
	l.mu.Lock()
	lim, ok := l.lims.Get(caller)
	if !ok {
		lim = rate.NewLimiter(l.every, l.burst)
		l.lims.Add(caller, lim)
	}
	l.mu.Unlock()
	d := Decision{Limit: l.burst}
	r := lim.ReserveN(now, 1)
	if delay := r.DelayFrom(now); delay > 0 {
		r.CancelAt(now)
		d.RetryAfter = delay
	} else {
		d.OK = true
	}
	tokens := lim.TokensAt(now)
	d.Remaining = max(0, int(math.Floor(tokens)))
	d.Reset = time.Duration((float64(l.burst) - tokens) / float64(l.every) * float64(time.Second))
	return d
}

// Take is Allow told as whether caller may go on and, when not, how long until it
// may.
func (l *Limiter) Take(ctx context.Context, caller string) (wait time.Duration, ok bool) {
	d := l.Allow(ctx, caller)
	return d.RetryAfter, d.OK
}

// interval is how long the bucket takes to gain one token.
func (l *Limiter) interval() time.Duration {
	return time.Duration(float64(time.Second) / float64(l.every))
}

// shared is the decision of a take from the shared bucket, which is full again at
// full: it holds what the time until then has not yet refilled.
func (l *Limiter) shared(now, full time.Time, ok bool) Decision {
	d := Decision{OK: ok, Limit: l.burst}
	T, window := l.interval(), time.Duration(l.burst)*l.interval()
	ahead := max(0, full.Sub(now))
	d.Reset = ahead
	d.Remaining = max(0, int((window-ahead)/T))
	if !ok {
		d.RetryAfter = max(time.Millisecond, ahead+T-window)
	}
	return d
}
