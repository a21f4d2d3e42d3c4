package blocks

import (
	"testing"
	"unsafe"
)

func TestNextHandsOutABlockElementByElement(t *testing.T) {
	var block []int
	first := Put(&block, 1)
	second := Put(&block, 2)
	if *first != 1 || *second != 2 {
		t.Fatalf("got %d and %d, want 1 and 2", *first, *second)
	}
	if uintptr(unsafe.Pointer(second))-uintptr(unsafe.Pointer(first)) != unsafe.Sizeof(0) {
		t.Error("two values put one after the other are not neighbours in one block")
	}
	for range Size - 2 {
		Next(&block)
	}
	if len(block) != 0 {
		t.Fatalf("%d left after a block's worth, want 0", len(block))
	}
	if p := Next(&block); p == nil || len(block) != Size-1 {
		t.Errorf("a used-up block was not followed by a new one of %d (%d left)", Size, len(block))
	}
}

func TestBytesCopiesIntoSharedBlocks(t *testing.T) {
	var b Bytes
	src := []byte("hostname")
	s := b.String(string(src))
	src[0] = 'X'
	if s != "hostname" {
		t.Errorf("the copy changed with its source: %q", s)
	}
	u := b.String("category")
	if unsafe.StringData(u) != (*byte)(unsafe.Add(unsafe.Pointer(unsafe.StringData(s)), len(s))) {
		t.Error("two strings copied one after the other are not neighbours in one block")
	}
	if b.String("") != "" {
		t.Error("an empty string")
	}
	big := b.Alloc(BytesSize + 1)
	if cap(big) != BytesSize+1 || len(big) != 0 {
		t.Errorf("room past a block: len %d cap %d, want 0 and %d", len(big), cap(big), BytesSize+1)
	}
	small := b.Alloc(3)
	if cap(small) != 3 {
		t.Errorf("room of 3: cap %d", cap(small))
	}
	small = append(small, "abcd"...) // past its room: a copy, the block untouched
	if next := b.Alloc(1); cap(next) != 1 || &next[:1][0] == &small[0] {
		t.Error("writing past one room reached the next")
	}
}
