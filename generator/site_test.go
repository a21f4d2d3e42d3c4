package generator

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/andybalholm/brotli"
	"github.com/waystation/waystation/internal/directory"
	"github.com/waystation/waystation/internal/resource"
)

// testSnapshot is a small directory with the shapes that matter: scored and unscored
// methods, guidance and none, an override, stats and probe history.
func testSnapshot(t *testing.T, at time.Time, n int) *directory.Snapshot {
	t.Helper()
	var methods []directory.Method
	var merchants []directory.Merchant
	for i := range n {
		host := fmt.Sprintf("api%d.example.com", i%3)
		m := directory.Method{
			Slug: fmt.Sprintf("method-%d", i), Name: fmt.Sprintf("Method %d", i), Provider: "Provider",
			Hostname: host, Description: "Does thing number " + fmt.Sprint(i) + " <carefully> & well.",
			Category: []string{"blockchain", "weather", "data"}[i%3], Kind: "x402", Payable: i%2 == 0,
			Endpoint: directory.Endpoint{Method: "GET", URL: "https://" + host + "/v1/thing"},
			Trust:    directory.Trust{Verdict: directory.VerdictUnknown, Advisory: true},
		}
		if i%2 == 0 {
			score := 50 + i
			net, asset, sym := "eip155:8453", "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913", "USDC"
			amount, dec, val := "1000", 6, "0.001"
			m.Trust = directory.Trust{Verdict: directory.VerdictCaution, Score: &score, Advisory: true, Probe: &directory.Probe{
				Outcome: "payment_required", ProbedAt: at.Add(-time.Hour), AgeSeconds: 3600,
				Network: &net, Asset: &asset, AssetSymbol: &sym,
				Price: &directory.Price{Amount: &amount, Decimals: &dec, Value: &val},
			}}
			m.Guidance = json.RawMessage(`{"summary":"Call it.","request":{"method":"GET","example":"curl x"},"notes":["one"]}`)
			m.Stats = directory.NewStats(10, 9)
		}
		methods = append(methods, m)
	}
	for i := range min(n, 3) {
		host := fmt.Sprintf("api%d.example.com", i)
		mr := directory.Merchant{Hostname: host, Providers: []string{"Provider"}, Trust: directory.Trust{Verdict: "avoid", Advisory: true,
			Override: &directory.Override{Verdict: "avoid", Reason: "Operator says so.", SetAt: at.Add(-time.Hour)}}}
		for _, m := range methods {
			if m.Hostname == host {
				mr.Methods = append(mr.Methods, directory.MerchantEntry{Slug: m.Slug, Name: m.Name, Category: m.Category, Payable: m.Payable})
			}
		}
		status, latency := 402, 120
		mr.Probes = []directory.ProbeRecord{{Outcome: "payment_required", ProbedAt: at.Add(-time.Hour), HTTPStatus: &status, LatencyMS: &latency}}
		merchants = append(merchants, mr)
	}
	snap, err := directory.NewSnapshot(at, methods, merchants)
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

func gunzip(t *testing.T, b []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestPublishWritesEveryResourceWithItsGzipBesideIt(t *testing.T) {
	at := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	snap := testSnapshot(t, at, 7)
	list := snap.List()
	site := Site{Dir: t.TempDir(), Keep: 2}
	dir, err := site.Publish(snap)
	if err != nil {
		t.Fatal(err)
	}
	if site.Current() != dir {
		t.Fatalf("current is %q, published %q", site.Current(), dir)
	}
	check := func(path string, want []byte) {
		t.Helper()
		got, err := os.ReadFile(filepath.Join(dir, path))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from the snapshot's bytes", path)
		}
		gz, err := os.ReadFile(filepath.Join(dir, path+".gz"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(gunzip(t, gz), want) {
			t.Errorf("%s.gz does not hold the same bytes", path)
		}
		br, err := os.ReadFile(filepath.Join(dir, path+".br"))
		if err != nil {
			t.Fatal(err)
		}
		if b, err := io.ReadAll(brotli.NewReader(bytes.NewReader(br))); err != nil || !bytes.Equal(b, want) {
			t.Errorf("%s.br does not hold the same bytes (%v)", path, err)
		}
	}
	check("functions/v1/api/api/public/v1/services/index.json", list.Body)
	if snap.List().Body != nil {
		t.Error("the published snapshot still holds its list's body")
	}
	for _, m := range snap.Methods() {
		res, _ := snap.Method(m.Slug)
		check("functions/v1/api/api/public/v1/services/"+m.Slug, res.Body)
		if _, err := os.Stat(filepath.Join(dir, "methods", m.Slug+".html")); err != nil {
			t.Error(err)
		}
	}
	for _, h := range snap.Hostnames() {
		res, _ := snap.Merchant(h)
		check("functions/v1/api/api/public/v1/merchants/"+h, res.Body)
		if _, err := os.Stat(filepath.Join(dir, "merchants", h+".html")); err != nil {
			t.Error(err)
		}
	}
	for _, p := range []string{"index.html", "categories/weather.html", "problems/verified-reserved.html", "problems/not-found.html"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			t.Error(err)
		}
	}

	var man Manifest
	raw, _ := os.ReadFile(filepath.Join(dir, ManifestName))
	if err := json.Unmarshal(raw, &man); err != nil {
		t.Fatal(err)
	}
	if man.Snapshot != snap.Info() || man.Counts.Methods != 7 || man.Counts.Merchants != 3 {
		t.Errorf("manifest: %+v %+v", man.Snapshot, man.Counts)
	}
	for _, f := range man.Files {
		if f.URL == "/functions/v1/api/api/public/v1/services" && f.ETag != snap.List().ETag {
			t.Errorf("manifest list ETag %s, service %s", f.ETag, snap.List().ETag)
		}
	}
	headers, _ := os.ReadFile(filepath.Join(dir, HeadersName))
	for _, want := range []string{"/functions/v1/api/api/public/v1/*", "Access-Control-Allow-Origin: *", "Cache-Control: public, max-age=300", "Content-Type: application/json; charset=utf-8"} {
		if !strings.Contains(string(headers), want) {
			t.Errorf("_headers lacks %q", want)
		}
	}
	etags, _ := os.ReadFile(filepath.Join(dir, ETagMapName))
	want := fmt.Sprintf("%q %q;", filepath.Base(dir)+" /functions/v1/api/api/public/v1/services", strings.Trim(snap.List().ETag, `"`))
	if !strings.Contains(string(etags), want) {
		t.Errorf("nginx ETag map lacks %s", want)
	}
}

func TestLoadSiteRebuildsTheSameSnapshot(t *testing.T) {
	at := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	snap := testSnapshot(t, at, 9)
	list := snap.List() // in memory: the published snapshot answers it from its files
	site := Site{Dir: t.TempDir()}
	if _, err := site.Publish(snap); err != nil {
		t.Fatal(err)
	}
	got, err := LoadSite(site.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if got.Info() != snap.Info() || got.List().ETag != snap.List().ETag {
		t.Fatalf("loaded %+v, published %+v", got.Info(), snap.Info())
	}
	// The loaded list is answered from the published files, not held.
	for _, ae := range []string{"", "gzip", "br"} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.Header.Set("Accept-Encoding", ae)
		w := httptest.NewRecorder()
		resource.Serve(w, r, got.List(), http.StatusOK)
		want := map[string][]byte{"": list.Body, "gzip": list.Gzip(), "br": list.Brotli()}[ae]
		if got.List().Body != nil || !bytes.Equal(w.Body.Bytes(), want) {
			t.Errorf("the loaded list (%q) holds %d bytes, sends %d of the %d published", ae, len(got.List().Body), w.Body.Len(), len(want))
		}
	}
	for _, m := range snap.Methods() {
		a, _ := snap.Method(m.Slug)
		b, ok := got.Method(m.Slug)
		if !ok || a.ETag != b.ETag {
			t.Errorf("%s: ETag %s after loading, %s before", m.Slug, b.ETag, a.ETag)
		}
	}
}

func TestLoadSiteRefusesATamperedSnapshot(t *testing.T) {
	snap := testSnapshot(t, time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC), 4)
	site := Site{Dir: t.TempDir()}
	dir, err := site.Publish(snap)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, SnapshotName)
	raw, _ := os.ReadFile(p)
	os.WriteFile(p, bytes.Replace(raw, []byte("Method 1"), []byte("Method X"), 1), 0o644)
	if _, err := LoadSite(site.Dir); err == nil {
		t.Fatal("a snapshot that does not match its ID was loaded")
	}
	if _, err := LoadSite(t.TempDir()); err == nil {
		t.Fatal("an empty site directory gave a snapshot")
	}
}

