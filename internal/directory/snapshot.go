package directory

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/waystation/waystation/internal/parallel"
	"github.com/waystation/waystation/internal/resource"
)

// Info names a snapshot.
type Info struct {
	ID          string    `json:"id"`
	GeneratedAt time.Time `json:"generated_at"`
}

// Facet is one value of a facet and how many methods have it.
type Facet struct {
	Value string `json:"value"`
	Count int    `json:"count"`
}

// Facets count, for each dimension, the methods matching every filter but that
// dimension's own.
type Facets struct {
	Category []Facet `json:"category"`
	Verdict  []Facet `json:"verdict"`
	Kind     []Facet `json:"kind"`
	Payable  []Facet `json:"payable"`
}

// Snapshot is an immutable view of the whole directory: every enabled method in list
// order, every merchant record, their encoded bodies, and the index that answers
// filtered lists. It is built once by the generator and then only read.
type Snapshot struct {
	info    Info
	methods []Method
	// items are the lengths of the list items, by position: an item is its method's
	// detail body up to there, closed, which the detail continues with its guidance.
	items     []int32
	bySlug    map[string]int
	slugs     []*resource.Resource // method detail bodies, by position
	merchants map[string]*resource.Resource
	hosts     []string // merchant hostnames, sorted
	// list is the unfiltered list's forms, and the pieces of its gzip form, which the
	// next snapshot takes what it can from (see encodeList).
	list listForms

	all      bitset
	category map[string]bitset
	verdict  map[string]bitset
	kind     map[string]bitset
	payable  [2]bitset // false, true
	byHost   map[string][]int

	// derived holds what other packages build over the snapshot (Derived); each
	// copy of a snapshot has its own.
	derived *derived
}

// guidanceKey begins the guidance in a method's detail body, after its listing item.
var guidanceKey = []byte(`"guidance":`)

type methodDetail struct {
	Method
	Guidance json.RawMessage `json:"guidance"`
}

// NewSnapshot sorts the methods into list order (score descending with nulls last,
// then slug) and the merchants by hostname, encodes every body and builds the index.
// The ID hashes the bodies in that order, so the same content always gets the same ID.
func NewSnapshot(generatedAt time.Time, methods []Method, merchants []Merchant) (*Snapshot, error) {
	return NewSnapshotAfter(nil, generatedAt, methods, merchants)
}

// NewSnapshotAfter is NewSnapshot for the snapshot that follows prev (nil for none):
// a method or merchant whose body is byte for byte the one prev has shares prev's
// encoded resource instead of being compressed again, so that a build costs what
// changed. The result is the one NewSnapshot makes.
func NewSnapshotAfter(prev *Snapshot, generatedAt time.Time, methods []Method, merchants []Merchant) (*Snapshot, error) {
	return newSnapshot(prev, generatedAt, sortedMethods(methods), merchants, false)
}

// NewSnapshotUnencoded is NewSnapshotAfter for a snapshot that is published before it
// is served: the methods' and merchants' bodies it encodes anew are not compressed
// here, their resources holding the body and its ETags alone (see
// resource.NewIdentity), so that a build does not hold the gzip and brotli forms of a
// hundred thousand methods at once. The publisher compresses each as it writes its
// files, and the snapshot is served through WithStored. The list has its forms but
// not its body, which is never held whole (45 MB at a hundred thousand methods): the
// publisher writes it (see WriteList), and the snapshot answers it from its files
// (see WithList). methods is the snapshot's from then on, sorted in place, not copied:
// the caller gives it up.
func NewSnapshotUnencoded(prev *Snapshot, generatedAt time.Time, methods []Method, merchants []Merchant) (*Snapshot, error) {
	sortMethods(methods)
	return newSnapshot(prev, generatedAt, methods, merchants, true)
}

