package resource

import (
	"bytes"
	"crypto/sha256"
	"strings"

	"github.com/andybalholm/brotli"
)

// NewForms is a resource whose encoded forms were made already, by the caller: gzip
// and brotli must decode to body (brotli nil for none). Its ETags are body's hash's,
// as New's are, whatever bytes the forms hold.
func NewForms(contentType string, body, gzip, brotli []byte) *Resource {
	r := (&Resource{Body: body}).withForms(gzip, brotli)
	r.init(contentType)
	return r
}

// NewFormsUnheld is NewForms for a body that is not held: size bytes whose SHA-256
// is sum, which the caller writes out itself, beside the forms. Its Body is nil, and it
// answers nothing until it is answered from the files it was published in (see
// FromFiles): a body of tens of megabytes (the directory's list) need not be held
// whole to be published.
func NewFormsUnheld(contentType string, sum [sha256.Size]byte, size int, gzip, brotli []byte) *Resource {
	r := (&Resource{}).withForms(gzip, brotli)
	var a [24]byte
	r.setHeaders(contentType, tagOfSum(&a, sum), size, len(gzip), len(brotli))
	return r
}

// InFiles reports whether the resource is answered from the files of its forms (see
// FromFiles).
func (res *Resource) InFiles() bool { return res.mem != nil && res.mem.files[identity] != nil }

// Brotli is body's brotli form at quality, as NewLevels makes it.
func Brotli(body []byte, quality int) []byte { return compressBrotli(nil, body, quality) }

// BrotliBlock is how much of a body a BrotliWriter compresses at a time: the window
// of the brotli writers made here (brotli's default, 4 MiB), in which a writer at
// quality 0 or 1 compresses a body written whole. At those qualities it compresses
// each write as it comes, so that writes of other sizes would make other bytes (for
// writes of 4 KB, a form a quarter larger).
const BrotliBlock = 1 << 22

// BrotliWriter makes the brotli form of a body written to it in parts of any size,
// the bytes Brotli makes of the body whole, holding no more of it than a block (none of
// it when it is written in blocks of BrotliBlock bytes): for a body made as it is
// written out, never held whole. One goroutine at a time.
type BrotliWriter struct {
	quality int
	w       *brotli.Writer
	out     *bytes.Buffer
	block   []byte
}

// NewBrotliWriter is a BrotliWriter at quality.
func NewBrotliWriter(quality int) *BrotliWriter {
	b := &BrotliWriter{quality: quality, out: output.Get().(*bytes.Buffer)}
	b.out.Reset()
	w, ok := brotliWriters.get(quality)
	if ok {
		w.Reset(b.out)
	} else {
		w = brotli.NewWriterLevel(b.out, quality)
	}
	b.w = w
	return b
}

// Write takes the next part of the body; it never fails.
func (b *BrotliWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		if len(b.block) == 0 && len(p) >= BrotliBlock {
			b.w.Write(p[:BrotliBlock])
			p = p[BrotliBlock:]
			continue
		}
		k := min(len(p), BrotliBlock-len(b.block))
		b.block = append(b.block, p[:k]...)
		p = p[k:]
		if len(b.block) == BrotliBlock {
			b.w.Write(b.block)
			b.block = b.block[:0]
		}
	}
	return n, nil
}

// Bytes ends the body and returns its brotli form; the writer is not used again.
func (b *BrotliWriter) Bytes() []byte {
	b.w.Write(b.block)
	b.w.Close()
	brotliWriters.put(b.quality, b.w)
	out := bytes.Clone(b.out.Bytes())
	output.Put(b.out)
	*b = BrotliWriter{}
	return out
}

// LargeBody is the size past which LevelsFor makes brotli at LargeBrotli.
const (
	LargeBody   = 1 << 20
	LargeBrotli = 1
)

// LevelsFor are the Default levels for a body of size bytes, but brotli at
// LargeBrotli past LargeBody: brotli is made on one processor and in one piece, and
// at its default quality the largest bodies of a hundred thousand methods (the list,
// the category pages) would take most of a snapshot's time. There, quality 1 made
// about 400 MB a second against 56 to 74 at 6 and 115 to 175 at 2, for forms about
// a third larger than 6's: 2% larger than 2's for the list, 6% smaller for the
// category pages. The real catalog's bodies are all smaller.
func LevelsFor(size int) Levels {
	if size > LargeBody {
		return Levels{Gzip: Default.Gzip, Brotli: LargeBrotli}
	}
	return Default
}

// Published is res with gzip and brotli forms of gzip and brotli bytes (0 for a form
// it has none of), published already at the levels LevelsFor gives its body, as New
// and NewLevels make them: it holds none of them, and is meant to be answered from
// where they were published (see Stored), so that a server that starts from a
// published site learns their sizes from its manifest rather than by compressing
// every body again. Its ETags are res's.
func (res *Resource) Published(gzip, brotli int) *Resource {
	l := LevelsFor(len(res.Body))
	r := &Resource{Body: res.Body, levels: [2]int8{int8(l.Gzip), int8(l.Brotli)}}
	r.setHeaders(res.ContentType, []byte(strings.Trim(res.ETag, `"`)), len(res.Body), gzip, brotli)
	return r
}
