package resource

import "strings"

// NewForms is a resource whose encoded forms were made already, by the caller: gzip
// and brotli must decode to body (brotli nil for none). Its ETags are body's hash's,
// as New's are, whatever bytes the forms hold.
func NewForms(contentType string, body, gzip, brotli []byte) *Resource {
	r := &Resource{Body: body, Gzip: gzip, Brotli: brotli}
	r.init(contentType)
	return r
}

// Brotli is body's brotli form at quality, as NewLevels makes it.
func Brotli(body []byte, quality int) []byte { return compressBrotli(nil, body, quality) }

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
	r.setHeaders(res.ContentType, []byte(strings.Trim(res.ETag, `"`)), gzip, brotli)
	return r
}
