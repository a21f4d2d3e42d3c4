package api

import (
	"errors"
	"math"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/waystation/waystation/internal/auth"
	"github.com/waystation/waystation/internal/directory"
	"github.com/waystation/waystation/internal/resource"
	"github.com/waystation/waystation/internal/search"
)

// WithSearch answers q with the engine, each caller limited by limiter (nil: no
// per-caller limit).
func WithSearch(engine *search.Engine, limiter *search.Limiter) Option {
	return func(s *Server) {
		s.search = engine
		s.limiter = limiter
	}
}

// handleSearch answers GET /services?q=...: per-caller rate limit first, then the
// engine; the body is the snapshot's listing items, each with its similarity.
func (s *Server) handleSearch(w http.ResponseWriter, r *http.Request, snap *directory.Snapshot, sq servicesQuery) {
	if s.search == nil {
		p := problemf(CodeSearchUnavailable, "Search is not configured on this server; the list works without q.")
		p.RetryAfter = s.cfg.SearchRetryAfter
		s.error(w, r, p)
		return
	}
	d := s.limiter.Allow(s.caller(r))
	if d.Limit > 0 {
		h := w.Header()
		h.Set("RateLimit-Limit", strconv.Itoa(d.Limit))
		h.Set("RateLimit-Remaining", strconv.Itoa(d.Remaining))
		h.Set("RateLimit-Reset", strconv.Itoa(ceilSeconds(d.Reset)))
	}
	if !d.OK {
		p := problemf(CodeRateLimited, "Too many searches from this caller; the list works without q.")
		p.RetryAfter = max(1, ceilSeconds(d.RetryAfter))
		s.error(w, r, p)
		return
	}
	res, err := s.search.Search(r.Context(), snap, sq.Q, sq.Filter)
	switch {
	case errors.Is(err, search.ErrAllowanceExhausted):
		p := problemf(CodeAllowanceExhausted, "Today's allowance of new search embeddings is spent; repeated and exact queries still answer, and the list works without q.")
		p.RetryAfter = max(1, ceilSeconds(s.search.RetryAfter()))
		s.error(w, r, p)
		return
	case errors.Is(err, search.ErrUnavailable) || (err != nil && r.Context().Err() == nil):
		s.log.Warn("search unavailable", "err", err)
		p := problemf(CodeSearchUnavailable, "No embedding model can answer now; the list works without q.")
		p.RetryAfter = s.cfg.SearchRetryAfter
		s.error(w, r, p)
		return
	case err != nil:
		return // the client left
	}
	// A search answer is made for this request alone: it is gzipped only for a client
	// that takes gzip, which otherwise costs more than the search itself.
	body := appendSearch(nil, snap, sq.Q, res)
	if resource.AcceptsGzip(r.Header) {
		resource.Serve(w, r, resource.NewLevel(resource.JSON, body, 1), http.StatusOK)
		return
	}
	resource.Serve(w, r, resource.NewIdentity(resource.JSON, body), http.StatusOK)
}

// appendSearch encodes a search answer. Each item is the snapshot's listing item with
// its similarity added before the closing brace, so it is byte for byte the list's.
func appendSearch(dst []byte, snap *directory.Snapshot, q string, res search.Result) []byte {
	dst = append(dst, `{"object":"search","query":`...)
	dst = strconv.AppendQuote(dst, q)
	dst = append(dst, `,"match":`...)
	dst = strconv.AppendQuote(dst, res.Match)
	dst = append(dst, `,"model":`...)
	dst = strconv.AppendQuote(dst, res.Model)
	dst = append(dst, `,"degraded":`...)
	dst = strconv.AppendBool(dst, res.Degraded)
	dst = append(dst, `,"items":[`...)
	for i, h := range res.Hits {
		if i > 0 {
			dst = append(dst, ',')
		}
		item := snap.Item(h.Pos)
		dst = append(dst, item[:len(item)-1]...)
		dst = append(dst, `,"similarity":`...)
		dst = strconv.AppendFloat(dst, math.Round(h.Similarity*1e4)/1e4, 'f', -1, 64)
		dst = append(dst, '}')
	}
	dst = append(dst, `],"count":`...)
	dst = strconv.AppendInt(dst, int64(len(res.Hits)), 10)
	return append(dst, '}')
}

func ceilSeconds(d time.Duration) int { return int(math.Ceil(d.Seconds())) }

// caller names who a search is charged to: the API key when a valid one is sent, else
// the client address, or, when the request came through a trusted proxy, the address
// that proxy saw (the rightmost untrusted hop of X-Forwarded-For, so a client cannot
// pick its own name). An invalid key is not refused here: the directory needs none.
func (s *Server) caller(r *http.Request) string {
	if kid, ok := s.validKey(r); ok {
		return "key:" + kid
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	addr = addr.Unmap()
	if !s.trusted(addr) {
		return callerKey(addr)
	}
	hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			break
		}
		a = a.Unmap()
		if !s.trusted(a) {
			return callerKey(a)
		}
		addr = a
	}
	return callerKey(addr)
}

// callerKey is an IPv4 address, or the /64 of an IPv6 one: a single host usually
// holds a whole /64, so limiting its addresses one by one would limit nothing.
func callerKey(a netip.Addr) string {
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.String()
	}
	return a.String()
}

func (s *Server) trusted(a netip.Addr) bool {
	for _, p := range s.cfg.TrustedProxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// validKey returns the id of the valid, unrevoked API key the request carries, if any.
func (s *Server) validKey(r *http.Request) (string, bool) {
	values := r.Header.Values("Authorization")
	if len(values) != 1 || s.auth.Store == nil {
		return "", false
	}
	scheme, token, _ := strings.Cut(values[0], " ")
	if !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	scope, kid, secret, err := auth.Parse(strings.TrimSpace(token))
	if err != nil {
		return "", false
	}
	stored, err := s.auth.Store.StoredKey(r.Context(), kid)
	if err != nil || stored.Revoked || stored.Scope != scope || !auth.Verify(s.auth.Pepper, secret, stored.SecretHash) {
		return "", false
	}
	return kid, true
}