// newSnapshot is NewSnapshotAfter of methods sorted already, which it keeps; or, for
// a snapshot to be published, NewSnapshotUnencoded.
func newSnapshot(prev *Snapshot, generatedAt time.Time, methods []Method, merchants []Merchant, published bool) (*Snapshot, error) {
	encode := resource.New
	if published {
		encode = resource.NewIdentity
	}
	merchants = slices.Clone(merchants)
	slices.SortFunc(merchants, func(a, b Merchant) int { return cmp.Compare(a.Hostname, b.Hostname) })
	n := len(methods)
	s := &Snapshot{derived: new(derived),
		methods:   methods,
		items:     make([]int32, n),
		bySlug:    make(map[string]int, n),
		slugs:     make([]*resource.Resource, n),
		merchants: make(map[string]*resource.Resource, len(merchants)),
		all:       newBitset(n),
		category:  map[string]bitset{},
		verdict:   map[string]bitset{},
		kind:      map[string]bitset{},
		payable:   [2]bitset{newBitset(n), newBitset(n)},
		byHost:    map[string][]int{},
	}
	s.all.fill(n)
	details := make([][]byte, n)
	h := sha256.New()
	fmt.Fprintf(h, "%d\n", generatedAt.UnixNano())
	mark := func(m map[string]bitset, key string, i int) {
		b, ok := m[key]
		if !ok {
			b = newBitset(n)
			m[key] = b
		}
		b.set(i)
	}
	// Encoded on every processor; a body equal to prev's is prev's, so that what did
	// not change is held once.
	errs := make([]error, n)
	parallel.Each(n, func(i int) {
		m := &methods[i]
		// Compared through pointers: a Method in an interface is a copy of it, made for
		// each of a hundred thousand methods.
		if j, ok := prev.position(m.Slug); ok && reflect.DeepEqual(&prev.methods[j], m) {
			// The same method encodes the same: prev's bytes, not encoded again, and
			// its guidance the end of them, as prev's is.
			s.items[i], details[i] = prev.items[j], prev.slugs[j].Body
			m.Guidance = prev.methods[j].Guidance
			return
		}
		item, err := json.Marshal(m)
		if err != nil {
			errs[i] = fmt.Errorf("directory: encode %s: %w", m.Slug, err)
			return
		}
		guidance := m.Guidance
		if len(guidance) == 0 {
			guidance = json.RawMessage("null")
		}
		detail, err := json.Marshal(methodDetail{Method: *m, Guidance: guidance})
		if err != nil {
			errs[i] = fmt.Errorf("directory: encode %s guidance: %w", m.Slug, err)
			return
		}
		// The item is the detail's beginning, closed: held once, in the detail.
		k := len(item) - 1
		if k < 0 || !bytes.Equal(detail[:k], item[:k]) || detail[k] != ',' {
			errs[i] = fmt.Errorf("directory: encode %s: its detail does not begin with its listing item", m.Slug)
			return
		}
		if j, ok := prev.position(m.Slug); ok {
			if old := prev.slugs[j].Body; bytes.Equal(old, detail) {
				detail = old
			}
		}
		// The guidance too is held once, in the detail: what follows "guidance":.
		if g := detail[k+1 : len(detail)-1]; len(m.Guidance) > 0 && bytes.HasPrefix(g, guidanceKey) {
			m.Guidance = g[len(guidanceKey):len(g):len(g)]
		}
		s.items[i], details[i] = int32(k+1), detail
	})
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	for i := range methods {
		m := &methods[i]
		if _, dup := s.bySlug[m.Slug]; dup {
			return nil, fmt.Errorf("directory: duplicate slug %q", m.Slug)
		}
		s.bySlug[m.Slug] = i
		h.Write(details[i])
		mark(s.category, m.Category, i)
		mark(s.verdict, m.Trust.Verdict, i)
		mark(s.kind, m.Kind, i)
		s.payable[b2i(m.Payable)].set(i)
		s.byHost[m.Hostname] = append(s.byHost[m.Hostname], i)
	}
	// The merchants' records encoded on every processor, hashed in order.
	bodies := make([][]byte, len(merchants))
	errs = make([]error, len(merchants))
	parallel.Each(len(merchants), func(i int) {
		if bodies[i], errs[i] = json.Marshal(&merchants[i]); errs[i] != nil {
			errs[i] = fmt.Errorf("directory: encode merchant %s: %w", merchants[i].Hostname, errs[i])
		}
	})
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	for i, mr := range merchants {
		s.hosts = append(s.hosts, mr.Hostname)
		h.Write(bodies[i])
	}
	s.info = Info{ID: hex.EncodeToString(h.Sum(nil)[:8]), GeneratedAt: generatedAt.UTC()}
	// The merchants' resources before the list: a body prev holds is prev's resource,
	// and the bytes encoded again to tell it are let go before the list is made beside
	// what the snapshot holds (at a hundred thousand methods, 14 MB of merchants'
	// records).
	merchantRes := make([]*resource.Resource, len(merchants))
	parallel.Each(len(merchants), func(i int) {
		merchantRes[i] = prev.reuse(prev.merchant(merchants[i].Hostname), bodies[i], encode)
		bodies[i] = nil
	})
	for i, mr := range merchants {
		s.merchants[mr.Hostname] = merchantRes[i]
	}
	// Compressing is most of the work: the list as it is made, beside the rest.
	done := make(chan error, 1)
	go func() {
		var err error
		s.list, err = s.encodeList(details, s.appendListEnd(nil, n, n, 0, [5]bitset{}), prev.listPieces(), !published)
		done <- err
	}()
	parallel.Each(n, func(i int) {
		s.slugs[i] = prev.reuse(prev.method(methods[i].Slug), details[i], encode)
	})
	if err := <-done; err != nil {
		return nil, err
	}
	return s, nil
}

