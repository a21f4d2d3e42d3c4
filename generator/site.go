package generator

import (
	"bufio"
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"log/slog"
	"maps"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/waystation/waystation/internal/directory"
	"github.com/waystation/waystation/internal/jsonstr"
	"github.com/waystation/waystation/internal/parallel"
	"github.com/waystation/waystation/internal/resource"
	"github.com/waystation/waystation/web"
)

// Paths of the directory routes in the site, mirroring their URLs. The unfiltered
// list cannot be a file named like its URL, since the slugs live beneath it: it is
// services/index.json, which a web server maps to the extension-less path. Slugs and
// merchants are extension-less files named exactly like their URLs.
const (
	apiRoot      = "functions/v1/api/api/public/v1"
	ListFile     = apiRoot + "/services/index.json"
	servicesDir  = apiRoot + "/services/"
	merchantsDir = apiRoot + "/merchants/"
)

// Files of a published site that are not served: the manifest, the machine-readable
// snapshot the server boots from, and the ETag map of the nginx example.
const (
	ManifestName = "manifest.json"
	SnapshotName = "snapshot.json"
	HeadersName  = "_headers"
	ETagMapName  = "nginx-etags.conf"
	CurrentLink  = "current"
	snapPrefix   = "snapshot-"
	trashPrefix  = ".trash-"
)

// cacheFiles is the caching of the site's files.
const cacheFiles = "public, max-age=300"

// Manifest describes one published site: the snapshot it holds and every served file.
type Manifest struct {
	Snapshot directory.Info `json:"snapshot"`
	Counts   ManifestCounts `json:"counts"`
	Files    []ManifestFile `json:"files"`
}

// ManifestCounts says how much a site holds.
type ManifestCounts struct {
	Methods   int `json:"methods"`
	Merchants int `json:"merchants"`
	Pages     int `json:"pages"`
	Files     int `json:"files"`
	Bytes     int `json:"bytes"`
}

// ManifestFile is one served file: its URL path, type, size, hash and the ETags the
// live service gives its three representations (identity, gzip and brotli).
type ManifestFile struct {
	URL         string `json:"url"`
	Path        string `json:"path"`
	ContentType string `json:"content_type"`
	Bytes       int    `json:"bytes"`
	GzipBytes   int    `json:"gzip_bytes"`
	BrotliBytes int    `json:"brotli_bytes"`
	SHA256      string `json:"sha256"`
	ETag        string `json:"etag"`
	GzipETag    string `json:"gzip_etag"`
	BrotliETag  string `json:"brotli_etag"`
	// Source names what a page was rendered from (the digest of its sources), so that
	// a publisher that reads the manifest renders again only the pages whose sources
	// changed; the other files are made from their body, which their ETag names.
	Source string `json:"source,omitempty"`
}

// Site is a directory of published snapshots: each in its own subdirectory, the one in
// force named by the symbolic link current, swapped atomically.
//
// A Site publishes what changed: it remembers each file of the snapshot it published
// last and what the file was made from (a body, by its ETag; a page, by the digest of
// its sources), and the directory in force before that one, which then serves nothing.
// The next snapshot is written into that spare directory, where only the files that
// differ are written (rendered first, for a page, unless the directory in force has it,
// when it is linked from there) and the files it no longer has are removed; then it
// is renamed and made current. A Site that published nothing yet (as after a start)
// writes a fresh directory, linking what it can from the one in force, which its
// manifest describes.
type Site struct {
	Dir string
	// Keep is how many published snapshots stay on disk, the current one included; with
	// fewer than 2 there is no spare, and every snapshot gets a fresh directory.
	Keep int
	// Views builds the pages written beside the JSON.
	Views web.Views

	last *published
	// pages keeps the pages' rows and merchant records from one publication to the
	// next; a publication that writes every file (a first one, with nothing to link
	// from) fills none, so that a full build holds no row of every method.
	pages *web.PageCache
	// cleaned is closed once the files the last publication moved aside are removed
	// (see siteWriter.remove); nil when it moved none.
	cleaned chan struct{}
}

// published is what a Site knows of the directory it published last.
type published struct {
	name  string
	files fileTable // served files by path
	// away, when set, holds files instead, between publications (see Site.Rest);
	// count is how many there are.
	away  *spilledTable
	count int
	// changed are the paths whose file that publication wrote, linked or removed: the
	// directory before it (before, "" when there is none) has every file of this one
	// but these.
	changed map[string]bool
	before  string
	written int // files it made and wrote, the others being kept or linked
	// manifest is where each file's entry lies in its manifest.
	manifest manifestSpans
}

// fileEntry is one served file: what it was made from, and what its manifest entry
// is made from (its ETags are its body's hash's, see resource.NewIdentity), held
// small: a site of a hundred thousand methods has hundreds of thousands.
type fileEntry struct {
	source      sourceID
	url         urlKind
	contentType contentType
	sum         [sha256.Size]byte
	sizes       [3]int32 // of the body, its gzip and its brotli
}

// contentType is one of the few content types a site's files have, by its position
// in the process's table of those met, so that each entry holds a byte, not a string.
type contentType uint8

// contentTypes are the content types met, by contentType.
var contentTypes = struct {
	sync.Mutex
	names []string
}{names: []string{resource.JSON, resource.HTML}}

// typeHTML is resource.HTML's.
const typeHTML contentType = 1

// typeOf is the contentType of name, added to the table when it is new; an error when
// the table is full.
func typeOf(name string) (contentType, error) {
	contentTypes.Lock()
	defer contentTypes.Unlock()
	if i := slices.Index(contentTypes.names, name); i >= 0 {
		return contentType(i), nil
	}
	if len(contentTypes.names) > math.MaxUint8 {
		return 0, fmt.Errorf("more than %d content types", math.MaxUint8+1)
	}
	contentTypes.names = append(contentTypes.names, name)
	return contentType(len(contentTypes.names) - 1), nil
}

// String is the content type's name.
func (t contentType) String() string {
	contentTypes.Lock()
	defer contentTypes.Unlock()
	return contentTypes.names[t]
}

// fileTable is what a site remembers of the files it published, sorted by path, in
// few allocations, which it holds as long as it serves them: every path one after
// another in one string, and the entries in one slice. At a hundred thousand methods
// a map of them held 44 MB, its two hundred thousand paths each a string of its own.
type fileTable struct {
	paths   string
	ends    []uint32 // where each entry's path ends in paths
	entries []fileEntry
}