// TestLoadSiteRefusesAListThatIsNotTheSnapshots changes one byte of the published
// list, keeping its length, and checks that the site does not load: the list is
// compared with the rebuilt one by its hash, not held.
func TestLoadSiteRefusesAListThatIsNotTheSnapshots(t *testing.T) {
	snap := testSnapshot(t, time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC), 4)
	site := Site{Dir: t.TempDir()}
	dir, err := site.Publish(snap)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := LoadSite(site.Dir); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, filepath.FromSlash(ListFile))
	raw, _ := os.ReadFile(p)
	changed := bytes.Replace(raw, []byte("Method 1"), []byte("Method X"), 1)
	if bytes.Equal(changed, raw) {
		t.Fatal("the list does not name Method 1")
	}
	if err := os.WriteFile(p, changed, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadSite(site.Dir); err == nil || !strings.Contains(err.Error(), "list differs") {
		t.Fatalf("a list that is not the snapshot's was loaded (%v)", err)
	}
}

// TestServedAnswersTheListFromMemoryWhenItsFilesDoNotOpen serves a snapshot made to
// be published, which does not hold its list's body, from a directory without its
// files, and checks that it still answers its list, every form, made again.
func TestServedAnswersTheListFromMemoryWhenItsFilesDoNotOpen(t *testing.T) {
	held := testSnapshot(t, time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC), 5)
	snap, err := directory.NewSnapshotUnencoded(nil, held.Info().GeneratedAt, slices.Clone(held.Methods()), merchantsOf(t, held))
	if err != nil {
		t.Fatal(err)
	}
	if snap.List().Body != nil || snap.List().ETag != held.List().ETag {
		t.Fatalf("the snapshot to be published holds its list (%v) or is not the same (%s, %s)", snap.List().Body != nil,
			snap.List().ETag, held.List().ETag)
	}
	empty := t.TempDir()
	got := served(snap, empty, empty, resource.NewCache(8), nil, fileTable{})
	want := held.List()
	for _, c := range []struct {
		ae   string
		body []byte
	}{{"", want.Body}, {"gzip", want.Gzip()}, {"br", want.Brotli()}} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.Header.Set("Accept-Encoding", c.ae)
		w := httptest.NewRecorder()
		resource.Serve(w, r, got.List(), http.StatusOK)
		if !bytes.Equal(w.Body.Bytes(), c.body) || w.Header().Get("Content-Length") != fmt.Sprint(len(c.body)) {
			t.Errorf("%q: %d bytes sent, the list's are %d", c.ae, w.Body.Len(), len(c.body))
		}
	}
}

