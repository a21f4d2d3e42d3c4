package generator

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/waystation/waystation/internal/postgres/pgtest"
	"github.com/waystation/waystation/internal/resource"
)

// TestAChangeAfterAStartWritesWhatChanged publishes a catalog, then starts again on
// the same site, as a new process does, and publishes a change to one method's
// description as of the same instant: the publication writes only the files whose
// bytes the change moved (that method's JSON and page, its merchant's and category's
// pages, the list and the pages that count it), links every other one from the
// directory in force, and is byte for byte what a full build of the changed catalog
// publishes. It holds whether the new process loaded the site first, as the server
// does, or not, as the generator command does; and a start that publishes the same
// snapshot again writes nothing, and the change after it no more.
func TestAChangeAfterAStartWritesWhatChanged(t *testing.T) {
	at := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	for _, start := range []string{"loaded", "not loaded", "the same snapshot again"} {
		t.Run(start, func(t *testing.T) {
			src := &records{rec: testRecords(24, at)}
			dir := t.TempDir()
			first := &Generator{Source: src, Site: testSite(dir)}
			if _, err := first.Once(context.Background()); err != nil {
				t.Fatal(err)
			}
			clock := first.last.Info().GeneratedAt

			// The next process: nothing in memory but what it reads from the site.
			g := &Generator{Source: src, Site: testSite(dir)}
			switch start {
			case "loaded":
				if _, err := g.Load(); err != nil {
					t.Fatal(err)
				}
			case "the same snapshot again":
				if _, err := g.Load(); err != nil {
					t.Fatal(err)
				}
				st, err := g.once(context.Background(), true)
				if err != nil {
					t.Fatal(err)
				}
				if st.Written != 0 || st.Files == 0 || st.Directory != first.Site.Current() {
					t.Fatalf("the same snapshot published again: %s", st)
				}
			case "not loaded":
				// The site is not loaded: its publication reads what the directory in
				// force holds from its manifest. The build follows the snapshot before,
				// at its instant.
				g.last = first.last
			}
			before := g.Site.Current()
			src.rec.Methods[5].Method.Description = "Does something else now."
			st, err := g.once(context.Background(), true)
			if err != nil {
				t.Fatal(err)
			}
			if g.last.Info().GeneratedAt != clock {
				t.Fatalf("the clock moved to %s", g.last.Info().GeneratedAt)
			}
			got := g.Site.Current()
			full := fullBuild(t, src, clock)
			a, b := tree(t, got), tree(t, full)
			if len(a) != len(b) {
				t.Errorf("published %d files, a full build %d", len(a), len(b))
			}
			for p, body := range b {
				if !bytes.Equal(a[p], body) {
					t.Errorf("%s differs from the full build's (%d bytes, want %d)", p, len(a[p]), len(body))
				}
			}
			// What the change moved, and what was made anew rather than linked.
			old := tree(t, before)
			var moved, made []string
			for p := range a {
				if !isServed(p) {
					continue
				}
				if !bytes.Equal(a[p], old[p]) {
					moved = append(moved, p)
				}
				x, err1 := os.Stat(filepath.Join(before, p))
				y, err2 := os.Stat(filepath.Join(got, p))
				if err1 != nil || err2 != nil || !os.SameFile(x, y) {
					made = append(made, p)
				}
			}
			// What is made anew is what the change moved and the pages whose sources
			// it moved, which a page's digest names: what the same change writes in
			// the process that published the site before.
			want := map[string]bool{}
			for _, p := range moved {
				want[p] = true
			}
			digests := map[string][32]byte{}
			for _, p := range testViews.PageSources(first.last) {
				digests[p.URL] = p.Digest
			}
			for _, p := range testViews.PageSources(g.last) {
				if d, ok := digests[p.URL]; !ok || d != p.Digest {
					want[pagePath(p.URL)] = true
				}
			}
			if st.Written != len(made) || len(made) != len(want) || st.Files != (len(a)-len(extraFiles))/3 {
				t.Errorf("wrote %d of %d files (%d made anew: %v), where the change moved %d files and the sources of %d: %v",
					st.Written, st.Files, len(made), made, len(moved), len(want), want)
			}
			for _, p := range made {
				if !want[p] {
					t.Errorf("%s was made anew, neither it nor its sources changed", p)
				}
			}
			for _, p := range []string{"methods/method-5.html", servicesDir + "method-5", ListFile, "merchants/api1.example.com.html"} {
				if !contains(moved, p) {
					t.Errorf("%s was not published anew (moved: %v)", p, moved)
				}
			}
			if len(moved) > 12 {
				t.Errorf("a description moved %d files: %v", len(moved), moved)
			}
		})
	}
}

// extraFiles are the files of a published directory that are not served.
var extraFiles = []string{ManifestName, SnapshotName, HeadersName, ETagMapName}

