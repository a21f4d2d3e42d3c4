package directory

import (
	"bytes"
	"compress/gzip"
	"io"
	"testing"
	"time"
)

// gunzip decodes a gzip form that must be one member.
func gunzip(t *testing.T, gz []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		t.Fatal(err)
	}
	zr.Multistream(false)
	body, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if rest, _ := io.ReadAll(zr); len(rest) > 0 {
		t.Fatal("the gzip form has more than one member")
	}
	return body
}

// TestListGzipIsOneMemberMadeOfPiecesSharedWithTheSnapshotBefore checks that the
// list's gzip form, made in pieces, is one gzip member that decodes to the list; that
// a snapshot made after another, with a few methods changed, added and removed, has
// byte for byte the gzip form a snapshot made afresh has; and that it compressed only
// the pieces the change touched.
func TestListGzipIsOneMemberMadeOfPiecesSharedWithTheSnapshotBefore(t *testing.T) {
	at := time.Unix(100, 0)
	before := synthetic(3000, 5)
	for i := range before {
		before[i].Description = "A method that does a thing, and does it well enough to be listed here."
	}
	prev, err := NewSnapshot(at, before, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := gunzip(t, prev.List().Gzip); !bytes.Equal(got, prev.List().Body) {
		t.Fatal("the gzip form does not decode to the list")
	}
	if n := len(prev.pieces); n < 3000/listPieceEvery/2 {
		t.Fatalf("%d pieces for 3,000 methods", n)
	}
	after := append([]Method(nil), before...)
	for _, i := range []int{10, 1500, 2990} {
		after[i].Description = "Changed."
	}
	after = append(after[:700], after[701:]...)
	extra := synthetic(3002, 5)[3001]
	extra.Slug = "m-new"
	after = append(after, extra)
	got, err := NewSnapshotAfter(prev, at, after, nil)
	if err != nil {
		t.Fatal(err)
	}
	want, err := NewSnapshot(at, after, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.List().Gzip, want.List().Gzip) || !bytes.Equal(got.List().Brotli, want.List().Brotli) {
		t.Fatal("the list's encoded forms after another snapshot are not those made afresh")
	}
	if body := gunzip(t, got.List().Gzip); !bytes.Equal(body, want.List().Body) {
		t.Fatal("the gzip form does not decode to the list")
	}
	made := 0
	for k := range got.pieces {
		if _, ok := prev.pieces[k]; !ok {
			made++
		}
	}
	// Three changes, a removal and an addition touch at most ten pieces (each may
	// also merge or split one), and the list's end, which names the snapshot.
	if made == 0 || made > 11 {
		t.Fatalf("%d of %d pieces compressed again", made, len(got.pieces))
	}
}
