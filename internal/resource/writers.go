package resource

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"runtime"
	"sync"

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
	buf := output.Get().(*bytes.Buffer)
	defer output.Put(buf)
	buf.Reset()
	w, ok := flateWriters.get(flate.DefaultCompression)
	if !ok {
		w, _ = flate.NewWriter(buf, flate.DefaultCompression)
	} else {
		w.Reset(buf)
	}
	w.Write(raw)
	w.Flush()
	flateWriters.put(flate.DefaultCompression, w)
	return bytes.Clone(buf.Bytes())
}

// holds counts the generations that hold the compressors, under holding.
var (
	holding sync.Mutex
	holds   int
)

// HoldCompressors keeps the compressors pooled from the collector until the returned
// func is called (once; more calls do nothing). Holds may overlap: the writers go
// back to the sync.Pool when the last is released.
func HoldCompressors() (release func()) {
	holding.Lock()
	holds++
	holding.Unlock()
	return sync.OnceFunc(func() {
		holding.Lock()
		holds--
		last := holds == 0
		holding.Unlock()
		if last {
			gzipWriters.release()
			brotliWriters.release()
			flateWriters.release()
		}
	})
}

// writers pools the compressors of one kind, by level.
type writers[W any] struct {
	mu    sync.Mutex
	pools map[int]*sync.Pool
	kept  map[int][]W // while the compressors are held
}

// pool is level's sync.Pool, with mu held.
func (p *writers[W]) pool(level int) *sync.Pool {
	if p.pools == nil {
		p.pools = map[int]*sync.Pool{}
	}
	pool, ok := p.pools[level]
	if !ok {
		pool = &sync.Pool{}
		p.pools[level] = pool
	}
	return pool
}

// get is a pooled writer of level, if there is one.
func (p *writers[W]) get(level int) (W, bool) {
	p.mu.Lock()
	if k := p.kept[level]; len(k) > 0 {
		w := k[len(k)-1]
		p.kept[level] = k[:len(k)-1]
		p.mu.Unlock()
		return w, true
	}
	pool := p.pool(level)
	p.mu.Unlock()
	w, ok := pool.Get().(W)
	return w, ok
}

// put pools a writer of level: kept while the compressors are held, up to two for
// each processor, else in the sync.Pool.
func (p *writers[W]) put(level int, w W) {
	p.mu.Lock()
	defer p.mu.Unlock()
	holding.Lock()
	held := holds > 0
	holding.Unlock()
	if held && len(p.kept[level]) < 2*runtime.GOMAXPROCS(0) {
		if p.kept == nil {
			p.kept = map[int][]W{}
		}
		p.kept[level] = append(p.kept[level], w)
		return
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
