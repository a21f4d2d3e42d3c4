package directory

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// synthetic makes n methods spread over categories, verdicts, kinds and hosts.
func synthetic(n int, seed uint64) []Method {
	r := rand.New(rand.NewPCG(seed, 1))
	cats := []string{"ai", "blockchain", "data", "finance", "weather"}
	kinds := []string{"x402", "checkout", "subscription", "account"}
	out := make([]Method, n)
	for i := range out {
		var score *int
		if r.IntN(5) > 0 {
			s := r.IntN(101)
			score = &s
		}
		out[i] = Method{
			Slug: fmt.Sprintf("m-%05d", i), Name: "m", Provider: "p",
			Hostname: fmt.Sprintf("h%d.example", r.IntN(n/3+1)),
			Category: cats[r.IntN(len(cats))], Kind: kinds[r.IntN(len(kinds))], Payable: r.IntN(2) == 0,
			Trust: Trust{Verdict: Verdicts[r.IntN(len(Verdicts))], Score: score, Advisory: true},
		}
	}
	return out
}

type listBody struct {
	Items  []Method `json:"items"`
	Count  int      `json:"count"`
	Total  int      `json:"total"`
	Facets Facets   `json:"facets"`
}

// TestAppendListMatchesBruteForce checks the bitset index against a plain scan for
// random filters: items, order, total and every facet.
func TestAppendListMatchesBruteForce(t *testing.T) {
	methods := synthetic(700, 7)
	s, err := NewSnapshot(time.Unix(1, 0), methods, nil)
	if err != nil {
		t.Fatal(err)
	}
	ordered := s.Methods()
	r := rand.New(rand.NewPCG(3, 4))
	pick := func(vs []string) []string {
		var out []string
		for _, v := range vs {
			if r.IntN(3) == 0 {
				out = append(out, v)
			}
		}
		return out
	}
	for range 300 {
		f := Filter{
			Categories: pick([]string{"ai", "blockchain", "data", "finance", "weather", "news"}),
			Verdicts:   pick(Verdicts),
			Kinds:      pick([]string{"x402", "checkout", "subscription", "account"}),
			Limit:      r.IntN(3) * r.IntN(40),
			Offset:     r.IntN(2) * r.IntN(300),
		}
		if r.IntN(3) == 0 {
			b := r.IntN(2) == 0
			f.Payable = &b
		}
		if r.IntN(4) == 0 {
			f.Hostname = ordered[r.IntN(len(ordered))].Hostname
		}
		var got listBody
		if err := json.Unmarshal(s.AppendList(nil, f), &got); err != nil {
			t.Fatal(err)
		}
		var want []string
		for i := range ordered {
			if s.Allows(f, i) {
				want = append(want, ordered[i].Slug)
			}
		}
		total := len(want)
		want = want[min(f.Offset, len(want)):]
		if f.Limit > 0 {
			want = want[:min(f.Limit, len(want))]
		}
		var slugs []string
		for _, m := range got.Items {
			slugs = append(slugs, m.Slug)
		}
		if !slices.Equal(slugs, want) || got.Total != total || got.Count != len(want) {
			t.Fatalf("%+v: got %d items (total %d), want %d (total %d)", f, len(slugs), got.Total, len(want), total)
		}
		checkFacet := func(name string, facets []Facet, value func(Method) string, drop func(*Filter)) {
			g := f
			drop(&g)
			counts := map[string]int{}
			for i := range ordered {
				if s.Allows(g, i) {
					counts[value(ordered[i])]++
				}
			}
			if len(facets) != len(counts) {
				t.Fatalf("%+v: facet %s has %d values, want %d", f, name, len(facets), len(counts))
			}
			for _, fc := range facets {
				if counts[fc.Value] != fc.Count {
					t.Fatalf("%+v: facet %s=%s is %d, want %d", f, name, fc.Value, fc.Count, counts[fc.Value])
				}
			}
		}
		checkFacet("category", got.Facets.Category, func(m Method) string { return m.Category }, func(g *Filter) { g.Categories = nil })
		checkFacet("verdict", got.Facets.Verdict, func(m Method) string { return m.Trust.Verdict }, func(g *Filter) { g.Verdicts = nil })
		checkFacet("kind", got.Facets.Kind, func(m Method) string { return m.Kind }, func(g *Filter) { g.Kinds = nil })
		checkFacet("payable", got.Facets.Payable, func(m Method) string { return fmt.Sprint(m.Payable) }, func(g *Filter) { g.Payable = nil })
	}
}

func TestNewSnapshotRefusesDuplicateSlugs(t *testing.T) {
	m := synthetic(2, 1)
	m[1].Slug = m[0].Slug
	if _, err := NewSnapshot(time.Now(), m, nil); err == nil {
		t.Fatal("duplicate slugs accepted")
	}
}

