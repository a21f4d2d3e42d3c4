package resource

import (
	"syscall"
	"unsafe"
)

// corkOn and corkOff are functions, not closures, so that corking allocates nothing.
// They are raw system calls, as sendConn's are: setsockopt(2) does not block.
func corkOn(fd uintptr)  { setCork(fd, 1) }
func corkOff(fd uintptr) { setCork(fd, 0) }

func setCork(fd uintptr, on int32) {
	syscall.RawSyscall6(syscall.SYS_SETSOCKOPT, fd, syscall.IPPROTO_TCP, syscall.TCP_CORK, uintptr(unsafe.Pointer(&on)), 4, 0)
}
