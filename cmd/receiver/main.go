// Command receiver is a webhook receiver to try Waystation's webhooks on one machine:
// it prints every delivery it gets, checks its Waystation-Signature with the
// webhook's secret when given one, and answers 204 (401 to a signature that does not
// verify, which the service then tries again).
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
	"sync"
	"syscall"
	"time"

	"github.com/waystation/waystation/internal/webhook"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "receiver:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("receiver", flag.ContinueOnError)
	fs.SetOutput(stderr)
	def := getenv("RECEIVER_ADDR")
	if def == "" {
		def = "127.0.0.1:4022"
	}
	addr := fs.String("addr", def, "listen address, on loopback (default $RECEIVER_ADDR or 127.0.0.1:4022)")
	secret := fs.String("secret", getenv("WEBHOOK_SECRET"), "the webhook's secret (whsec_...), to check signatures (default $WEBHOOK_SECRET)")
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
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	srv := &http.Server{Handler: handler([]byte(*secret), stdout, time.Now), ReadHeaderTimeout: 5 * time.Second,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	checked := "signatures not checked: no -secret"
	if *secret != "" {
		checked = "signatures checked"
	}
	fmt.Fprintf(stdout, "webhook receiver on http://%s (%s)\n", ln.Addr(), checked)
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

// handler prints each POSTed delivery, one line of what and whether its signature
// verified, then its body; a signature that does not verify under secret gets 401.
func handler(secret []byte, out io.Writer, now func() time.Time) http.Handler {
	var mu sync.Mutex
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			http.Error(w, "webhook deliveries are POSTed", http.StatusMethodNotAllowed)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
		if err != nil {
			http.Error(w, "the body could not be read", http.StatusBadRequest)
			return
		}
		verdict, status := "not checked", http.StatusNoContent
		if len(secret) > 0 {
			verdict = "verified"
			if !webhook.Verify(secret, r.Header.Get(webhook.SignatureHeader), body, now(), 5*time.Minute) {
				verdict, status = "DOES NOT VERIFY", http.StatusUnauthorized
			}
		}
		mu.Lock()
		fmt.Fprintf(out, "%s %s, signature %s\n  %s\n", r.Method, r.URL.Path, verdict, body)
		mu.Unlock()
		w.WriteHeader(status)
	})
}
