package resource

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"sync"
)

// FromFiles is res answered from the files that hold its forms byte for byte, as a
// published site does: path, path.gz and path.br (those of the forms res has). It
// holds none of the bytes: each answer is sent from its file with sendfile(2), which
// copies once, from the page cache, where a write from memory copies twice; a large
// body (the directory's list) serves faster, and is not held twice, in the heap and
// in the page cache. The files are opened now and stay open as long as the resource
// is held, so that a later change of the directory they are in changes nothing;
// their sizes must be the forms'. Its Body is nil, and it holds no form in memory.
func (res *Resource) FromFiles(path string) (*Resource, error) {
	out := &Resource{ETag: res.ETag, GzipETag: res.GzipETag, BrotliETag: res.BrotliETag, ContentType: res.ContentType,
		lengths: res.lengths, mem: &inMemory{}}
	for form, suffix := range [...]string{"", ".gz", ".br"} {
		if !res.has(form) {
			continue
		}
		f, err := openFile(path+suffix, res.lengths[form])
		if err != nil {
			return nil, fmt.Errorf("resource: %w", err)
		}
		out.mem.files[form] = f
	}
	return out, nil
}

// file is one form's file. sendfile(2) sends from, and moves, the offset of an open
// file, which every descriptor of one open() shares: each answer takes a file of its
// own from idle, opened anew (through /proc/self/fd, so the same file even once
// unlinked or replaced) when none is idle, and puts it back at offset 0. A file held
// by nothing more is closed by the garbage collector.
type file struct {
	first *os.File
	size  int64
	again string // a path that opens first's file anew

	mu   sync.Mutex
	idle []*opened
}

// opened is a file opened for one answer at a time, read through a reader that stops
// at its size: sendfile(2) then sends it in one call, without a last one to find its
// end.
type opened struct {
	io.LimitedReader
	f  *os.File
	fd int // f's descriptor, for sendConn

	// at is where Read is in the file: it reads at offsets, and a sendConn sends from
	// one, so that the file's own offset stays at 0.
	at int64
}

// Read reads the file from at, without moving its offset.
func (o *opened) Read(p []byte) (int, error) {
	if o.N <= 0 {
		return 0, io.EOF
	}
	n, err := o.f.ReadAt(p[:min(int64(len(p)), o.N)], o.at)
	o.at += int64(n)
	o.N -= int64(n)
	if err == io.EOF && n > 0 {
		err = nil
	}
	return n, err
}

func openFile(path, length string) (*file, error) {
	size, err := strconv.ParseInt(length, 10, 64)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if fi.Size() != size {
		f.Close()
		return nil, fmt.Errorf("%s holds %d bytes, not %d", path, fi.Size(), size)
	}
	ff := &file{first: f, size: size}
	if raw, err := f.SyscallConn(); err == nil {
		raw.Control(func(fd uintptr) { ff.again = "/proc/self/fd/" + strconv.FormatUint(uint64(fd), 10) })
	}
	return ff, nil
}

// send writes the file to w, the answer to r, with sendfile(2) when w (or what it
// wraps, as its ReadFrom passes on) is a connection.
func (f *file) send(w http.ResponseWriter, r *http.Request) {
	o := f.take()
	if o == nil {
		// Read at offsets, which any number of answers can share; no sendfile.
		io.Copy(w, io.NewSectionReader(f.first, 0, f.size))
		return
	}
	if !o.send(w, r, f.size) {
		o.f.Close()
		return
	}
	f.mu.Lock()
	f.idle = append(f.idle, o)
	f.mu.Unlock()
}

// sendFile writes the size bytes of f, opened at offset 0, to w, the answer to r, as
// a file's send does, and closes it.
func sendFile(w http.ResponseWriter, r *http.Request, f *os.File, size int64) {
	o := &opened{f: f, fd: int(f.Fd())}
	o.send(w, r, size)
	f.Close()
}

// send writes the size bytes of o's file to w, the answer to r; true when all went
// and the file's offset is back at 0, for another answer.
func (o *opened) send(w http.ResponseWriter, r *http.Request, size int64) bool {
	// The headers go first, so that net/http sends all of the body with sendfile
	// instead of reading its first bytes to sniff them; they wait on the connection
	// for the body (see hold), as nginx's tcp_nopush has them wait.
	h := hold(r)
	defer h.release()
	if fl, ok := w.(http.Flusher); ok {
		fl.Flush()
	}
	o.R, o.N, o.at = o.f, size, 0
	// Through a sendConn, o itself, whose reads leave the file's offset at 0, as the
	// sendConn's sendfile(2) does; else net's sendfile(2), which moves it.
	var src io.Reader = &o.LimitedReader
	own := h.sc != nil
	if own {
		src = o
	}
	var n int64
	var err error
	if rf, ok := w.(io.ReaderFrom); ok {
		n, err = rf.ReadFrom(src)
	} else {
		n, err = io.Copy(w, src)
	}
	if err == nil && n == size && !own {
		_, err = o.f.Seek(0, io.SeekStart)
	}
	return err == nil && n == size
}

// take returns an idle file at offset 0, or one opened anew; nil when none opens.
func (f *file) take() *opened {
	f.mu.Lock()
	if n := len(f.idle); n > 0 {
		o := f.idle[n-1]
		f.idle = f.idle[:n-1]
		f.mu.Unlock()
		return o
	}
	f.mu.Unlock()
	if f.again == "" {
		return nil
	}
	o, err := os.Open(f.again)
	if err != nil {
		return nil
	}
	return &opened{f: o, fd: int(o.Fd())}
}
