package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gagliardetto/solana-go"
	"github.com/waystation/waystation/generator"
	"github.com/waystation/waystation/internal/payment"
	"github.com/waystation/waystation/internal/postgres/pgtest"
	"github.com/waystation/waystation/internal/telemetry"
)

// TestRunServesTheDemoEndToEnd runs the real program: migrate, load the demo, serve
// on a free loopback port, answer the directory, and shut down cleanly on cancel.
func TestRunServesTheDemoEndToEnd(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.URL(t)
	env := map[string]string{"DATABASE_URL": dbURL, "HOST": "127.0.0.1", "PORT": "0", "SITE_DIR": t.TempDir()}
	getenv := func(k string) string { return env[k] }
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	var out strings.Builder
	if err := run(ctx, []string{"server", "migrate"}, getenv, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if err := run(ctx, []string{"server", "demo"}, getenv, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "demo catalog loaded") {
		t.Fatalf("demo: %q", out.String())
	}

	pr, pw := io.Pipe()
	done := make(chan error, 1)
	logs := &lockedBuffer{}
	go func() { done <- run(ctx, []string{"server", "serve"}, getenv, pw, logs); pw.Close() }()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("no start line: %v", err)
	}
	go io.Copy(io.Discard, pr)
	i := strings.Index(line, "http://")
	if i < 0 {
		t.Fatalf("start line %q", line)
	}
	baseURL := strings.Fields(line[i:])[0]

	res, err := http.Get(baseURL + "/api/public/v1/services?limit=3")
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Count int `json:"count"`
		Total int `json:"total"`
	}
	json.NewDecoder(res.Body).Decode(&list)
	res.Body.Close()
	if res.StatusCode != 200 || list.Count != 3 || list.Total < 50 {
		t.Fatalf("list: %d %+v", res.StatusCode, list)
	}
	res, err = http.Get(baseURL + "/health")
	if err != nil {
		t.Fatal(err)
	}
	var health struct{ Database string }
	json.NewDecoder(res.Body).Decode(&health)
	res.Body.Close()
	if health.Database != "ok" {
		t.Fatalf("health: %+v", health)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run returned %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("run did not shut down")
	}
	// The stop is logged as it begins and when it is over, in that order.
	log := logs.String()
	stopping, stopped := strings.Index(log, "msg=\"stopping: "), strings.Index(log, "msg=stopped ")
	if stopping < 0 || stopped < stopping {
		t.Errorf("the stop is not logged as it begins and ends:\n%s", log)
	}
	// The access lines, held back in a buffer while serving, are all written by the
	// time run returns, in the order of the requests.
	base := strings.TrimPrefix(baseURL, "http://"+res.Request.URL.Host)
	listLine := strings.Index(log, "msg=request method=GET path="+base+"/api/public/v1/services ")
	healthLine := strings.Index(log, "msg=request method=GET path="+base+"/health ")
	if listLine < 0 || healthLine < listLine || stopped < healthLine {
		t.Errorf("the access lines are not all logged, in order, before the stop:\n%s", log)
	}
}

