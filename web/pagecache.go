package web

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"io"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/a-h/templ"

	"github.com/waystation/waystation/internal/directory"
	"github.com/waystation/waystation/internal/resource"
)

// PageCache keeps what one snapshot's pages are made of for the next snapshot's, so
// that a publisher renders again only what changed: each method's row as the category
// and merchant pages list it, by the method's body (its ETag), and what each merchant
// record gives the pages, by the record's ETag. At a hundred thousand methods a change
// to a few hundred of them touches nearly every category and merchant page, each
// listing hundreds or thousands of methods, most of them as they were. It holds a row
// for every method listed since the snapshot's methods were last all rendered (a few
// hundred bytes each) and forgets what a snapshot no longer holds. The rows' bytes are
// kept in a file of their own, without a name, and read back as a page needs them:
// the system's page cache holds them, not the process's heap (at a hundred thousand
// methods, some 60 MB). Safe for concurrent use.
type PageCache struct {
	dir       string
	mu        sync.Mutex
	rows      map[string]keptRow // by slug
	merchants map[string]*keptMerchant
	rendered  int // rows rendered, not taken from the cache

	// file holds the rows' bytes, written at size; live of them are rows still kept.
	// A cache whose file could not be made or written keeps no rows.
	file       *os.File
	size, live int64
	failed     bool
}

// keptRow is where a method's row, rendered from the body etag names, is in the file.
type keptRow struct {
	etag string
	off  int64
	n    int
}

// keptMerchant is what a merchant record gives its pages: the slugs of its methods,
// its probes (decoded, and a digest of them as the record holds them), and what its
// page shows of the record alone.
type keptMerchant struct {
	etag    string
	slugs   []string
	probes  [sha256.Size]byte
	decoded []directory.ProbeRecord
	found   bool // the record decodes
	view    MerchantView
}

// NewPageCache is an empty cache, whose rows go in a file made in dir (the system's
// temporary directory when dir is "") once there is one to keep.
func NewPageCache(dir string) *PageCache {
	return &PageCache{dir: dir, rows: map[string]keptRow{}, merchants: map[string]*keptMerchant{}}
}

// forget drops what snap does not hold as the cache does: a method or merchant gone,
// or its body changed.
func (c *PageCache) forget(snap *directory.Snapshot) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for slug, r := range c.rows {
		if res, ok := snap.Method(slug); !ok || res.ETag != r.etag {
			delete(c.rows, slug)
			c.live -= int64(r.n)
		}
	}
	// Once most of the file is rows forgotten, the kept ones are copied to a new one.
	if c.file != nil && c.size > 2*c.live && c.size > 8<<20 {
		c.compact()
	}
	for h, r := range c.merchants {
		if res, ok := snap.Merchant(h); !ok || res.ETag != r.etag {
			delete(c.merchants, h)
		}
	}
}

// PageRow is a method's row of a page, rendered through a PageCache: its bytes, or,
// when the cache holds them, where its file does, read only as the page is written,
// so that a page of thousands of rows is not read into memory before it is rendered
// into it.
type PageRow struct {
	html []byte
	file *os.File
	at   keptRow
	// snap and slug render the row again should the file not read.
	snap *directory.Snapshot
	slug string
}

// bytes is the row's, read into *scratch when the cache's file holds it (valid until
// the next call with the same scratch).
func (r PageRow) bytes(scratch *[]byte) []byte {
	if r.html != nil {
		return r.html
	}
	*scratch = slices.Grow((*scratch)[:0], r.at.n)[:r.at.n]
	if _, err := r.file.ReadAt(*scratch, r.at.off); err == nil {
		return *scratch
	}
	m, _ := r.snap.MethodBySlug(r.slug)
	return renderRow(m)
}

