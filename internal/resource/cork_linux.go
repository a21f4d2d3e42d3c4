package resource

import "syscall"

// corkOn and corkOff are functions, not closures, so that corking allocates nothing.
func corkOn(fd uintptr)  { syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_CORK, 1) }
func corkOff(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_CORK, 0) }
