package generator

import (
	"context"
	"os"
	"reflect"
	"testing"
	"time"
)

// Between generations a server holds no table of the files its site published: it
// waits in a file, and the next publication, reading it back, writes what changed
// and no more.
func TestASiteHoldsNoTableOfItsFilesBetweenPublications(t *testing.T) {
	at := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	src := &records{rec: testRecords(24, at)}
	site := testSite(t.TempDir())
	g := &Generator{Source: src, Site: site}
	st, err := g.Once(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st.Files == 0 || st.Written != st.Files {
		t.Fatalf("the first publication wrote %d of %d files", st.Written, st.Files)
	}
	if n := site.last.files.len(); n != 0 {
		t.Fatalf("the site holds a table of %d files between publications", n)
	}
	src.rec.Methods[5].Method.Description = "Does something else now."
	st, err = g.once(context.Background(), true)
	if err != nil {
		t.Fatal(err)
	}
	// A method's change touches its files, its merchant's and category's pages, the
	// list and the home page: far fewer than all, which a publication that lost the
	// table would write.
	if st.Written == 0 || st.Written >= st.Files/2 {
		t.Fatalf("the change wrote %d of %d files", st.Written, st.Files)
	}
	if n := site.last.files.len(); n != 0 {
		t.Fatalf("the site holds a table of %d files after a change", n)
	}
	if got := site.files(); got.len() != st.Files {
		t.Fatalf("the table read back has %d files, want %d", got.len(), st.Files)
	}
}

func TestASpilledTableReadsBackAsItWas(t *testing.T) {
	entry := func(n int32) fileEntry {
		e := fileEntry{sizes: [3]int32{n, n / 2, n / 3}, url: urlKind(n % 3), contentType: contentType(n % 2)}
		e.source[0], e.sum[31] = byte(n), byte(n>>8)
		return e
	}
	want, _, _, _ := tableAfter(fileTable{}, nil, map[string]fileEntry{"a": entry(1), "b/c.html": entry(300), "d/é": entry(70000)})
	for _, tab := range []fileTable{want, {}} {
		s, err := spill(tab, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.read()
		if err != nil {
			t.Fatal(err)
		}
		if got.paths != tab.paths || !reflect.DeepEqual(got.ends, tab.ends) && tab.len() > 0 || !reflect.DeepEqual(got.entries, tab.entries) && tab.len() > 0 {
			t.Fatalf("read back %+v, want %+v", got, tab)
		}
	}
	// A file cut short is not taken for the table.
	dir := t.TempDir()
	s, err := spill(want, dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.f.Truncate(int64(entrySize)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.read(); err == nil {
		t.Fatal("a table cut short read back")
	}
	if names, _ := os.ReadDir(dir); len(names) != 0 {
		t.Fatalf("the table's file has a name: %v", names)
	}
}