// merchantsOf are the merchant records a snapshot holds.
func merchantsOf(t *testing.T, snap *directory.Snapshot) []directory.Merchant {
	t.Helper()
	var out []directory.Merchant
	for _, h := range snap.Hostnames() {
		res, _ := snap.Merchant(h)
		var mr directory.Merchant
		if err := json.Unmarshal(res.Body, &mr); err != nil {
			t.Fatal(err)
		}
		out = append(out, mr)
	}
	return out
}

// TestPagesListedInBatchesPublishTheSameFiles publishes the same snapshots, one after
// another (the second a change, whose pages the site's page cache renders), into a
// site whose publications list their pages two at a time and into one that lists them
// all at once: every file of each publication must be the same bytes.
func TestPagesListedInBatchesPublishTheSameFiles(t *testing.T) {
	at := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	defer func(n int) { pageBatch = n }(pageBatch)
	once, batched := Site{Dir: t.TempDir(), Keep: 3, Views: testViews}, Site{Dir: t.TempDir(), Keep: 3, Views: testViews}
	for step := range 2 {
		// A snapshot for each site: a published one answers its list from its files.
		snap := func() *directory.Snapshot { return testSnapshot(t, at.Add(time.Duration(step)*time.Minute), 7+step) }
		pageBatch = math.MaxInt
		if _, err := once.Publish(snap()); err != nil {
			t.Fatal(err)
		}
		pageBatch = 2
		if _, err := batched.Publish(snap()); err != nil {
			t.Fatal(err)
		}
		want, got := tree(t, once.Current()), tree(t, batched.Current())
		if len(got) != len(want) || len(want) < 30 {
			t.Fatalf("step %d: %d files listed in batches, %d at once", step, len(got), len(want))
		}
		for p, body := range want {
			if !bytes.Equal(got[p], body) {
				t.Errorf("step %d: %s differs", step, p)
			}
		}
	}
}

