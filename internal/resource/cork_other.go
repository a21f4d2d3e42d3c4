//go:build !linux

package resource

// Elsewhere nothing is corked: the headers go out in a segment of their own.
func corkOn(uintptr)  {}
func corkOff(uintptr) {}
