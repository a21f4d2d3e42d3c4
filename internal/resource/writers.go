package resource

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"io"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/andybalholm/brotli"
)

// The compressors are pooled by level: making a gzip writer costs more than
// compressing a small body with it, and a brotli writer allocates its window, ten
// times that. A sync.Pool is emptied by the collector, which is right for a server
// between generations but not during one: a generation after a change at a hundred
// thousand methods runs a dozen collections, and made its writers again after each,
// windows of megabytes that were most of what it allocated. While a generation holds
// them (see HoldCompressors), the writers put back are kept where the collector does
// not reach, a few for each level, and handed to the sync.Pool once it is over.
var (
	gzipWriters   writers[*gzip.Writer]
	brotliWriters writers[*brotli.Writer]
	flateWriters  writers[*flate.Writer]
	// output is where a body is compressed, before it is copied out at its size.
	output = sync.Pool{New: func() any { return new(bytes.Buffer) }}
)

// DeflatePiece is raw deflated on its own at the default level and ended with a sync
// flush, byte-aligned: pieces made so, laid end to end and closed by an empty final
// block, are one deflate stream, whose pieces a body that changed in places can take
// from the stream before (see the directory's list).
func DeflatePiece(raw []byte) []byte {
	return encode(&flateWriters, flate.DefaultCompression, nil, raw, func(w io.Writer) *flate.Writer {
		fw, _ := flate.NewWriter(w, flate.DefaultCompression)
		return fw
	}, (*flate.Writer).Flush)
}

// encode compresses body with a writer of level taken from p (made by made when p has
// none), ended by end, into dst, and returns dst's bytes; or, when dst is nil, into a
// pooled buffer, returned copied out at its size.
func encode[W interface {
	io.Writer
	Reset(io.Writer)
}](p *writers[W], level int, dst *bytes.Buffer, body []byte, made func(io.Writer) W, end func(W) error) []byte {
	buf := dst
	if buf == nil {
		buf = output.Get().(*bytes.Buffer)
		defer output.Put(buf)
	}
	buf.Reset()
	w, ok := p.get(level)
	if ok {
		w.Reset(buf)
	} else {
		w = made(buf)
	}
	w.Write(body)
	end(w)
	p.put(level, w)
	if dst != nil {
		return buf.Bytes()
	}
	return bytes.Clone(buf.Bytes())
}

// holds counts the generations that hold the compressors.
var holds atomic.Int32

// HoldCompressors keeps the compressors pooled from the collector until the returned
// func is called (once; more calls do nothing). Holds may overlap: the writers go
// back to the sync.Pool when the last is released.
func HoldCompressors() (release func()) {
	holds.Add(1)
	return sync.OnceFunc(func() {
		if holds.Add(-1) == 0 {
			gzipWriters.release()
			brotliWriters.release()
			flateWriters.release()
		}
	})
}

// writers pools the compressors of one kind, by level. Unless they are held, a
// writer is taken and put back without a lock, as a sync.Pool is: answers compress
// on requests.
type writers[W any] struct {
	pools sync.Map // level -> *sync.Pool
	mu    sync.Mutex
	kept  map[int][]W // while the compressors are held
}

// pool is level's sync.Pool.
func (p *writers[W]) pool(level int) *sync.Pool {
	v, ok := p.pools.Load(level)
	if !ok {
		v, _ = p.pools.LoadOrStore(level, &sync.Pool{})
	}
	return v.(*sync.Pool)
}

// get is a pooled writer of level, if there is one.
func (p *writers[W]) get(level int) (W, bool) {
	if holds.Load() > 0 {
		p.mu.Lock()
		if k := p.kept[level]; len(k) > 0 {
			w := k[len(k)-1]
			p.kept[level] = k[:len(k)-1]
			p.mu.Unlock()
			return w, true
		}
		p.mu.Unlock()
	}
	w, ok := p.pool(level).Get().(W)
	return w, ok
}

// put pools a writer of level: kept while the compressors are held, up to two for
// each processor, else in the sync.Pool.
func (p *writers[W]) put(level int, w W) {
	if holds.Load() > 0 {
		p.mu.Lock()
		// Looked at again under the lock, which release takes after the count falls:
		// a writer kept here is handed on by it.
		if holds.Load() > 0 && len(p.kept[level]) < 2*runtime.GOMAXPROCS(0) {
			if p.kept == nil {
				p.kept = map[int][]W{}
			}
			p.kept[level] = append(p.kept[level], w)
			p.mu.Unlock()
			return
		}
		p.mu.Unlock()
	}
	p.pool(level).Put(w)
}

// release hands the kept writers to the sync.Pool.
func (p *writers[W]) release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for level, k := range p.kept {
		pool := p.pool(level)
		for _, w := range k {
			pool.Put(w)
		}
		delete(p.kept, level)
	}
}
