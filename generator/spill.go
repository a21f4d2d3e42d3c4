package generator

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"unsafe"
)

// spilledTable is a fileTable written to a file of its own, without a name, while no
// publication reads it: between generations a server at a hundred thousand methods
// would otherwise hold the 600,000 entries and their paths in its heap (26 MB), where
// the system's page cache holds them now, and only as long as it has room to.
type spilledTable struct {
	f        *os.File
	entries  int // entries, and ends, in the file
	pathsLen int // bytes of paths, after them
}

// entrySize is the bytes of a fileEntry, which holds no pointer: its bytes are the
// entry.
const entrySize = int(unsafe.Sizeof(fileEntry{}))

// spill writes t to an unnamed file in dir: its entries, where their paths end, then
// the paths, each as it is in memory.
func spill(t fileTable, dir string) (_ *spilledTable, err error) {
	f, err := os.CreateTemp(dir, ".files-")
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			f.Close()
		}
	}()
	if err := os.Remove(f.Name()); err != nil {
		return nil, err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	w.Write(bytesOf(t.entries))
	w.Write(bytesOf(t.ends))
	w.WriteString(t.paths)
	if err := w.Flush(); err != nil {
		return nil, err
	}
	return &spilledTable{f: f, entries: len(t.entries), pathsLen: len(t.paths)}, nil
}

// read is the table back, each part one allocation of its size; the file is closed.
func (s *spilledTable) read() (fileTable, error) {
	defer s.f.Close()
	t := fileTable{entries: make([]fileEntry, s.entries), ends: make([]uint32, s.entries)}
	paths := make([]byte, s.pathsLen)
	r := io.NewSectionReader(s.f, 0, int64(s.entries*entrySize+4*s.entries+s.pathsLen))
	for _, b := range [][]byte{bytesOf(t.entries), bytesOf(t.ends), paths} {
		if _, err := io.ReadFull(r, b); err != nil {
			return fileTable{}, fmt.Errorf("generator: read the site's table back: %w", err)
		}
	}
	if n, _ := r.Read(make([]byte, 1)); n != 0 {
		return fileTable{}, errors.New("generator: the site's table is longer than written")
	}
	for i, end := range t.ends {
		if int(end) > len(paths) || i > 0 && end < t.ends[i-1] {
			return fileTable{}, errors.New("generator: the site's table read back is not the one written")
		}
	}
	if len(paths) > 0 {
		t.paths = unsafe.String(&paths[0], len(paths)) // never written again
	}
	return t, nil
}

// bytesOf is the memory of s, whose elements hold no pointer.
func bytesOf[T fileEntry | uint32](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	var zero T
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(zero)))
}

// Rest has the site let go of what it holds of its last publication until the next
// one reads it: the table of the files it published goes to a file (see spill). A
// generator calls it once a publication is served. When the file cannot be made or
// written, the table stays in memory.
func (s *Site) Rest() {
	p := s.last
	if p == nil || p.away != nil || p.files.len() == 0 {
		return
	}
	st, err := spill(p.files, s.Dir)
	if err != nil {
		return
	}
	p.away, p.files = st, fileTable{}
}

// back reads the table of p back from its file when it rests there; false when it
// does not read, and then p is of no use.
func (p *published) back() bool {
	if p.away == nil {
		return true
	}
	t, err := p.away.read()
	p.away = nil
	if err != nil {
		return false
	}
	p.files = t
	return true
}