// position, method and merchant are prev's position and resource for a slug and its
// resource for a hostname; none when prev is nil or has none.
func (s *Snapshot) position(slug string) (int, bool) {
	if s == nil {
		return 0, false
	}
	i, ok := s.bySlug[slug]
	return i, ok
}

func (s *Snapshot) method(slug string) *resource.Resource {
	if i, ok := s.position(slug); ok {
		return s.slugs[i]
	}
	return nil
}

func (s *Snapshot) listPieces() listPieces {
	if s == nil {
		return nil
	}
	return s.list.pieces
}

func (s *Snapshot) merchant(hostname string) *resource.Resource {
	if s == nil {
		return nil
	}
	return s.merchants[hostname]
}

// reuse is old when it holds body already (told by its hash when old left its body
// in its file), else body encoded anew.
func (*Snapshot) reuse(old *resource.Resource, body []byte, encode func(string, []byte) *resource.Resource) *resource.Resource {
	if old != nil && old.Holds(body) {
		return old
	}
	return encode(resource.JSON, body)
}

// sortedMethods is a copy of methods in list order (see listOrder).
func sortedMethods(methods []Method) []Method {
	out := make([]Method, len(methods))
	for i, at := range listOrder(methods) {
		out[i] = methods[at]
	}
	return out
}

// sortMethods puts methods in list order in place: each cycle of the order is moved
// round through one spare method, so that a build does not hold its methods twice (a
// Method is 248 bytes: at a hundred thousand methods, 25 MB).
func sortMethods(methods []Method) {
	order := listOrder(methods)
	for i := range order {
		if order[i] < 0 || order[i] == i {
			continue
		}
		spare := methods[i]
		j := i
		for {
			k := order[j]
			order[j] = -1 // moved
			if k == i {
				methods[j] = spare
				break
			}
			methods[j] = methods[k]
			j = k
		}
	}
}

