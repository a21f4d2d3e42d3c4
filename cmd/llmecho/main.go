// Command llmecho runs a local stand-in for an OpenAI-compatible model and an
// Anthropic one, for trying the LLM proxy without a provider: GET /v1/models lists one
// model, and POST /v1/chat/completions, /v1/responses and /v1/messages (streamed too)
// answer with what they received, which it also prints, so that a person sees what
// the proxy forwarded.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"

	"github.com/waystation/waystation/internal/cmd/localserve"
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
		def = "127.0.0.1:8083"
	}
	addr := fs.String("addr", def, "listen address, on loopback (default $LLM_ADDR or 127.0.0.1:8083)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := localserve.CheckLoopback(*addr); err != nil {
		return err
	}
	s := llmecho.New()
	var mu sync.Mutex
	s.Received = func(echo string) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(stdout, "received:\n  %s\n", strings.ReplaceAll(echo, "\n", "\n  "))
	}
	return localserve.Serve(ctx, *addr, s, stdout, stderr, func(a net.Addr) string {
		return fmt.Sprintf("local echo model on http://%s: OpenAI-compatible at /v1 (GET /v1/models, POST /v1/chat/completions, /v1/responses), Anthropic-compatible at / (POST /v1/messages)", a)
	})
}
