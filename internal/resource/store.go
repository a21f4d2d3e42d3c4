package resource

import (
	"bytes"
	"fmt"
	"iter"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/waystation/waystation/internal/blocks"
)

// Store is a directory where resources' forms are published, as a site publishes
// them: a resource's body in the file named after it, its gzip and brotli forms
// beside it (name.gz, name.br). A resource stored there (see Stored) keeps its body
// and leaves its encoded forms in their files, so that a snapshot of a hundred
// thousand methods does not hold two more copies of each in memory: the forms asked
// for lately are read into the Cache the store shares with the others.
//
// What a store's resources hold in memory is made in blocks (see Stored), apart from
// what the snapshot's build made and dropped around it.
type Store struct {
	dir   string
	cache *Cache
	// bodies, when set, leaves the resources' bodies in their files as well (see
	// NewBodyStore).
	bodies bool

	mu        sync.Mutex
	resources []Resource   // the rest of the block stored resources are made in
	at        []stored     // and where their forms are
	bytes     blocks.Bytes // and their bodies and header values
	// carry, when set, has a resource stored in another store share that store's
	// copies of its body and header values (see Carry).
	carry bool
	// made is the bytes copied into the store's blocks; kept, at most the bytes of
	// other stores' blocks that the resources shared from them keep alive: those
	// stores' made and kept.
	made, kept int64
}

// NewStore is the store of directory dir, its forms read through cache.
func NewStore(dir string, cache *Cache) *Store {
	return &Store{dir: dir + string(os.PathSeparator), cache: cache}
}

// NewBodyStore is a store of directory dir whose resources leave their bodies in
// their files too, read through cache as their encoded forms are: for the bodies of
// a route less asked for than its size in memory would justify. A merchant's record
// lists every method of its hostname with its probes: on the real catalog the
// records are more than half of the snapshot's bodies, and at a hundred thousand
// methods grown from it a fifth. Such a resource's Body is nil: Bytes reads it.
func NewBodyStore(dir string, cache *Cache) *Store {
	st := NewStore(dir, cache)
	st.bodies = true
	return st
}

// Cache holds the encoded forms of stored resources read lately, each known by its
// ETag (which names its bytes: the body's hash and the form), a bounded number of
// them and of their bytes: a form asked for again is answered from memory, without a
// read or an allocation, and one that is not asked for any more is dropped for
// another.
type Cache struct {
	lru *lru.Cache[string, []byte]
	// held is the bytes of the forms cached, at most most.
	held atomic.Int64
	most int64
}

// NewCache holds the last forms of stored resources asked for, at most forms of them
// (at least one), each of at most MaxCached bytes, and at most MaxCachedBytes in all.
func NewCache(forms int) *Cache {
	c := &Cache{most: MaxCachedBytes}
	c.lru, _ = lru.NewWithEvict(max(forms, 1), func(_ string, b []byte) { c.held.Add(-int64(len(b))) })
	return c
}

// MaxCached is the size of the largest form a Cache keeps: a larger one is read from
// its file for each answer that asks for it, so that a few large bodies do not push
// thousands of small ones out.
const MaxCached = 64 << 10

// MaxCachedBytes bounds the bytes a Cache holds: its forms are mostly the few hundred
// bytes of a method's gzip or brotli, but a merchant's record, left in its file (see
// NewBodyStore), is kilobytes.
const MaxCachedBytes = 16 << 20

// add caches b under a copy of tag, dropping the forms asked for least lately
// while the cache holds more than its bytes.
func (c *Cache) add(tag string, b []byte) {
	// Keyed by a copy: the tag is a slice of the block its store made it in, which a
	// key would keep alive, the cache serving snapshot after snapshot.
	if had, _ := c.lru.ContainsOrAdd(strings.Clone(tag), b); had {
		return
	}
	c.held.Add(int64(len(b)))
	for c.held.Load() > c.most {
		if _, _, ok := c.lru.RemoveOldest(); !ok {
			break
		}
	}
}

// Len is the number of forms cached.
func (c *Cache) Len() int { return c.lru.Len() }