// listOrder is the positions of methods in list order: score descending with nulls
// last, then slug. The order is sorted, not the methods: a Method is hundreds of
// bytes, and sorting keys held side by side touches a few megabytes at a hundred
// thousand methods, not tens.
func listOrder(methods []Method) []int {
	type key struct {
		none  bool // no score: after every method with one
		score int
		slug  string
		at    int
	}
	keys := make([]key, len(methods))
	for i := range methods {
		keys[i] = key{none: true, slug: methods[i].Slug, at: i}
		if sc := methods[i].Trust.Score; sc != nil {
			keys[i].none, keys[i].score = false, *sc
		}
	}
	slices.SortFunc(keys, func(a, b key) int {
		switch {
		case a.none != b.none:
			return cmp.Compare(b2i(a.none), b2i(b.none))
		case a.score != b.score:
			return cmp.Compare(b.score, a.score)
		}
		return strings.Compare(a.slug, b.slug)
	})
	order := make([]int, len(keys))
	for i, k := range keys {
		order[i] = k.at
	}
	return order
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Info names the snapshot.
func (s *Snapshot) Info() Info { return s.info }

// Len is the number of enabled methods.
func (s *Snapshot) Len() int { return len(s.methods) }

// Methods are the enabled methods in list order. The slice is shared: do not modify.
func (s *Snapshot) Methods() []Method { return s.methods }

// Hostnames are the merchants' hostnames, sorted. The slice is shared: do not modify.
func (s *Snapshot) Hostnames() []string { return s.hosts }

// List is the unfiltered list body. A snapshot made to be published does not hold the
// body (see NewSnapshotUnencoded): its list answers once it is answered from its
// published files (see WithList), or with the body made again (see WithListBody).
func (s *Snapshot) List() *resource.Resource { return s.list.res }

// ListSum is the SHA-256 and the length of the unfiltered list's body, which
// WriteList writes.
func (s *Snapshot) ListSum() ([sha256.Size]byte, int) { return s.list.sum, s.list.size }

// WithListBody is the snapshot with its list's body held, made again from its
// methods' detail bodies when it is not: for a list whose published files cannot
// answer it.
func (s *Snapshot) WithListBody() *Snapshot {
	if s.list.res.Body != nil {
		return s
	}
	c := *s
	c.derived = new(derived)
	body := make([]byte, 0, s.list.size)
	s.writeList(func(p []byte) { body = append(body, p...) }, nil, s.list.tail)
	c.list.res = resource.NewForms(resource.JSON, body, s.list.res.Gzip(), s.list.res.Brotli())
	return &c
}

// WithList is the snapshot with its list answered by list, the same representation
// (its ETag says so) held elsewhere: the generator hands it the list's published
// files (see resource.FromFiles), so that the largest body is not held in memory.
func (s *Snapshot) WithList(list *resource.Resource) (*Snapshot, error) {
	if list.ETag != s.list.res.ETag {
		return nil, fmt.Errorf("directory: the list %s is not the snapshot's %s", list.ETag, s.list.res.ETag)
	}
	c := *s
	c.derived = new(derived)
	c.list.res = list
	return &c, nil
}

// ListFrom has the snapshot answer its list by list, as WithList does, in place: for a
// snapshot not yet served, once its list's files are published (the publisher goes on
// with the rest). Nothing may read the list while it is replaced.
func (s *Snapshot) ListFrom(list *resource.Resource) error {
	if list.ETag != s.list.res.ETag {
		return fmt.Errorf("directory: the list %s is not the snapshot's %s", list.ETag, s.list.res.ETag)
	}
	s.list.res = list
	return nil
}

// WithStored is the snapshot with its methods' and merchants' resources replaced by
// the ones method and merchant return for them (by slug and by hostname): the same
// representations (their ETags say so) with their encoded forms held elsewhere. The
// generator hands it resources stored in their published files (see
// resource.Stored), so that the snapshot holds their bodies alone, and the merchants'
// not even those (see resource.NewBodyStore). Its methods are
// copies made apart from what the build dropped (see held), their guidance the end of
// the stored bodies and their leading strings slices of them, made in s's methods: s,
// whose methods they equal, must not be read while they are made, and the two
// snapshots share them.
func (s *Snapshot) WithStored(method, merchant func(name string, res *resource.Resource) *resource.Resource) (*Snapshot, error) {
	c := *s
	c.derived = new(derived)
	c.slugs = make([]*resource.Resource, len(s.slugs))
	bodies := make([][]byte, len(s.slugs))
	for i, res := range s.slugs {
		if c.slugs[i] = method(s.methods[i].Slug, res); c.slugs[i].ETag != res.ETag || c.slugs[i].Body == nil {
			return nil, fmt.Errorf("directory: the stored method %s is not the snapshot's", s.methods[i].Slug)
		}
		bodies[i] = c.slugs[i].Body
	}
	c.methods = held(s.methods, s.methods, bodies)
	for i, body := range bodies {
		// A guidance held as the end of the detail body is the end of the stored one,
		// so that the body it was made in is not held too.
		m := &c.methods[i]
		if g := body[min(int(s.items[i]), len(body)-1) : len(body)-1]; len(m.Guidance) > 0 && bytes.HasPrefix(g, guidanceKey) &&
			bytes.Equal(g[len(guidanceKey):], m.Guidance) {
			m.Guidance = g[len(guidanceKey):len(g):len(g)]
		}
	}
	// The index is keyed by the held strings, not the build's: a build's method that
	// did not change is the snapshot's before, whose strings are slices of its bodies,
	// which a key of this one would keep alive.
	canon := map[string]string{}
	for i := range c.methods {
		m := &c.methods[i]
		for _, v := range [...]string{m.Category, m.Kind, m.Trust.Verdict, m.Hostname} {
			if _, ok := canon[v]; !ok {
				canon[v] = v
			}
		}
	}
	key := func(k string) string {
		v, ok := canon[k]
		if !ok {
			v = strings.Clone(k)
			canon[v] = v
		}
		return v
	}
	c.bySlug = make(map[string]int, len(c.methods))
	for i := range c.methods {
		c.bySlug[c.methods[i].Slug] = i
	}
	c.category, c.verdict, c.kind, c.byHost = rekey(s.category, key), rekey(s.verdict, key), rekey(s.kind, key), rekey(s.byHost, key)
	c.hosts = make([]string, len(s.hosts))
	for i, host := range s.hosts {
		c.hosts[i] = key(host)
	}
	c.merchants = make(map[string]*resource.Resource, len(s.merchants))
	for host, res := range s.merchants {
		host = key(host)
		if c.merchants[host] = merchant(host, res); c.merchants[host].ETag != res.ETag {
			return nil, fmt.Errorf("directory: the stored merchant %s is not the snapshot's", host)
		}
	}
	return &c, nil
}

// rekey is m with each key k as key(k).
func rekey[V any](m map[string]V, key func(string) string) map[string]V {
	out := make(map[string]V, len(m))
	for k, v := range m {
		out[key(k)] = v
	}
	return out
}

// Method returns the detail body (listing item plus guidance) of an enabled method.
func (s *Snapshot) Method(slug string) (*resource.Resource, bool) {
	i, ok := s.bySlug[slug]
	if !ok {
		return nil, false
	}
	return s.slugs[i], true
}

// MethodAt returns the detail body of the method at a list position, as Method does
// for its slug, without looking the slug up: a publication at a hundred thousand
// methods asks for each several times.
func (s *Snapshot) MethodAt(pos int) *resource.Resource { return s.slugs[pos] }

// MethodBySlug returns an enabled method.
func (s *Snapshot) MethodBySlug(slug string) (Method, bool) {
	i, ok := s.bySlug[slug]
	if !ok {
		return Method{}, false
	}
	return s.methods[i], true
}

// Merchant returns the merchant record body of a hostname in the directory.
func (s *Snapshot) Merchant(hostname string) (*resource.Resource, bool) {
	r, ok := s.merchants[hostname]
	return r, ok
}

// Item returns the encoded listing item of the method at a list position.
// It is made for the caller; AppendItem appends it without making one.
func (s *Snapshot) Item(pos int) []byte { return s.AppendItem(nil, pos) }

// AppendItem appends the encoded listing item of the method at a list position.
func (s *Snapshot) AppendItem(dst []byte, pos int) []byte {
	return append(s.AppendOpenItem(dst, pos), '}')
}

// AppendOpenItem appends the listing item of the method at a list position without
// its closing brace, for an answer that adds fields to it.
func (s *Snapshot) AppendOpenItem(dst []byte, pos int) []byte {
	return append(dst, s.slugs[pos].Body[:s.items[pos]-1]...)
}

// Position returns the list position of a slug.
func (s *Snapshot) Position(slug string) (int, bool) {
	i, ok := s.bySlug[slug]
	return i, ok
}

// Match returns the set of positions matching every field of f but paging.
func (s *Snapshot) match(f Filter) (mask bitset, dims [5]bitset) {
	union := func(m map[string]bitset, values []string) bitset {
		if len(values) == 0 {
			return nil
		}
		u := newBitset(len(s.methods))
		for _, v := range values {
			if b, ok := m[v]; ok {
				u.or(b)
			}
		}
		return u
	}
	dims[0] = union(s.category, f.Categories)
	dims[1] = union(s.verdict, f.Verdicts)
	dims[2] = union(s.kind, f.Kinds)
	if f.Payable != nil {
		dims[3] = s.payable[b2i(*f.Payable)]
	}
	if f.Hostname != "" {
		dims[4] = newBitset(len(s.methods))
		for _, i := range s.byHost[f.Hostname] {
			dims[4].set(i)
		}
	}
	return s.intersect(dims, -1), dims
}

// intersect ANDs every dimension but skip (-1 skips none) over the whole list.
func (s *Snapshot) intersect(dims [5]bitset, skip int) bitset {
	out := newBitset(len(s.methods))
	copy(out, s.all)
	for d, b := range dims {
		if d != skip && b != nil {
			out.and(b)
		}
	}
	return out
}

// Matching returns the positions matching f's filters in list order, without paging,
// so that search can narrow its candidates the way the list does.
func (s *Snapshot) Matching(f Filter) []int {
	f.Limit, f.Offset = 0, 0
	mask, _ := s.match(f)
	out := make([]int, 0, mask.count())
	mask.each(func(i int) bool { out = append(out, i); return true })
	return out
}

// Allows reports whether the method at pos passes f's filters (paging aside).
func (s *Snapshot) Allows(f Filter, pos int) bool {
	m := &s.methods[pos]
	return (len(f.Categories) == 0 || slices.Contains(f.Categories, m.Category)) &&
		(len(f.Verdicts) == 0 || slices.Contains(f.Verdicts, m.Trust.Verdict)) &&
		(len(f.Kinds) == 0 || slices.Contains(f.Kinds, m.Kind)) &&
		(f.Payable == nil || *f.Payable == m.Payable) &&
		(f.Hostname == "" || f.Hostname == m.Hostname)
}

func (s *Snapshot) facets(dims [5]bitset) Facets {
	count := func(m map[string]bitset, dim int) []Facet {
		base := s.intersect(dims, dim)
		out := make([]Facet, 0, len(m))
		for v, b := range m {
			if c := base.countAnd(b); c > 0 {
				out = append(out, Facet{Value: v, Count: c})
			}
		}
		slices.SortFunc(out, func(a, b Facet) int {
			return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Value, b.Value))
		})
		return out
	}
	payable := map[string]bitset{"false": s.payable[0], "true": s.payable[1]}
	return Facets{
		Category: count(s.category, 0),
		Verdict:  count(s.verdict, 1),
		Kind:     count(s.kind, 2),
		Payable:  count(payable, 3),
	}
}

