package directory

import (
	"testing"
	"time"

	"github.com/waystation/waystation/internal/problem"
)

// holder is a Snapshots of one snapshot at a time.
type holder struct{ snap *Snapshot }

func (h *holder) Current() *Snapshot { return h.snap }

func newHolder(t *testing.T, seed uint64) *holder {
	t.Helper()
	snap, err := NewSnapshot(time.Unix(100, 0), synthetic(60, seed), []Merchant{{Hostname: "h1.example", Providers: []string{"p"}}})
	if err != nil {
		t.Fatal(err)
	}
	return &holder{snap}
}

// A zero filter is the snapshot's own list; a filtered list is encoded once per
// snapshot and served again from the cache, and a new snapshot gets lists of its own.
func TestServiceListsFromTheCacheOfTheirSnapshot(t *testing.T) {
	h := newHolder(t, 1)
	s := NewService(h, 0)
	if s.List(h.snap, Filter{}) != h.snap.List() {
		t.Error("the unfiltered list is not the snapshot's")
	}
	f := Filter{Categories: []string{"data"}, Limit: 5}
	first := s.List(h.snap, f)
	if again := s.List(h.snap, Filter{Limit: 5, Categories: []string{"data"}}); again != first {
		t.Error("the same filter was encoded again")
	}
	if string(first.Body) != string(h.snap.AppendList(nil, f)) {
		t.Error("a cached list differs from the snapshot's encoding")
	}
	next := newHolder(t, 2)
	if other := s.List(next.snap, f); other == first || string(other.Body) != string(next.snap.AppendList(nil, f)) {
		t.Error("a new snapshot was answered a list of the old one")
	}
}

// A method is found by its slug and a merchant by its hostname however the path
// writes it; a name that is no hostname is invalid_parameter, and a miss not_found.
func TestServiceFindsMethodsAndMerchants(t *testing.T) {
	h := newHolder(t, 1)
	s := NewService(h, 0)
	slug := h.snap.Methods()[0].Slug
	if res, err := s.Method(slug); err != nil || res == nil {
		t.Errorf("method %s: %v", slug, err)
	}
	if _, err := s.Method("no-such-method"); problem.CodeOf(err) != problem.NotFound {
		t.Errorf("a missing method: %v", err)
	}
	for _, host := range []string{"h1.example", "H1.Example.", "h1%2Eexample"} {
		if res, err := s.Merchant(host); err != nil || res == nil {
			t.Errorf("merchant %q: %v", host, err)
		}
	}
	if _, err := s.Merchant("not a host"); problem.CodeOf(err) != problem.InvalidParameter {
		t.Errorf("no hostname: %v", err)
	}
	if _, err := s.Merchant("h2.example"); problem.CodeOf(err) != problem.NotFound {
		t.Errorf("a missing merchant: %v", err)
	}
}
