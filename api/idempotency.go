package api

import (
	"bytes"
	"context"
	"crypto/hmac"
	"io"
	"net/http"
	"time"

	"github.com/waystation/waystation/internal/idempotency"
	"github.com/waystation/waystation/internal/problem"
)

// recorded is a response held back so it can be stored before it is sent.
type recorded struct {
	header http.Header
	status int
	body   bytes.Buffer
	// code is the problem's code when the response is one.
	code string
}

func (rec *recorded) Header() http.Header { return rec.header }
func (rec *recorded) Write(b []byte) (int, error) {
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	return rec.body.Write(b)
}
func (rec *recorded) WriteHeader(status int) {
	if rec.status == 0 {
		rec.status = status
	}
}

// once answers a request at most once per (key, route, idempotency key): the first
// time it runs serve and keeps its response (unless it failed with a 5xx, or was
// refused for a reason that may pass: a rate limit or a quota); a retry
// with the same body replays that response byte for byte with Idempotent-Replayed,
// as 200 if it was a 201; a retry with another body gets 409. ttl 0 remembers the
// key for good.
func (s *Server) once(w http.ResponseWriter, r *http.Request, route, key string, body []byte, ttl time.Duration, serve func(w http.ResponseWriter)) {
	p := principal(r)
	sum := idempotency.Fingerprint(s.auth.Pepper, route, body)
	prev, err := s.auth.Idempotency.ClaimIdempotency(r.Context(), p.KID, route, key, sum, ttl)
	if err != nil {
		s.error(w, r, err)
		return
	}
	if prev != nil {
		switch {
		case !hmac.Equal(prev.Fingerprint, sum):
			s.error(w, r, problem.New(problem.IdempotencyConflict, "This idempotency key was used with another body."))
		case prev.Status == 0:
			p := problem.New(problem.IdempotencyInProgress, "The first request with this idempotency key is still being answered.")
			p.RetryAfter = 1
			s.error(w, r, p)
		default:
			status := prev.Status
			if status == http.StatusCreated {
				status = http.StatusOK
			}
			w.Header()["Idempotent-Replayed"] = hdrIdempotentReplays
			writeBody(w, status, prev.ContentType, prev.Response)
		}
		return
	}
	rec := &recorded{header: http.Header{}}
	serve(rec)
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	ctx := context.WithoutCancel(r.Context())
	if rec.status >= 500 || mayPass(rec.code) {
		if err := s.auth.Idempotency.ReleaseIdempotency(ctx, p.KID, route, key); err != nil {
			s.log.Error("release idempotency key", "err", err)
		}
	} else if err := s.auth.Idempotency.FinishIdempotency(ctx, p.KID, route, key, rec.status, rec.header.Get("Content-Type"), rec.body.Bytes()); err != nil {
		s.auth.Idempotency.ReleaseIdempotency(ctx, p.KID, route, key)
		s.error(w, r, err)
		return
	}
	for k, v := range rec.header {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.status)
	w.Write(rec.body.Bytes())
}

// idempotencyKey makes a route idempotent under the Idempotency-Key header.
func (s *Server) idempotencyKey(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get("Idempotency-Key")
		if key == "" {
			next.ServeHTTP(w, r)
			return
		}
		if len(key) > 255 || len(r.Header.Values("Idempotency-Key")) > 1 {
			s.error(w, r, problem.Invalid("Idempotency-Key must be one value of at most 255 characters."))
			return
		}
		body, err := s.readBody(w, r)
		if err != nil {
			s.error(w, r, err)
			return
		}
		s.once(w, r, r.Method+" "+r.URL.Path, "header:"+key, body, s.auth.IdempotencyTTL, func(w http.ResponseWriter) {
			r.Body = io.NopCloser(bytes.NewReader(body))
			next.ServeHTTP(w, r)
		})
	})
}

// mayPass reports whether a refusal may pass on a retry with the same body: a rate
// or a quota, a spending limit the person may raise, a seller's offer that may change.
// Such answers are not remembered.
func mayPass(code string) bool {
	switch code {
	case problem.RateLimited, problem.QuotaExceeded, problem.SpendingLimitExceeded, problem.AgentPaused,
		problem.HostNotAllowed, problem.OfferNotPayable, problem.PriceAboveMaximum:
		return true
	}
	return false
}