// isServed reports whether path is a served file's body (not one of its forms, nor an
// extra file).
func isServed(path string) bool {
	for _, x := range extraFiles {
		if path == x {
			return false
		}
	}
	return !strings.HasSuffix(path, ".gz") && !strings.HasSuffix(path, ".br")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// fullBuild publishes the catalog as of at in a site of its own and returns its
// directory.
func fullBuild(t *testing.T, src *records, at time.Time) string {
	t.Helper()
	full, err := Assemble(src.rec, at, nil)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := (&Site{Dir: t.TempDir(), Views: testViews}).Publish(full)
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestLoadedSitesAnswerFromTheirFiles loads a published site and holds each method's
// and merchant's forms to the files: their sizes, read from the manifest, are the
// files', so each form is the file's bytes and none is held in memory.
func TestLoadedSitesAnswerFromTheirFiles(t *testing.T) {
	site := &Site{Dir: t.TempDir(), Views: testViews}
	dir, err := site.Publish(testSnapshot(t, time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC), 9))
	if err != nil {
		t.Fatal(err)
	}
	files := tree(t, dir)
	snap, err := LoadSite(site.Dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range snap.Methods() {
		res, _ := snap.Method(m.Slug)
		checkStored(t, res, files, servicesDir+m.Slug)
	}
	for _, h := range snap.Hostnames() {
		res, _ := snap.Merchant(h)
		checkStored(t, res, files, merchantsDir+h)
	}
}

func checkStored(t *testing.T, res *resource.Resource, files map[string][]byte, path string) {
	t.Helper()
	if res.Gzip() != nil || res.Brotli() != nil {
		t.Errorf("%s holds its encoded forms", path)
	}
	enc, err := res.Encoded()
	if err != nil {
		t.Fatal(err)
	}
	for form, body := range map[string][]byte{"": enc.Body, ".gz": enc.Gzip(), ".br": enc.Brotli()} {
		if want := files[filepath.FromSlash(path+form)]; len(want) == 0 || !bytes.Equal(body, want) {
			t.Errorf("%s%s answers %d bytes, not the %d published", path, form, len(body), len(want))
		}
	}
}

// BenchmarkLoadSite loads a published site of 3,000 methods, as a server starts: the
// snapshot rebuilt from its file, what the site holds read from its manifest, and
// the methods and merchants answered from their files.
func BenchmarkLoadSite(b *testing.B) {
	at := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	snap, err := Assemble(testRecords(3000, at), at, nil)
	if err != nil {
		b.Fatal(err)
	}
	site := &Site{Dir: b.TempDir(), Views: testViews}
	if _, err := site.Publish(snap); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := LoadSite(site.Dir); err != nil {
			b.Fatal(err)
		}
	}
}

// TestAStartWithNoChangeGeneratesOnce starts a generator on a small catalog in
// PostgreSQL, watching its fingerprint every few milliseconds, and checks that a start
// followed by no change generates once and no more: nothing the generation reads or
// writes moves the fingerprint. Started from the site on disk, the one generation
// publishes the very snapshot in force, writing nothing; started afresh, the first
// build is the one.
func TestAStartWithNoChangeGeneratesOnce(t *testing.T) {
	ctx := context.Background()
	store, _ := pgtest.LoadDemo(t, time.Now())
	dir := t.TempDir()
	for _, start := range []string{"afresh", "from disk"} {
		t.Run(start, func(t *testing.T) {
			generated := make(chan slog.Record, 16)
			g := &Generator{Source: store, Site: testSite(dir), Holder: NewHolder(),
				Log: slog.New(recorder{generated}), Every: time.Hour, Watch: 5 * time.Millisecond}
			before := ""
			if start == "afresh" {
				if _, err := g.Once(ctx); err != nil {
					t.Fatal(err)
				}
			} else {
				before = g.Site.Current()
				if _, err := g.Load(); err != nil {
					t.Fatal(err)
				}
			}
			runCtx, stop := context.WithCancel(ctx)
			done := make(chan struct{})
			go func() {
				defer close(done)
				g.Run(runCtx)
			}()
			if start == "from disk" {
				select {
				case r := <-generated:
					attrs := map[string]string{}
					r.Attrs(func(a slog.Attr) bool { attrs[a.Key] = a.Value.String(); return true })
					if attrs["why"] != "start" || attrs["written"] != "0" || attrs["dir"] != before {
						t.Errorf("the start generated %v, want the snapshot in force with nothing written", attrs)
					}
				case <-time.After(time.Minute):
					t.Fatal("no generation at the start")
				}
			}
			// A hundred looks at the fingerprint.
			time.Sleep(100 * g.Watch)
			stop()
			<-done
			close(generated)
			for r := range generated {
				t.Errorf("generated again after the start: %s", r.Message)
				r.Attrs(func(a slog.Attr) bool { t.Log(a.String()); return true })
			}
		})
	}
}

// recorder hands on the generations a generator logs.
type recorder struct{ generated chan<- slog.Record }

func (recorder) Enabled(context.Context, slog.Level) bool { return true }
func (r recorder) Handle(_ context.Context, rec slog.Record) error {
	if rec.Message == "snapshot generated" {
		r.generated <- rec.Clone()
	}
	return nil
}
func (r recorder) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r recorder) WithGroup(string) slog.Handler      { return r }
