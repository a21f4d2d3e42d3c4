package localserve

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestOnlyLoopbackAddressesAreServed(t *testing.T) {
	for addr, ok := range map[string]bool{"127.0.0.1:4021": true, "localhost:0": true, "[::1]:80": true,
		"0.0.0.0:4021": false, "192.168.1.2:80": false, "example.com:80": false, "4021": false} {
		if err := CheckLoopback(addr); (err == nil) != ok {
			t.Errorf("%s: %v", addr, err)
		}
	}
}

func TestServeAnswersUntilTheContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	lines := make(chan string, 1)
	out := writerFunc(func(p []byte) (int, error) { lines <- string(p); return len(p), nil })
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, "127.0.0.1:0", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hi") }),
			out, io.Discard, func(a net.Addr) string { return "on http://" + a.String() })
	}()
	var base string
	select {
	case l := <-lines:
		base = strings.TrimSpace(strings.TrimPrefix(l, "on "))
	case <-time.After(5 * time.Second):
		t.Fatal("no banner")
	}
	res, err := http.Get(base)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if string(body) != "hi" {
		t.Errorf("answered %q", body)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("stop: %v", err)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
