// Command llmecho runs a local stand-in for an OpenAI-compatible model, for trying the
// LLM proxy without a provider: GET /v1/models lists one model, and POST
// /v1/chat/completions (streamed too) answers with the messages it received, which it
// also prints, so that a person sees what the proxy forwarded.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/waystation/waystation/internal/llmecho"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "llmecho:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("llmecho", flag.ContinueOnError)
	fs.SetOutput(stderr)
	def := getenv("LLM_ADDR")
	if def == "" {
		def = "127.0.0.1:4023"
	}
	addr := fs.String("addr", def, "listen address, on loopback (default $LLM_ADDR or 127.0.0.1:4023)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	host, _, err := net.SplitHostPort(*addr)
	if err != nil {
		return fmt.Errorf("-addr %q: %w", *addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("-addr %q is not a loopback address", *addr)
	}
	s := llmecho.New()
	var mu sync.Mutex
	s.Received = func(echo string) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(stdout, "received:\n  %s\n", strings.ReplaceAll(echo, "\n", "\n  "))
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 5 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	fmt.Fprintf(stdout, "local OpenAI-compatible echo model on http://%s/v1 (GET /v1/models, POST /v1/chat/completions)\n", ln.Addr())
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
