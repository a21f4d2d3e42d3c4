package resource

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
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

	mu        sync.Mutex
	resources []Resource   // the rest of the block stored resources are made in
	at        []stored     // and where their forms are
	bytes     blocks.Bytes // and their bodies and header values
}

// NewStore is the store of directory dir, its forms read through cache.
func NewStore(dir string, cache *Cache) *Store {
	return &Store{dir: dir + string(os.PathSeparator), cache: cache}
}

// Cache holds the encoded forms of stored resources read lately, each known by its
// ETag (which names its bytes: the body's hash and the form), a bounded number of
// them: a form asked for again is answered from memory, without a read or an
// allocation, and one that is not asked for any more is dropped for another.
type Cache struct {
	lru *lru.Cache[string, []byte]
}

// NewCache holds the last forms of stored resources asked for, at most forms of them
// (at least one), each of at most MaxCached bytes.
func NewCache(forms int) *Cache {
	c, _ := lru.New[string, []byte](max(forms, 1))
	return &Cache{lru: c}
}

// MaxCached is the size of the largest form a Cache keeps: a larger one is read from
// its file for each answer that asks for it, so that a few large bodies do not push
// thousands of small ones out.
const MaxCached = 64 << 10

// Len is the number of forms cached.
func (c *Cache) Len() int { return c.lru.Len() }

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
// and is not copied.
func (res *Resource) Stored(st *Store, name string) *Resource {
	st.mu.Lock()
	defer st.mu.Unlock()
	out := blocks.Next(&st.resources)
	*out = *res
	out.Gzip, out.Brotli, out.files = nil, nil, nil
	if len(res.Body) > 0 && len(res.Body) <= blocks.BytesSize/4 {
		out.Body = append(st.bytes.Alloc(len(res.Body)), res.Body...)
	}
	// The ETags, lengths and name are slices of one string: copied as one, so that
	// the stored resource keeps nothing of what it was made from.
	vals := [...]string{res.ETag, res.GzipETag, res.BrotliETag, res.lengths[0], res.lengths[1], res.lengths[2], name}
	var n int
	for _, v := range vals {
		n += len(v)
	}
	b := st.bytes.Alloc(n)
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

// form is the stored form's bytes (gzipForm or brotliForm), from the cache when it
// holds them, else read and cached; nil when neither the file nor an encoding of the
// body has the form's size.
func (res *Resource) form(form int) []byte {
	c := res.at.st.cache
	tag := res.header(hETag + form)[0]
	if b, ok := c.lru.Get(tag); ok {
		return b
	}
	b, err := res.read(form)
	if err != nil {
		return nil
	}
	if len(b) <= MaxCached {
		// Keyed by a copy: the tag is a slice of the block its store made it in, which
		// a key would keep alive, the cache serving snapshot after snapshot.
		c.lru.Add(strings.Clone(tag), b)
	}
	return b
}

// read is the stored form's bytes from its file, or encoded again from the body
// when the file does not hold the form's size.
func (res *Resource) read(form int) ([]byte, error) {
	size, err := strconv.Atoi(res.lengths[form])
	if err != nil {
		return nil, fmt.Errorf("resource: %s has no form %d", res.ETag, form)
	}
	b, err := os.ReadFile(res.at.st.dir + res.at.name + suffixes[form])
	if err == nil && len(b) == size {
		return b, nil
	}
	if form == brotliForm {
		b = compressBrotli(res.Body, int(res.levels[1]))
	} else {
		b = compress(res.Body, int(res.levels[0]))
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
	for _, form := range [...]int{gzipForm, brotliForm} {
		if !res.has(form) {
			continue
		}
		b, err := res.read(form)
		if err != nil {
			return nil, err
		}
		if form == gzipForm {
			out.Gzip = b
		} else {
			out.Brotli = b
		}
	}
	return &out, nil
}
