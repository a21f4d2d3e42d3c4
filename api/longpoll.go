package api

import (
	"net/http"
	"time"
)

// longPoll answers a resource of session sid that may be waited on: it reads it with
// read, and while read says it is still pending and the caller's wait (the wait query
// parameter, at most MaxWait) is not over, it waits for the session's next event, for
// the time read gives (an expiry, say), or for the server's shutdown, and reads it
// again. read answers the body, whether it is pending, and when to look again at
// the latest.
func (s *Server) longPoll(w http.ResponseWriter, r *http.Request, sid string, read func() (body any, pending bool, recheck time.Time, err error)) {
	q, err := queryParams(r, "wait")
	if err != nil {
		s.error(w, r, err)
		return
	}
	wait, err := intParam(q, "wait", 0, 0, int64(s.auth.MaxWait/time.Second))
	if err != nil {
		s.error(w, r, err)
		return
	}
	var wake <-chan struct{}
	if wait > 0 && s.auth.Events != nil {
		var cancel func()
		wake, cancel = s.auth.Events.Subscribe(sid)
		defer cancel()
	}
	deadline := time.Now().Add(time.Duration(wait) * time.Second)
	for {
		body, pending, recheck, err := read()
		if err != nil {
			s.error(w, r, err)
			return
		}
		left := time.Until(deadline)
		if !pending || left <= 0 {
			writeJSON(w, http.StatusOK, body)
			return
		}
		timer := time.NewTimer(min(left, time.Until(recheck)+10*time.Millisecond))
		select {
		case <-wake:
		case <-timer.C:
		case <-s.draining:
			deadline = time.Now() // shutting down: answer what is there now
		case <-r.Context().Done():
			timer.Stop()
			return
		}
		timer.Stop()
	}
}
