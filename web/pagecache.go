package web

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"io"
	"strings"
	"sync"

	"github.com/a-h/templ"

	"github.com/waystation/waystation/internal/directory"
)

// PageCache keeps what one snapshot's pages are made of for the next snapshot's, so
// that a publisher renders again only what changed: each method's row as the category
// and merchant pages list it, by the method's body (its ETag), and what each merchant
// record gives the pages, by the record's ETag. At a hundred thousand methods a change
// to a few hundred of them touches nearly every category and merchant page, each
// listing hundreds or thousands of methods, most of them as they were. It holds a row
// for every method listed since the snapshot's methods were last all rendered (a few
// hundred bytes each) and forgets what a snapshot no longer holds. Safe for concurrent
// use.
type PageCache struct {
	mu        sync.Mutex
	rows      map[string]keptRow // by slug
	merchants map[string]*keptMerchant
	rendered  int // rows rendered, not taken from the cache
}

// keptRow is a method's row, rendered from the body etag names.
type keptRow struct {
	etag string
	html []byte
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

// NewPageCache is an empty cache.
func NewPageCache() *PageCache {
	return &PageCache{rows: map[string]keptRow{}, merchants: map[string]*keptMerchant{}}
}

// forget drops what snap does not hold as the cache does: a method or merchant gone,
// or its body changed.
func (c *PageCache) forget(snap *directory.Snapshot) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for slug, r := range c.rows {
		if res, ok := snap.Method(slug); !ok || res.ETag != r.etag {
			delete(c.rows, slug)
		}
	}
	for h, r := range c.merchants {
		if res, ok := snap.Merchant(h); !ok || res.ETag != r.etag {
			delete(c.merchants, h)
		}
	}
}

// row is m's row as methodItem renders it, taken from the cache when m's body is the
// one it was rendered from. rows may be nil, for none kept.
func (c *PageCache) row(snap *directory.Snapshot, m directory.Method) []byte {
	res, _ := snap.Method(m.Slug)
	c.mu.Lock()
	r, ok := c.rows[m.Slug]
	c.mu.Unlock()
	if ok && r.etag == res.ETag {
		return r.html
	}
	b := renderBuffers.Get().(*bytes.Buffer)
	defer renderBuffers.Put(b)
	b.Reset()
	// A row's view holds only strings, which render without error.
	methodItem(methodRow(m)).Render(context.Background(), b)
	// Copies, not the snapshot's strings: they are made in blocks that the cache must
	// not keep once the snapshot goes.
	r = keptRow{etag: strings.Clone(res.ETag), html: bytes.Clone(b.Bytes())}
	c.mu.Lock()
	c.rows[strings.Clone(m.Slug)] = r
	c.rendered++
	c.mu.Unlock()
	return r.html
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
	r = &keptMerchant{etag: strings.Clone(res.ETag)}
	var mr struct {
		directory.Merchant
		Probes json.RawMessage `json:"probes"`
	}
	err := json.Unmarshal(res.Body, &mr)
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
func methodRows(methods []MethodRow, rows [][]byte) templ.Component {
	if rows == nil {
		return methodList(methods)
	}
	return templ.ComponentFunc(func(_ context.Context, w io.Writer) error {
		if _, err := io.WriteString(w, `<ol class="methods">`); err != nil {
			return err
		}
		for _, r := range rows {
			if _, err := w.Write(r); err != nil {
				return err
			}
		}
		_, err := io.WriteString(w, `</ol>`)
		return err
	})
}
