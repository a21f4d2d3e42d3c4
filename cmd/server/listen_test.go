package main

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestLoadSocketReadsSystemdsVariables: without LISTEN_FDS the server listens on its
// own; with one socket passed to this very process it answers on descriptor 3, under
// the name systemd gives it; a wrong count, a missing or other process's LISTEN_PID
// and names that do not match the count are errors that say which variable is wrong.
func TestLoadSocketReadsSystemdsVariables(t *testing.T) {
	t.Parallel()
	const pid = 4242
	for _, tc := range []struct {
		name string
		env  map[string]string
		want string // the socket's name, or the error's start
		err  bool
	}{
		{"absent", map[string]string{}, "", false},
		{"a pid alone", map[string]string{"LISTEN_PID": "4242"}, "", false},
		{"present", map[string]string{"LISTEN_FDS": "1", "LISTEN_PID": "4242"}, "LISTEN_FD_3", false},
		{"named", map[string]string{"LISTEN_FDS": "1", "LISTEN_PID": "4242", "LISTEN_FDNAMES": "waystation@1.socket"}, "waystation@1.socket", false},
		{"another process's", map[string]string{"LISTEN_FDS": "1", "LISTEN_PID": "4243"}, `LISTEN_PID "4243" is not this process (4242)`, true},
		{"no pid", map[string]string{"LISTEN_FDS": "1"}, "LISTEN_FDS is set without LISTEN_PID", true},
		{"a pid not a number", map[string]string{"LISTEN_FDS": "1", "LISTEN_PID": "me"}, `LISTEN_PID "me"`, true},
		{"two sockets", map[string]string{"LISTEN_FDS": "2", "LISTEN_PID": "4242"}, "LISTEN_FDS=2: the server answers on one socket", true},
		{"none", map[string]string{"LISTEN_FDS": "0", "LISTEN_PID": "4242"}, `LISTEN_FDS "0"`, true},
		{"not a count", map[string]string{"LISTEN_FDS": "one", "LISTEN_PID": "4242"}, `LISTEN_FDS "one"`, true},
		{"names for two", map[string]string{"LISTEN_FDS": "1", "LISTEN_PID": "4242", "LISTEN_FDNAMES": "a:b"}, `LISTEN_FDNAMES "a:b" names 2 sockets`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := loadSocket(func(k string) string { return tc.env[k] }, pid)
			switch {
			case tc.err && (err == nil || !strings.HasPrefix(err.Error(), tc.want)):
				t.Errorf("got %q, %v; want the error %q...", got, err, tc.want)
			case !tc.err && (err != nil || got != tc.want):
				t.Errorf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// TestFileListenerTakesAListeningSocket: a listening TCP or Unix socket passed as a
// descriptor becomes a listener that accepts the connections queued on it before;
// a connected socket, a datagram socket and a descriptor that is no socket are
// refused with the socket's name.
func TestFileListenerTakesAListeningSocket(t *testing.T) {
	t.Parallel()
	for _, network := range []string{"tcp", "unix"} {
		t.Run(network, func(t *testing.T) {
			addr := "127.0.0.1:0"
			if network == "unix" {
				addr = filepath.Join(t.TempDir(), "s")
			}
			held, err := net.Listen(network, addr)
			if err != nil {
				t.Fatal(err)
			}
			defer held.Close()
			// A connection queued before the listener is made is accepted by it.
			conn, err := net.Dial(network, held.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			ln, err := fileListener(descriptor(t, held), "waystation.socket")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			if ln.Addr().String() != held.Addr().String() {
				t.Errorf("listener on %s, want %s", ln.Addr(), held.Addr())
			}
			c, err := ln.Accept()
			if err != nil {
				t.Fatal(err)
			}
			c.Close()
		})
	}

	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	conn, err := net.Dial("tcp", held.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	udp, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	var pipe [2]int
	if err := syscall.Pipe(pipe[:]); err != nil {
		t.Fatal(err)
	}
	syscall.Close(pipe[1])
	for name, tc := range map[string]struct {
		fd   int
		want string
	}{
		"connected": {descriptor(t, conn), "is not listening"},
		"datagram":  {descriptor(t, udp), "is not listening"},
		"no socket": {pipe[0], "socket operation on non-socket"},
	} {
		ln, err := fileListener(tc.fd, "waystation.socket")
		syscall.Close(tc.fd) // refused, the descriptor is still the caller's
		if err == nil {
			ln.Close()
			t.Errorf("%s: a listener; want an error", name)
			continue
		}
		if !strings.Contains(err.Error(), "waystation.socket") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want the socket's name and %q", name, err, tc.want)
		}
	}
}

// descriptor is a copy of s's socket descriptor that no *os.File owns, as the
// descriptor systemd passes is.
func descriptor(t *testing.T, s any) int {
	t.Helper()
	f, err := s.(interface{ File() (*os.File, error) }).File()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fd, err := syscall.Dup(int(f.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	return fd
}
