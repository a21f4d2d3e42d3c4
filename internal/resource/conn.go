package resource

import (
	"context"
	"net"
	"net/http"
	"syscall"
)

// ConnContext is for http.Server's ConnContext: it keeps the connection each request
// came on, so that Serve can hold an answer's headers back until the body it sends
// from a file joins them (TCP_CORK, as nginx's tcp_nopush does): the headers then
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

// corked corks the connection r came on, and returns it for uncork; nil when that
// connection is not known, or r is not HTTP/1 (HTTP/2 shares the connection between
// requests).
func corked(r *http.Request) syscall.RawConn {
	if r.ProtoMajor != 1 {
		return nil
	}
	var rc syscall.RawConn
	switch c := r.Context().Value(connKey{}).(type) {
	case *sendConn:
		rc = c.rc
	case syscall.RawConn:
		rc = c
	}
	if rc == nil || rc.Control(corkOn) != nil {
		return nil
	}
	return rc
}

// uncork sends what the cork held back.
func uncork(rc syscall.RawConn) { rc.Control(corkOff) }