// TestAPublicationThatFailsStopsListingItsPages publishes a snapshot one of whose
// files cannot be made (a slug with a NUL byte) while its pages are listed one at a
// time: the publication must return the error, not wait on the listing for ever.
func TestAPublicationThatFailsStopsListingItsPages(t *testing.T) {
	at := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	methods := testSnapshot(t, at, 7).Methods()
	methods = slices.Clone(methods)
	methods[3].Slug = "bad\x00slug"
	snap, err := directory.NewSnapshot(at, methods, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func(n int) { pageBatch = n }(pageBatch)
	pageBatch = 1
	site := Site{Dir: t.TempDir(), Keep: 3, Views: testViews}
	done := make(chan error, 1)
	go func() {
		_, err := site.Publish(snap)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a file that cannot be made was published")
		}
	case <-time.After(time.Minute):
		t.Fatal("the publication did not return")
	}
}

func TestPublishSwapsCurrentAndKeepsTheNewestFew(t *testing.T) {
	site := Site{Dir: t.TempDir(), Keep: 2}
	start := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	var dirs []string
	for i := range 4 {
		dir, err := site.Publish(testSnapshot(t, start.Add(time.Duration(i)*time.Minute), 3+i))
		if err != nil {
			t.Fatal(err)
		}
		if site.Current() != dir {
			t.Fatalf("publish %d: current is %s", i, site.Current())
		}
		dirs = append(dirs, dir)
	}
	site.Wait() // the files the last one replaced are removed after it returns
	entries, _ := os.ReadDir(site.Dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if len(names) != 3 { // current and two snapshots
		t.Fatalf("site holds %v", names)
	}
	for _, d := range dirs[:2] {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("%s was kept", d)
		}
	}
	// Publishing the snapshot in force again changes nothing.
	again, err := site.Publish(testSnapshot(t, start.Add(3*time.Minute), 6))
	if err != nil || again != dirs[3] {
		t.Fatalf("republish: %s, %v", again, err)
	}
}

// TestAScratchGrownForALargePageIsNotKept hands back a scratch that made a small page,
// which the next file takes again, and one grown past keptScratch, which is dropped.
func TestAScratchGrownForALargePageIsNotKept(t *testing.T) {
	var w siteWriter
	small := w.scratch()
	small.body.Grow(64 << 10)
	w.free(small)
	if got := w.scratch(); got != small {
		t.Fatal("the scratch of a small page was not taken again")
	}
	large := w.scratch()
	large.body.Grow(keptScratch + 1)
	w.free(large)
	if len(w.scratches) != 0 {
		t.Errorf("%d scratches kept after a large page's", len(w.scratches))
	}
}

