// Package localserve runs the local stand-ins a person tries the service with (the
// x402 seller, the language model, the webhook receiver) the same way: on a loopback
// address unless told otherwise, until the context ends, then a graceful stop.
package localserve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// CheckLoopback refuses a listen address that is not on loopback ("localhost" is).
func CheckLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("-addr %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("-addr %q is not a loopback address", addr)
	}
	return nil
}

// Serve listens on addr, prints banner's line for the address it listens on to
// stdout, and serves h until ctx ends (then stops within 5 s) or the server fails.
// The server's own errors are logged to stderr.
func Serve(ctx context.Context, addr string, h http.Handler, stdout, stderr io.Writer, banner func(net.Addr) string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	fmt.Fprintln(stdout, banner(ln.Addr()))
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
