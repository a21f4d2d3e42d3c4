package api

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/waystation/waystation/internal/problem"
)

// longPoll answers a resource of session sid that may be waited on, for up to the
// caller's wait (the wait query parameter, at most MaxWait): see await.
func (s *Server) longPoll(w http.ResponseWriter, r *http.Request, sid string, read func() (body any, pending bool, recheck time.Time, err error)) {
	q, err := queryParams(r, "wait")
	if err != nil {
		s.error(w, r, err)
		return
	}
	wait, err := intParam(q, "wait", 0, 0, int64(s.svc.MaxWait/time.Second))
	if err != nil {
		s.error(w, r, err)
		return
	}
	body, err := s.await(r.Context(), sid, time.Duration(wait)*time.Second, read)
	switch {
	case errors.Is(err, errCallerLeft):
	case err != nil:
		if problem.CodeOf(err) == problem.KeyRevoked {
			w.Header()["Www-Authenticate"] = s.challenge(r, true)
		}
		s.error(w, r, err)
	default:
		writeJSON(w, http.StatusOK, body)
	}
}

// errCallerLeft is a wait its caller gave up: nobody reads its answer.
var errCallerLeft = errors.New("the caller left")

// await reads a resource of session sid that may be waited on with read, and while
// read says it is still pending and wait is not over, waits for the session's next
// event, for the time read gives (an expiry, say), or for the server's shutdown, and
// reads it again; it answers the last body read, or errCallerLeft when ctx ends
// first. read answers the body, whether it is pending, and when to look again at
// the latest. A wait outlives the authentication of its key, so the key is checked
// again before every read after the first (see keyStillLive): a key revoked, or an
// agent paused, while it waits gets key_revoked, never the answer it waited for.
func (s *Server) await(ctx context.Context, sid string, wait time.Duration, read func() (body any, pending bool, recheck time.Time, err error)) (any, error) {
	var wake <-chan struct{}
	if wait > 0 {
		var cancel func()
		wake, cancel = s.svc.Events.Subscribe(sid)
		defer cancel()
	}
	deadline := time.Now().Add(wait)
	for {
		body, pending, recheck, err := read()
		if err != nil {
			return nil, err
		}
		left := time.Until(deadline)
		if !pending || left <= 0 {
			return body, nil
		}
		timer := time.NewTimer(min(left, time.Until(recheck)+10*time.Millisecond))
		select {
		case <-wake:
		case <-timer.C:
		case <-s.draining:
			deadline = time.Now() // shutting down: answer what is there now
		case <-ctx.Done():
			timer.Stop()
			return nil, errCallerLeft
		}
		timer.Stop()
		if err := s.keyStillLive(ctx); err != nil {
			return nil, err
		}
	}
}

// keyStillLive is key_revoked when the key ctx's request was authenticated with has
// since been revoked or its agent paused (see auth.Service.KeyLive), as that key's
// next call would be answered; nil for a request made without a key.
func (s *Server) keyStillLive(ctx context.Context) error {
	p := principalOf(ctx)
	if p.KID == "" || s.svc.Auth.KeyLive(ctx, p) {
		return nil
	}
	return problem.New(problem.KeyRevoked, "The API key was revoked, or its agent paused, while waiting.")
}
