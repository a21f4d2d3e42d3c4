package api

import (
	"bytes"
	"context"
	"crypto/hmac"
	"io"
	"net/http"
	"time"

	"github.com/waystation/waystation/internal/auth"
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

// once answers a request at most once per (key, route, idempotency key), as
// remember says; a replay is sent with Idempotent-Replayed.
func (s *Server) once(w http.ResponseWriter, r *http.Request, route, key string, body []byte, ttl time.Duration, serve func(w http.ResponseWriter) error) {
	rec := &recorded{header: http.Header{}}
	a, err := s.remember(r.Context(), principal(r), route, key, body, ttl, func() apiAnswer {
		if err := serve(rec); err != nil {
			s.error(rec, r, err)
		}
		return apiAnswer{status: rec.status, contentType: rec.header.Get("Content-Type"), body: rec.body.Bytes(), code: rec.code}
	})
	if err != nil {
		s.error(w, r, err)
		return
	}
	if a.replayed {
		w.Header()["Idempotent-Replayed"] = hdrIdempotentReplays
		writeBody(w, a.status, a.contentType, a.body)
		return
	}
	for k, v := range rec.header {
		w.Header()[k] = v
	}
	w.WriteHeader(a.status)
	w.Write(a.body)
}

// clientWrite is the body of a write its client names by an id of its own, once
// per which it is carried out (a retry with the same id answers the same):
// clientKey is that id as the idempotency record is kept under, the same for the
// route and its tool.
type clientWrite interface {
	validator
	clientKey() string
}

// remember answers p's call of route at most once per idempotency key: the first
// time it runs serve and keeps its answer (unless it failed with a 5xx, or was
// refused for a reason that may pass: a rate limit or a quota); a retry with the
// same body replays that answer byte for byte, marked replayed, as 200 if it was a
// 201; a retry with another body is refused with idempotency_conflict. ttl 0
// remembers the key for good. Every adapter of a route goes through it, so that a
// retry is answered the same whichever way it comes.
func (s *Server) remember(ctx context.Context, p auth.Principal, route, key string, body []byte, ttl time.Duration, serve func() apiAnswer) (apiAnswer, error) {
	sum := idempotency.Fingerprint(s.svc.Pepper, route, body)
	prev, err := s.svc.Idempotency.ClaimIdempotency(ctx, p.KID, route, key, sum, ttl)
	if err != nil {
		return apiAnswer{}, err
	}
	if prev != nil {
		switch {
		case !hmac.Equal(prev.Fingerprint, sum):
			return apiAnswer{}, problem.New(problem.IdempotencyConflict, "This idempotency key was used with another body.")
		case prev.Status == 0:
			p := problem.New(problem.IdempotencyInProgress, "The first request with this idempotency key is still being answered.")
			p.RetryAfter = 1
			return apiAnswer{}, p
		}
		status := prev.Status
		if status == http.StatusCreated {
			status = http.StatusOK
		}
		return apiAnswer{status: status, contentType: prev.ContentType, body: prev.Response, replayed: true}, nil
	}
	a := serve()
	if a.status == 0 {
		a.status = http.StatusOK
	}
	ctx = context.WithoutCancel(ctx)
	if a.status >= 500 || mayPass(a.code) {
		if err := s.svc.Idempotency.ReleaseIdempotency(ctx, p.KID, route, key); err != nil {
			s.log.Error("release idempotency key", "err", err)
		}
	} else if err := s.svc.Idempotency.FinishIdempotency(ctx, p.KID, route, key, a.status, a.contentType, a.body); err != nil {
		s.svc.Idempotency.ReleaseIdempotency(ctx, p.KID, route, key)
		return apiAnswer{}, err
	}
	return a, nil
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
		s.once(w, r, r.Method+" "+r.URL.Path, "header:"+key, body, s.svc.IdempotencyTTL, func(w http.ResponseWriter) error {
			r.Body = io.NopCloser(bytes.NewReader(body))
			next.ServeHTTP(w, r)
			return nil
		})
	})
}

// mayPass reports whether a refusal may pass on a retry with the same body: a rate
// or a quota, a spending limit the person may raise, a seller's offer that may change,
// a Permit2 approval the operator may make.
// Such answers are not remembered.
func mayPass(code string) bool {
	switch code {
	case problem.RateLimited, problem.QuotaExceeded, problem.SpendingLimitExceeded, problem.AgentPaused,
		problem.HostNotAllowed, problem.OfferNotPayable, problem.OfferNamesPayer, problem.PriceAboveMaximum,
		problem.Permit2ApprovalRequired:
		return true
	}
	return false
}
