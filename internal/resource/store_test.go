package resource

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"
)

// serveStored answers a request for res with Accept-Encoding ae (and If-None-Match inm).
func serveStored(res *Resource, method, ae, inm string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, "/", nil)
	r.Header.Set("Accept-Encoding", ae)
	if inm != "" {
		r.Header.Set("If-None-Match", inm)
	}
	w := httptest.NewRecorder()
	Serve(w, r, res, http.StatusOK)
	return w
}

// TestStoredAnswersAsFromMemory checks that a resource whose encoded forms are left
// in its published files holds none of them, and answers every form, HEAD and
// revalidation with the headers and bytes of the one in memory, read once and then
// from the cache; Encoded gives the forms back in memory.
func TestStoredAnswersAsFromMemory(t *testing.T) {
	body := bytes.Repeat([]byte(`{"slug":"a-method","b":[1,2,3]},`), 40)
	mem := New(JSON, body)
	path := published(t, mem)
	cache := NewCache(8)
	res := mem.Stored(NewStore(filepath.Dir(path), cache), filepath.Base(path))
	if res.Gzip() != nil || res.Brotli() != nil || !bytes.Equal(res.Body, body) || res.ETag != mem.ETag {
		t.Fatalf("stored: gzip held %v, brotli held %v, ETag %s", res.Gzip() != nil, res.Brotli() != nil, res.ETag)
	}
	check := func() {
		t.Helper()
		for _, c := range formsOf(mem) {
			w := serveStored(res, http.MethodGet, c.ae, "")
			if !bytes.Equal(w.Body.Bytes(), c.want) || w.Header().Get("Content-Encoding") != c.coding || w.Header().Get("Etag") != c.etag ||
				w.Header().Get("Content-Length") != strconv.Itoa(len(c.want)) {
				t.Errorf("%s: %d bytes, %v", c.ae, w.Body.Len(), w.Header())
			}
		}
	}
	check()
	if cache.Len() != 2 {
		t.Errorf("%d forms cached, want 2", cache.Len())
	}
	// Cached: the files are not read again.
	for _, x := range []string{".gz", ".br"} {
		if err := os.WriteFile(path+x, []byte("another snapshot's"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	check()
	if w := serveStored(res, http.MethodHead, "gzip", ""); w.Code != 200 || w.Body.Len() != 0 || w.Header().Get("Content-Length") != strconv.Itoa(len(mem.Gzip())) {
		t.Errorf("HEAD: %d, %d bytes, %v", w.Code, w.Body.Len(), w.Header())
	}
	if w := serveStored(res, http.MethodGet, "gzip", mem.ETag); w.Code != http.StatusNotModified || w.Header().Get("Etag") != mem.GzipETag {
		t.Errorf("If-None-Match: %d %v", w.Code, w.Header())
	}
	enc, err := res.Encoded()
	if err != nil || !bytes.Equal(enc.Gzip(), mem.Gzip()) || !bytes.Equal(enc.Brotli(), mem.Brotli()) || enc.ETag != mem.ETag {
		t.Errorf("encoded: %v", err)
	}
	if enc, _ := mem.Encoded(); enc != mem {
		t.Error("a resource in memory was encoded again")
	}
}

// TestStoredEncodesAgainWhatItsFilesDoNotHold checks that a stored form whose file is
// gone, or of another size, is encoded again from the body, byte for byte the form
// published; and that a form that cannot be had at all is not offered: the body
// goes, with its own headers.
// A snapshot of a hundred thousand methods holds as many stored resources, which
// leave their encoded forms in their files: a stored resource has no field for forms
// held in memory or sent from files it opened, only its body, its header values and
// where its files are.
func TestStoredResourceHoldsNoFieldForFormsItNeverHolds(t *testing.T) {
	body := []byte(`{"slug":"weather-now","name":"Weather now"}`)
	res := New(JSON, body).Stored(NewStore(t.TempDir(), NewCache(8)), "m")
	if res.mem != nil || res.Gzip() != nil || res.Brotli() != nil || res.InFiles() {
		t.Fatalf("a stored resource holds forms in memory: %+v", res.mem)
	}
	// Body, the type, three ETags, three lengths, where its files are, the levels.
	const need = unsafe.Sizeof([]byte(nil)) + 7*unsafe.Sizeof("") + unsafe.Sizeof(&stored{}) + unsafe.Sizeof([2]int8{})
	// One pointer more for the forms of the few resources that hold them in memory,
	// and the alignment of the levels.
	const most = need + unsafe.Sizeof(&inMemory{}) + unsafe.Alignof(&stored{}) - unsafe.Sizeof([2]int8{})
	if n := unsafe.Sizeof(*res); n > most {
		t.Fatalf("a stored resource takes %d bytes, where what it holds needs %d (at most %d)", n, need, most)
	}
}

func TestStoredEncodesAgainWhatItsFilesDoNotHold(t *testing.T) {
	body := bytes.Repeat([]byte(`{"hostname":"a.example","methods":[]},`), 30)
	mem := New(JSON, body)
	path := published(t, mem)
	if err := os.Remove(path + ".gz"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path+".br", []byte("short"), 0o644); err != nil {
		t.Fatal(err)
	}
	res := mem.Stored(NewStore(filepath.Dir(path), NewCache(8)), filepath.Base(path))
	if w := serveStored(res, http.MethodGet, "gzip", ""); !bytes.Equal(w.Body.Bytes(), mem.Gzip()) || w.Header().Get("Etag") != mem.GzipETag {
		t.Errorf("gzip: %d bytes, %v", w.Body.Len(), w.Header())
	}
	if w := serveStored(res, http.MethodGet, "br", ""); !bytes.Equal(w.Body.Bytes(), mem.Brotli()) || w.Header().Get("Etag") != mem.BrotliETag {
		t.Errorf("brotli: %d bytes, %v", w.Body.Len(), w.Header())
	}
	// Made at the best levels, its forms are made again at those.
	best := NewLevels(JSON, body, Best)
	res = best.Stored(NewStore(t.TempDir(), NewCache(8)), "gone")
	if enc, err := res.Encoded(); err != nil || !bytes.Equal(enc.Gzip(), best.Gzip()) || !bytes.Equal(enc.Brotli(), best.Brotli()) {
		t.Errorf("encoded at the best levels: %v", err)
	}
	// A form of a size nothing makes.
	res.lengths[gzipForm] = "1"
	w := serveStored(res, http.MethodGet, "gzip", "")
	if !bytes.Equal(w.Body.Bytes(), body) || w.Header().Get("Content-Encoding") != "" || w.Header().Get("Etag") != best.ETag ||
		w.Header().Get("Content-Length") != strconv.Itoa(len(body)) {
		t.Errorf("a form that cannot be had: %d bytes, %v", w.Body.Len(), w.Header())
	}
	if _, err := res.Encoded(); err == nil {
		t.Error("Encoded made a form of another size than the published one")
	}
}

// TestServeStoredDoesNotAllocate checks that a stored form the cache holds is served
// without garbage, as one in memory is.
func TestServeStoredDoesNotAllocate(t *testing.T) {
	mem := New(JSON, bytes.Repeat([]byte(`{"slug":"a-method"},`), 40))
	path := published(t, mem)
	res := mem.Stored(NewStore(filepath.Dir(path), NewCache(8)), filepath.Base(path))
	w := &discard{h: http.Header{}}
	for _, ae := range []string{"gzip", "br", ""} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.Header.Set("Accept-Encoding", ae)
		Serve(w, r, res, http.StatusOK) // read into the cache
		if n := testing.AllocsPerRun(100, func() { clear(w.h); Serve(w, r, res, http.StatusOK) }); n != 0 {
			t.Errorf("%q: %v allocations", ae, n)
		}
	}
}

// TestStoredHoldsNothingOfTheResourceItWasMadeFrom checks that resources stored
// together are made in a store's blocks: once the resource a stored one was made from
// is dropped, its body and header values are collected, while the stored one answers
// as it did.
func TestStoredHoldsNothingOfTheResourceItWasMadeFrom(t *testing.T) {
	dir := t.TempDir()
	st := NewStore(dir, NewCache(8))
	var (
		stored []*Resource
		want   [][]form
		freed  atomic.Int32
	)
	for i := range 50 {
		mem := New(JSON, bytes.Repeat([]byte(fmt.Sprintf(`{"slug":"m-%d"},`, i)), 10+i))
		name := strconv.Itoa(i)
		for j, b := range [...][]byte{mem.Body, mem.Gzip(), mem.Brotli()} {
			if err := os.WriteFile(filepath.Join(dir, name+suffixes[j]), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		forms := formsOf(mem)
		for j := range forms { // copies: the test must not hold what it checks is freed
			forms[j].etag, forms[j].want = strings.Clone(forms[j].etag), bytes.Clone(forms[j].want)
		}
		want = append(want, forms)
		stored = append(stored, mem.Stored(st, name))
		runtime.AddCleanup(&mem.Body[0], func(*atomic.Int32) { freed.Add(1) }, &freed)
		runtime.AddCleanup(unsafe.StringData(mem.ETag), func(*atomic.Int32) { freed.Add(1) }, &freed)
	}
	for range 20 {
		if runtime.GC(); freed.Load() == 100 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := freed.Load(); n != 100 {
		t.Errorf("%d of the 100 bodies and header values made first were collected", n)
	}
	for i, res := range stored {
		for _, c := range want[i] {
			w := serveStored(res, http.MethodGet, c.ae, "")
			if !bytes.Equal(w.Body.Bytes(), c.want) || w.Header().Get("Etag") != c.etag ||
				w.Header().Get("Content-Length") != strconv.Itoa(len(c.want)) {
				t.Errorf("%d %s: %d bytes, %v", i, c.ae, w.Body.Len(), w.Header())
			}
		}
	}
}

// form is one of a resource's forms as a client asks for it (ae) and is answered.
type form struct {
	ae, coding, etag string
	want             []byte
}

// formsOf is every form of r: its body, its gzip and its brotli.
func formsOf(r *Resource) []form {
	return []form{
		{"identity", "", r.ETag, r.Body},
		{"gzip", "gzip", r.GzipETag, r.Gzip()},
		{"br, gzip", "br", r.BrotliETag, r.Brotli()},
	}
}

// TestStoredHoldsCopiesOfItsNameAndCacheKeys checks that a stored resource keeps
// nothing of what it was made from (its name is a copy in its store's block) and that
// a form it caches is keyed by a copy of its ETag, not by that block, which a cache
// serving snapshot after snapshot would keep alive.
func TestStoredHoldsCopiesOfItsNameAndCacheKeys(t *testing.T) {
	mem := New(JSON, bytes.Repeat([]byte(`{"slug":"a-method","name":"A method"},`), 40))
	path := published(t, mem)
	cache := NewCache(8)
	name := strings.Clone(filepath.Base(path))
	res := mem.Stored(NewStore(filepath.Dir(path), cache), name)
	if unsafe.StringData(res.at.name) == unsafe.StringData(name) || res.at.name != name {
		t.Errorf("the stored name %q is the one it was given, not a copy", res.at.name)
	}
	if w := serveStored(res, http.MethodGet, "gzip", ""); !bytes.Equal(w.Body.Bytes(), mem.Gzip()) {
		t.Fatalf("gzip: %d bytes", w.Body.Len())
	}
	keys := cache.lru.Keys()
	if len(keys) != 1 || keys[0] != res.GzipETag || unsafe.StringData(keys[0]) == unsafe.StringData(res.GzipETag) {
		t.Errorf("cache keys %q: want a copy of %s", keys, res.GzipETag)
	}
}

// TestBodyStoreLeavesBodiesInFiles checks that a resource of a body store holds no
// body, answers every form and HEAD as the one in memory (a small body from the
// cache, a large one sent from its file, over a connection as to a test recorder),
// gives its body to Bytes and Encoded, tells its body by Holds without reading it,
// and, once its files are gone, answers nothing and says why.
func TestBodyStoreLeavesBodiesInFiles(t *testing.T) {
	for _, n := range []int{40, 4000} {
		body := bytes.Repeat([]byte(fmt.Sprintf(`{"hostname":"a.example","methods":[%d]},`, n)), n)
		mem := New(JSON, body)
		path := published(t, mem)
		cache := NewCache(8)
		res := mem.Stored(NewBodyStore(filepath.Dir(path), cache), filepath.Base(path))
		if res.Body != nil || res.ETag != mem.ETag {
			t.Fatalf("%d: body held %v, ETag %s", len(body), res.Body != nil, res.ETag)
		}
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if err := Serve(w, r, res, http.StatusOK); err != nil {
				t.Error(err)
			}
		}))
		for _, c := range formsOf(mem) {
			w := serveStored(res, http.MethodGet, c.ae, "")
			if !bytes.Equal(w.Body.Bytes(), c.want) || w.Header().Get("Content-Encoding") != c.coding || w.Header().Get("Etag") != c.etag ||
				w.Header().Get("Content-Length") != strconv.Itoa(len(c.want)) {
				t.Errorf("%d %s: %d bytes, %v", len(body), c.ae, w.Body.Len(), w.Header())
			}
			if w := serveStored(res, http.MethodHead, c.ae, ""); w.Code != 200 || w.Body.Len() != 0 || w.Header().Get("Content-Length") != strconv.Itoa(len(c.want)) {
				t.Errorf("%d %s HEAD: %d, %d bytes, %v", len(body), c.ae, w.Code, w.Body.Len(), w.Header())
			}
			req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
			req.Header.Set("Accept-Encoding", c.ae)
			resp, err := http.DefaultTransport.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || !bytes.Equal(got, c.want) || resp.Header.Get("Etag") != c.etag {
				t.Errorf("%d %s over a connection: %d bytes, %v, %v", len(body), c.ae, len(got), resp.Header, err)
			}
		}
		srv.Close()
		if got, err := res.Bytes(); err != nil || !bytes.Equal(got, body) {
			t.Errorf("%d: Bytes: %d bytes, %v", len(body), len(got), err)
		}
		if !res.Holds(body) || res.Holds(body[1:]) || !mem.Holds(body) || mem.Holds(body[1:]) {
			t.Errorf("%d: Holds does not tell its body from another", len(body))
		}
		enc, err := res.Encoded()
		if err != nil || !bytes.Equal(enc.Body, body) || !bytes.Equal(enc.Gzip(), mem.Gzip()) || !bytes.Equal(enc.Brotli(), mem.Brotli()) {
			t.Errorf("%d: Encoded: %v", len(body), err)
		}
		// Its files gone (a damaged site), the cache's forms still answer; any other
		// asks its caller to answer.
		for _, x := range suffixes {
			os.Remove(path + x)
		}
		cached := len(body) <= MaxCached
		if _, err := res.Bytes(); (err == nil) != cached {
			t.Errorf("%d: Bytes of a body whose file is gone: %v", len(body), err)
		}
		w := httptest.NewRecorder()
		w.Header().Set("Cache-Control", "public, max-age=60")
		err = Serve(w, httptest.NewRequest(http.MethodGet, "/", nil), res, http.StatusOK)
		if cached {
			if err != nil || !bytes.Equal(w.Body.Bytes(), body) {
				t.Errorf("%d: the body from the cache: %v", len(body), err)
			}
		} else if err == nil || w.Body.Len() != 0 || w.Header().Get("Etag") != "" || w.Header().Get("Content-Length") != "" {
			t.Errorf("%d: files gone: %v, %d bytes written, %v", len(body), err, w.Body.Len(), w.Header())
		}
	}
}

// TestCacheHoldsAtMostItsBytes checks that the cache drops the forms asked for least
// lately once it holds more than its bytes, and counts what it holds as it goes.
func TestCacheHoldsAtMostItsBytes(t *testing.T) {
	c := NewCache(1000)
	c.most = 10 << 10
	for i := range 30 {
		c.add(strconv.Itoa(i), make([]byte, 1<<10))
		c.add(strconv.Itoa(i), make([]byte, 1<<10)) // again: counted once
	}
	if c.Len() != 10 || c.held.Load() != 10<<10 {
		t.Errorf("%d forms, %d bytes held; want the last 10, 10 KiB", c.Len(), c.held.Load())
	}
	if _, ok := c.lru.Get("29"); !ok {
		t.Error("the last form added was dropped")
	}
	if _, ok := c.lru.Get("19"); ok {
		t.Error("a form asked for before the last 10 is kept")
	}
}

// TestCarrySharesWhatAnotherStoreHolds checks that a store carrying from the one
// before shares the bytes of the resources stored there, which answer from its own
// directory, copies the rest, and, generation after generation of a tenth replaced,
// copies all again once the blocks kept alive would hold more than an eighth over
// what its resources need: what the first copies were made in is then collected.
func TestCarrySharesWhatAnotherStoreHolds(t *testing.T) {
	const n = 20
	mems := make([]*Resource, n)
	for i := range mems {
		mems[i] = New(JSON, bytes.Repeat([]byte(fmt.Sprintf(`{"slug":"m-%d"},`, i)), 20+i))
	}
	// Each generation's directory holds every form of its resources; the one before
	// is emptied once the next is served, as a spare is rewritten.
	publish := func(res []*Resource) string {
		dir := t.TempDir()
		for i, r := range res {
			for j, b := range [...][]byte{r.Body, r.Gzip(), r.Brotli()} {
				if err := os.WriteFile(filepath.Join(dir, strconv.Itoa(i)+suffixes[j]), b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
		return dir
	}
	cache := NewCache(1) // forms are read from the files
	dir := publish(mems)
	first := NewStore(dir, cache)
	if first.Carry(slices.Values(mems)) {
		t.Error("a store carries from none")
	}
	stored := make([]*Resource, n)
	for i, m := range mems {
		stored[i] = m.Stored(first, strconv.Itoa(i))
	}
	var freed atomic.Bool
	runtime.AddCleanup(&stored[0].Body[0], func(*atomic.Bool) { freed.Store(true) }, &freed)
	var need int64
	for _, m := range mems {
		need += first.copies(m)
	}
	copied := 0
	for gen := 1; copied == 0; gen++ {
		if gen > 20 {
			t.Fatal("the stores never copied all again")
		}
		// A tenth replaced: resources made anew beside the ones stored before.
		next := slices.Clone(stored)
		for k := range 2 {
			i := (2*gen + k) % n
			mems[i] = New(JSON, bytes.Repeat([]byte(fmt.Sprintf(`{"slug":"m-%d","gen":%d},`, i, gen)), 20+i))
			next[i] = mems[i]
		}
		old := dir
		dir = publish(next)
		st := NewStore(dir, cache)
		carried := st.Carry(slices.Values(next))
		for i, r := range next {
			next[i] = r.Stored(st, strconv.Itoa(i))
			shared := unsafe.SliceData(next[i].Body) == unsafe.SliceData(r.Body) && unsafe.StringData(next[i].ETag) == unsafe.StringData(r.ETag)
			if want := carried && r.at != nil; shared != want {
				t.Errorf("generation %d, %d: shares its bytes %v, want %v", gen, i, shared, want)
			}
			if next[i].at.st != st || next[i].at.name != strconv.Itoa(i) {
				t.Errorf("generation %d, %d: stored in %p as %q, want %p", gen, i, next[i].at.st, next[i].at.name, st)
			}
		}
		if held := st.made + st.kept; held > need+need/8+n*2 {
			t.Errorf("generation %d: the blocks kept alive hold %d bytes, more than an eighth over %d", gen, held, need)
		}
		if !carried {
			copied = gen
		}
		if err := os.RemoveAll(old); err != nil {
			t.Fatal(err)
		}
		stored = next
		for i, r := range stored {
			for _, c := range formsOf(mems[i]) {
				if w := serveStored(r, http.MethodGet, c.ae, ""); !bytes.Equal(w.Body.Bytes(), c.want) || w.Header().Get("Etag") != c.etag {
					t.Errorf("generation %d, %d %s: %d bytes, %v", gen, i, c.ae, w.Body.Len(), w.Header())
				}
			}
		}
	}
	if copied < 2 {
		t.Errorf("copied all again at generation %d: it carried from none", copied)
	}
	for range 20 {
		if runtime.GC(); freed.Load() {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !freed.Load() {
		t.Error("the first store's block was not collected once every resource was copied again")
	}
	// Carried under another name, a resource shares its bytes and takes a copy of the name.
	again := NewStore(dir, cache)
	name := strings.Clone("renamed")
	if !again.Carry(slices.Values(stored)) {
		t.Fatal("a store does not carry from the one just copied whole")
	}
	if r := stored[3].Stored(again, name); r.at.name != name || unsafe.StringData(r.at.name) == unsafe.StringData(name) ||
		unsafe.SliceData(r.Body) != unsafe.SliceData(stored[3].Body) {
		t.Errorf("carried as %q: not a copy of its new name, or not the same body", r.at.name)
	}
	// A store that leaves bodies in their files does not share a body held in memory.
	bodies := NewBodyStore(dir, cache)
	if bodies.Carry(slices.Values(stored)) {
		t.Error("a body store carries from a store that holds bodies")
	}
	if r := stored[1].Stored(bodies, "1"); r.Body != nil || unsafe.StringData(r.ETag) == unsafe.StringData(stored[1].ETag) {
		t.Error("a body store's resource holds a body, or shares header values it did not carry")
	}
}
