package web

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/time/rate"
)

// signInLimiter bounds sign-in attempts per client address, so that keys cannot be
// guessed through the page: SignInPerMinute a minute, SignInBurst at once, counted
// per replica for the most recent addresses. Where the store counts them for every
// replica too (see auth.Service.TakeSignInAttempt), an attempt this replica allows
// is counted there as well.
type signInLimiter struct {
	mu       sync.Mutex
	limiters *lru.Cache[string, *rate.Limiter]
}

// Sign-in limits.
const (
	SignInPerMinute = 10
	SignInBurst     = 10
)

func newSignInLimiter() *signInLimiter {
	c, _ := lru.New[string, *rate.Limiter](10000)
	return &signInLimiter{limiters: c}
}

// allowSignIn counts a sign-in attempt from r's client (the address a trusted proxy
// saw, behind one): against this replica's
// limiter, then against every replica's when the store keeps one. False, with the
// seconds to wait, when none is left.
func (s *Server) allowSignIn(r *http.Request) (bool, int, error) {
	host := s.approvals.TrustedProxies.Of(r.RemoteAddr, r.Header.Values("X-Forwarded-For"))
	if ok, wait := s.signIns.allow(host); !ok {
		return ok, wait, nil
	}
	ok, wait, err := s.approvals.Auth.TakeSignInAttempt(r.Context(), host, SignInBurst, SignInPerMinute)
	if err != nil || ok {
		return ok, 0, err
	}
	return false, int(wait/time.Second) + 1, nil
}

// allow reports whether an attempt from host may go on, and if not, in how many
// seconds one may.
func (l *signInLimiter) allow(host string) (bool, int) {
	l.mu.Lock()
	lim, ok := l.limiters.Get(host)
	if !ok {
		lim = rate.NewLimiter(rate.Limit(SignInPerMinute)/60, SignInBurst)
		l.limiters.Add(host, lim)
	}
	l.mu.Unlock()
	r := lim.Reserve()
	if d := r.Delay(); d > 0 {
		r.Cancel()
		return false, int(d/time.Second) + 1
	}
	return true, 0
}

func retryText(seconds int) string { return strconv.Itoa(seconds) }

// secondsText says a wait in words: "1 second", "5 seconds".
func secondsText(seconds int) string {
	if seconds == 1 {
		return "1 second"
	}
	return strconv.Itoa(seconds) + " seconds"
}
