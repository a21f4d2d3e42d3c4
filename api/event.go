package api

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/waystation/waystation/internal/auth"
	"github.com/waystation/waystation/internal/problem"
	"github.com/waystation/waystation/internal/session"
	"github.com/waystation/waystation/internal/telemetry"
)

type appendEventRequest struct {
	Type          string          `json:"type"`
	ClientEventID string          `json:"clientEventId"`
	Data          json.RawMessage `json:"data"`
}

func (a *appendEventRequest) event() session.RuntimeEvent {
	return session.RuntimeEvent{Type: a.Type, ClientEventID: a.ClientEventID, Data: a.Data}
}

func (a *appendEventRequest) validate() error { return a.event().Validate() }

func (a *appendEventRequest) clientKey() string { return "clientEventId:" + a.ClientEventID }

// handleAppendEvent adds an agent's runtime event, once per clientEventId.
func (s *Server) handleAppendEvent() http.HandlerFunc {
	return s.serve(func(w http.ResponseWriter, r *http.Request) error {
		var req appendEventRequest
		id, body, err := s.readSessionRequest(w, r, &req)
		if err != nil {
			return err
		}
		route := "POST /sessions/" + id + "/events"
		s.once(w, r, route, req.clientKey(), body, s.svc.clientIDTTL(), func(w http.ResponseWriter) error {
			ev, err := s.svc.Sessions.AppendRuntime(r.Context(), principal(r), id, req.event())
			if err != nil {
				return err
			}
			writeJSON(w, http.StatusCreated, ev)
			return nil
		})
		return nil
	})
}

type eventPage struct {
	Items         []session.Event `json:"items"`
	LastEventSeq  int64           `json:"lastEventSeq"`
	SessionStatus string          `json:"sessionStatus"`
}

// handleEvents reads a session's log after a seq: at once, after a long poll of up
// to wait seconds when nothing is there yet, or as Server-Sent Events.
func (s *Server) handleEvents() http.HandlerFunc {
	return s.serve(func(w http.ResponseWriter, r *http.Request) error {
		id, err := sessionID(r)
		if err != nil {
			return err
		}
		q, err := queryParams(r, "after", "wait", "limit")
		if err != nil {
			return err
		}
		after, err := intParam(q, "after", 0, 0, 1<<62)
		if err != nil {
			return err
		}
		limit, err := intParam(q, "limit", defaultPageSize, 1, maxPageSize)
		if err != nil {
			return err
		}
		wait, err := intParam(q, "wait", 0, 0, int64(s.svc.MaxWait/time.Second))
		if err != nil {
			return err
		}
		if acceptsEventStream(r) || wait > 0 {
			release, ok := s.waits.enter(principal(r).KID, s.svc.MaxWaitsPerKey)
			if !ok {
				p := problem.New(problem.RateLimited, "This key holds as many event streams and long polls open as it may; close one first.")
				p.RetryAfter = 1
				return p
			}
			defer release()
		}
		if acceptsEventStream(r) {
			if v := r.Header.Get("Last-Event-ID"); v != "" {
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil || n < 0 {
					return problem.Invalid("Last-Event-ID must be the seq of an event.")
				}
				after = n
			}
			s.streamEvents(w, r, id, after)
			return nil
		}

		p := principal(r)
		var cancel func()
		var wake <-chan struct{}
		if wait > 0 {
			wake, cancel = s.svc.Events.Subscribe(id)
			defer cancel()
		}
		deadline := time.NewTimer(time.Duration(wait) * time.Second)
		defer deadline.Stop()
		for {
			items, sess, err := s.svc.Sessions.Events(r.Context(), p, id, after, int(limit))
			if err != nil {
				return err
			}
			if len(items) > 0 || wait == 0 || sess.Status != session.StatusOpen {
				writeJSON(w, http.StatusOK, eventPage{Items: nonNil(items), LastEventSeq: sess.LastEventSeq, SessionStatus: sess.Status})
				return nil
			}
			select {
			case <-wake:
				if !s.svc.Auth.KeyLive(r.Context(), p) {
					return problem.New(problem.KeyRevoked, "The API key was revoked while waiting.")
				}
			case <-deadline.C:
				wait = 0 // one last read, then answer
			case <-s.draining:
				wait = 0
			case <-r.Context().Done():
				return nil
			}
		}
	})
}

