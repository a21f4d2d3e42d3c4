package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// listenFDsStart is the descriptor of the first socket systemd passes a process
// (SD_LISTEN_FDS_START of sd_listen_fds(3)).
const listenFDsStart = 3

// loadSocket reads the variables with which systemd passes a process its listening
// sockets (socket activation: LISTEN_PID, LISTEN_FDS, LISTEN_FDNAMES; see
// sd_listen_fds(3)) and returns the name of the one socket the server is to answer
// on, descriptor 3, or "" when there is none and the server listens on HOST and PORT
// itself. The socket outlives the process: connections that come while one process
// stops and the next starts wait in its queue for the next, where a port a stopping
// process closes resets them. The variables set but wrong are an error, rather than a
// server that quietly tries the port its socket unit holds.
func loadSocket(getenv func(string) string, pid int) (string, error) {
	fds := getenv("LISTEN_FDS")
	if fds == "" {
		return "", nil
	}
	n, err := strconv.Atoi(fds)
	if err != nil || n < 1 {
		return "", fmt.Errorf("LISTEN_FDS %q: want the number of sockets systemd passes, 1", fds)
	}
	if n != 1 {
		return "", fmt.Errorf("LISTEN_FDS=%d: the server answers on one socket; give its socket unit one ListenStream", n)
	}
	owner := getenv("LISTEN_PID")
	if owner == "" {
		return "", errors.New("LISTEN_FDS is set without LISTEN_PID: set both, or neither")
	}
	if p, err := strconv.Atoi(owner); err != nil || p != pid {
		return "", fmt.Errorf("LISTEN_PID %q is not this process (%d): the socket was passed to another one; "+
			"run the server with exec, not from a shell that forks it", owner, pid)
	}
	name := "LISTEN_FD_" + strconv.Itoa(listenFDsStart)
	if names := getenv("LISTEN_FDNAMES"); names != "" {
		parts := strings.Split(names, ":")
		if len(parts) != n {
			return "", fmt.Errorf("LISTEN_FDNAMES %q names %d sockets, LISTEN_FDS %d", names, len(parts), n)
		}
		name = parts[0]
	}
	return name, nil
}

// listen returns the server's listener: the socket systemd passed it, when
// cfg.Socket names one, or a new one on cfg.Addr.
func listen(cfg Config) (net.Listener, error) {
	if cfg.Socket == "" {
		return net.Listen("tcp", cfg.Addr)
	}
	return fileListener(listenFDsStart, cfg.Socket)
}

// fileListener turns descriptor fd, a socket systemd passed under name, into a
// listener. It must be a stream socket already listening (a socket unit's
// ListenStream without Accept=yes), TCP or Unix.
func fileListener(fd int, name string) (net.Listener, error) {
	accepting, err := syscall.GetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_ACCEPTCONN)
	if err != nil {
		return nil, fmt.Errorf("socket %s from systemd (descriptor %d): %w", name, fd, err)
	}
	if accepting != 1 {
		return nil, fmt.Errorf("socket %s from systemd (descriptor %d) is not listening: want a ListenStream socket without Accept=yes", name, fd)
	}
	// The listener holds a copy of the descriptor: the one systemd passed is closed
	// here, and neither reaches a process the server might start.
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	ln, err := net.FileListener(f)
	if err != nil {
		return nil, fmt.Errorf("socket %s from systemd (descriptor %d): %w", name, fd, err)
	}
	return ln, nil
}
