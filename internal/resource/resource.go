// Package resource holds a response body encoded once and served many times, and the
// one place that serves it: the directory's JSON, the pages and the static files are
// all answered by Serve, so their ETags, revalidation and content negotiation agree.
package resource

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"io"
	"strconv"
	"unsafe"

	"github.com/andybalholm/brotli"
)

// Content types of the resources the service makes.
const (
	JSON = "application/json; charset=utf-8"
	HTML = "text/html; charset=utf-8"
)

// Resource is one pre-encoded response body with its gzip and brotli forms and
// strong ETags. The three forms are different representations, so their ETags differ.
type Resource struct {
	Body       []byte
	ETag       string
	GzipETag   string
	BrotliETag string
	// ContentType is the body's media type; empty leaves the header to the caller.
	ContentType string

	// The lengths of the forms, made once, so that serving a resource allocates
	// nothing: the header slices Serve sets are slices of this array, or of the
	// fields above for the type and the ETags (see header), and the ETags and lengths
	// are slices of one string. A snapshot of a hundred thousand methods holds as many
	// resources, so what each holds beside its bytes counts.
	lengths [3]string
	// mem, when set, holds the encoded forms in memory, or the files they are sent
	// from (see FromFiles). A stored resource (nearly every one a snapshot holds) has
	// neither, so they are not fields of every resource.
	mem *inMemory
	// at, when set, is where the encoded forms are instead (see Stored); levels are
	// those they were made at, to make them again.
	at     *stored
	levels [2]int8
}

// inMemory is what a resource holds of its encoded forms outside its files: their
// bytes, or the published files it sends them from (files[identity] set).
type inMemory struct {
	gzip, brotli []byte
	files        [3]*file
}

// Gzip is the resource's gzip form when it holds it in memory, else nil.
func (r *Resource) Gzip() []byte {
	if r.mem == nil {
		return nil
	}
	return r.mem.gzip
}

// Brotli is the resource's brotli form when it holds it in memory, else nil.
func (r *Resource) Brotli() []byte {
	if r.mem == nil {
		return nil
	}
	return r.mem.brotli
}

// withForms is r holding gzip and brotli in memory (nil for a form it holds none of).
func (r *Resource) withForms(gzip, brotli []byte) *Resource {
	if gzip != nil || brotli != nil {
		r.mem = &inMemory{gzip: gzip, brotli: brotli}
	}
	return r
}

// Indexes of the header values a resource answers with (see header): the type, then
// each form's ETag and length, the form's index (identity, gzip, brotli) added to the
// first. A form a resource does not have has no length.
const (
	hType = iota
	hETag
	hLength = hETag + 3
	headers = hLength + 3
)

// Forms of a resource, as Encoding names them by index.
const (
	identity = iota
	gzipForm
	brotliForm
)

// Levels are the compression levels of a resource's encoded forms; a Brotli level of
// 0 makes no brotli form.
type Levels struct {
	Gzip, Brotli int
}

// Compression levels. Default is for bodies encoded once per snapshot: gzip's
// default (on the real catalog its best level saved under 0.1% of the bytes at twice
// the time) and brotli 6, which on the real catalog's list is 9% smaller than gzip at
// about 1.4 times its time; brotli's best (11) would be 19% smaller but takes 90 times
// as long, too slow for a snapshot of a hundred thousand methods. Best is for the few
// static files, compressed once per process.
var (
	Default = Levels{Gzip: gzip.DefaultCompression, Brotli: 6}
	Best    = Levels{Gzip: gzip.BestCompression, Brotli: 11}
)

// New encodes body once in every form at the levels LevelsFor gives its size (the
// Default levels but for the largest bodies) and derives the ETags from its hash. It
// is meant for bodies encoded once and served many times; Published assumes its
// levels.
func New(contentType string, body []byte) *Resource {
	return NewLevels(contentType, body, LevelsFor(len(body)))
}

// NewLevels is New at other levels. The encoded bytes depend only on the body and the
// levels, so every replica makes the same ones.
func NewLevels(contentType string, body []byte, l Levels) *Resource {
	return newLevels(nil, contentType, body, l)
}

// Scratch makes resources whose encoded forms are written into two buffers it keeps,
// not into bytes made for each: for a caller that writes each resource out and drops
// it before it makes the next, as a publication does its pages, of which a change at
// a hundred thousand methods makes a hundred megabytes. One goroutine at a time.
type Scratch struct{ forms [2]bytes.Buffer }

// New is New with the resource's encoded forms (the same bytes) in s's buffers,
// valid until s makes the next.
func (s *Scratch) New(contentType string, body []byte) *Resource {
	return newLevels(s, contentType, body, LevelsFor(len(body)))
}