func TestConfigRefusesBadValues(t *testing.T) {
	t.Parallel()
	for _, env := range []map[string]string{
		{},
		{"DATABASE_URL": "x", "PORT": "http"},
		{"DATABASE_URL": "x", "SNAPSHOT_INTERVAL": "soon"},
		{"DATABASE_URL": "x", "LOG_LEVEL": "loud"},
		{"DATABASE_URL": "x", "SHUTDOWN_DRAIN": "-1s"},
		{"DATABASE_URL": "x", "SHUTDOWN_DRAIN": "2h"},
		{"DATABASE_URL": "x", "ORIGIN_STALE_AFTER": "soon"},
		{"DATABASE_URL": "x", "ORIGIN_STALE_AFTER": "30s"},
		{"DATABASE_URL": "x", "ORIGIN_STALE_AFTER": "3d", "ORIGIN_DELIST_AFTER": "2d"},
		{"DATABASE_URL": "x", "ORIGIN_SUBMIT_RATE_PER_HOUR": "many"},
		{"DATABASE_URL": "x", "ORIGIN_SUBMIT_RATE_PER_HOUR": "-1"},
		{"DATABASE_URL": "x", "ORIGIN_SUBMIT_RATE_PER_HOUR": "NaN"},
		{"DATABASE_URL": "x", "SNAPSHOT_MEMLIMIT": "400MB"},
		{"DATABASE_URL": "x", "SERVE_MEMLIMIT": "256MB"},
		{"DATABASE_URL": "x", "SERVE_GOGC": "0"},
		{"DATABASE_URL": "x", "SERVE_GOGC": "off"},
		{"DATABASE_URL": "x", "SERVE_GOGC": "25%"},
		{"DATABASE_URL": "x", "SERVE_GOGC": "10001"},
		{"DATABASE_URL": "x", "METRICS_PUBLIC": "yes"},
	} {
		if _, err := loadConfig(func(k string) string { return env[k] }); err == nil {
			t.Errorf("%v: accepted", env)
		}
	}
	cfg, err := loadConfig(func(k string) string {
		return map[string]string{"DATABASE_URL": "x", "ORIGIN_STALE_AFTER": "2d", "ORIGIN_DELIST_AFTER": "90h"}[k]
	})
	if err != nil || cfg.Probe.OriginStaleAfter != 48*time.Hour || cfg.Probe.OriginDelistAfter != 90*time.Hour || cfg.Probe.OriginSubmitPerHour != 20 {
		t.Errorf("origin freshness and submission rate: %v, %v", cfg.Probe, err)
	}
	cfg, err = loadConfig(func(k string) string {
		return map[string]string{"DATABASE_URL": "x", "ORIGIN_SUBMIT_RATE_PER_HOUR": "0"}[k]
	})
	if err != nil || cfg.Probe.OriginSubmitPerHour != 0 || submitLimiter(0, nil) != nil {
		t.Errorf("no submission rate: %v, %v", cfg.Probe, err)
	}
	cfg, err = loadConfig(func(k string) string {
		return map[string]string{"DATABASE_URL": "x", "SNAPSHOT_MEMLIMIT": "400MiB", "SERVE_MEMLIMIT": "256MiB"}[k]
	})
	if err != nil || cfg.SnapshotMemoryLimit != 400<<20 || cfg.ServeMemoryLimit != 256<<20 {
		t.Errorf("memory limits: %d, %d, %v", cfg.SnapshotMemoryLimit, cfg.ServeMemoryLimit, err)
	}
	for _, tc := range []struct {
		env  map[string]string
		want int
	}{
		{map[string]string{}, generator.AutoGCPercent},
		{map[string]string{"SERVE_GOGC": "auto"}, generator.AutoGCPercent},
		{map[string]string{"GOGC": "200"}, 0},
		{map[string]string{"SERVE_GOGC": "none"}, 0},
		{map[string]string{"SERVE_GOGC": "40", "GOGC": "200"}, 40},
	} {
		tc.env["DATABASE_URL"] = "x"
		cfg, err := loadConfig(func(k string) string { return tc.env[k] })
		if err != nil || cfg.ServeGCPercent != tc.want {
			t.Errorf("%v: ServeGCPercent %d (%v), want %d", tc.env, cfg.ServeGCPercent, err, tc.want)
		}
	}
}

// The server listens on loopback unless HOST says otherwise, and its metrics answer
// loopback alone unless METRICS_TOKEN or METRICS_PUBLIC says otherwise.
func TestConfigListensOnLoopbackUnlessTold(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		env    map[string]string
		addr   string
		access telemetry.Access
	}{
		{map[string]string{}, "127.0.0.1:8080", telemetry.Access{}},
		{map[string]string{"PORT": "9090"}, "127.0.0.1:9090", telemetry.Access{}},
		{map[string]string{"HOST": "0.0.0.0"}, "0.0.0.0:8080", telemetry.Access{}},
		{map[string]string{"HOST": "::", "METRICS_TOKEN": "t"}, "[::]:8080", telemetry.Access{Token: "t"}},
		{map[string]string{"METRICS_PUBLIC": "true"}, "127.0.0.1:8080", telemetry.Access{Public: true}},
	} {
		tc.env["DATABASE_URL"] = "x"
		cfg, err := loadConfig(func(k string) string { return tc.env[k] })
		if err != nil || cfg.Addr != tc.addr || cfg.Telemetry.Metrics != tc.access {
			t.Errorf("%v: %s %+v (%v), want %s %+v", tc.env, cfg.Addr, cfg.Telemetry.Metrics, err, tc.addr, tc.access)
		}
	}
}

