package directory

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"
	"unsafe"

	"github.com/waystation/waystation/internal/resource"
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
		if !bytes.Equal(a.Body, b.Body) || !bytes.Equal(a.Gzip(), b.Gzip()) || !bytes.Equal(a.Brotli(), b.Brotli()) || a.ETag != b.ETag {
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
		if a.ETag != b.ETag || !bytes.Equal(a.Brotli(), b.Brotli()) || (old == a) != (i == 0) {
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

// TestWithStoredHoldsGuidanceInTheStoredBody checks that a snapshot whose methods are
// held elsewhere (as the generator stores them, in bodies of its own) holds each
// guidance as the end of the stored body, not of the one it was built with, which it
// would otherwise keep alive; the snapshot it was made from now shares its methods.
func TestWithStoredHoldsGuidanceInTheStoredBody(t *testing.T) {
	methods := synthetic(3, 5)
	methods[1].Guidance = json.RawMessage(`{"summary":"Pay first"}`)
	snap, stored, was := storedCopy(t, methods)
	for i, m := range stored.Methods() {
		res, _ := stored.Method(m.Slug)
		if !bytes.Equal(m.Guidance, was[i].Guidance) {
			t.Errorf("%s: guidance %s, was %s", m.Slug, m.Guidance, was[i].Guidance)
		}
		if &snap.Methods()[i] != &stored.Methods()[i] {
			t.Errorf("%s: the built snapshot holds another copy", m.Slug)
		}
		if len(m.Guidance) == 0 {
			continue
		}
		end := res.Body[len(res.Body)-1-len(m.Guidance) : len(res.Body)-1]
		if old, _ := snap.Method(m.Slug); &end[0] != &m.Guidance[0] || &was[i].Guidance[0] != &old.Body[len(old.Body)-1-len(m.Guidance)] {
			t.Errorf("%s: the stored guidance is not the end of the stored body", m.Slug)
		}
	}
}

// TestHeldMethodsAreEqualCopies checks that the methods a stored snapshot holds are
// the same values as the ones it was built with, every pointer followed, and share
// nothing with them: neither a pointer nor a string's bytes.
func TestHeldMethodsAreEqualCopies(t *testing.T) {
	methods := synthetic(40, 9)
	s := func(v string) *string { return &v }
	at := time.Unix(1700000000, 0).UTC()
	n, d := int64(12), 6
	methods[0].Description = "the same description"
	methods[1].Description = "the same description"
	methods[0].Stats = NewStats(10, 9)
	methods[0].SourceListing = &Listing{Source: "bazaar", Calls30d: &n, LastCalledAt: &at}
	methods[0].Trust.Probe = &Probe{Outcome: "valid_offer", ProbedAt: at, Network: s("base"), Asset: s("0xabc"),
		Price: &Price{Amount: s("1000"), Decimals: &d, Value: s("0.001")}, Reason: s("none")}
	methods[0].Trust.Override = &Override{Verdict: VerdictAvoid, Reason: "fraud", SetAt: at, ExpiresAt: &at}
	methods[0].Trust.Owner = &Owner{Verified: true, PayTo: "0xdef", Origin: "https://a.example", Points: 5}
	methods[0].Trust.Demand = NewServiceDemand(9, 3, 2)
	methods[0].Trust.Lookalike = &Lookalike{Resembles: []Resemblance{{Hostname: "b.example", Signal: SignalNearDomain, Mine: "a", Theirs: "b"}},
		Cleared: s(ClearedByOverride)}
	got := held(make([]Method, len(methods)), methods, nil)
	if !reflect.DeepEqual(got, methods) {
		t.Fatal("the held methods differ from the built ones")
	}
	m, h := methods[0], got[0]
	if unsafe.StringData(m.Slug) == unsafe.StringData(h.Slug) || m.Trust.Probe == h.Trust.Probe ||
		m.Trust.Probe.Network == h.Trust.Probe.Network || m.Trust.Probe.Price == h.Trust.Probe.Price ||
		m.Trust.Override == h.Trust.Override || m.Trust.Owner == h.Trust.Owner || m.Trust.Demand == h.Trust.Demand || m.Stats == h.Stats ||
		m.Trust.Lookalike == h.Trust.Lookalike || &m.Trust.Lookalike.Resembles[0] == &h.Trust.Lookalike.Resembles[0] ||
		m.SourceListing == h.SourceListing || m.SourceListing.LastCalledAt == h.SourceListing.LastCalledAt {
		t.Error("a held method shares memory with the built one")
	}
	if unsafe.StringData(got[0].Description) != unsafe.StringData(got[1].Description) {
		t.Error("a recurring string is held twice")
	}
	// Made in place, the copies equal what they replace.
	was := slices.Clone(methods)
	in := held(methods, methods, nil)
	if &in[0] != &methods[0] || !reflect.DeepEqual(in, was) || in[0].Trust.Probe == was[0].Trust.Probe ||
		unsafe.StringData(in[0].Slug) == unsafe.StringData(was[0].Slug) {
		t.Error("the methods held in place are not equal copies in the same array")
	}
}

// TestWithStoredHoldsStringsInTheStoredBody checks that a stored snapshot's methods
// hold their leading strings as slices of their stored bodies where the body holds
// them as they are, and copies where JSON escapes them, equal either way.
func TestWithStoredHoldsStringsInTheStoredBody(t *testing.T) {
	methods := synthetic(6, 7)
	methods[0].Description = "A plain description, with a comma and naïve UTF-8."
	methods[0].Endpoint = Endpoint{Method: "GET", URL: "https://h0.example/api?q=1"}
	methods[1].Description = `Escaped: "quoted" <b> & \ line` + "\n" + "\u2028"
	methods[1].Endpoint = Endpoint{Method: "POST", URL: "https://h1.example/a?b=1&c=2"}
	methods[2].Name = "<name>" // the fields after it are copied too
	methods[3].Payable, methods[3].Description = true, ""
	_, stored, was := storedCopy(t, methods)
	inside := func(s string, body []byte) bool {
		p, b := uintptr(unsafe.Pointer(unsafe.StringData(s))), uintptr(unsafe.Pointer(&body[0]))
		return s != "" && p >= b && p+uintptr(len(s)) <= b+uintptr(len(body))
	}
	for i, m := range stored.Methods() {
		if !reflect.DeepEqual(m, was[i]) {
			t.Fatalf("%s: the stored method differs from the built one", m.Slug)
		}
		res, _ := stored.Method(m.Slug)
		// In the order of the body: each is a slice of it while none before it is escaped.
		fields := []string{m.Slug, m.Name, m.Provider, m.Hostname, m.Description, m.Category, m.Kind, m.Endpoint.Method, m.Endpoint.URL}
		plain := true
		for i, v := range fields {
			plain = plain && plainJSON(v)
			if got, want := inside(v, res.Body), plain && v != ""; got != want {
				t.Errorf("%s: its field %d %q in its stored body: %v, want %v", m.Slug, i, v, got, want)
			}
		}
	}
	// The index is keyed by the held strings, none of the build's.
	for slug, i := range stored.bySlug {
		if unsafe.StringData(slug) != unsafe.StringData(stored.methods[i].Slug) {
			t.Errorf("%s: its index key is not its held slug", slug)
		}
	}
	for host, at := range stored.byHost {
		if unsafe.StringData(host) != unsafe.StringData(stored.methods[at[0]].Hostname) {
			t.Errorf("%s: its index key is not a held hostname", host)
		}
	}
}

// storedCopy is the snapshot of methods and the same snapshot held in bodies of its
// own, copies of the built ones, as the generator stores it; was is the built
// snapshot's methods as they were before (the stored one's are made in its array).
func storedCopy(t *testing.T, methods []Method) (built, stored *Snapshot, was []Method) {
	t.Helper()
	built, err := NewSnapshot(time.Unix(0, 0), methods, nil)
	if err != nil {
		t.Fatal(err)
	}
	was = slices.Clone(built.Methods())
	copied := func(_ string, res *resource.Resource) *resource.Resource {
		return resource.NewIdentity(res.ContentType, bytes.Clone(res.Body))
	}
	if stored, err = built.WithStored(copied, copied); err != nil {
		t.Fatal(err)
	}
	return built, stored, was
}

// TestMethodAtIsMethodBySlug asks for every method's body by its list position and by
// its slug: the same resource.
func TestMethodAtIsMethodBySlug(t *testing.T) {
	s, err := NewSnapshot(time.Unix(1, 0), synthetic(50, 1), nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range s.Methods() {
		if res, ok := s.Method(m.Slug); !ok || s.MethodAt(i) != res {
			t.Fatalf("position %d (%s): not the body Method gives", i, m.Slug)
		}
	}
}
