package generator

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/jackc/pgx/v5"

	"github.com/waystation/waystation/internal/directory"
	"github.com/waystation/waystation/internal/postgres"
	"github.com/waystation/waystation/internal/postgres/pgtest"
	"github.com/waystation/waystation/internal/resource"
	"github.com/waystation/waystation/internal/trust"
	"github.com/waystation/waystation/web"
)

// records is a catalog served as a record store, changed between generations.
type records struct{ rec trust.Records }

func (r *records) DirectoryRecords(context.Context, time.Time) (trust.Records, error) {
	return r.rec, nil
}

// testRecords is a catalog of n methods on four hosts, half of them probed.
func testRecords(n int, at time.Time) trust.Records {
	rec := trust.Records{Probes: map[int64][]trust.Observation{}, HostProbes: map[string][]trust.Observation{}}
	amount := "1000"
	for i := range n {
		host := fmt.Sprintf("api%d.example.com", i%4)
		rec.Methods = append(rec.Methods, trust.MethodRecord{ID: int64(i + 1), Method: directory.Method{
			Slug: fmt.Sprintf("method-%d", i), Name: fmt.Sprintf("Method %d", i), Provider: "Provider " + host,
			Hostname: host, Description: fmt.Sprintf("Does thing number %d <carefully> & well.", i),
			Category: []string{"blockchain", "weather", "data"}[i%3], Kind: "x402",
			Endpoint: directory.Endpoint{Method: "GET", URL: "https://" + host + fmt.Sprintf("/v1/thing/%d", i)},
		}})
		if i%2 == 0 {
			status, latency := 402, 100+i
			rec.Probes[int64(i+1)] = []trust.Observation{{ProbedAt: at.Add(-time.Duration(i+1) * time.Minute), Outcome: trust.OutcomePaymentRequired,
				HTTPStatus: &status, LatencyMS: &latency, Scheme: "exact", Network: "eip155:8453",
				Asset: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913", PayTo: "0x209693Bc6afc0C5328bA36FaF03C514EF312287C", Amount: &amount}}
		}
	}
	for h := range 4 {
		host := fmt.Sprintf("api%d.example.com", h)
		status := 402
		rec.HostProbes[host] = []trust.Observation{{ProbedAt: at.Add(-time.Hour), Outcome: trust.OutcomePaymentRequired, HTTPStatus: &status}}
	}
	return rec
}

// testViews are the views the tests' sites render.
var testViews = web.Views{DirectoryAPI: "/functions/v1/api/api/public/v1"}

// testSite is a site in dir that keeps three publications, as a server's does.
func testSite(dir string) *Site { return &Site{Dir: dir, Keep: 3, Views: testViews} }

// tree reads every file under dir, by path.
func tree(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[rel] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestIncrementalPublicationsMatchFullBuilds changes a catalog step by step (a
// description, a removal, a rename, a method moving to another merchant, a merchant's
// probe, a category, a new method) and publishes each step incrementally, as the
// generator does after a catalog change: every file of each published directory, the
// manifest with its ETags and the nginx ETag map included, must be byte for byte
// those a full build of the same catalog at the same instant publishes in a directory
// of its own; a file the step did not touch must be the very file published before,
// neither rendered nor written again.
func TestIncrementalPublicationsMatchFullBuilds(t *testing.T) {
	at := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	src := &records{rec: testRecords(24, at)}
	site := testSite(t.TempDir())
	g := &Generator{Source: src, Site: site}
	if _, err := g.Once(context.Background()); err != nil {
		t.Fatal(err)
	}
	clock := g.last.Info().GeneratedAt
	method := func(slug string) *directory.Method {
		for i := range src.rec.Methods {
			if src.rec.Methods[i].Method.Slug == slug {
				return &src.rec.Methods[i].Method
			}
		}
		t.Fatalf("no method %s", slug)
		return nil
	}
	steps := []struct {
		name    string
		change  func()
		touched []string // files that must be new
		kept    []string // files that must be the same as before
	}{
		{"a description", func() { method("method-5").Description = "Does something else now." },
			[]string{"methods/method-5.html", "functions/v1/api/api/public/v1/services/method-5", "merchants/api1.example.com.html", "categories/data.html"},
			[]string{"methods/method-6.html", "functions/v1/api/api/public/v1/services/method-6", "methods/method-9.html",
				"merchants/api0.example.com.html", "categories/blockchain.html", "categories/weather.html"}},
		{"a removal", func() {
			src.rec.Methods = slices.DeleteFunc(src.rec.Methods, func(r trust.MethodRecord) bool { return r.Method.Slug == "method-7" })
		}, nil, []string{"methods/method-6.html"}},
		{"a rename", func() { method("method-8").Slug = "method-8-renamed" },
			[]string{"methods/method-8-renamed.html"}, []string{"methods/method-4.html"}},
		{"a move to another merchant", func() {
			m := method("method-10")
			m.Hostname = "api3.example.com"
			m.Endpoint.URL = "https://api3.example.com/v1/thing/10"
		}, []string{"merchants/api3.example.com.html", "merchants/api2.example.com.html"}, []string{"methods/method-1.html"}},
		{"a merchant's probe", func() {
			status := 500
			src.rec.HostProbes["api0.example.com"] = append([]trust.Observation{{ProbedAt: clock.Add(-time.Minute), Outcome: "error", HTTPStatus: &status}},
				src.rec.HostProbes["api0.example.com"]...)
		}, []string{"methods/method-0.html", "methods/method-4.html"}, []string{"methods/method-1.html", "functions/v1/api/api/public/v1/services/method-0"}},
		{"a category", func() { method("method-3").Category = "finance" },
			[]string{"categories/finance.html", "categories/blockchain.html"}, nil},
		{"a merchant's last method gone", func() {
			src.rec.Methods = slices.DeleteFunc(src.rec.Methods, func(r trust.MethodRecord) bool { return r.Method.Hostname == "api2.example.com" })
		}, nil, []string{"methods/method-1.html"}},
		{"a new method", func() {
			src.rec.Methods = append(src.rec.Methods, trust.MethodRecord{ID: 99, Method: directory.Method{Slug: "brand-new", Name: "Brand new",
				Provider: "Provider", Hostname: "api9.example.com", Category: "data", Kind: "x402",
				Endpoint: directory.Endpoint{Method: "GET", URL: "https://api9.example.com/"}}})
		}, []string{"methods/brand-new.html", "merchants/api9.example.com.html"}, []string{"methods/method-1.html"}},
		{"nothing", func() {}, nil, []string{"methods/method-1.html", "functions/v1/api/api/public/v1/services/index.json"}},
	}
	for _, st := range steps {
		before := site.Current()
		inForce := tree(t, before)
		st.change()
		if _, err := g.once(context.Background(), true); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		got := site.Current()
		// The directory in force before, which may still be read, is untouched: the
		// files it links with the spare are replaced there, never written over.
		if !maps.EqualFunc(tree(t, before), inForce, bytes.Equal) {
			t.Fatalf("%s: the directory in force before changed", st.name)
		}
		if g.last.Info().GeneratedAt != clock {
			t.Fatalf("%s: the clock moved to %s", st.name, g.last.Info().GeneratedAt)
		}
		matchFullBuild(t, st.name, src.rec, clock, before, got, st.touched, st.kept)
	}
	// Two kept, however many published: the one in force and the spare the next is
	// written into.
	entries, _ := os.ReadDir(site.Dir)
	var dirs []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), snapPrefix) {
			dirs = append(dirs, e.Name())
		}
	}
	if len(dirs) != 2 {
		t.Errorf("site keeps %v", dirs)
	}
	// The files a publication replaced in the spare are moved aside and removed after
	// it, with any one left when its process stopped first.
	left := filepath.Join(site.Dir, trashPrefix+"left")
	if err := os.MkdirAll(left, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(left, "1"), []byte("stale"), 0o644); err != nil {
		t.Fatal(err)
	}
	method("method-1").Description = "Does one more thing."
	if _, err := g.once(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	site.Wait()
	entries, _ = os.ReadDir(site.Dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), trashPrefix) {
			t.Errorf("the site still holds %s", e.Name())
		}
	}
}