// tableAfter is the table of a publication after the one whose table is last: the
// files of last that kept marks, by position, and made, the files it made. from is,
// for each of its entries, the position of the same entry in last, -1 for one made;
// changed are the paths whose file differs from last's (made, or gone; none when last
// is empty, as for a first publication, which then holds no map of every path), and
// gone those of last it does not have. It merges the two in order, rather than
// sorting every path again. A publication that neither adds a path nor drops one, as
// most changes, shares last's paths rather than copying them (10 MB at a hundred
// thousand methods): a table's paths are never written once it is made.
func tableAfter(last fileTable, kept []bool, made map[string]fileEntry) (t fileTable, from []int32, changed map[string]bool, gone []string) {
	sorted := slices.Sorted(maps.Keys(made))
	n, size := len(sorted), 0
	for _, p := range sorted {
		size += len(p)
	}
	same, remade := last.len() > 0, 0
	for i, k := range kept {
		if k {
			n++
			size += len(last.path(i))
		} else if _, ok := made[last.path(i)]; ok {
			remade++
		} else {
			same = false
		}
	}
	same = same && remade == len(made)
	var b strings.Builder
	if !same {
		b.Grow(size)
		t.ends = make([]uint32, 0, n)
	}
	t.entries, from = make([]fileEntry, 0, n), make([]int32, 0, n)
	if last.len() > 0 {
		changed = make(map[string]bool, len(made))
	}
	add := func(p string, e fileEntry, k int) {
		if !same {
			b.WriteString(p)
			t.ends = append(t.ends, uint32(b.Len()))
		}
		t.entries, from = append(t.entries, e), append(from, int32(k))
		if k < 0 && changed != nil {
			changed[p] = true
		}
	}
	j := 0
	for i := range last.entries {
		p := last.path(i)
		for ; j < len(sorted) && sorted[j] < p; j++ {
			add(sorted[j], made[sorted[j]], -1)
		}
		switch {
		case j < len(sorted) && sorted[j] == p:
			add(sorted[j], made[p], -1)
			j++
		case kept[i]:
			add(p, last.entries[i], i)
		default:
			p = strings.Clone(p) // not last's paths, which go
			changed[p] = true
			gone = append(gone, p)
		}
	}
	for ; j < len(sorted); j++ {
		add(sorted[j], made[sorted[j]], -1)
	}
	t.paths = b.String()
	if same {
		t.paths, t.ends = last.paths, last.ends
	}
	return t, from, changed, gone
}

func (t fileTable) len() int { return len(t.entries) }

// path is the path of entry i.
func (t fileTable) path(i int) string {
	start := uint32(0)
	if i > 0 {
		start = t.ends[i-1]
	}
	return t.paths[start:t.ends[i]]
}

// get is the entry of path.
func (t fileTable) get(path string) (fileEntry, bool) {
	i, ok := t.find(path)
	if !ok {
		return fileEntry{}, false
	}
	return t.entries[i], true
}

// find is the position of path's entry.
func (t fileTable) find(path string) (int, bool) {
	return sort.Find(len(t.entries), func(i int) int { return strings.Compare(path, t.path(i)) })
}

// all are the paths and entries in order of path.
func (t fileTable) all() iter.Seq2[string, fileEntry] {
	return func(yield func(string, fileEntry) bool) {
		for i := range t.entries {
			if !yield(t.path(i), t.entries[i]) {
				return
			}
		}
	}
}

// sourceID names what a file is made from: the first bytes of its body's hash (what
// its ETag says), or of its page's digest.
type sourceID [18]byte

// urlKind is how a file's URL follows from its path (see urlOf), so that the URL of
// each of hundreds of thousands of files is not held.
type urlKind uint8

const (
	urlPath urlKind = iota // "/" + path
	urlPage                // the page pagePath names
	urlList                // the list's
)

// kindOf is how url follows from path.
func kindOf(url, path string) (urlKind, bool) {
	for _, k := range [...]urlKind{urlPath, urlPage, urlList} {
		if urlIs(url, path, k) {
			return k, true
		}
	}
	return 0, false
}

// urlIs is whether url is urlOf(path, k), told without making it: a publication
// asks it of every file.
func urlIs(url, path string, k urlKind) bool {
	switch k {
	case urlPage:
		if path == "index.html" {
			return url == "/"
		}
		path = strings.TrimSuffix(path, ".html")
	case urlList:
		path = strings.TrimSuffix(path, "/index.json")
	}
	return len(url) == len(path)+1 && url[0] == '/' && url[1:] == path
}

func urlOf(path string, k urlKind) string {
	var a [128]byte
	return string(appendURL(a[:0], path, k))
}

// appendURL appends urlOf(path, k) to dst.
func appendURL(dst []byte, path string, k urlKind) []byte {
	dst = append(dst, '/')
	switch k {
	case urlPage:
		if path == "index.html" {
			return dst
		}
		return append(dst, strings.TrimSuffix(path, ".html")...)
	case urlList:
		return append(dst, strings.TrimSuffix(path, "/index.json")...)
	}
	return append(dst, path...)
}

// manifestFile is the file's manifest entry; path is where it is.
func (e fileEntry) manifestFile(path string) ManifestFile {
	tag := base64.RawURLEncoding.EncodeToString(e.sum[:18])
	f := ManifestFile{
		URL: urlOf(path, e.url), Path: path, ContentType: e.contentType.String(), Bytes: int(e.sizes[0]), GzipBytes: int(e.sizes[1]),
		BrotliBytes: int(e.sizes[2]), SHA256: hex.EncodeToString(e.sum[:]), ETag: `"` + tag + `"`, GzipETag: `"` + tag + `-gzip"`,
		BrotliETag: `"` + tag + `-br"`,
	}
	if e.source != sourceID(e.sum[:18]) {
		f.Source = base64.RawURLEncoding.EncodeToString(e.source[:])
	}
	return f
}

// Publish writes the snapshot's files into a directory of their own, syncs them to
// disk and makes it current, then removes all but the newest Keep published
// snapshots. It returns the new directory. Pages are written as they are rendered,
// and the list as its bytes are made, so memory holds the snapshot and little more:
// its list, once written, is answered from its files (see
// directory.Snapshot.ListFrom), its body not held.
func (s *Site) Publish(snap *directory.Snapshot) (string, error) {
	return s.publish(snap, nil)
}

// publish is Publish calling ready, when not nil, with what the directory holds
// while it goes to disk, before it is made current: the files were written in
// written and are served from dir (see served). It is not called when the
// publication fails first; for a snapshot published already, with written dir.
func (s *Site) publish(snap *directory.Snapshot, ready func(written, dir string, files fileTable)) (string, error) {
	info := snap.Info()
	s.Wait()
	if err := os.MkdirAll(s.Dir, 0o755); err != nil {
		return "", fmt.Errorf("generator: site: %w", err)
	}
	name := snapPrefix + info.GeneratedAt.UTC().Format("20060102T150405Z") + "-" + info.ID
	last := s.inForce()
	if _, err := os.Stat(filepath.Join(s.Dir, name)); err == nil {
		return s.republish(name, last, ready)
	}
	// Until this publication succeeds, the next starts afresh: the spare is moved here.
	s.last = nil
	w, err := s.newWriter(name, last)
	if err != nil {
		return "", err
	}
	if w.trash != "" {
		defer s.clean()
	}
	defer os.RemoveAll(w.dir)
	if err := w.writeAll(snap); err != nil {
		return "", err
	}
	var lastFiles fileTable
	if last != nil {
		lastFiles = last.files
	}
	table, from, changed, gone := tableAfter(lastFiles, w.kept, w.files)
	w.files, w.kept = nil, nil
	if err := w.removeGone(gone, table); err != nil {
		return "", err
	}
	spans, err := w.writeIndexes(snap, name, table, from, last)
	if err != nil {
		return "", err
	}
	// The table of the directory in force, which the manifest was the last to read, is
	// not held from here on (nor last, lastFiles or from, which are not read again),
	// while what serves this directory is made beside the snapshot in force.
	next := &published{name: name, files: table, count: table.len(), manifest: spans}
	if last != nil {
		next.before, next.changed = last.name, changed
	}
	w.last = nil
	final, err := s.install(w, name, table, ready)
	if err != nil {
		return "", err
	}
	next.written = int(w.written.Load())
	s.last = next
	s.prune(name, next.before)
	return final, nil
}

