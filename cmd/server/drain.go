package main

import (
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// drainer keeps a stopping server serving until a balancer in front holds none of its
// keep-alive connections, each answer meanwhile closing its connection. Closing an idle
// connection races a request the balancer is sending on it, which the balancer cannot
// pass on to another replica when the request is not idempotent. So the server closes
// none: the connections it had when the drain began close after their next answer, or
// the balancer closes them itself once they have been idle for its keep-alive timeout.
// The drain ends when all of them are gone, or after its longest length. Long polls
// and event streams end at once, so their clients come back through the balancer.
//
// Waiting for the connections, rather than for a fixed time past the balancer's
// timeout, holds on a busy machine too: a balancer that was not scheduled for a while
// may hand out a connection idle past its own timeout, and a request begun before the
// drain leaves its connection open when it ends during it.
//
// The server accepts on through the drain in both modes: new connections are answered
// at once rather than held for the next process, and close after their answer. What
// differs is its end. A listener of the server's own closes its socket, and the kernel
// resets the connections still in its queue, which the balancer may have written a
// request on; a socket from systemd stays open, and keeps them for the next process.
type drainer struct {
	on atomic.Bool

	mu   sync.Mutex
	open map[net.Conn]struct{}
	// held are the connections open when the drain began and not closed since; gone
	// is closed when the last of them closes.
	held map[net.Conn]struct{}
	gone chan struct{}
}

func newDrainer() *drainer { return &drainer{open: map[net.Conn]struct{}{}} }

// track is the server's ConnState hook: it runs on a connection's first and last
// state only, not per request.
func (d *drainer) track(c net.Conn, s http.ConnState) {
	switch s {
	case http.StateNew:
		d.mu.Lock()
		d.open[c] = struct{}{}
		d.mu.Unlock()
	case http.StateClosed, http.StateHijacked:
		d.mu.Lock()
		delete(d.open, c)
		if d.held != nil {
			if _, ok := d.held[c]; ok {
				delete(d.held, c)
				if len(d.held) == 0 {
					close(d.gone)
				}
			}
		}
		d.mu.Unlock()
	}
}

// closeWhile answers with Connection: close while draining. Outside a drain it costs
// one atomic load.
func (d *drainer) closeWhile(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if d.on.Load() {
			w.Header()["Connection"] = []string{"close"}
		}
		next.ServeHTTP(w, r)
	})
}

// drain serves on, closing each connection after its answer, until every connection
// open at its start has closed or longest has passed; endWaits ends the long polls and
// event streams.
func (d *drainer) drain(log *slog.Logger, endWaits func(), longest time.Duration) {
	// On before the connections are counted: a connection that track records after the
	// count has its every answer closing it, where one recorded between the count and
	// an on set later could answer a request begun in between and stay open, counted by
	// nothing, for Shutdown to close as idle under the balancer.
	d.on.Store(true)
	d.mu.Lock()
	d.held = make(map[net.Conn]struct{}, len(d.open))
	for c := range d.open {
		d.held[c] = struct{}{}
	}
	d.gone = make(chan struct{})
	if len(d.held) == 0 {
		close(d.gone)
	}
	held := len(d.held)
	d.mu.Unlock()
	log.Info("draining: serving on, closing each connection after its answer, until the connections open now have closed",
		"open", held, "at most", longest.String())
	endWaits()
	start := time.Now()
	select {
	case <-d.gone:
		log.Info("drained: every connection open at the drain's start has closed", "ms", time.Since(start).Milliseconds())
	case <-time.After(longest):
		d.mu.Lock()
		left := len(d.held)
		d.mu.Unlock()
		log.Warn("drain ended with connections still open; a balancer may still send on them as they close", "open", left,
			"after", longest.String())
	}
}