func TestSnapshotIDFollowsContent(t *testing.T) {
	at := time.Unix(100, 0)
	a, _ := NewSnapshot(at, synthetic(50, 1), nil)
	b, _ := NewSnapshot(at, synthetic(50, 1), nil)
	c, _ := NewSnapshot(at, synthetic(50, 2), nil)
	if a.Info().ID != b.Info().ID || a.Info().ID == c.Info().ID || string(a.List().Body) != string(b.List().Body) {
		t.Fatal("snapshot ids must be equal exactly when content and time are")
	}
}

func BenchmarkAppendListFiltered100k(b *testing.B) {
	s, err := NewSnapshot(time.Now(), synthetic(100_000, 9), nil)
	if err != nil {
		b.Fatal(err)
	}
	f := Filter{Categories: []string{"blockchain", "finance"}, Verdicts: []string{VerdictProceed}, Limit: 20}
	buf := make([]byte, 0, 64<<10)
	b.ReportAllocs()
	for b.Loop() {
		buf = s.AppendList(buf[:0], f)
	}
}

// TestNewSnapshotAfterIsNewSnapshotSharingWhatDidNotChange: a snapshot made after
// another is the one NewSnapshot makes (ID, list, every body and ETag), and holds the
// earlier one's encoded resources for the methods and merchants it did not change.
func TestNewSnapshotAfterIsNewSnapshotSharingWhatDidNotChange(t *testing.T) {
	at := time.Unix(100, 0)
	merchants := func(ms []Method) []Merchant {
		var out []Merchant
		for _, h := range []string{"h1.example", "h2.example"} {
			out = append(out, Merchant{Hostname: h, Providers: []string{"p"}, Methods: []MerchantEntry{{Slug: "m-" + h}}})
		}
		return out
	}
	before := synthetic(60, 3)
	prev, err := NewSnapshot(at, before, merchants(before))
	if err != nil {
		t.Fatal(err)
	}
	after := synthetic(60, 3)
	after[7].Name = "changed"
	after[9].Slug = "m-renamed"
	after = append(after[:20], after[21:]...)
	mr := merchants(after)
	mr[1].Providers = []string{"q"}
	got, err := NewSnapshotAfter(prev, at, after, mr)
	if err != nil {
		t.Fatal(err)
	}
	want, err := NewSnapshot(at, after, mr)
	if err != nil {
		t.Fatal(err)
	}
	if got.Info() != want.Info() || !bytes.Equal(got.List().Body, want.List().Body) || got.List().ETag != want.List().ETag {
		t.Fatalf("snapshot %v after another, %v alone", got.Info(), want.Info())
	}
	for _, m := range want.Methods() {
		a, _ := got.Method(m.Slug)
		b, _ := want.Method(m.Slug)
		if !bytes.Equal(a.Body, b.Body) || !bytes.Equal(a.Gzip, b.Gzip) || !bytes.Equal(a.Brotli, b.Brotli) || a.ETag != b.ETag {
			t.Errorf("%s differs", m.Slug)
		}
		old, had := prev.Method(m.Slug)
		if changed := m.Slug == "m-00007" || m.Slug == "m-renamed"; (had && old == a) == changed {
			t.Errorf("%s: shared %v, changed %v", m.Slug, had && old == a, changed)
		}
	}
	for i, h := range want.Hostnames() {
		a, _ := got.Merchant(h)
		b, _ := want.Merchant(h)
		old, _ := prev.Merchant(h)
		if a.ETag != b.ETag || !bytes.Equal(a.Brotli, b.Brotli) || (old == a) != (i == 0) {
			t.Errorf("merchant %s: ETag %s, want %s; shared %v", h, a.ETag, b.ETag, old == a)
		}
	}
}

// TestSnapshotHoldsEachGuidanceOnceInItsDetail checks that a method's guidance is
// held as the end of its detail body, not beside it: the same JSON, compacted as the
// body has it, in the body's bytes; a method without guidance has none.
func TestSnapshotHoldsEachGuidanceOnceInItsDetail(t *testing.T) {
	methods := synthetic(3, 5)
	methods[0].Guidance = json.RawMessage(`{ "summary": "Pay <first>", "notes": ["a"] }`)
	snap, err := NewSnapshot(time.Unix(0, 0), methods, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range snap.Methods() {
		res, _ := snap.Method(m.Slug)
		if m.Slug != methods[0].Slug {
			if m.Guidance != nil || !bytes.HasSuffix(res.Body, []byte(`"guidance":null}`)) {
				t.Errorf("%s: guidance %q", m.Slug, m.Guidance)
			}
			continue
		}
		var got, want any
		if err := json.Unmarshal(m.Guidance, &got); err != nil {
			t.Fatal(err)
		}
		json.Unmarshal(methods[0].Guidance, &want)
		end := res.Body[len(res.Body)-1-len(m.Guidance) : len(res.Body)-1]
		if fmt.Sprint(got) != fmt.Sprint(want) || &end[0] != &m.Guidance[0] {
			t.Errorf("guidance %s, held apart from the body %v", m.Guidance, &end[0] != &m.Guidance[0])
		}
	}
}