// inForce is what the current directory holds: the last publication's, unless
// another publisher made another directory current or this site published none yet
// (a process that starts finds the one its last run published), when it is read
// from that directory's manifest; nil when it does not read.
func (s *Site) inForce() *published {
	cur := s.Current()
	if s.last != nil && filepath.Base(cur) == s.last.name {
		if !s.last.back() {
			s.last = nil
			return nil
		}
		return s.last
	}
	if cur == "" {
		return nil
	}
	files, err := readManifest(cur)
	if err != nil {
		return nil
	}
	return &published{name: filepath.Base(cur), files: files, count: files.len()}
}

// republish makes current the snapshot name, published already (the ID hashes every
// body): what it holds is read from its manifest, unless it is the one in force
// (last), known already; when the manifest does not read, the next publication
// starts afresh.
func (s *Site) republish(name string, last *published, ready func(written, dir string, files fileTable)) (string, error) {
	final := filepath.Join(s.Dir, name)
	s.last = last
	if last == nil || last.name != name {
		s.last = nil
		if files, err := readManifest(final); err == nil {
			s.last = &published{name: name, files: files, count: files.len()}
		}
	}
	if err := s.link(name); err != nil {
		return "", err
	}
	if ready != nil {
		ready(final, final, s.files())
	}
	return final, nil
}

// newWriter is a writer of the snapshot name after last, the publication in force
// (nil when none is known). It writes into the spare, the directory published
// before last, which holds last's files but those it changed, when Keep leaves room
// for it; else into a new directory. With last known, pages are rendered through
// the site's page cache.
func (s *Site) newWriter(name string, last *published) (*siteWriter, error) {
	w := &siteWriter{views: s.Views, made: map[string]bool{}, files: map[string]fileEntry{}, last: last}
	if last != nil {
		w.cur = filepath.Join(s.Dir, last.name)
		w.kept = make([]bool, last.files.len())
		if s.pages == nil {
			s.pages = web.NewPageCache(s.Dir)
		}
		w.pages = s.pages
	} else {
		s.pages = nil
	}
	if last != nil && last.before != "" && s.Keep >= 2 {
		w.dir = filepath.Join(s.Dir, ".tmp-"+name)
		if err := os.Rename(filepath.Join(s.Dir, last.before), w.dir); err == nil {
			w.spare = true
			if trash, err := os.MkdirTemp(s.Dir, trashPrefix); err == nil {
				w.trash = trash
			}
		}
	}
	if !w.spare {
		tmp, err := os.MkdirTemp(s.Dir, ".tmp-")
		if err != nil {
			return nil, fmt.Errorf("generator: site: %w", err)
		}
		w.dir = tmp
	}
	return w, nil
}

// writeIndexes writes the files that describe the snapshot name's directory: its
// manifest, snapshot, ETag map and headers, each as it is encoded (at a hundred
// thousand methods the entries, the snapshot and the manifest are hundreds of
// megabytes, written side by side). The manifest's entries that did not change
// (from) are copied from the manifest in force, last's. It answers where each
// file's entry lies in the manifest.
func (w *siteWriter) writeIndexes(snap *directory.Snapshot, name string, table fileTable, from []int32, last *published) (manifestSpans, error) {
	for _, name := range [...]string{ManifestName, SnapshotName, ETagMapName, HeadersName} {
		if err := w.remove(filepath.Join(w.dir, name)); err != nil {
			return manifestSpans{}, fmt.Errorf("generator: site: %w", err)
		}
	}
	var spans manifestSpans
	extra := []struct {
		name  string
		write func(*bufio.Writer) error
	}{
		{SnapshotName, func(b *bufio.Writer) error { return writeSnapshot(b, snap) }},
		{ETagMapName, func(b *bufio.Writer) error { writeETagMap(b, name, table); return nil }},
		{HeadersName, func(b *bufio.Writer) error { _, err := b.Write(headersFile(table)); return err }},
	}
	err := parallel.For(1+len(extra), func(i int) error {
		if i == 0 {
			var err error
			spans, err = writeManifest(filepath.Join(w.dir, ManifestName), snap, table, from, last, w.cur)
			return err
		}
		e := extra[i-1]
		return writeFile(filepath.Join(w.dir, e.name), e.write)
	})
	if err != nil {
		return manifestSpans{}, fmt.Errorf("generator: site: %w", err)
	}
	return spans, nil
}

// install syncs w's directory to disk, with ready, when not nil, making what serves
// it meanwhile, then renames it to name and makes it current. It answers the
// directory's path.
func (s *Site) install(w *siteWriter, name string, table fileTable, ready func(written, dir string, files fileTable)) (string, error) {
	if err := os.Chmod(w.dir, 0o755); err != nil {
		return "", fmt.Errorf("generator: site: %w", err)
	}
	final := filepath.Join(s.Dir, name)
	var during sync.WaitGroup
	if ready != nil {
		during.Go(func() { ready(w.dir, final, table) })
	}
	err := syncTree(w.dir)
	during.Wait()
	if err != nil {
		return "", err
	}
	if err := os.Rename(w.dir, final); err != nil {
		return "", fmt.Errorf("generator: site: %w", err)
	}
	if err := s.link(name); err != nil {
		return "", err
	}
	return final, nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// clean removes the site's trash in the background: what the publication that
// returns moved aside, and any a publication left when its process stopped first.
func (s *Site) clean() {
	done, dir := make(chan struct{}), s.Dir
	s.cleaned = done
	go func() {
		defer close(done)
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if e.IsDir() && strings.HasPrefix(e.Name(), trashPrefix) {
				os.RemoveAll(filepath.Join(dir, e.Name()))
			}
		}
	}()
}

// Wait waits until the files the last publication replaced are removed, which goes
// on after it returns (see siteWriter.remove); the next publication waits for it
// first.
func (s *Site) Wait() {
	if s.cleaned != nil {
		<-s.cleaned
		s.cleaned = nil
	}
}

// Written says how many served files the last publication made and wrote, and how
// many it has in all; the others it kept or linked from the one before.
func (s *Site) Written() (written, files int) {
	if s.last == nil {
		return 0, 0
	}
	return s.last.written, s.last.count
}