// TestRemoveMovesASpareFileAsideOrUnlinksIt holds siteWriter.remove to taking the file
// out of the spare whatever happens to the trash: moved into it, unlinked when it
// cannot be moved there (a trash another process removed), and nothing for a file
// that is not there; a fresh directory is left alone.
func TestRemoveMovesASpareFileAsideOrUnlinksIt(t *testing.T) {
	dir := t.TempDir()
	file := func(name string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(name), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	trash := filepath.Join(dir, trashPrefix+"1")
	if err := os.Mkdir(trash, 0o755); err != nil {
		t.Fatal(err)
	}
	w := &siteWriter{spare: true, trash: trash}
	moved := file("moved")
	if err := w.remove(moved); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(moved); !os.IsNotExist(err) {
		t.Errorf("%s is still there (%v)", moved, err)
	}
	if entries, _ := os.ReadDir(trash); len(entries) != 1 {
		t.Errorf("the trash holds %d files, want the one moved", len(entries))
	}
	if err := w.remove(moved); err != nil {
		t.Errorf("removing a file that is not there: %v", err)
	}
	w.trash = filepath.Join(dir, trashPrefix+"gone")
	unlinked := file("unlinked")
	if err := w.remove(unlinked); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(unlinked); !os.IsNotExist(err) {
		t.Errorf("%s is still there with its trash gone (%v)", unlinked, err)
	}
	fresh := &siteWriter{}
	kept := file("kept")
	if err := fresh.remove(kept); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(kept); err != nil {
		t.Errorf("a fresh directory's file was removed: %v", err)
	}
}

// TestTableAfterMergesWhatWasKeptAndMade holds tableAfter to the table of the files
// kept and made, in order of path, sharing the paths of the table before when it has
// the same ones.
func TestTableAfterMergesWhatWasKeptAndMade(t *testing.T) {
	entry := func(n int32) fileEntry { return fileEntry{sizes: [3]int32{n}} }
	first, _, _, _ := tableAfter(fileTable{}, nil, map[string]fileEntry{"a": entry(1), "b/c": entry(2), "d": entry(3)})
	for _, c := range []struct {
		name    string
		kept    []bool
		made    map[string]fileEntry
		paths   []string
		sizes   []int32
		from    []int32
		changed []string
		gone    []string
		shared  bool
	}{
		{"one remade", []bool{true, false, true}, map[string]fileEntry{"b/c": entry(9)},
			[]string{"a", "b/c", "d"}, []int32{1, 9, 3}, []int32{0, -1, 2}, []string{"b/c"}, nil, true},
		{"none remade", []bool{true, true, true}, nil,
			[]string{"a", "b/c", "d"}, []int32{1, 2, 3}, []int32{0, 1, 2}, nil, nil, true},
		{"one added, one gone", []bool{true, false, false}, map[string]fileEntry{"b/c": entry(9), "e": entry(5)},
			[]string{"a", "b/c", "e"}, []int32{1, 9, 5}, []int32{0, -1, -1}, []string{"b/c", "d", "e"}, []string{"d"}, false},
		{"one renamed", []bool{true, false, true}, map[string]fileEntry{"bb": entry(7)},
			[]string{"a", "bb", "d"}, []int32{1, 7, 3}, []int32{0, -1, 2}, []string{"b/c", "bb"}, []string{"b/c"}, false},
	} {
		got, from, changed, gone := tableAfter(first, c.kept, c.made)
		var paths []string
		var sizes []int32
		for p, e := range got.all() {
			paths, sizes = append(paths, p), append(sizes, e.sizes[0])
		}
		if !slices.Equal(paths, c.paths) || !slices.Equal(sizes, c.sizes) || !slices.Equal(from, c.from) {
			t.Errorf("%s: paths %q, sizes %v, from %v; want %q, %v, %v", c.name, paths, sizes, from, c.paths, c.sizes, c.from)
		}
		if got := slices.Sorted(maps.Keys(changed)); !slices.Equal(got, c.changed) || !slices.Equal(gone, c.gone) {
			t.Errorf("%s: changed %q, gone %q; want %q, %q", c.name, got, gone, c.changed, c.gone)
		}
		if shared := unsafe.StringData(got.paths) == unsafe.StringData(first.paths); shared != c.shared {
			t.Errorf("%s: paths shared with the table before: %v, want %v", c.name, shared, c.shared)
		}
		for _, p := range c.paths {
			if _, ok := got.get(p); !ok {
				t.Errorf("%s: %s is not found", c.name, p)
			}
		}
	}
}
