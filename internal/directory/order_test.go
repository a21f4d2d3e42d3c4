package directory

import (
	"bytes"
	"compress/gzip"
	"io"
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
	if s1.Info() != s2.Info() || !bytes.Equal(s1.List().Gzip, s2.List().Gzip) {
		t.Fatalf("order changed the snapshot: %v %v", s1.Info(), s2.Info())
	}
	for _, h := range []string{"a.example", "b.example"} {
		r1, _ := s1.Merchant(h)
		r2, _ := s2.Merchant(h)
		if !bytes.Equal(r1.Gzip, r2.Gzip) {
			t.Errorf("%s: gzip bytes differ", h)
		}
		zr, err := gzip.NewReader(bytes.NewReader(r1.Gzip))
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
