package directory

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"testing"
	"time"
)

// TestSnapshotIDDependsOnContentNotOrder checks that the same methods and merchants,
// given in any order, make the same snapshot: same ID, same bytes, same gzip bytes.
// Replicas and a snapshot reloaded from disk rely on it.
func TestSnapshotIDDependsOnContentNotOrder(t *testing.T) {
	at := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	methods := []Method{
		{Slug: "b-one", Name: "B", Hostname: "b.example", Category: "data", Kind: "x402"},
		{Slug: "a-one", Name: "A", Hostname: "a.example", Category: "data", Kind: "x402"},
	}
	merchants := []Merchant{{Hostname: "b.example", Providers: []string{"B"}}, {Hostname: "a.example", Providers: []string{"A"}}}
	s1, err := NewSnapshot(at, methods, merchants)
	if err != nil {
		t.Fatal(err)
	}
	s2, err := NewSnapshot(at, []Method{methods[1], methods[0]}, []Merchant{merchants[1], merchants[0]})
	if err != nil {
		t.Fatal(err)
	}
	if s1.Info() != s2.Info() || !bytes.Equal(s1.List().Gzip(), s2.List().Gzip()) {
		t.Fatalf("order changed the snapshot: %v %v", s1.Info(), s2.Info())
	}
	for _, h := range []string{"a.example", "b.example"} {
		r1, _ := s1.Merchant(h)
		r2, _ := s2.Merchant(h)
		if !bytes.Equal(r1.Gzip(), r2.Gzip()) {
			t.Errorf("%s: gzip bytes differ", h)
		}
		zr, err := gzip.NewReader(bytes.NewReader(r1.Gzip()))
		if err != nil {
			t.Fatal(err)
		}
		if b, _ := io.ReadAll(zr); !bytes.Equal(b, r1.Body) {
			t.Errorf("%s: gzip does not hold the body", h)
		}
	}
	if hosts := s1.Hostnames(); hosts[0] != "a.example" || hosts[1] != "b.example" {
		t.Errorf("hostnames %v", hosts)
	}
}

// TestSortMethodsInPlaceIsSortedMethods checks that a snapshot that takes its methods
// and sorts them in place puts them in the order of one that sorts a copy, for
// methods in every kind of order: shuffled, sorted, reversed, with scores that tie and
// methods with none.
func TestSortMethodsInPlaceIsSortedMethods(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		n := rng.IntN(64)
		methods := make([]Method, n)
		for i := range methods {
			methods[i] = Method{Slug: fmt.Sprintf("m-%03d", rng.IntN(1000)), Name: strconv.Itoa(i)}
			if rng.IntN(4) > 0 {
				sc := rng.IntN(5)
				methods[i].Trust.Score = &sc
			}
		}
		switch round % 3 {
		case 1:
			methods = sortedMethods(methods)
		case 2:
			methods = sortedMethods(methods)
			slices.Reverse(methods)
		}
		want := sortedMethods(methods)
		got := slices.Clone(methods)
		sortMethods(got)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("round %d: sorted in place\n%v\nnot\n%v", round, got, want)
		}
	}
}
