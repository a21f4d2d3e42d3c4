package web

import (
	"net"
	"strconv"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/time/rate"
)

// signInLimiter bounds sign-in attempts per client address, so that keys cannot be
// guessed through the page: SignInPerMinute a minute, SignInBurst at once, counted
// per replica for the most recent addresses.
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

// allow reports whether an attempt from remoteAddr may go on, and if not, in how many
// seconds one may.
func (l *signInLimiter) allow(remoteAddr string) (bool, int) {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
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