// AppendList appends the list body for f to dst: the matching items in list order
// after Offset, at most Limit of them, with the total, the facets and the snapshot.
func (s *Snapshot) AppendList(dst []byte, f Filter) []byte {
	mask, dims := s.match(f)
	total := mask.count()
	dst = append(dst, listHead...)
	count, skipped := 0, 0
	mask.each(func(i int) bool {
		if skipped < f.Offset {
			skipped++
			return true
		}
		if f.Limit > 0 && count == f.Limit {
			return false
		}
		if count > 0 {
			dst = append(dst, ',')
		}
		dst = s.AppendItem(dst, i)
		count++
		return true
	})
	return s.appendListEnd(dst, count, total, f.Offset, dims)
}

// appendListEnd appends what a list body ends with after its items: the count, the
// total and the offset, the facets of dims and the snapshot.
func (s *Snapshot) appendListEnd(dst []byte, count, total, offset int, dims [5]bitset) []byte {
	dst = append(dst, `],"count":`...)
	dst = strconv.AppendInt(dst, int64(count), 10)
	dst = append(dst, `,"total":`...)
	dst = strconv.AppendInt(dst, int64(total), 10)
	dst = append(dst, `,"offset":`...)
	dst = strconv.AppendInt(dst, int64(offset), 10)
	facets, _ := json.Marshal(s.facets(dims))
	dst = append(dst, `,"facets":`...)
	dst = append(dst, facets...)
	info, _ := json.Marshal(s.info)
	dst = append(dst, `,"snapshot":`...)
	dst = append(dst, info...)
	return append(dst, '}')
}
