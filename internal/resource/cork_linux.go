package resource

import (
	"syscall"
	"unsafe"
)

// corkOn and corkOff are functions, not closures, so that corking allocates nothing.
// They are raw system calls, as sendConn's are: setsockopt(2) does not block.
func corkOn(fd uintptr)  { setCork(fd, 1) }
func corkOff(fd uintptr) { setCork(fd, 0) }

// pushOut sends what a socket holds back now: setting TCP_NODELAY, even when set
// already, pushes the pending segments out.
func pushOut(fd uintptr) { setOpt(fd, syscall.TCP_NODELAY, 1) }

func setCork(fd uintptr, on int32) { setOpt(fd, syscall.TCP_CORK, on) }

func setOpt(fd uintptr, opt uintptr, v int32) {
	syscall.RawSyscall6(syscall.SYS_SETSOCKOPT, fd, syscall.IPPROTO_TCP, opt, uintptr(unsafe.Pointer(&v)), 4, 0)
}
