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
	want := [2][]byte{compress(nil, body, 3), compressBrotli(nil, body, 5)}
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
	got := [2][]byte{compress(nil, body, 3), compressBrotli(nil, body, 5)}
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
	if got := compressBrotli(nil, body, 5); !bytes.Equal(got, want[1]) {
		t.Error("brotli after the release: other bytes")
	}
}

// TestScratchMakesWhatNewMakes makes resources one after another through one Scratch,
// a large body (past LargeBody, at its own brotli level) between small ones: each must
// be New's, forms, ETags and lengths, though its forms are in the buffers the one
// before left longer.
func TestScratchMakesWhatNewMakes(t *testing.T) {
	row := []byte(`<li><a href="/methods/a-method">A method</a> 0.01 USDC</li>`)
	var s Scratch
	for _, n := range []int{40, 3, LargeBody/len(row) + 100, 1, 0, 500} {
		body := bytes.Repeat(row, n)
		want, got := New(HTML, body), s.New(HTML, body)
		if !bytes.Equal(got.Gzip(), want.Gzip()) || !bytes.Equal(got.Brotli(), want.Brotli()) {
			t.Fatalf("%d bytes: the scratch's forms differ from New's", len(body))
		}
		if got.ETag != want.ETag || got.GzipETag != want.GzipETag || got.BrotliETag != want.BrotliETag || got.lengths != want.lengths || got.levels != want.levels {
			t.Fatalf("%d bytes: the scratch's resource %+v, New's %+v", len(body), got, want)
		}
	}
}
