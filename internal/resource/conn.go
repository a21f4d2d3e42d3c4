package resource

import (
	"context"
	"net"
	"net/http"
	"syscall"
)

// ConnContext is for http.Server's ConnContext: it keeps the connection each request
// came on, so that Serve can hold an answer's headers back until the body it sends
// from a file joins them (see hold), as nginx's tcp_nopush does: the headers then
// share the body's first segment instead of going out in one of their own, which
// the client would be woken for alone. Without it (a connection that is not TCP, a
// server that does not set it) answers are the same bytes in one segment more.
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	if sc, ok := c.(*sendConn); ok {
		return context.WithValue(ctx, connKey{}, sc)
	}
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return ctx
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return ctx
	}
	return context.WithValue(ctx, connKey{}, rc)
}

type connKey struct{}

// held is the connection an answer's headers wait on for the body it sends from a
// file (see hold): a Listener's, whose writes say MSG_MORE until the body follows,
// or another TCP connection, corked. Both zero when the connection is not known.
type held struct {
	sc *sendConn
	rc syscall.RawConn
}

// hold holds back the headers of the answer to r, which go out before its body is
// sent from a file, until that body joins them; release sends them if it never did.
// A Listener's connection says MSG_MORE on the writes between (send(2)'s flag, a
// cork that costs no system call of its own); another TCP connection is corked
// (TCP_CORK, two calls). Nothing is held when the connection is not known, or r is
// not HTTP/1 (HTTP/2 shares the connection between requests).
func hold(r *http.Request) held {
	if r.ProtoMajor != 1 {
		return held{}
	}
	switch c := r.Context().Value(connKey{}).(type) {
	case *sendConn:
		c.holdWrites()
		return held{sc: c}
	case syscall.RawConn:
		if c.Control(corkOn) == nil {
			return held{rc: c}
		}
	}
	return held{}
}

// release sends what hold held back, if the body did not.
func (h held) release() {
	switch {
	case h.sc != nil:
		h.sc.releaseWrites()
	case h.rc != nil:
		h.rc.Control(corkOff)
	}
}