func acceptsEventStream(r *http.Request) bool {
	for _, v := range r.Header.Values("Accept") {
		if strings.Contains(v, "text/event-stream") {
			return true
		}
	}
	return false
}

// streamEvents sends the log after seq after as Server-Sent Events (id: seq), then
// every new event as it is appended, with a comment line as heartbeat, until the
// client leaves or the session is closed and fully sent.
func (s *Server) streamEvents(w http.ResponseWriter, r *http.Request, id string, after int64) {
	p := principal(r)
	ctx := r.Context()
	wake, cancel := s.svc.Events.Subscribe(id)
	defer cancel()
	items, sess, err := s.svc.Sessions.Events(ctx, p, id, after, maxPageSize)
	if err != nil {
		s.error(w, r, err)
		return
	}
	rc := http.NewResponseController(w)
	rc.SetWriteDeadline(time.Time{}) // a stream outlives the server's write timeout
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h["Cache-Control"] = hdrNoStore
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return // a stream has no end to wait for when no body is sent
	}
	heartbeat := time.NewTicker(s.svc.Heartbeat)
	defer heartbeat.Stop()
	life := time.NewTimer(s.svc.StreamLife)
	defer life.Stop()
	var buf bytes.Buffer
	for {
		buf.Reset()
		for _, ev := range items {
			data, _ := json.Marshal(ev)
			buf.WriteString("id: " + strconv.FormatInt(ev.Seq, 10) + "\nevent: " + ev.Type + "\ndata: ")
			buf.Write(data)
			buf.WriteString("\n\n")
			after = ev.Seq
		}
		if buf.Len() > 0 {
			rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
			if _, err := w.Write(buf.Bytes()); err != nil {
				return
			}
			rc.Flush()
		}
		if len(items) == maxPageSize {
			// More are waiting: read on without sleeping.
		} else if sess.Status != session.StatusOpen && after >= sess.LastEventSeq {
			return
		} else if !s.waitForEvents(ctx, w, rc, wake, heartbeat, life.C, p) {
			return
		}
		items, sess, err = s.svc.Sessions.Events(ctx, p, id, after, maxPageSize)
		if err != nil {
			if ctx.Err() == nil {
				s.log.Error("event stream", "err", err, "path", telemetry.LoggedPath(r))
			}
			return
		}
	}
}

// waitForEvents blocks until an event may have been appended, sending heartbeats
// meanwhile; false when the stream must end: the client is gone or too slow to take a
// write, the stream's life is over, the server drains, or the key was revoked (it is
// checked again on every wake and heartbeat).
func (s *Server) waitForEvents(ctx context.Context, w http.ResponseWriter, rc *http.ResponseController, wake <-chan struct{}, heartbeat *time.Ticker, end <-chan time.Time, p auth.Principal) bool {
	for {
		select {
		case <-ctx.Done():
			return false
		case <-s.draining:
			return false
		case <-end:
			return false
		case <-wake:
			return s.svc.Auth.KeyLive(ctx, p)
		case <-heartbeat.C:
			if !s.svc.Auth.KeyLive(ctx, p) {
				return false
			}
			rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
			if _, err := w.Write([]byte(": heartbeat\n\n")); err != nil {
				return false
			}
			if rc.Flush() != nil {
				return false
			}
			if wake == nil {
				return true // no listener: poll on each heartbeat
			}
		}
	}
}

// streamWriteTimeout is the most one write to an event stream may take: a client that
// stops reading loses its stream rather than holding the server's goroutine.
const streamWriteTimeout = 10 * time.Second

// waits counts the event streams and long polls each key holds open on this replica.
type waits struct {
	mu   sync.Mutex
	open map[string]int
}

// enter takes one of kid's max places, or reports that none is free.
func (wt *waits) enter(kid string, max int) (release func(), ok bool) {
	wt.mu.Lock()
	defer wt.mu.Unlock()
	if wt.open[kid] >= max {
		return nil, false
	}
	wt.open[kid]++
	return func() {
		wt.mu.Lock()
		defer wt.mu.Unlock()
		if wt.open[kid]--; wt.open[kid] <= 0 {
			delete(wt.open, kid)
		}
	}, true
}
