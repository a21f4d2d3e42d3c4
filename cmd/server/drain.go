package main

import (
	"context"
	"errors"
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
	held, gone := d.await()
	log.Info("draining: serving on, closing each connection after its answer, until the connections open now have closed",
		"open", held, "at most", longest.String())
	endWaits()
	start := time.Now()
	select {
	case <-gone:
		log.Info("drained: every connection open at the drain's start has closed", "ms", time.Since(start).Milliseconds())
	case <-time.After(longest):
		log.Warn("drain ended with connections still open; a balancer may still send on them as they close", "open", d.left(),
			"after", longest.String())
	}
}

// await makes the connections open now the ones awaited: it returns how many there
// are, and a channel closed once the last of them has closed.
func (d *drainer) await() (int, <-chan struct{}) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.held = make(map[net.Conn]struct{}, len(d.open))
	for c := range d.open {
		d.held[c] = struct{}{}
	}
	d.gone = make(chan struct{})
	if len(d.held) == 0 {
		close(d.gone)
	}
	return len(d.held), d.gone
}

// left is how many of the connections awaited are still open.
func (d *drainer) left() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.held)
}

// stop ends srv, which serves ln, Serve's error to come on served: the drain, when
// drain is above zero; then no new connections, the requests in flight run to their
// end, long polls and event streams end at once (endWaits), all within ctx.
//
// After a drain, the listener closes and every connection still open answers its
// request, closing after it, before Shutdown begins. Shutdown itself would drop a
// request: net/http answers none it reads once shutting down and closes the
// connection instead, and a connection accepted late in the drain may be reading its
// first request then. A balancer cannot pass such a request on to another replica
// when it is a POST, and answers it 502. With the listener closed first, every
// connection Shutdown finds is answering its last request or done with it.
//
// Without a drain, Shutdown begins at once: it closes the connections idle at that
// instant, and drops a request it finds read but not begun, as above.
func (d *drainer) stop(ctx context.Context, log *slog.Logger, srv *http.Server, ln net.Listener, served <-chan error,
	drain time.Duration, endWaits func(), socket string) error {
	if drain > 0 {
		d.drain(log, endWaits, drain)
	}
	if socket != "" {
		log.Info("stopping: new connections wait in the socket for the next process; finishing the requests in flight",
			"socket", socket, "timeout", timeout(ctx))
	} else {
		log.Info("stopping: no new connections; finishing the requests in flight", "timeout", timeout(ctx))
	}
	if drain > 0 {
		ln.Close()
		if err := <-served; err != nil && !errors.Is(err, net.ErrClosed) {
			log.Warn("serving ended with an error as the listener closed", "err", err)
		}
		open, gone := d.await()
		select {
		case <-gone:
		case <-ctx.Done():
			log.Warn("connections still open at the shutdown timeout; closing them", "open", d.left(), "of", open)
		}
	}
	srv.RegisterOnShutdown(endWaits)
	return srv.Shutdown(ctx)
}

// timeout is the time ctx has left, for a log line.
func timeout(ctx context.Context) string {
	if t, ok := ctx.Deadline(); ok {
		return time.Until(t).Round(time.Millisecond).String()
	}
	return "none"
}
