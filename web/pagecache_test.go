package web

import (
	"bytes"
	"encoding/json"
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
	cache := NewPageCache()
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
}