// matchFullBuild checks that the directory published, got, is byte for byte the one a
// full build of rec at clock publishes in a directory of its own, that the touched
// files are new since the directory before and the kept ones the very files it has.
func matchFullBuild(t *testing.T, step string, rec trust.Records, clock time.Time, before, got string, touched, kept []string) {
	t.Helper()
	full, err := Assemble(rec, clock, nil)
	if err != nil {
		t.Fatal(err)
	}
	fresh := &Site{Dir: t.TempDir(), Views: testViews}
	want, err := fresh.Publish(full)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(got) != filepath.Base(want) {
		t.Fatalf("%s: published %s, a full build %s", step, filepath.Base(got), filepath.Base(want))
	}
	a, b := tree(t, got), tree(t, want)
	for p, body := range b {
		if !bytes.Equal(a[p], body) {
			t.Errorf("%s: %s differs from the full build's (%d bytes, want %d)", step, p, len(a[p]), len(body))
		}
	}
	for p := range a {
		if _, ok := b[p]; !ok {
			t.Errorf("%s: %s is published, and not by a full build", step, p)
		}
	}
	same := func(p string) bool {
		x, err1 := os.Stat(filepath.Join(before, p))
		y, err2 := os.Stat(filepath.Join(got, p))
		return err1 == nil && err2 == nil && os.SameFile(x, y)
	}
	for _, p := range touched {
		if _, ok := a[p]; !ok || same(p) {
			t.Errorf("%s: %s was not published anew", step, p)
		}
	}
	for _, p := range kept {
		for _, x := range suffixes {
			if !same(p + x) {
				t.Errorf("%s: %s was written again", step, p+x)
			}
		}
	}
	if t.Failed() {
		t.FailNow()
	}
}

