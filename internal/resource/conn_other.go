//go:build !linux

package resource

import (
	"net"
	"syscall"
)

// Listener is ln itself: elsewhere connections read and write through net.
func Listener(ln net.Listener) net.Listener { return ln }

// sendConn is never made here.
type sendConn struct {
	net.Conn
	rc syscall.RawConn
}

func (c *sendConn) holdWrites()    {}
func (c *sendConn) releaseWrites() {}
