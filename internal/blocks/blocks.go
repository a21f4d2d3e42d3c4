// Package blocks makes many small values that live long in few large allocations:
// what a server holds for as long as it serves a snapshot, made beside the build's
// short-lived garbage, stays apart from it, so that the pages of that garbage go back
// to the system whole once the build drops it.
package blocks

import "unsafe"

// Sizes of the blocks: Size values of a kind, or BytesSize bytes.
const (
	Size      = 1 << 10
	BytesSize = 1 << 20
)

// Next is the next element of *block, a new block of Size made when it is used up.
func Next[T any](block *[]T) *T {
	if len(*block) == 0 {
		*block = make([]T, Size)
	}
	p := &(*block)[0]
	*block = (*block)[1:]
	return p
}

// Put is a copy of v made in *block (see Next).
func Put[T any](block *[]T, v T) *T {
	p := Next(block)
	*p = v
	return p
}

// Bytes hands out room for bytes in blocks of BytesSize. Its zero value is ready.
type Bytes struct{ rest []byte }

// Alloc is room for n bytes, empty and of capacity n: in the block under way, or in
// a new one when the rest of it is too small (of n bytes when n is larger than a
// block).
func (b *Bytes) Alloc(n int) []byte {
	if n > len(b.rest) {
		b.rest = make([]byte, max(BytesSize, n))
	}
	out := b.rest[:0:n]
	b.rest = b.rest[n:]
	return out
}

// String is a copy of s made in the blocks. Its bytes are never written again.
func (b *Bytes) String(s string) string {
	if s == "" {
		return ""
	}
	c := append(b.Alloc(len(s)), s...)
	return unsafe.String(unsafe.SliceData(c), len(c))
}