// TestManifestIsWrittenAsJSONEncodesIt holds the manifest, written a file at a time,
// to the bytes json.Marshal makes of it.
func TestManifestIsWrittenAsJSONEncodesIt(t *testing.T) {
	site := &Site{Dir: t.TempDir(), Views: testViews}
	dir, err := site.Publish(testSnapshot(t, time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC), 7))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, ManifestName))
	if err != nil {
		t.Fatal(err)
	}
	var m Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	if len(m.Files) == 0 || m.Counts.Files != 2*len(m.Files) || !bytes.Equal(mustJSON(m), raw) {
		t.Fatalf("manifest.json is not json.Marshal's encoding of itself:\n%s", raw)
	}
}

// TestServedSnapshotsAnswerFromTheirPublishedFiles checks that a generation's snapshot
// holds no encoded form of its methods and merchants, and answers each as the files
// published for it hold it: after a full build, after a change (the unchanged methods
// are the previous snapshot's, answered from the new directory), after another
// publisher made another directory current (the site writes every file again, from
// the previous snapshot's files), and, for a snapshot no longer in force, once its
// directory is gone; and one whose bodies were left unencoded, served from the files
// of the same snapshot published before. Its list too is answered from its files.
func TestServedSnapshotsAnswerFromTheirPublishedFiles(t *testing.T) {
	at := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	src := &records{rec: testRecords(12, at)}
	site := testSite(t.TempDir())
	g := &Generator{Source: src, Site: site}
	gone := false
	check := func(step string, snap *directory.Snapshot, files map[string][]byte) {
		t.Helper()
		answer := func(path string, res *resource.Resource) {
			if res.Gzip() != nil || res.Brotli() != nil {
				t.Errorf("%s: %s holds its encoded forms", step, path)
			}
			for ae, x := range map[string]string{"identity": "", "gzip": ".gz", "br": ".br"} {
				want, ok := files[filepath.FromSlash(path)+x]
				if !ok {
					t.Fatalf("%s: %s%s is not published", step, path, x)
				}
				r := httptest.NewRequest(http.MethodGet, "/", nil)
				r.Header.Set("Accept-Encoding", ae)
				w := httptest.NewRecorder()
				if err := resource.Serve(w, r, res, http.StatusOK); err != nil {
					// A merchant's body is left in its file: with the file gone, only
					// the cache has it, and what it cannot answer the caller does.
					if !gone || !strings.HasPrefix(path, merchantsDir) || w.Body.Len() > 0 {
						t.Errorf("%s: %s (%s): %v", step, path, ae, err)
					}
					continue
				}
				if !bytes.Equal(w.Body.Bytes(), want) {
					t.Errorf("%s: %s (%s) answers %d bytes, not the %d published", step, path, ae, w.Body.Len(), len(want))
				}
			}
		}
		// The list too, opened where it was written, before its directory was renamed
		// current.
		answer(ListFile, snap.List())
		for _, m := range snap.Methods() {
			res, _ := snap.Method(m.Slug)
			answer(servicesDir+m.Slug, res)
		}
		for _, h := range snap.Hostnames() {
			res, _ := snap.Merchant(h)
			if res.Body != nil {
				t.Errorf("%s: merchant %s holds its body", step, h)
			}
			answer(merchantsDir+h, res)
		}
	}
	if _, err := g.Once(context.Background()); err != nil {
		t.Fatal(err)
	}
	check("full build", g.last, tree(t, site.Current()))
	first, firstDir := g.last, site.Current()
	firstFiles := tree(t, firstDir)
	src.rec.Methods[3].Method.Description = "Does something else now."
	if _, err := g.once(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	check("a change", g.last, tree(t, site.Current()))
	// What did not change holds the bytes the snapshot before held, not a copy.
	for _, m := range g.last.Methods() {
		res, _ := g.last.Method(m.Slug)
		was, _ := first.Method(m.Slug)
		changed := m.Slug == src.rec.Methods[3].Method.Slug
		if shared := unsafe.SliceData(res.Body) == unsafe.SliceData(was.Body); shared == changed {
			t.Errorf("a change: %s shares the body held before: %v", m.Slug, shared)
		}
	}
	// The same snapshot made again, its bodies unencoded, served from the files
	// published before rather than written by its own publication.
	again, err := assemble(src.rec, g.last.Info().GeneratedAt, nil, nil, directory.NewSnapshotUnencoded)
	if err != nil {
		t.Fatal(err)
	}
	check("published before", served(again, site.Current(), site.Current(), resource.NewCache(16), nil, site.files()), tree(t, site.Current()))
	// Another publisher's directory made current: this site knows nothing of it.
	other := testSite(site.Dir)
	if _, err := other.Publish(testSnapshot(t, at, 3)); err != nil {
		t.Fatal(err)
	}
	src.rec.Methods[4].Method.Description = "Does another thing now."
	if _, err := g.once(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	check("after another publisher", g.last, tree(t, site.Current()))
	if err := os.RemoveAll(firstDir); err != nil {
		t.Fatal(err)
	}
	gone = true
	check("its directory gone", first, firstFiles)
	check("the first directory gone", g.last, tree(t, site.Current()))
}

// changedRecords is the store, noting how many methods each read after another
// was given.
type changedRecords struct {
	*postgres.Store
	given []int
}

func (c *changedRecords) DirectoryRecordsAfter(ctx context.Context, now time.Time, prev []trust.MethodRecord) (trust.Records, error) {
	c.given = append(c.given, len(prev))
	return c.Store.DirectoryRecordsAfter(ctx, now, prev)
}

// TestIncrementalPublicationsFromTheStoreMatchFullBuilds changes a stored catalog step
// by step (a description, a provider's name, a method disabled, one deleted, one moved
// to another merchant, one added, a merchant's probe) and publishes each step as the
// generator does after a change, reading only the methods whose rows changed: every
// file must be byte for byte a full build's of the whole catalog read afresh.
func TestIncrementalPublicationsFromTheStoreMatchFullBuilds(t *testing.T) {
	ctx := context.Background()
	store, _ := pgtest.LoadDemo(t, time.Now())
	src := &changedRecords{Store: store}
	site := testSite(t.TempDir())
	g := &Generator{Source: src, Site: site}
	if _, err := g.Once(ctx); err != nil {
		t.Fatal(err)
	}
	clock := g.last.Info().GeneratedAt
	var ids []int64
	var hosts []string
	rows, _ := store.Pool().Query(ctx, `SELECT id, hostname FROM provider_methods WHERE enabled ORDER BY id`)
	var id int64
	var host string
	pgx.ForEachRow(rows, []any{&id, &host}, func() error {
		ids, hosts = append(ids, id), append(hosts, host)
		return nil
	})
	other := func(i int) string { // a hostname of another method than i's
		for _, h := range hosts {
			if h != hosts[i] {
				return h
			}
		}
		t.Fatal("one hostname")
		return ""
	}
	if len(ids) < 7 {
		t.Fatalf("%d methods", len(ids))
	}
	steps := []struct {
		name, sql string
		args      []any
	}{
		{"a description", `UPDATE provider_methods SET description = description || ' Revised.' WHERE id = $1`, []any{ids[0]}},
		{"a provider's name", `UPDATE providers SET name = name || ' Renamed' WHERE id = (SELECT provider_id FROM provider_methods WHERE id = $1)`, []any{ids[1]}},
		{"a method disabled", `UPDATE provider_methods SET enabled = false WHERE id = $1`, []any{ids[2]}},
		{"a method deleted", `DELETE FROM provider_methods WHERE id = $1`, []any{ids[3]}},
		{"a move to another merchant", `UPDATE provider_methods SET hostname = $2 WHERE id = $1`, []any{ids[4], other(4)}},
		{"a new method", `INSERT INTO provider_methods (provider_id, slug, name, description, category, kind, hostname, endpoint_url)
			SELECT provider_id, slug || '-again', name, description, category, kind, hostname, endpoint_url || '/again'
			FROM provider_methods WHERE id = $1`, []any{ids[5]}},
		{"a merchant's probe", `INSERT INTO probes (method_id, hostname, probed_at, outcome, http_status)
			VALUES ($1, $2, $3, 'http_error', 500)`, []any{ids[6], hosts[6], clock.Add(-time.Minute)}},
		{"nothing", `SELECT $1::bigint`, []any{ids[0]}},
	}
	for _, st := range steps {
		before := site.Current()
		if _, err := store.Pool().Exec(ctx, st.sql, st.args...); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if _, err := g.once(ctx, true); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		rec, err := store.DirectoryRecords(ctx, clock)
		if err != nil {
			t.Fatal(err)
		}
		matchFullBuild(t, st.name, rec, clock, before, site.Current(), nil, nil)
	}
	if len(src.given) != len(steps) || slices.Contains(src.given, 0) {
		t.Errorf("the reads after the first were given %v methods of the one before", src.given)
	}
}
