package resource

import (
	"bytes"
	"compress/flate"
	"runtime"
	"testing"
)

// TestHeldCompressorsOutliveCollections compresses while the compressors are held:
// the writer put back is kept through collections, which empty a sync.Pool, and the
// next compression of its level takes it (a list's deflated piece keeps its writer
// too); once the last of two overlapping holds is
// released, the writers are handed to the sync.Pool, and the bytes are the same
// throughout.
func TestHeldCompressorsOutliveCollections(t *testing.T) {
	body := bytes.Repeat([]byte(`{"slug":"a-method","price":"0.01"},`), 200)
	want := [2][]byte{compress(body, 3), compressBrotli(body, 5)}
	kept := func() (gz, br int) {
		gzipWriters.mu.Lock()
		gz = len(gzipWriters.kept[3])
		gzipWriters.mu.Unlock()
		brotliWriters.mu.Lock()
		br = len(brotliWriters.kept[5])
		brotliWriters.mu.Unlock()
		return gz, br
	}
	first, second := HoldCompressors(), HoldCompressors()
	defer first()
	defer second()
	got := [2][]byte{compress(body, 3), compressBrotli(body, 5)}
	if gz, br := kept(); gz != 1 || br != 1 {
		t.Fatalf("held: %d gzip and %d brotli writers kept, want 1 each", gz, br)
	}
	if piece := DeflatePiece(body); len(flateWriters.kept[flate.DefaultCompression]) != 1 || len(piece) == 0 {
		t.Fatalf("held: %d flate writers kept after a piece of %d bytes, want 1", len(flateWriters.kept[flate.DefaultCompression]), len(piece))
	}
	brotliWriters.mu.Lock()
	w := brotliWriters.kept[5][0]
	brotliWriters.mu.Unlock()
	runtime.GC()
	runtime.GC()
	if got, ok := brotliWriters.get(5); !ok || got != w {
		t.Fatal("the kept brotli writer did not outlive two collections")
	}
	brotliWriters.put(5, w)
	if !bytes.Equal(got[0], want[0]) || !bytes.Equal(got[1], want[1]) {
		t.Error("the held writers compress to other bytes")
	}
	first()
	first() // a release counts once
	if gz, br := kept(); gz != 1 || br != 1 {
		t.Errorf("one hold of two released: %d gzip and %d brotli writers kept, want 1 each", gz, br)
	}
	second()
	if gz, br := kept(); gz != 0 || br != 0 || len(flateWriters.kept[flate.DefaultCompression]) != 0 {
		t.Errorf("released: %d gzip, %d brotli and %d flate writers still kept", gz, br, len(flateWriters.kept[flate.DefaultCompression]))
	}
	if got := compressBrotli(body, 5); !bytes.Equal(got, want[1]) {
		t.Error("brotli after the release: other bytes")
	}
}