// row is m's row as methodItem renders it, taken from the cache when m's body, res,
// is the one it was rendered from.
func (c *PageCache) row(snap *directory.Snapshot, m directory.Method, res *resource.Resource) PageRow {
	c.mu.Lock()
	r, ok := c.rows[m.Slug]
	file := c.file
	c.mu.Unlock()
	if ok && r.etag == res.ETag {
		return PageRow{file: file, at: r, snap: snap, slug: m.Slug}
	}
	html := renderRow(m)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rendered++
	if c.failed {
		return PageRow{html: html}
	}
	if c.file == nil {
		// Without a name, so that nothing outlives the process.
		if c.file, c.failed = newRowFile(c.dir); c.failed {
			return PageRow{html: html}
		}
	}
	if _, err := c.file.WriteAt(html, c.size); err != nil {
		// Nothing is kept from now on; the rows kept stay as they were written.
		c.failed = true
		return PageRow{html: html}
	}
	if old, ok := c.rows[m.Slug]; ok {
		c.live -= int64(old.n)
	}
	// Copies, not the snapshot's strings: they are made in blocks that the cache must
	// not keep once the snapshot goes.
	c.rows[strings.Clone(m.Slug)] = keptRow{etag: strings.Clone(res.ETag), off: c.size, n: len(html)}
	c.size += int64(len(html))
	c.live += int64(len(html))
	return PageRow{html: html}
}

// renderRow is m's row, rendered.
func renderRow(m directory.Method) []byte {
	b := renderBuffers.Get().(*bytes.Buffer)
	defer renderBuffers.Put(b)
	b.Reset()
	// A row's view holds only strings, which render without error.
	methodItem(methodRow(m)).Render(context.Background(), b)
	return bytes.Clone(b.Bytes())
}

// newRowFile makes a file in dir for the rows and removes its name; failed when it
// cannot.
func newRowFile(dir string) (f *os.File, failed bool) {
	f, err := os.CreateTemp(dir, ".rows-")
	if err != nil {
		return nil, true
	}
	if err := os.Remove(f.Name()); err != nil {
		f.Close()
		return nil, true
	}
	return f, false
}

// compact copies the rows kept to a new file, leaving the ones forgotten behind. It
// keeps the old file when it cannot. c.mu is held.
func (c *PageCache) compact() {
	f, failed := newRowFile(c.dir)
	if failed {
		return
	}
	rows := make(map[string]keptRow, len(c.rows))
	var at int64
	var buf []byte
	for slug, r := range c.rows {
		buf = slices.Grow(buf[:0], r.n)[:r.n]
		if _, err := c.file.ReadAt(buf, r.off); err != nil {
			f.Close()
			return
		}
		if _, err := f.WriteAt(buf, at); err != nil {
			f.Close()
			return
		}
		rows[slug] = keptRow{etag: r.etag, off: at, n: r.n}
		at += int64(r.n)
	}
	c.file.Close()
	c.file, c.rows, c.size, c.live = f, rows, at, at
}

// merchant is what the record of hostname h in snap gives its pages, decoded only
// when the cache holds none from the same record.
func (c *PageCache) merchant(snap *directory.Snapshot, h string) *keptMerchant {
	res, ok := snap.Merchant(h)
	if !ok {
		return &keptMerchant{}
	}
	c.mu.Lock()
	r, ok := c.merchants[h]
	c.mu.Unlock()
	if ok && r.etag == res.ETag {
		return r
	}
	body, err := res.Bytes()
	if err != nil {
		return &keptMerchant{} // not kept: the record may be read again
	}
	r = &keptMerchant{etag: strings.Clone(res.ETag)}
	var mr struct {
		directory.Merchant
		Probes json.RawMessage `json:"probes"`
	}
	err = json.Unmarshal(body, &mr)
	r.probes = sha256.Sum256(mr.Probes)
	if err == nil {
		err = json.Unmarshal(mr.Probes, &mr.Merchant.Probes)
	}
	if r.found = err == nil; r.found {
		r.decoded = mr.Merchant.Probes
		r.view = merchantRecordView(mr.Merchant)
		r.slugs = make([]string, len(mr.Methods))
		for i, e := range mr.Methods {
			r.slugs[i] = e.Slug
		}
	}
	c.mu.Lock()
	c.merchants[strings.Clone(h)] = r
	c.mu.Unlock()
	return r
}

// methodRows is the list of methods a page shows: methodList's, or, when the rows
// were rendered already, the same bytes made of them.
func methodRows(methods []MethodRow, rows []PageRow) templ.Component {
	if rows == nil {
		return methodList(methods)
	}
	return templ.ComponentFunc(func(_ context.Context, w io.Writer) error {
		if _, err := io.WriteString(w, `<ol class="methods">`); err != nil {
			return err
		}
		var scratch []byte
		for _, r := range rows {
			if _, err := w.Write(r.bytes(&scratch)); err != nil {
				return err
			}
		}
		_, err := io.WriteString(w, `</ol>`)
		return err
	})
}