// link points current at name: a new symbolic link renamed over the old one, so
// a reader sees the old site or the new one, never neither.
func (s Site) link(name string) error {
	tmp := filepath.Join(s.Dir, ".current-"+name)
	os.Remove(tmp)
	if err := os.Symlink(name, tmp); err != nil {
		return fmt.Errorf("generator: site: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(s.Dir, CurrentLink)); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("generator: site: %w", err)
	}
	return syncDir(s.Dir)
}

// prune removes the oldest published snapshots beyond Keep, never the current one,
// nor the spare when Keep leaves room for it (snapshots made at one clock have one
// time in their names, so the spare is not always the newest of the others).
func (s Site) prune(current, spare string) {
	keep := max(s.Keep, 1)
	entries, err := os.ReadDir(s.Dir)
	if err != nil {
		return
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() && strings.HasPrefix(e.Name(), snapPrefix) && e.Name() != current {
			names = append(names, e.Name())
		}
	}
	slices.SortFunc(names, func(a, b string) int { // by generation time, the spare last
		return cmp.Or(cmp.Compare(b2i(a == spare), b2i(b == spare)), strings.Compare(a, b))
	})
	for len(names) > keep-1 {
		os.RemoveAll(filepath.Join(s.Dir, names[0]))
		names = names[1:]
	}
}

// Current returns the directory of the site in force, or "" when none was published.
func (s Site) Current() string {
	name, err := os.Readlink(filepath.Join(s.Dir, CurrentLink))
	if err != nil {
		return ""
	}
	return filepath.Join(s.Dir, name)
}

// siteWriter writes served files, each with its .gz and .br beside it, from several
// goroutines at once, and remembers what it wrote for the manifest. Nothing is synced
// here: syncTree flushes the whole tree once. A file the directory holds already
// (spare) is kept, one the directory in force (cur) holds is linked from there, and
// any other is made and written.
type siteWriter struct {
	dir   string
	spare bool   // dir is the spare, holding last's files but those it changed
	trash string // where the spare's files replaced are moved, "" for none
	// trashed counts the files moved into trash, naming each.
	trashed atomic.Int64
	last    *published // nil when nothing is known of the directory in force
	cur     string     // the directory in force, which last describes
	views   web.Views
	pages   *web.PageCache // nil for none kept
	mu      sync.Mutex
	made    map[string]bool
	// files are the files made and written, by path; kept marks, by position in
	// last's table, the files kept or linked, whose entries are last's: at a hundred
	// thousand methods a change makes a few thousand, of two hundred thousand.
	files map[string]fileEntry
	kept  []bool
	// written counts the files made and written.
	written atomic.Int64
	// scratches are those free for the next file made (see scratch).
	scratches []*scratch
}

// scratch is where a file is made before it is written and dropped: a page's body and
// a body's encoded forms, in buffers reused from file to file (see resource.Scratch).
// A change at a hundred thousand methods renders a hundred megabytes of pages.
type scratch struct {
	body  bytes.Buffer
	forms resource.Scratch
}

// keptScratch is the largest page body a scratch is kept for: a method's or a
// merchant's page (158 KB on average at a hundred thousand methods), not a
// category's (2.5 MB on average there).
const keptScratch = 1 << 20

// scratch is a free scratch, made when none is.
func (w *siteWriter) scratch() *scratch {
	w.mu.Lock()
	defer w.mu.Unlock()
	if n := len(w.scratches); n > 0 {
		sc := w.scratches[n-1]
		w.scratches = w.scratches[:n-1]
		return sc
	}
	return new(scratch)
}

// free hands sc back, its file written; one grown past keptScratch is dropped
// instead, so that a publication does not hold the buffers of its largest pages
// through all the others (a full build's, under its memory limit).
func (w *siteWriter) free(sc *scratch) {
	if sc.body.Cap() > keptScratch {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.scratches = append(w.scratches, sc)
}

// writeAll writes the directory's JSON, the human pages and the static files.
func (w *siteWriter) writeAll(snap *directory.Snapshot) error {
	// The pages' sources are listed while the JSON is written, which is mostly
	// waiting on the file system, and then while the pages listed before are
	// rendered: in batches, so that the sources of every page are not held at once.
	batches, stop := make(chan []web.PageSource, 1), make(chan struct{})
	listed := make(chan error, 1)
	go func() {
		defer close(batches)
		listed <- w.views.PageSourceBatches(snap, w.pages, pageBatch, func(b []web.PageSource) error {
			select {
			case batches <- b:
				return nil
			case <-stop:
				return errStopped
			}
		})
	}()
	// Not used by another publication while the pages are listed: waited for on every
	// return.
	defer func() {
		close(stop)
		for range batches {
		}
	}()
	methods, hosts := snap.Methods(), snap.Hostnames()
	err := parallel.For(1+len(methods)+len(hosts), func(i int) error {
		switch i--; {
		case i < 0:
			if err := w.putList(snap); err != nil {
				return err
			}
			// Written, the list is answered from its files while the pages are
			// rendered, as the one served is (a snapshot that held its body, the
			// largest, no longer holds it).
			if list, err := snap.List().FromFiles(filepath.Join(w.dir, filepath.FromSlash(ListFile))); err == nil {
				return snap.ListFrom(list)
			}
			return nil
		case i < len(methods):
			res, _ := snap.Method(methods[i].Slug)
			return w.putResource(urlPath, servicesDir+methods[i].Slug, res)
		}
		h := hosts[i-len(methods)]
		res, _ := snap.Merchant(h)
		return w.putResource(urlPath, merchantsDir+h, res)
	})
	if err != nil {
		return err
	}
	for pages := range batches {
		err := parallel.For(len(pages), func(i int) error {
			p := pages[i]
			return w.write(p.URL, pagePath(p.URL), sourceID(p.Digest[:18]), func(sc *scratch, size int) (*resource.Resource, error) {
				// Grown at once to about the size the page had, rather than doubled
				// to it: the category pages of a hundred thousand methods are megabytes.
				sc.body.Reset()
				sc.body.Grow(size + size/16)
				if err := p.RenderTo(&sc.body); err != nil {
					return nil, err
				}
				return sc.forms.New(resource.HTML, sc.body.Bytes()), nil
			})
		})
		if err != nil {
			return fmt.Errorf("generator: pages: %w", err)
		}
	}
	if err := <-listed; err != nil {
		return fmt.Errorf("generator: pages: %w", err)
	}
	for _, a := range web.Assets() {
		if err := w.writeResource(a.URL, strings.TrimPrefix(a.URL, "/"), a.Resource); err != nil {
			return err
		}
	}
	return nil
}

// pageBatch is how many pages' sources a publication lists at a time (see writeAll):
// enough that each batch keeps every processor busy. A variable for a test.
var pageBatch = 4096

// errStopped stops the listing of pages whose publication failed.
var errStopped = errors.New("generator: the publication stopped")

// writeResource writes an encoded body, known by its ETag.
func (w *siteWriter) writeResource(url, path string, res *resource.Resource) error {
	kind, ok := kindOf(url, path)
	if !ok {
		return fmt.Errorf("generator: write %s: its URL %s does not follow from its path", path, url)
	}
	return w.putResource(kind, path, res)
}

// putResource is writeResource for the URL of kind.
func (w *siteWriter) putResource(kind urlKind, path string, res *resource.Resource) error {
	id, ok := etagID(res.ETag)
	if !ok {
		return fmt.Errorf("generator: write %s: the ETag %s is not a body's hash", path, res.ETag)
	}
	return w.put(kind, path, id, func(*scratch, int) (*resource.Resource, error) { return res, nil })
}

// etagID is the body hash's first bytes an ETag names.
func etagID(etag string) (sourceID, bool) {
	var id sourceID
	n, err := base64.RawURLEncoding.Decode(id[:], []byte(strings.Trim(etag, `"`)))
	return id, err == nil && n == len(id)
}

// suffixes are the forms of a served file: the body, then its gzip and brotli.
var suffixes = [...]string{"", ".gz", ".br"}

// write puts the file at path made from source in place: kept, linked, or made by
// build and written. build may make it in the scratch it is given, which is not used
// again before the file is written, and is told the size of the body last published
// there (0 for none), which a page's is near.
func (w *siteWriter) write(url, path string, source sourceID, build func(sc *scratch, size int) (*resource.Resource, error)) error {
	kind, ok := kindOf(url, path)
	if !ok {
		return fmt.Errorf("generator: write %s: its URL %s does not follow from its path", path, url)
	}
	return w.put(kind, path, source, build)
}

// put is write for the URL of kind.
func (w *siteWriter) put(kind urlKind, path string, source sourceID, build func(sc *scratch, size int) (*resource.Resource, error)) error {
	k, p, done, err := w.place(kind, path, source)
	if done || err != nil {
		return err
	}
	size := 0
	if k >= 0 {
		size = int(w.last.files.entries[k].sizes[0])
	}
	sc := w.scratch()
	defer w.free(sc)
	res, err := build(sc, size)
	if err != nil {
		return err
	}
	// A body served from the files of the directory before has its forms there.
	if res, err = res.Encoded(); err != nil {
		return fmt.Errorf("generator: write %s: %w", path, err)
	}
	if res.Gzip() == nil {
		// A body the snapshot left unencoded is compressed here, as
		// directory.NewSnapshotAfter would have; served learns its forms' sizes
		// from the manifest.
		res = sc.forms.New(res.ContentType, res.Body)
	}
	if err := w.writeForms(p, res, func(p string) error { return writeBody(p, res.Body) }); err != nil {
		return fmt.Errorf("generator: write %s: %w", path, err)
	}
	return w.record(kind, path, source, k, res, sha256.Sum256(res.Body), len(res.Body))
}

// putList puts the snapshot's list in place, as put does a body: made, it is written
// from the snapshot as its bytes are made, never held whole (see
// directory.Snapshot.WriteList), beside the forms the snapshot holds.
func (w *siteWriter) putList(snap *directory.Snapshot) error {
	url := "/" + strings.TrimSuffix(ListFile, "/index.json")
	kind, ok := kindOf(url, ListFile)
	res := snap.List()
	source, tagged := etagID(res.ETag)
	if !ok || !tagged {
		return fmt.Errorf("generator: write %s: its URL %s or its ETag %s is not a list's", ListFile, url, res.ETag)
	}
	k, p, done, err := w.place(kind, ListFile, source)
	if done || err != nil {
		return err
	}
	if res.Gzip() == nil || res.Brotli() == nil {
		// A snapshot's list whose forms went to the files of a publication before.
		return fmt.Errorf("generator: write %s: the snapshot no longer holds its list's forms (published already)", ListFile)
	}
	sum, size := snap.ListSum()
	err = w.writeForms(p, res, func(p string) error {
		return writeFile(p, func(b *bufio.Writer) error {
			n, err := snap.WriteList(b)
			if err == nil && n != int64(size) {
				err = fmt.Errorf("%d bytes written, not the list's %d", n, size)
			}
			return err
		})
	})
	if err != nil {
		return fmt.Errorf("generator: write %s: %w", ListFile, err)
	}
	return w.record(kind, ListFile, source, k, res, sum, size)
}

// place puts the file at path made from source in place when it need not be made:
// kept in the spare, or linked from the directory in force (done). Otherwise it
// returns where to write it, and k, its position in last's table (-1 for none).
func (w *siteWriter) place(kind urlKind, path string, source sourceID) (k int, p string, done bool, err error) {
	k, have := -1, false
	if w.last != nil {
		var found bool
		if k, found = w.last.files.find(path); found {
			e := w.last.files.entries[k]
			have = e.source == source && e.url == kind
		} else {
			k = -1
		}
	}
	if have && w.spare && !w.last.changed[path] {
		return k, "", true, w.keep(k, path) // the spare holds it already
	}
	p = filepath.Join(w.dir, filepath.FromSlash(path))
	if err := w.mkdir(filepath.Dir(p)); err != nil {
		return k, "", false, fmt.Errorf("generator: write %s: %w", path, err)
	}
	if have {
		old := filepath.Join(w.cur, filepath.FromSlash(path))
		for _, x := range suffixes {
			if err := w.remove(p + x); err != nil {
				return k, "", false, fmt.Errorf("generator: write %s: %w", path, err)
			}
			if err := os.Link(old+x, p+x); err != nil {
				return k, "", false, fmt.Errorf("generator: write %s: %w", path, err)
			}
		}
		return k, "", true, w.keep(k, path)
	}
	return k, p, false, nil
}

// writeForms writes a file's forms at p: its body by body, then res's gzip and
// brotli. Each is removed first, never truncated: the file may be linked from another
// directory.
func (w *siteWriter) writeForms(p string, res *resource.Resource, body func(p string) error) error {
	for i, x := range suffixes {
		if err := w.remove(p + x); err != nil {
			return err
		}
		var err error
		switch i {
		case 0:
			err = body(p)
		case 1:
			err = writeBody(p+x, res.Gzip())
		default:
			err = writeBody(p+x, res.Brotli())
		}
		if err != nil {
			return err
		}
	}
	w.written.Add(1)
	return nil
}

// record enters the file written at path, at k in last's table (-1 for none): made
// from source, a body of size bytes whose SHA-256 is sum, with res's forms.
func (w *siteWriter) record(kind urlKind, path string, source sourceID, k int, res *resource.Resource, sum [sha256.Size]byte, size int) error {
	ct, err := typeOf(res.ContentType)
	if err != nil {
		return fmt.Errorf("generator: write %s: %w", path, err)
	}
	e := fileEntry{source: source, url: kind, contentType: ct, sum: sum,
		sizes: [3]int32{int32(size), int32(len(res.Gzip())), int32(len(res.Brotli()))}}
	if f := e.manifestFile(path); f.ETag != res.ETag || f.GzipETag != res.GzipETag || f.BrotliETag != res.BrotliETag {
		return fmt.Errorf("generator: write %s: its ETags are not its body's hash's", path)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, dup := w.files[path]; dup || k >= 0 && w.kept[k] {
		return fmt.Errorf("generator: two files at %s", path)
	}
	w.files[path] = e
	return nil
}

// keep records that the file at path is the one at position k of last's table.
func (w *siteWriter) keep(k int, path string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, dup := w.files[path]; dup || w.kept[k] {
		return fmt.Errorf("generator: two files at %s", path)
	}
	w.kept[k] = true
	return nil
}

// remove takes a file out of the spare, if it has one there (a fresh directory has
// none): moved into the trash, whose files are removed once the publication is over
// (see Site.clean), or, failing that, unlinked. Unlinking a file's last link frees
// its blocks, which on the disk measured took 170 µs of wall time for a 5 KB file
// and 1 ms for 2.5 MB, against 19 to 43 µs for a rename; a change to 1% of a hundred
// thousand methods replaces some 7,000 files, none of them linked from elsewhere
// when they changed in the publication before too.
func (w *siteWriter) remove(p string) error {
	if !w.spare {
		return nil
	}
	if w.trash != "" && os.Rename(p, filepath.Join(w.trash, strconv.FormatInt(w.trashed.Add(1), 36))) == nil {
		return nil
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// removeGone removes from the spare the files this snapshot, whose files are table,
// does not have: every file it may hold is one last has or changed, and gone are
// those of last's it does not have.
func (w *siteWriter) removeGone(gone []string, table fileTable) error {
	if !w.spare {
		return nil
	}
	remove := func(path string) error {
		p := filepath.Join(w.dir, filepath.FromSlash(path))
		for _, x := range suffixes {
			if err := w.remove(p + x); err != nil {
				return fmt.Errorf("generator: site: %w", err)
			}
		}
		return nil
	}
	for _, path := range gone {
		if err := remove(path); err != nil {
			return err
		}
	}
	for path := range w.last.changed {
		if _, ok := table.find(path); ok {
			continue
		}
		if err := remove(path); err != nil {
			return err
		}
	}
	return nil
}

func (w *siteWriter) mkdir(d string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.made[d] {
		return nil
	}
	if err := os.MkdirAll(d, 0o755); err != nil {
		return err
	}
	w.made[d] = true
	return nil
}

// pagePath is the file of a human page: /x/y is x/y.html, which is what CDNs and the
// nginx example serve for the extension-less URL; / is index.html.
func pagePath(url string) string {
	if url == "/" {
		return "index.html"
	}
	return strings.TrimPrefix(url, "/") + ".html"
}

// syncTree flushes the new tree to disk before it is made current: one syncfs for the
// whole file system instead of one fsync per file, then the directory itself.
func syncTree(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("generator: sync: %w", err)
	}
	defer d.Close()
	if err := unix.Syncfs(int(d.Fd())); err != nil {
		return fmt.Errorf("generator: sync: %w", err)
	}
	return d.Sync()
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("generator: sync: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("generator: sync: %w", err)
	}
	return nil
}

// writeFile writes a file made at path through a buffer, where none may be: the
// publication took the spare's out first (see siteWriter.remove), never truncating it.
func writeFile(path string, write func(*bufio.Writer) error) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	b := bufio.NewWriterSize(f, 1<<20)
	if err = write(b); err == nil {
		err = b.Flush()
	}
	if err == nil {
		startWriteback(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// writeBody writes body to a file made at path, where none may be (one there may be
// linked from another directory); a large one starts to go to disk at once (see
// startWriteback).
func writeBody(path string, body []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(body)
	if err == nil && len(body) >= largeFile {
		startWriteback(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// largeFile is the size from which a written body starts to go to disk at once.
const largeFile = 256 << 10

// startWriteback has the system start writing f's data to disk, without waiting for
// it: syncTree, which waits for every file of a publication, then finds the largest
// on their way already, written while the rest was made (at a hundred thousand
// methods the list, the manifest and the snapshot are hundreds of megabytes). It is
// a hint: syncTree makes the files durable whatever it did.
func startWriteback(f *os.File) {
	unix.SyncFileRange(int(f.Fd()), 0, 0, unix.SYNC_FILE_RANGE_WRITE)
}

// manifestCounts counts what a site of snap's files holds.
func manifestCounts(snap *directory.Snapshot, table fileTable) ManifestCounts {
	c := ManifestCounts{Methods: snap.Len(), Merchants: len(snap.Hostnames())}
	for _, e := range table.entries {
		if e.contentType == typeHTML {
			c.Pages++
		}
		c.Files += 2
		c.Bytes += int(e.sizes[0]) + int(e.sizes[1])
	}
	return c
}

// manifestSpans are where each file's entry lies in a published manifest, by the
// file's position in its table: entry i ends at ends[i] and begins at first, or one
// byte (a comma) past the end of the one before. None when the manifest is too large
// for them.
type manifestSpans struct {
	first uint32
	ends  []uint32
}

// span is where entry i lies.
func (m manifestSpans) span(i int) (start, end int64) {
	start = int64(m.first)
	if i > 0 {
		start = int64(m.ends[i-1]) + 1
	}
	return start, int64(m.ends[i])
}

// writeManifest writes the manifest of the files in table at path as json.Marshal
// encodes it, a file at a time, and returns where its entries lie. An entry the
// manifest last published (in the directory cur) has for the same file (sameAs names
// its position there, -1 none) is copied from there rather than encoded again: a run
// of them at once, in the kernel.
func writeManifest(path string, snap *directory.Snapshot, table fileTable, sameAs []int32, last *published, cur string) (manifestSpans, error) {
	var old *os.File
	if last != nil && last.manifest.ends != nil && len(last.manifest.ends) == last.files.len() {
		if f, err := os.Open(filepath.Join(cur, ManifestName)); err == nil {
			defer f.Close()
			old = f
		}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return manifestSpans{}, err
	}
	defer f.Close()
	b := bufio.NewWriterSize(f, 1<<20)
	var off int64 // written so far
	write := func(p []byte) {
		b.Write(p)
		off += int64(len(p))
	}
	write(fmt.Appendf(nil, `{"snapshot":%s,"counts":%s,"files":[`, mustJSON(snap.Info()), mustJSON(manifestCounts(snap, table))))
	spans := manifestSpans{first: uint32(off), ends: make([]uint32, table.len())}
	// The run of entries of the last manifest to copy, [from, to], the first of them
	// at position at, written from offset start.
	from, to, at, start := -1, -1, 0, int64(0)
	copyRun := func() error {
		if from < 0 {
			return nil
		}
		if err := b.Flush(); err != nil {
			return err
		}
		begin, _ := last.manifest.span(from)
		_, end := last.manifest.span(to)
		if _, err := old.Seek(begin, io.SeekStart); err != nil {
			return err
		}
		if _, err := io.CopyN(f, old, end-begin); err != nil {
			return err
		}
		for k := from; k <= to; k++ {
			spans.ends[at+k-from] = uint32(int64(last.manifest.ends[k]) - begin + start)
		}
		off += end - begin
		from = -1
		return nil
	}
	var buf []byte
	for i, e := range table.entries {
		p := table.path(i)
		k, same := -1, false
		if old != nil && sameAs[i] >= 0 {
			k, same = int(sameAs[i]), true
		}
		if same && from >= 0 && k == to+1 {
			to = k
			continue
		}
		if err := copyRun(); err != nil {
			return manifestSpans{}, err
		}
		if i > 0 {
			write([]byte{','})
		}
		if same {
			from, to, at, start = k, k, i, off
			continue
		}
		buf = appendManifestFile(buf[:0], e.manifestFile(p))
		write(buf)
		spans.ends[i] = uint32(off)
	}
	if err := copyRun(); err != nil {
		return manifestSpans{}, err
	}
	write([]byte("]}"))
	if err := b.Flush(); err != nil {
		return manifestSpans{}, err
	}
	if off > math.MaxUint32 {
		spans = manifestSpans{}
	}
	return spans, f.Close()
}

// appendManifestFile appends f as json.Marshal encodes it, without its reflection: a
// site of a hundred thousand methods has hundreds of thousands of entries.
func appendManifestFile(b []byte, f ManifestFile) []byte {
	b = append(b, `{"url":`...)
	b = jsonstr.Append(b, f.URL)
	b = append(b, `,"path":`...)
	b = jsonstr.Append(b, f.Path)
	b = append(b, `,"content_type":`...)
	b = jsonstr.Append(b, f.ContentType)
	b = append(b, `,"bytes":`...)
	b = strconv.AppendInt(b, int64(f.Bytes), 10)
	b = append(b, `,"gzip_bytes":`...)
	b = strconv.AppendInt(b, int64(f.GzipBytes), 10)
	b = append(b, `,"brotli_bytes":`...)
	b = strconv.AppendInt(b, int64(f.BrotliBytes), 10)
	b = append(b, `,"sha256":`...)
	b = jsonstr.Append(b, f.SHA256)
	b = append(b, `,"etag":`...)
	b = jsonstr.Append(b, f.ETag)
	b = append(b, `,"gzip_etag":`...)
	b = jsonstr.Append(b, f.GzipETag)
	b = append(b, `,"brotli_etag":`...)
	b = jsonstr.Append(b, f.BrotliETag)
	if f.Source != "" {
		b = append(b, `,"source":`...)
		b = jsonstr.Append(b, f.Source)
	}
	return append(b, '}')
}

// headersFile is the _headers file that Netlify, Cloudflare Pages and CDNs like them
// read: the content type, caching and CORS of each tree of the site.
func headersFile(table fileTable) []byte {
	var b bytes.Buffer
	b.WriteString("# Headers of the generated site, for CDNs that read a _headers file.\n")
	rule := func(path string, lines ...string) {
		b.WriteString(path + "\n")
		for _, l := range lines {
			b.WriteString("  " + l + "\n")
		}
	}
	api := "/" + apiRoot
	rule(api+"/*",
		"Content-Type: "+resource.JSON,
		"Cache-Control: "+cacheFiles,
		"Access-Control-Allow-Origin: *",
		"Access-Control-Expose-Headers: ETag, Retry-After, RateLimit-Policy, RateLimit",
		"Vary: Accept-Encoding",
		"X-Content-Type-Options: nosniff")
	rule("/static/*",
		"Cache-Control: public, max-age=31536000, immutable",
		"Access-Control-Allow-Origin: *")
	seen := map[string]bool{}
	var dir []byte
	for p, e := range table.all() {
		if e.contentType != typeHTML {
			continue
		}
		dir = appendURL(dir[:0], p, e.url)
		if i := bytes.LastIndexByte(dir, '/'); i > 0 {
			dir = append(dir[:i+1], '*')
		} else {
			dir = dir[:1] // "/"
		}
		if seen[string(dir)] {
			continue
		}
		seen[string(dir)] = true
		if string(dir) == "/" {
			// The site's root points at its API catalog (RFC 9727), as the service's does.
			rule("/", "Content-Type: "+resource.HTML, "Cache-Control: "+cacheFiles, "X-Content-Type-Options: nosniff", "Link: "+web.APICatalogLink)
			continue
		}
		rule(string(dir), "Content-Type: "+resource.HTML, "Cache-Control: "+cacheFiles, "X-Content-Type-Options: nosniff")
	}
	return b.Bytes()
}

// writeETagMap writes the body of an nginx map from this snapshot's directory name and a URL
// to the ETag the live service gives that URL (unquoted, without -gzip or -br), so that nginx
// can send the origin's ETags (see nginx.conf.example). Keyed by the directory, a map
// loaded for an older snapshot never names a newer file: nginx then sends no ETag
// rather than a wrong one, until it is reloaded.
func writeETagMap(b *bufio.Writer, name string, table fileTable) {
	b.WriteString("# Snapshot directory and URL to ETag of this snapshot's files, for nginx.conf.example.\n")
	var line, url []byte
	for p, e := range table.all() {
		// As fmt's %q quotes them, without its reflection: a URL of printable ASCII
		// but the quote and the backslash as it is, the ETag's base64 too.
		url = appendURL(url[:0], p, e.url)
		line = append(line[:0], '"')
		if plain(name) && plain(url) {
			line = append(append(append(line, name...), ' '), url...)
			line = append(line, `" "`...)
		} else {
			line = append(strconv.AppendQuote(line[:0], name+" "+string(url)), ` "`...)
		}
		line = base64.RawURLEncoding.AppendEncode(line, e.sum[:18])
		b.Write(append(line, "\";\n"...))
	}
}

// plain is whether s is printable ASCII without a quote or a backslash, which
// strconv.Quote leaves as it is.
func plain[S string | []byte](s S) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// writeSnapshot writes the machine-readable snapshot: the time it was made, every method
// with its guidance and every merchant record, as the live service encodes them.
// LoadSite rebuilds the same snapshot from it.
func writeSnapshot(b *bufio.Writer, snap *directory.Snapshot) error {
	info := snap.Info()
	fmt.Fprintf(b, `{"id":%q,"generated_at":%s,"methods":[`, info.ID, mustJSON(info.GeneratedAt))
	for i, m := range snap.Methods() {
		if i > 0 {
			b.WriteByte(',')
		}
		res, _ := snap.Method(m.Slug)
		b.Write(res.Body)
	}
	b.WriteString(`],"merchants":[`)
	for i, h := range snap.Hostnames() {
		if i > 0 {
			b.WriteByte(',')
		}
		res, _ := snap.Merchant(h)
		body, err := res.Bytes()
		if err != nil {
			return err
		}
		b.Write(body)
	}
	b.WriteString("]}\n")
	return nil
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// cachedForms is how many encoded forms of the methods and merchants a server keeps
// in memory, the ones asked for last (see resource.Cache): at a few hundred bytes
// each, a few megabytes, where all of them at a hundred thousand methods are 56 MB.
const cachedForms = 16 << 10

// acceptsGzip is what a client that takes gzip asks for.
var acceptsGzip = http.Header{"Accept-Encoding": {"gzip"}}

// served is snap answering from the files published in dir: its list (or from memory,
// with a warning when log is not nil, when they do not open), and the encoded forms
// of its methods and merchants, through cache. files are what the directory holds, as
// its manifest lists them: the sizes of the forms of the bodies snap left unencoded
// are read there; one it does not list is compressed again, to learn them. The list's
// files are opened in written, where they were written, which may be renamed dir
// after: an open file follows its directory.
func served(snap *directory.Snapshot, written, dir string, cache *resource.Cache, log *slog.Logger, files fileTable) *directory.Snapshot {
	if !snap.List().InFiles() { // not answered from its files yet (see writeAll)
		list, err := snap.List().FromFiles(filepath.Join(written, filepath.FromSlash(ListFile)))
		if err == nil {
			var withList *directory.Snapshot
			if withList, err = snap.WithList(list); err == nil {
				snap = withList
			}
		}
		if err != nil {
			if log != nil {
				log.Warn("the published list does not open; serving it from memory", "dir", dir, "err", err)
			}
			snap = snap.WithListBody()
		}
	}
	methods := resource.NewStore(filepath.Join(dir, filepath.FromSlash(servicesDir)), cache)
	merchants := resource.NewBodyStore(filepath.Join(dir, filepath.FromSlash(merchantsDir)), cache)
	// What did not change since the snapshot served before is the resource it stored,
	// whose bytes the new stores share rather than copy while few were replaced.
	methods.Carry(func(yield func(*resource.Resource) bool) {
		for i := range snap.Len() {
			if !yield(snap.MethodAt(i)) {
				return
			}
		}
	})
	merchants.Carry(func(yield func(*resource.Resource) bool) {
		for _, h := range snap.Hostnames() {
			if res, _ := snap.Merchant(h); !yield(res) {
				return
			}
		}
	})
	sizes := func(path string, res *resource.Resource) *resource.Resource {
		if resource.Encoding(acceptsGzip, res) != "" {
			return res // its forms' sizes known: encoded, or stored before
		}
		if e, ok := files.get(path); ok {
			if id, ok := etagID(res.ETag); ok && id == sourceID(e.sum[:18]) {
				return res.Published(int(e.sizes[1]), int(e.sizes[2]))
			}
		}
		return resource.New(res.ContentType, res.Body)
	}
	stored, err := snap.WithStored(
		func(slug string, res *resource.Resource) *resource.Resource {
			return sizes(servicesDir+slug, res).Stored(methods, slug)
		},
		func(host string, res *resource.Resource) *resource.Resource {
			return sizes(merchantsDir+host, res).Stored(merchants, host)
		})
	if err != nil {
		// Not met: Stored keeps what WithStored checks.
		if log != nil {
			log.Warn("the published methods are not the snapshot's; serving them from memory", "dir", dir, "err", err)
		}
		return snap
	}
	return stored
}

// LoadSite rebuilds the snapshot of the site in force under dir (see Site.Load).
func LoadSite(dir string) (*directory.Snapshot, error) {
	return (&Site{Dir: dir}).Load(resource.NewCache(cachedForms))
}

// Load rebuilds the snapshot of the site in force, so that the service serves the
// last published directory before, or without, the database, its methods' and
// merchants' forms read through cache; the rebuilt snapshot must match the files byte
// for byte: same ID, same list. The site then knows what that directory holds, as its
// manifest lists it, so that the next publication writes what differs from it and no
// more. Nothing is compressed: the forms are the published files, their sizes the
// manifest's.
func (s *Site) Load(cache *resource.Cache) (*directory.Snapshot, error) {
	cur := s.Current()
	if cur == "" {
		return nil, fmt.Errorf("generator: no site published in %s: %w", s.Dir, fs.ErrNotExist)
	}
	raw, err := os.ReadFile(filepath.Join(cur, SnapshotName))
	if err != nil {
		return nil, fmt.Errorf("generator: load site: %w", err)
	}
	var in struct {
		ID          string    `json:"id"`
		GeneratedAt time.Time `json:"generated_at"`
		Methods     []struct {
			directory.Method
			Guidance json.RawMessage `json:"guidance"`
		} `json:"methods"`
		Merchants []directory.Merchant `json:"merchants"`
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		return nil, fmt.Errorf("generator: load site: %w", err)
	}
	raw = nil
	methods := make([]directory.Method, len(in.Methods))
	for i, m := range in.Methods {
		methods[i] = m.Method
		if string(m.Guidance) != "null" {
			methods[i].Guidance = m.Guidance
		}
	}
	in.Methods = nil
	snap, err := directory.NewSnapshotUnencoded(nil, in.GeneratedAt, methods, in.Merchants)
	if err != nil {
		return nil, fmt.Errorf("generator: load site: %w", err)
	}
	if snap.Info().ID != in.ID {
		return nil, fmt.Errorf("generator: load site: snapshot %s rebuilt as %s", in.ID, snap.Info().ID)
	}
	if err := sameList(filepath.Join(cur, filepath.FromSlash(ListFile)), snap); err != nil {
		return nil, fmt.Errorf("generator: load site: %w", err)
	}
	files, err := readManifest(cur)
	if err != nil {
		return nil, err
	}
	s.last = &published{name: filepath.Base(cur), files: files, count: files.len()}
	return served(snap, cur, cur, cache, nil, files), nil
}

// sameList checks that the list published at path is snap's, byte for byte: its
// length and SHA-256, read as they come rather than held.
func sameList(path string, snap *directory.Snapshot) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return err
	}
	if sum, size := snap.ListSum(); n != int64(size) || !bytes.Equal(h.Sum(nil), sum[:]) {
		return errors.New("the rebuilt list differs from the published one")
	}
	return nil
}

// files are what the site published last holds; none when it knows nothing of it.
func (s *Site) files() fileTable {
	if s.last == nil || !s.last.back() {
		return fileTable{}
	}
	return s.last.files
}

// readManifest is what the site published in dir holds, as its manifest lists it,
// read a file at a time: at a hundred thousand methods it lists hundreds of thousands.
func readManifest(dir string) (fileTable, error) {
	fail := func(err error) (fileTable, error) {
		return fileTable{}, fmt.Errorf("generator: read the manifest of %s: %w", filepath.Base(dir), err)
	}
	f, err := os.Open(filepath.Join(dir, ManifestName))
	if err != nil {
		return fail(err)
	}
	defer f.Close()
	dec := json.NewDecoder(f)
	expect := func(want json.Delim) error {
		if t, err := dec.Token(); err != nil || t != want {
			return cmp.Or(err, fmt.Errorf("%v where %v was expected", t, want))
		}
		return nil
	}
	if err := expect('{'); err != nil {
		return fail(err)
	}
	var (
		t     fileTable
		paths strings.Builder
		last  string
	)
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return fail(err)
		}
		switch key {
		case "counts":
			var c ManifestCounts
			if err := dec.Decode(&c); err != nil {
				return fail(err)
			}
			t.ends, t.entries = make([]uint32, 0, c.Files/2), make([]fileEntry, 0, c.Files/2)
		case "files":
			if err := expect('['); err != nil {
				return fail(err)
			}
			for dec.More() {
				var mf ManifestFile
				if err := dec.Decode(&mf); err != nil {
					return fail(err)
				}
				e, err := entryOf(mf)
				if err != nil {
					return fail(err)
				}
				if t.len() > 0 && mf.Path <= last {
					return fail(fmt.Errorf("%s is listed after %s", mf.Path, last))
				}
				paths.WriteString(mf.Path)
				t.ends, t.entries, last = append(t.ends, uint32(paths.Len())), append(t.entries, e), mf.Path
			}
			if err := expect(']'); err != nil {
				return fail(err)
			}
		default:
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return fail(err)
			}
		}
	}
	t.paths = paths.String()
	return t, nil
}

// entryOf is the record of the file a manifest entry lists.
func entryOf(f ManifestFile) (fileEntry, error) {
	var e fileEntry
	var ok bool
	if e.url, ok = kindOf(f.URL, f.Path); !ok {
		return e, fmt.Errorf("the URL %s of %s does not follow from its path", f.URL, f.Path)
	}
	if n, err := hex.Decode(e.sum[:], []byte(f.SHA256)); err != nil || n != len(e.sum) {
		return e, fmt.Errorf("%s: its hash %q is not a SHA-256", f.Path, f.SHA256)
	}
	if id, ok := etagID(f.ETag); !ok || id != sourceID(e.sum[:18]) {
		return e, fmt.Errorf("%s: its ETag %s is not its hash's", f.Path, f.ETag)
	}
	e.source = sourceID(e.sum[:18])
	if f.Source != "" {
		if n, err := base64.RawURLEncoding.Decode(e.source[:], []byte(f.Source)); err != nil || n != len(e.source) {
			return e, fmt.Errorf("%s: its source %q names none", f.Path, f.Source)
		}
	}
	ct, err := typeOf(f.ContentType)
	if err != nil {
		return e, fmt.Errorf("%s: %w", f.Path, err)
	}
	e.contentType = ct
	for i, n := range [...]int{f.Bytes, f.GzipBytes, f.BrotliBytes} {
		if n < 0 || n > math.MaxInt32 {
			return e, fmt.Errorf("%s: %d bytes", f.Path, n)
		}
		e.sizes[i] = int32(n)
	}
	return e, nil
}