// TestPaymentConfigReadsThePayerWithoutShowingItsKey reads X402_PAYER_KEY (or its
// file), X402_PAYER_NETWORKS, PAYMENT_ALLOW_HOSTS and X402_MAX_AUTHORIZATION, and
// refuses bad values without quoting the key.
func TestPaymentConfigReadsThePayerWithoutShowingItsKey(t *testing.T) {
	t.Parallel()
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	c, err := loadPaymentConfig(env())
	if err != nil || c.Payer != nil || c.AllowHosts != nil {
		t.Fatalf("no payer: %+v %v", c, err)
	}
	c, err = loadPaymentConfig(env("X402_PAYER_KEY", "0x"+testPayerKey, "PAYMENT_ALLOW_HOSTS", " localhost:4021, Seller.Test ", "WEBHOOK_ALLOW_HOSTS", "hooks.local"))
	if err != nil || c.Payer == nil || !slices.Equal(c.Payer.Networks, payment.Networks{"eip155:8453"}) ||
		!slices.Equal(c.AllowHosts, []string{"localhost:4021", "seller.test"}) || !slices.Equal(c.WebhookAllowHosts, []string{"hooks.local"}) {
		t.Fatalf("payer: %+v %v", c, err)
	}
	file := filepath.Join(t.TempDir(), "payer.key")
	os.WriteFile(file, []byte(testPayerKey+"\n"), 0o600)
	c, err = loadPaymentConfig(env("X402_PAYER_KEY_FILE", file, "X402_PAYER_NETWORKS", "eip155:84532, base",
		"X402_RPC_URLS", "base-sepolia=http://localhost:4021/rpc"))
	if err != nil || c.Payer.Address() == "" || !slices.Equal(c.Payer.Networks, payment.Networks{"eip155:84532", "eip155:8453"}) ||
		!slices.Equal(c.Chains.Networks(), []string{"eip155:84532"}) || c.MaxAuthorization != 0 {
		t.Fatalf("payer from a file: %+v %v", c, err)
	}
	if c, err := loadPaymentConfig(env("X402_MAX_AUTHORIZATION", "2m")); err != nil || c.MaxAuthorization != 2*time.Minute {
		t.Fatalf("X402_MAX_AUTHORIZATION: %+v %v", c.MaxAuthorization, err)
	}
	for _, bad := range []func(string) string{
		env("X402_PAYER_KEY", "nothex"+testPayerKey[6:]),
		env("X402_PAYER_KEY", testPayerKey, "X402_PAYER_KEY_FILE", file),
		env("X402_PAYER_KEY", testPayerKey, "X402_PAYER_NETWORKS", "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp"),
		env("X402_PAYER_NETWORKS", "eip155:8453"),
		env("X402_PAYER_KEY_FILE", file+".missing"),
		env("PAYMENT_ALLOW_HOSTS", "http://localhost"),
		env("WEBHOOK_ALLOW_HOSTS", "a b"),
		env("X402_RPC_URLS", "eip155:8453"),
		env("X402_MAX_AUTHORIZATION", "31y"),
		env("X402_MAX_AUTHORIZATION", "2h"),
		env("X402_MAX_AUTHORIZATION", "1s"),
	} {
		_, err := loadPaymentConfig(bad)
		if err == nil {
			t.Errorf("accepted %q", bad("X402_PAYER_KEY")+bad("X402_PAYER_NETWORKS")+bad("PAYMENT_ALLOW_HOSTS"))
		} else if strings.Contains(err.Error(), testPayerKey[6:20]) {
			t.Errorf("the error quotes the key: %v", err)
		}
	}
}

