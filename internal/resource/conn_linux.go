package resource

import (
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"unsafe"
)

// Listener wraps ln, whose TCP connections then read and write with raw system
// calls. See sendConn.
func Listener(ln net.Listener) net.Listener { return listener{ln} }

type listener struct{ net.Listener }

func (l listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return c, err
	}
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return c, nil
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return c, nil
	}
	sc := &sendConn{TCPConn: tc, rc: rc}
	sc.readFn, sc.writeFn, sc.sendFn = sc.read, sc.write, sc.sendfile
	return sc, nil
}

// sendConn is a TCP connection whose reads and writes, and the sendfile(2) of a
// stored answer's file, are raw system calls: the Go scheduler does not see them,
// where it sees net's. The socket is non-blocking, so none of them waits (when
// there is nothing to read or no room to write, the goroutine waits in the
// netpoller as with net's, deadlines included); seeing them costs a context switch
// an answer or more: the runtime's monitor thread sleeps for as long as the server
// has nothing to run, and the first system call the scheduler sees after that wakes
// it, to watch 20 µs at a time for calls to take their P from. A raw call keeps its
// P while the kernel works (a large write into loopback runs the receiver's TCP
// too), CPU spent either way; a stored file not in the page cache would hold it for
// the disk's read, the published site's files being read every answer.
type sendConn struct {
	*net.TCPConn
	rc syscall.RawConn

	// The functions given rc, made once so that reading and writing allocate nothing,
	// and what each is at.
	readFn, writeFn, sendFn func(fd uintptr) bool
	rmu                     sync.Mutex
	rbuf                    []byte
	rn                      int
	rerr                    error
	wmu                     sync.Mutex
	wbuf                    []byte
	wn                      int
	werr                    error
	more                    bool  // writes say MSG_MORE (see holdWrites)
	src                     int   // the descriptor of the file being sent
	off, left               int64 // where it is at in it, and what is left
}

func (c *sendConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	c.rmu.Lock()
	defer c.rmu.Unlock()
	c.rbuf, c.rn, c.rerr = p, 0, nil
	err := c.rc.Read(c.readFn)
	n, rerr := c.rn, c.rerr
	c.rbuf = nil
	if err == nil {
		err = rerr
	}
	if err == nil && n == 0 {
		err = io.EOF
	}
	return n, err
}

func (c *sendConn) read(fd uintptr) bool {
	for {
		n, _, errno := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&c.rbuf[0])), uintptr(len(c.rbuf)))
		switch errno {
		case 0:
			c.rn = int(n)
			return true
		case syscall.EAGAIN:
			return false
		case syscall.EINTR:
			continue
		}
		c.rerr = c.opError("read", errno)
		return true
	}
}

func (c *sendConn) Write(p []byte) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.wbuf, c.wn, c.werr = p, 0, nil
	err := c.rc.Write(c.writeFn)
	n, werr := c.wn, c.werr
	c.wbuf = nil
	if err == nil {
		err = werr
	}
	return n, err
}

func (c *sendConn) write(fd uintptr) bool {
	for c.wn < len(c.wbuf) {
		// send(2) with no flags is write(2); MSG_MORE has the bytes wait for what follows.
		var flags uintptr
		if c.more {
			flags = syscall.MSG_MORE
		}
		n, _, errno := syscall.RawSyscall6(syscall.SYS_SENDTO, fd, uintptr(unsafe.Pointer(&c.wbuf[c.wn])), uintptr(len(c.wbuf)-c.wn), flags, 0, 0)
		switch errno {
		case 0:
			c.wn += int(n)
			continue
		case syscall.EAGAIN:
			return false
		case syscall.EINTR:
			continue
		}
		c.werr = c.opError("write", errno)
		return true
	}
	return true
}

// holdWrites has the writes until the next ReadFrom say MSG_MORE: the kernel holds
// what they write, as it would under TCP_CORK, until the file ReadFrom sends pushes
// it out with its last bytes, without a system call to cork or uncork.
func (c *sendConn) holdWrites() {
	c.wmu.Lock()
	c.more = true
	c.wmu.Unlock()
}

// releaseWrites ends holdWrites; what was held goes out now if no ReadFrom sent it.
func (c *sendConn) releaseWrites() {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.more {
		c.more = false
		c.rc.Control(pushOut)
	}
}

// ReadFrom sends an answer's file with sendfile(2), from an offset of its own so
// that the file's offset stays at 0; any other reader as TCPConn does.
func (c *sendConn) ReadFrom(r io.Reader) (int64, error) {
	o, ok := r.(*opened)
	if !ok {
		return c.TCPConn.ReadFrom(r)
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	// The last sendfile(2) call has no MSG_MORE: it pushes what the writes held too.
	c.more = false
	c.src, c.off, c.left, c.werr = o.fd, o.at, o.N, nil
	err := c.rc.Write(c.sendFn)
	if err == nil {
		err = c.werr
	}
	n := c.off - o.at
	o.at, o.N = c.off, o.N-n
	return n, err
}

func (c *sendConn) sendfile(fd uintptr) bool {
	for c.left > 0 {
		n, _, errno := syscall.RawSyscall6(syscall.SYS_SENDFILE, fd, uintptr(c.src), uintptr(unsafe.Pointer(&c.off)), uintptr(min(c.left, 1<<30)), 0, 0)
		switch {
		case errno == syscall.EAGAIN:
			return false
		case errno == syscall.EINTR:
			continue
		case errno != 0:
			c.werr = c.opError("sendfile", errno)
			return true
		case n == 0:
			c.werr = io.ErrUnexpectedEOF
			return true
		}
		c.left -= int64(n)
	}
	return true
}

func (c *sendConn) opError(op string, errno syscall.Errno) error {
	return &net.OpError{Op: op, Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: os.NewSyscallError(op, errno)}
}