// Carry has st share, when it stores again a resource another store holds (see
// Stored), that store's copies of its body and header values rather than copy them
// anew: a method that did not change is the same resource from one snapshot to the
// next, stored in the directory of each. It does for all of res, the resources st is
// about to store, when the blocks they then keep alive, the other stores' whole and
// st's copies of the rest, hold at most an eighth more than copies of all of them
// would; else for none, so that the blocks of the resources replaced since the last
// copy of all are dropped, and the blocks a store's resources keep alive stay within
// an eighth over what they need. It reports whether it does. What st then stores from
// another store must be among res, which counts that store's blocks.
func (st *Store) Carry(res iter.Seq[*Resource]) bool {
	var need, fresh int64
	from := map[*Store]bool{}
	for r := range res {
		n := st.copies(r)
		need += n
		if r.at == nil || r.at.st == st || r.at.st.bodies != st.bodies {
			fresh += n
			continue
		}
		from[r.at.st] = true
	}
	var kept int64
	for f := range from {
		f.mu.Lock()
		kept += f.made + f.kept
		f.mu.Unlock()
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	st.carry = len(from) > 0 && kept+fresh <= need+need/8
	st.kept = 0
	if st.carry {
		st.kept = kept
	}
	return st.carry
}

// copies is the bytes Stored copies of res into st's blocks: its body, unless st
// leaves bodies in their files or the body is an allocation of its own, and its
// header values.
func (st *Store) copies(res *Resource) int64 {
	n := len(res.ETag) + len(res.GzipETag) + len(res.BrotliETag) + len(res.lengths[0]) + len(res.lengths[1]) + len(res.lengths[2])
	if !st.bodies && len(res.Body) <= blocks.BytesSize/4 {
		n += len(res.Body)
	}
	return int64(n)
}

// stored is where a stored resource's forms are: st's directory, name.
type stored struct {
	st   *Store
	name string
}

// Stored is res with its gzip and brotli forms left in st's files name.gz and
// name.br, which must hold them byte for byte as long as the resource is served (a
// published site's directory never holds other bytes under a name: a name is a
// snapshot's, which its ID names); its body stays in memory. A form that cannot be
// read, or is not of its size, is encoded again from the body at the levels it was
// made at (encoding is deterministic), and failing that the answer is the body
// itself, as to a client that takes no encoding.
//
// The stored resource, its body, its header values and its name are copies made in
// blocks the store shares between its resources, a few large allocations instead of
// three small ones each: a snapshot of a hundred thousand methods holds as many, which built
// among the garbage of the build would keep most of its pages from going back to the
// system (a page holding one of them is not returned), and hold each in a size class
// larger than it. A body larger than a block's quarter is its own allocation already
// and is not copied. A resource stored in another store, which st carries from (see
// Carry), shares that store's copies: it holds the same bytes.
func (res *Resource) Stored(st *Store, name string) *Resource {
	st.mu.Lock()
	defer st.mu.Unlock()
	out := blocks.Next(&st.resources)
	*out = *res
	out.mem = nil
	if from := res.at; st.carry && from != nil && from.st != st && from.st.bodies == st.bodies {
		at := stored{st: st, name: from.name}
		if name != from.name {
			at.name = st.bytes.String(name)
			st.made += int64(len(name))
		}
		out.at = blocks.Put(&st.at, at)
		return out
	}
	if st.bodies {
		out.Body = nil
	} else if len(res.Body) > 0 && len(res.Body) <= blocks.BytesSize/4 {
		out.Body = append(st.bytes.Alloc(len(res.Body)), res.Body...)
		st.made += int64(len(res.Body))
	}
	// The ETags, lengths and name are slices of one string: copied as one, so that
	// the stored resource keeps nothing of what it was made from.
	vals := [...]string{res.ETag, res.GzipETag, res.BrotliETag, res.lengths[0], res.lengths[1], res.lengths[2], name}
	var n int
	for _, v := range vals {
		n += len(v)
	}
	b := st.bytes.Alloc(n)
	st.made += int64(n)
	for _, v := range vals {
		b = append(b, v...)
	}
	all := unsafe.String(unsafe.SliceData(b), n)
	for i, v := range vals {
		vals[i], all = all[:len(v)], all[len(v):]
	}
	out.ETag, out.GzipETag, out.BrotliETag = vals[0], vals[1], vals[2]
	out.lengths = [3]string(vals[3:6])
	out.at = blocks.Next(&st.at)
	*out.at = stored{st: st, name: vals[6]}
	return out
}

// Bytes is the resource's body: Body, or, for a resource whose store leaves bodies in
// their files (see NewBodyStore), read from its file through the cache; an error when
// that file does not hold it.
func (res *Resource) Bytes() ([]byte, error) {
	if res.Body != nil || res.at == nil || !res.at.st.bodies || res.lengths[identity] == "0" {
		return res.Body, nil
	}
	// Not kept: the generator reads every record of a snapshot, which would push out
	// the forms answers ask for.
	b, _, err := res.form(identity, false, false)
	return b, err
}

// Holds reports whether the resource's body is body, without reading a body left in
// its file: the ETag names the body's hash.
func (res *Resource) Holds(body []byte) bool {
	if res.Body != nil || res.at == nil || !res.at.st.bodies {
		return bytes.Equal(res.Body, body)
	}
	var a [24]byte
	tag := tagOf(&a, body)
	return len(res.ETag) == len(tag)+2 && res.ETag[1:len(res.ETag)-1] == string(tag)
}

// form is a stored form's bytes, from the cache when it holds them, else read (and,
// with keep, cached); or, with open, its file opened for a form larger than the cache
// keeps (at the form's size, its offset 0), so that it is sent rather than read. An
// error when neither its file nor an encoding of the body has the form's size.
func (res *Resource) form(form int, open, keep bool) ([]byte, *os.File, error) {
	c := res.at.st.cache
	tag := res.header(hETag + form)[0]
	if b, ok := c.lru.Get(tag); ok {
		return b, nil, nil
	}
	size, err := strconv.Atoi(res.lengths[form])
	if err != nil {
		return nil, nil, fmt.Errorf("resource: %s has no form %d", res.ETag, form)
	}
	if open && size > MaxCached {
		if f, err := os.Open(res.at.st.dir + res.at.name + suffixes[form]); err == nil {
			if fi, err := f.Stat(); err == nil && fi.Size() == int64(size) {
				return nil, f, nil
			}
			f.Close()
		}
	}
	b, err := res.read(form, size)
	if err != nil {
		return nil, nil, err
	}
	if len(b) <= MaxCached && keep {
		c.add(tag, b)
	}
	return b, nil, nil
}

// read is the stored form's bytes, of size bytes, from its file, or encoded again
// from the body when the file does not hold the form's size.
func (res *Resource) read(form, size int) ([]byte, error) {
	b, err := os.ReadFile(res.at.st.dir + res.at.name + suffixes[form])
	if err == nil && len(b) == size {
		return b, nil
	}
	if form == identity {
		if err == nil {
			err = fmt.Errorf("%d bytes, not %d", len(b), size)
		}
		return nil, fmt.Errorf("resource: %s: %w", res.at.name, err)
	}
	body, err := res.Bytes()
	if err != nil {
		return nil, err
	}
	if form == brotliForm {
		b = compressBrotli(nil, body, int(res.levels[1]))
	} else {
		b = compress(nil, body, int(res.levels[0]))
	}
	if len(b) != size {
		return nil, fmt.Errorf("resource: %s%s: %d bytes, not %d", res.at.name, suffixes[form], len(b), size)
	}
	return b, nil
}

// suffixes name the files of a resource's forms beside its body's.
var suffixes = [...]string{"", ".gz", ".br"}

// Encoded is res with its gzip and brotli forms in memory, as New makes it: res
// itself unless it is stored, else one with its forms read from its files (or encoded
// again from its body), for a publisher that writes them elsewhere.
func (res *Resource) Encoded() (*Resource, error) {
	if res.at == nil {
		return res, nil
	}
	out := *res
	out.at = nil
	body, err := res.Bytes()
	if err != nil {
		return nil, err
	}
	out.Body = body
	var forms [3][]byte
	for _, form := range [...]int{gzipForm, brotliForm} {
		if !res.has(form) {
			continue
		}
		size, _ := strconv.Atoi(res.lengths[form])
		b, err := res.read(form, size)
		if err != nil {
			return nil, err
		}
		forms[form] = b
	}
	return out.withForms(forms[gzipForm], forms[brotliForm]), nil
}