// TestPaymentConfigReadsTheSolanaPayer reads SOLANA_PAYER_KEY (base58, or the JSON
// array solana-keygen writes, or a file of either), SOLANA_PAYER_NETWORKS in v1 names
// or CAIP-2, and SOLANA_RPC_URL; it refuses bad values without quoting the key or the
// RPC's URL, and pays a Solana network only with a key, the network named and an RPC.
func TestPaymentConfigReadsTheSolanaPayer(t *testing.T) {
	t.Parallel()
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	const (
		mainnet, devnet  = "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp", "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1"
		usdc, usdcDevnet = "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v", "4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU"
	)
	key := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{9}, 32))
	b58 := solana.PrivateKey(key).String()
	ints := make([]int, len(key))
	for i, b := range key {
		ints[i] = int(b)
	}
	arr, _ := json.Marshal(ints)
	want := solana.PrivateKey(key).PublicKey().String()

	c, err := loadPaymentConfig(env("SOLANA_PAYER_KEY", b58, "SOLANA_RPC_URL", "https://rpc.example/?api-key=k"))
	if err != nil || c.Payer == nil || c.Payer.Signer != nil || c.Payer.AddressOn(mainnet) != want || c.Payer.Address() != "" ||
		!slices.Equal(c.Payer.SolanaNetworks, payment.Networks{mainnet}) {
		t.Fatalf("Solana payer: %+v %v", c.Payer, err)
	}
	// Payable exactly on the networks named, in their USDC, and only there.
	if !c.Payer.Pays(mainnet, usdc) || !c.Payer.Pays("solana", usdc) || c.Payer.Pays(devnet, usdcDevnet) ||
		c.Payer.Pays(mainnet, usdcDevnet) || c.Payer.Pays(mainnet, "So11111111111111111111111111111111111111112") ||
		c.Payer.Pays("eip155:8453", "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913") {
		t.Fatal("Pays is wrong on the default networks")
	}
	file := filepath.Join(t.TempDir(), "id.json")
	os.WriteFile(file, append(arr, '\n'), 0o600)
	c, err = loadPaymentConfig(env("SOLANA_PAYER_KEY_FILE", file, "SOLANA_PAYER_NETWORKS", "solana-devnet, "+mainnet,
		"SOLANA_RPC_URL", "solana-devnet=http://localhost:8899", "X402_PAYER_KEY", testPayerKey))
	if err != nil || c.Payer.AddressOn(devnet) != want || c.Payer.Address() == "" ||
		!slices.Equal(c.Payer.SolanaNetworks, payment.Networks{devnet, mainnet}) {
		t.Fatalf("Solana payer from a keygen file: %+v %v", c.Payer, err)
	}
	// Devnet is named and has an RPC; mainnet is named but has none: not payable.
	if !c.Payer.Pays("solana-devnet", usdcDevnet) || c.Payer.Pays(mainnet, usdc) || !c.Payer.Pays("eip155:8453", "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913") {
		t.Fatal("Pays is wrong with an RPC for devnet only")
	}
	for _, bad := range []func(string) string{
		env("SOLANA_PAYER_KEY", b58[:40], "SOLANA_RPC_URL", "http://localhost:8899"),
		env("SOLANA_PAYER_KEY", b58, "SOLANA_PAYER_KEY_FILE", file, "SOLANA_RPC_URL", "http://localhost:8899"),
		env("SOLANA_PAYER_KEY", b58),
		env("SOLANA_PAYER_KEY", b58, "SOLANA_RPC_URL", "ftp://rpc.example/?api-key=k"),
		env("SOLANA_PAYER_KEY", b58, "SOLANA_RPC_URL", "http://localhost:8899", "SOLANA_PAYER_NETWORKS", "eip155:8453"),
		env("SOLANA_PAYER_NETWORKS", "solana"),
		env("SOLANA_RPC_URL", "http://localhost:8899"),
		env("SOLANA_PAYER_KEY", string(arr[:len(arr)-3])+"]", "SOLANA_RPC_URL", "http://localhost:8899"),
	} {
		_, err := loadPaymentConfig(bad)
		if err == nil {
			t.Errorf("accepted %q %q", bad("SOLANA_PAYER_NETWORKS"), bad("SOLANA_RPC_URL"))
		} else if strings.Contains(err.Error(), b58[:20]) || strings.Contains(err.Error(), "api-key") || strings.Contains(err.Error(), string(arr[:20])) {
			t.Errorf("the error quotes a secret: %v", err)
		}
	}
}

