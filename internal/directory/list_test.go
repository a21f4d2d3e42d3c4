package directory

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"io"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/waystation/waystation/internal/resource"
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
	if got := gunzip(t, prev.List().Gzip()); !bytes.Equal(got, prev.List().Body) {
		t.Fatal("the gzip form does not decode to the list")
	}
	if n := len(prev.list.pieces); n < 3000/listPieceEvery/2 {
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
	if !bytes.Equal(got.List().Gzip(), want.List().Gzip()) || !bytes.Equal(got.List().Brotli(), want.List().Brotli()) {
		t.Fatal("the list's encoded forms after another snapshot are not those made afresh")
	}
	if body := gunzip(t, got.List().Gzip()); !bytes.Equal(body, want.List().Body) {
		t.Fatal("the gzip form does not decode to the list")
	}
	made := 0
	for k := range got.list.pieces {
		if _, ok := prev.list.pieces[k]; !ok {
			made++
		}
	}
	// Three changes, a removal and an addition touch at most ten pieces (each may
	// also merge or split one), and the list's end, which names the snapshot.
	if made == 0 || made > 11 {
		t.Fatalf("%d of %d pieces compressed again", made, len(got.list.pieces))
	}
}

// TestAListMadeToBePublishedIsNotHeldAndHasTheFormsOfOneHeld makes snapshots to be
// published, whose list's body is never held whole, with a list of more than a brotli
// block, and checks that they hold no body; that WriteList writes what AppendList
// appends, of the length and hash ListSum gives, and the forms decode to it, their
// ETags its hash's; that the brotli form is the bytes one compression of the whole
// body makes (as the list's were made before it was made as it is written); that a
// snapshot made after another has the forms of one made afresh; that WithListBody
// holds the body; and that a snapshot that holds its list (NewSnapshot) has the same
// forms.
func TestAListMadeToBePublishedIsNotHeldAndHasTheFormsOfOneHeld(t *testing.T) {
	at := time.Unix(100, 0)
	methods := synthetic(1500, 7)
	r := rand.New(rand.NewPCG(7, 2))
	for i := range methods {
		words := make([]byte, 0, 3100)
		for len(words) < 3000 {
			words = strconv.AppendInt(append(words, " w"...), int64(r.IntN(5000)), 10)
		}
		methods[i].Description = string(words)
	}
	var prev *Snapshot
	for step := range 2 {
		if step == 1 {
			methods = slices.Clone(methods)
			methods[17].Description, methods[1400].Description = "Changed.", "Changed too."
		}
		got, err := NewSnapshotUnencoded(prev, at, slices.Clone(methods), nil)
		if err != nil {
			t.Fatal(err)
		}
		list := got.List()
		body := got.AppendList(nil, Filter{})
		if len(body) < resource.BrotliBlock {
			t.Fatalf("a list of %d bytes: less than a brotli block", len(body))
		}
		if list.Body != nil {
			t.Fatal("the list of a snapshot made to be published holds its body")
		}
		var out bytes.Buffer
		n, err := got.WriteList(&out)
		sum, size := got.ListSum()
		if err != nil || n != int64(out.Len()) || !bytes.Equal(out.Bytes(), body) || size != len(body) || sum != sha256.Sum256(body) {
			t.Errorf("step %d: WriteList wrote %d bytes (%v), ListSum says %d; the list is %d", step, n, err, size, len(body))
		}
		if want := resource.NewForms(resource.JSON, body, list.Gzip(), list.Brotli()); list.ETag != want.ETag ||
			list.GzipETag != want.GzipETag || list.BrotliETag != want.BrotliETag {
			t.Errorf("step %d: ETags %s %s %s, the body's are %s %s %s", step, list.ETag, list.GzipETag, list.BrotliETag, want.ETag,
				want.GzipETag, want.BrotliETag)
		}
		if !bytes.Equal(gunzip(t, list.Gzip()), body) {
			t.Errorf("step %d: the gzip form does not decode to the list", step)
		}
		if whole := resource.Brotli(body, resource.LevelsFor(len(body)).Brotli); !bytes.Equal(list.Brotli(), whole) {
			t.Errorf("step %d: the list's brotli (%d bytes) is not the whole body's (%d bytes)", step, len(list.Brotli()), len(whole))
		}
		if step == 1 {
			afresh, err := NewSnapshotUnencoded(nil, at, slices.Clone(methods), nil)
			if err != nil {
				t.Fatal(err)
			}
			if a := afresh.List(); a.ETag != list.ETag || !bytes.Equal(a.Gzip(), list.Gzip()) || !bytes.Equal(a.Brotli(), list.Brotli()) {
				t.Error("the list's forms after another snapshot are not those made afresh")
			}
		}
		if b := got.WithListBody().List(); !bytes.Equal(b.Body, body) || b.ETag != list.ETag || !bytes.Equal(b.Brotli(), list.Brotli()) {
			t.Errorf("step %d: the list made again is not the list", step)
		}
		prev = got
	}
	// One that holds its list, smaller: the same forms.
	methods = methods[:200]
	held, err := NewSnapshot(at, methods, nil)
	if err != nil {
		t.Fatal(err)
	}
	published, err := NewSnapshotUnencoded(nil, at, slices.Clone(methods), nil)
	if err != nil {
		t.Fatal(err)
	}
	want, got := held.List(), published.List()
	if got.Body != nil || !bytes.Equal(want.Body, published.AppendList(nil, Filter{})) || got.ETag != want.ETag ||
		!bytes.Equal(got.Gzip(), want.Gzip()) || !bytes.Equal(got.Brotli(), want.Brotli()) {
		t.Error("a held list is not the one made to be published")
	}
}