// newLevels is NewLevels with the forms in s's buffers, or made for the resource
// when s is nil.
func newLevels(s *Scratch, contentType string, body []byte, l Levels) *Resource {
	var gz, br *bytes.Buffer
	if s != nil {
		gz, br = &s.forms[0], &s.forms[1]
	}
	r := &Resource{Body: body, levels: [2]int8{int8(l.Gzip), int8(l.Brotli)}}
	var b []byte
	if l.Brotli > 0 {
		b = compressBrotli(br, body, l.Brotli)
	}
	r.withForms(compress(gz, body, l.Gzip), b)
	r.init(contentType)
	return r
}

// NewIdentity is a resource made for one answer to a client that takes no encoding
// we make: its other ETags are known, so If-None-Match works as for any resource, but
// its encoded bytes are never made (Serve answers it as identity).
func NewIdentity(contentType string, body []byte) *Resource {
	r := &Resource{Body: body}
	r.init(contentType)
	return r
}

// init derives the ETags from the body's hash and makes the header values: every
// string but the type is a slice of one, so that they cost one allocation.
func (r *Resource) init(contentType string) {
	var a [24]byte
	r.setHeaders(contentType, tagOf(&a, r.Body), len(r.Body), len(r.Gzip()), len(r.Brotli()))
}

// tagOf is what names body in its ETags, from its hash, made in a.
func tagOf(a *[24]byte, body []byte) []byte {
	return tagOfSum(a, sha256.Sum256(body))
}

// tagOfSum is what names a body whose hash is sum in its ETags, made in a.
func tagOfSum(a *[24]byte, sum [sha256.Size]byte) []byte {
	return base64.RawURLEncoding.AppendEncode(a[:0], sum[:18])
}

// setHeaders makes the header values of a body of size bytes whose hash tag names,
// with forms of gzip and brotli bytes, held or not: a form of 0 bytes is one the
// resource does not have (no encoding of a body is empty).
func (r *Resource) setHeaders(contentType string, etag []byte, size, gzip, brotli int) {
	var a [128]byte
	b := append(a[:0], '"')
	b = append(b, etag...)
	tag := len(b)
	b = append(b, `""`...)
	b = append(b, b[1:tag]...)
	b = append(b, `-gzip""`...)
	b = append(b, b[1:tag]...)
	b = append(b, `-br"`...)
	ends := [headers]int{hETag: tag + 1, hETag + 1: 2*tag + 7, hETag + 2: 3*tag + 11}
	for i, size := range [...]int{size, gzip, brotli} {
		if i == identity || size > 0 {
			b = strconv.AppendInt(b, int64(size), 10)
			ends[hLength+i] = len(b)
		}
	}
	s := string(b)
	start := 0
	var hdr [headers]string
	for i := hETag; i < headers; i++ {
		if ends[i] > 0 {
			hdr[i], start = s[start:ends[i]], ends[i]
		}
	}
	r.ETag, r.GzipETag, r.BrotliETag = hdr[hETag], hdr[hETag+1], hdr[hETag+2]
	r.lengths = [3]string(hdr[hLength:])
	r.ContentType = contentType
}

// header is the header value at i, shared: net/http only reads it. The type and the
// ETags are the fields themselves, not copies of them held beside.
func (r *Resource) header(i int) []string {
	switch i {
	case hType:
		return unsafe.Slice(&r.ContentType, 1)
	case hETag:
		return unsafe.Slice(&r.ETag, 1)
	case hETag + gzipForm:
		return unsafe.Slice(&r.GzipETag, 1)
	case hETag + brotliForm:
		return unsafe.Slice(&r.BrotliETag, 1)
	}
	return r.lengths[i-hLength : i-hLength+1 : i-hLength+1]
}

// size is the length of a form the resource has.
func (r *Resource) size(form int) int64 {
	n, _ := strconv.ParseInt(r.lengths[form], 10, 64)
	return n
}

// has reports whether the resource has a form.
func (r *Resource) has(form int) bool { return r.lengths[form] != "" }

// compress is body's gzip form at level.
func compress(dst *bytes.Buffer, body []byte, level int) []byte {
	return encode(&gzipWriters, level, dst, body, func(w io.Writer) *gzip.Writer {
		zw, _ := gzip.NewWriterLevel(w, level)
		return zw
	}, (*gzip.Writer).Close)
}

// compressBrotli is body's brotli form at quality.
func compressBrotli(dst *bytes.Buffer, body []byte, quality int) []byte {
	return encode(&brotliWriters, quality, dst, body, func(w io.Writer) *brotli.Writer {
		return brotli.NewWriterLevel(w, quality)
	}, (*brotli.Writer).Close)
}
