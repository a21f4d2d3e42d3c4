// Command receiver is a webhook receiver to try Waystation's webhooks on one machine:
// it prints every delivery it gets, checks its Waystation-Signature with the
// webhook's secret when given one, and answers 204 (401 to a signature that does not
// verify, which the service then tries again).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/waystation/waystation/internal/cmd/localserve"
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
		def = "127.0.0.1:8082"
	}
	addr := fs.String("addr", def, "listen address, on loopback (default $RECEIVER_ADDR or 127.0.0.1:8082)")
	secret := fs.String("secret", getenv("WEBHOOK_SECRET"), "the webhook's secret (whsec_...), to check signatures (default $WEBHOOK_SECRET)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := localserve.CheckLoopback(*addr); err != nil {
		return err
	}
	checked := "signatures not checked: no -secret"
	if *secret != "" {
		checked = "signatures checked"
	}
	return localserve.Serve(ctx, *addr, handler([]byte(*secret), stdout, time.Now), stdout, stderr, func(a net.Addr) string {
		return fmt.Sprintf("webhook receiver on http://%s (%s)", a, checked)
	})
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
