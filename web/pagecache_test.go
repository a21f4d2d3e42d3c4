package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"

	"github.com/waystation/waystation/internal/directory"
)

// renderPages renders every page of snap through cache (nil for none), by URL.
func renderPages(t *testing.T, snap *directory.Snapshot, cache *PageCache) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, p := range testViews.PageSourcesKept(snap, cache) {
		res, err := p.Render()
		if err != nil {
			t.Fatal(err)
		}
		out[p.URL] = res.Body
	}
	return out
}

// TestPageCacheRendersAgainOnlyTheRowsThatChanged renders a snapshot's pages through a
// cache, then those of the next snapshot, where one method's description changed:
// every page must be byte for byte the one rendered without a cache, the changed
// method's row the only one rendered again, and the merchant records, unchanged, not
// decoded again.
func TestPageCacheRendersAgainOnlyTheRowsThatChanged(t *testing.T) {
	snap := testSnapshot(t)
	cache := NewPageCache(t.TempDir())
	same := func(step string, snap *directory.Snapshot) {
		t.Helper()
		got, want := renderPages(t, snap, cache), renderPages(t, snap, nil)
		for url, body := range want {
			if !bytes.Equal(got[url], body) {
				t.Errorf("%s: %s differs from the page rendered without a cache:\n%s\nwant\n%s", step, url, got[url], body)
			}
		}
	}
	same("first", snap)
	if cache.rendered != snap.Len() {
		t.Fatalf("first: %d rows rendered, want %d", cache.rendered, snap.Len())
	}
	tide := cache.merchants["api.tide.example"]

	methods := append([]directory.Method(nil), snap.Methods()...)
	for i := range methods {
		if methods[i].Slug == "tide-block-number" {
			methods[i].Description = "Height of the chain's newest block."
		}
	}
	var merchants []directory.Merchant
	for _, h := range snap.Hostnames() {
		res, _ := snap.Merchant(h)
		var mr directory.Merchant
		if err := json.Unmarshal(res.Body, &mr); err != nil {
			t.Fatal(err)
		}
		merchants = append(merchants, mr)
	}
	next, err := directory.NewSnapshot(snap.Info().GeneratedAt, methods, merchants)
	if err != nil {
		t.Fatal(err)
	}
	before := cache.rendered
	same("a description", next)
	if n := cache.rendered - before; n != 1 {
		t.Errorf("a description: %d rows rendered again, want 1", n)
	}
	if cache.merchants["api.tide.example"] != tide {
		t.Error("a description: the unchanged merchant record was decoded again")
	}
	page := renderPages(t, next, cache)["/categories/blockchain"]
	if !bytes.Contains(page, []byte("Height of the chain&#39;s newest block.")) {
		t.Errorf("the category page does not show the new description:\n%s", page)
	}
	before = cache.rendered
	same("nothing", next)
	if cache.rendered != before {
		t.Errorf("nothing: %d rows rendered again", cache.rendered-before)
	}

	// The rows are in the cache's file, the changed one's first form among them until
	// the file is compacted; after that the pages are the same, and nothing is
	// rendered again.
	if cache.file == nil || cache.size <= cache.live || cache.live == 0 {
		t.Fatalf("the rows' file holds %d bytes, %d of them kept, want the changed row's first form beside them", cache.size, cache.live)
	}
	cache.mu.Lock()
	cache.compact()
	cache.mu.Unlock()
	if cache.size != cache.live {
		t.Errorf("compacted, the rows' file holds %d bytes, %d of them kept", cache.size, cache.live)
	}
	before = cache.rendered
	same("compacted", next)
	if cache.rendered != before {
		t.Errorf("compacted: %d rows rendered again", cache.rendered-before)
	}
}

// A cache whose file cannot be made keeps no rows and renders the same pages.
func TestPageCacheWithoutItsFileRendersEveryRow(t *testing.T) {
	snap := testSnapshot(t)
	cache := NewPageCache(filepath.Join(t.TempDir(), "missing"))
	var rendered []int
	for range 2 {
		before := cache.rendered
		got, want := renderPages(t, snap, cache), renderPages(t, snap, nil)
		for url, body := range want {
			if !bytes.Equal(got[url], body) {
				t.Errorf("%s differs from the page rendered without a cache", url)
			}
		}
		rendered = append(rendered, cache.rendered-before)
	}
	// Every row is rendered for every page that lists it, each time.
	if rendered[0] < snap.Len() || rendered[1] != rendered[0] || cache.file != nil || len(cache.rows) != 0 {
		t.Errorf("rows rendered %v in two renderings of %d methods, %d kept, file %v", rendered, snap.Len(), len(cache.rows), cache.file)
	}
}

// A cache whose file no longer reads (closed here, as a failing disk would fail it)
// renders the rows it kept again as a page is written: the same pages.
func TestPageCacheWhoseFileFailsRendersTheSamePages(t *testing.T) {
	snap := testSnapshot(t)
	cache := NewPageCache(t.TempDir())
	renderPages(t, snap, cache)
	if len(cache.rows) == 0 {
		t.Fatal("no row kept")
	}
	cache.file.Close()
	got, want := renderPages(t, snap, cache), renderPages(t, snap, nil)
	for url, body := range want {
		if !bytes.Equal(got[url], body) {
			t.Errorf("%s differs from the page rendered without a cache", url)
		}
	}
}

// TestRenderToRendersTheSameBytes renders every page into one buffer, reset between
// them, which the longer pages before left grown: the body Render makes each time.
func TestRenderToRendersTheSameBytes(t *testing.T) {
	snap := testSnapshot(t)
	var b bytes.Buffer
	pages := testViews.PageSources(snap)
	for _, p := range append(pages, pages...) {
		want, err := p.Render()
		if err != nil {
			t.Fatal(err)
		}
		b.Reset()
		if err := p.RenderTo(&b); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b.Bytes(), want.Body) {
			t.Errorf("%s: %d bytes rendered into the buffer, Render's %d", p.URL, b.Len(), len(want.Body))
		}
	}
}

// TestPageSourceBatchesAreThePageSourcesInBatches lists a snapshot's pages in batches
// of several sizes and checks that, laid end to end, they are the pages
// PageSourcesKept lists, in its order with the same digests, none longer than asked;
// and that an error from the callee stops the listing, returned as it is.
func TestPageSourceBatchesAreThePageSourcesInBatches(t *testing.T) {
	snap := testSnapshot(t)
	all := testViews.PageSourcesKept(snap, nil)
	for _, n := range []int{1, 3, len(all) - 1, len(all), len(all) + 5} {
		var got []PageSource
		calls := 0
		err := testViews.PageSourceBatches(snap, nil, n, func(batch []PageSource) error {
			calls++
			if len(batch) == 0 || len(batch) > n {
				t.Errorf("batches of %d: a batch of %d", n, len(batch))
			}
			got = append(got, batch...)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if want := (len(all) + n - 1) / n; calls != want {
			t.Errorf("batches of %d: %d batches, want %d", n, calls, want)
		}
		if len(got) != len(all) {
			t.Fatalf("batches of %d: %d pages, want %d", n, len(got), len(all))
		}
		for i := range all {
			if got[i].URL != all[i].URL || got[i].Digest != all[i].Digest {
				t.Errorf("batches of %d: page %d is %s, want %s", n, i, got[i].URL, all[i].URL)
			}
		}
	}
	stop := errors.New("stop")
	calls := 0
	err := testViews.PageSourceBatches(snap, nil, 2, func([]PageSource) error {
		calls++
		return stop
	})
	if err != stop || calls != 1 {
		t.Errorf("after an error: %v, %d calls", err, calls)
	}
}