// A drain ends when the connections open at its start have closed: after their next
// answer, which closes them, or when the client closes one it held idle, as a balancer
// does after its keep-alive timeout. It never closes one itself before its longest
// length, and a connection opened during the drain does not hold it.
func TestDrainWaitsForTheConnectionsOpenAtItsStart(t *testing.T) {
	d := newDrainer()
	srv := httptest.NewUnstartedServer(d.closeWhile(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	})))
	srv.Config.ConnState = d.track
	srv.Start()
	defer srv.Close()
	get := func(c net.Conn, r *bufio.Reader) *http.Response {
		t.Helper()
		if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		res, err := http.ReadResponse(r, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res
	}
	dial := func() (net.Conn, *bufio.Reader) {
		c, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c, bufio.NewReader(c)
	}
	reused, reusedR := dial()
	if res := get(reused, reusedR); res.Close {
		t.Fatal("before the drain, an answer closed its connection")
	}
	idle, idleR := dial()
	get(idle, idleR)

	drained := make(chan struct{})
	go func() {
		d.drain(slog.New(slog.DiscardHandler), func() {}, time.Minute)
		close(drained)
	}()
	for !d.on.Load() {
		time.Sleep(time.Millisecond)
	}
	fresh, freshR := dial()
	if res := get(fresh, freshR); !res.Close {
		t.Error("a connection opened while draining stayed open after its answer")
	}
	if res := get(reused, reusedR); !res.Close {
		t.Error("a connection reused while draining stayed open after its answer")
	}
	if _, err := reusedR.ReadByte(); err != io.EOF {
		t.Errorf("after its answer while draining, the connection gave %v, want EOF", err)
	}
	select {
	case <-drained:
		t.Fatal("the drain ended while a connection open at its start was still open")
	case <-time.After(100 * time.Millisecond):
	}
	idle.Close()
	select {
	case <-drained:
	case <-time.After(30 * time.Second):
		t.Fatal("the drain went on after every connection open at its start had closed")
	}
}

// A drain whose connections stay open ends at its longest length.
func TestDrainEndsAtItsLongest(t *testing.T) {
	d := newDrainer()
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	d.track(a, http.StateNew)
	d.track(a, http.StateIdle)
	start := time.Now()
	d.drain(slog.New(slog.DiscardHandler), func() {}, 50*time.Millisecond)
	if took := time.Since(start); took < 50*time.Millisecond {
		t.Errorf("the drain ended after %s with a connection open, want its longest, 50ms", took)
	}
	d.track(a, http.StateClosed) // a close after the drain's end is harmless
}

// A connection accepted late in a drain, whose request comes as the server stops
// accepting, is answered: net/http's Shutdown would close it unanswered, having read
// the request once shutting down, and a balancer answers a POST so dropped with a 502.
func TestStopAnswersARequestThatComesAsItStopsAccepting(t *testing.T) {
	d := newDrainer()
	srv := &http.Server{Handler: d.closeWhile(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, "kept")
	})), ConnState: d.track}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	addr := ln.Addr().String()

	// The connection opens once the drain has counted the connections it waits for,
	// so that it holds neither the drain nor, once the drain is over, the listener.
	lateConn := make(chan net.Conn, 1)
	var once sync.Once
	endWaits := func() {
		once.Do(func() {
			late, err := net.Dial("tcp", addr)
			lateConn <- late
			if err != nil {
				return
			}
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
				d.mu.Lock()
				n := len(d.open)
				d.mu.Unlock()
				if n == 1 || time.Now().After(deadline) {
					break
				}
			}
		})
	}
	answer := make(chan string, 1)
	go func() {
		late := <-lateConn
		// Its request is sent once the server accepts no more.
		for {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				break
			}
			c.Close()
			time.Sleep(time.Millisecond)
		}
		if late == nil {
			answer <- "no connection opened during the drain"
			return
		}
		defer late.Close()
		io.WriteString(late, "POST /events HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}")
		res, err := http.ReadResponse(bufio.NewReader(late), nil)
		if err != nil {
			answer <- err.Error()
			return
		}
		b, _ := io.ReadAll(res.Body)
		answer <- fmt.Sprintf("%d %s close=%t", res.StatusCode, b, res.Close)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := d.stop(ctx, slog.New(slog.DiscardHandler), srv, ln, served, time.Minute, endWaits, ""); err != nil {
		t.Errorf("stop: %v", err)
	}
	if got := <-answer; got != "200 kept close=true" {
		t.Errorf("the request sent as the server stopped accepting got %q, want 200 kept close=true", got)
	}
}
