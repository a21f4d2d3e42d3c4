package directory

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"hash/fnv"
	"io"
	"runtime"
	"sync"

	"github.com/waystation/waystation/internal/resource"
)

// The list's gzip form is one gzip member whose deflate stream is made of pieces
// compressed each on its own, as pigz makes them: a piece refers to no byte before
// it, and ends byte-aligned (a sync flush), so that the pieces, laid end to end and
// closed by an empty final block, are one valid stream. A piece is a run of the list's
// items that ends where a method's slug says (or at listPieceMax bytes), so that a
// change to a few methods changes the few pieces that hold them, and a snapshot
// compresses only those, taking the others from the snapshot before it. The bytes
// depend only on the list's, so a snapshot built after another and one built afresh
// have the same form.
const (
	// listPieceEvery is how many methods a piece holds on average: one ends after a
	// method whose slug's hash is a multiple of it.
	listPieceEvery = 32
	// listPieceMax ends a piece that grew this long.
	listPieceMax = 256 << 10
)

// listHead is what the unfiltered list begins with.
const listHead = `{"object":"list","items":[`

// pieceKey names a piece by the hash of its bytes.
type pieceKey [sha256.Size]byte

// listPieces are the deflated pieces of a list's gzip form, by their bytes' hash; the
// values are slices of that form.
type listPieces map[pieceKey][]byte

// endsPiece reports whether a piece of the list ends after the method slug names.
func endsPiece(slug string) bool {
	h := fnv.New32a()
	h.Write([]byte(slug))
	return h.Sum32()%listPieceEvery == 0
}

// listCuts are the ends of the unfiltered list's pieces, in bytes: after a method
// endsPiece names (its comma included) or once a piece reaches listPieceMax, after the
// last item, and at size, the list's length.
func (s *Snapshot) listCuts(size int) []int {
	var cuts []int
	pos, start := len(listHead), 0
	for i := range s.methods {
		pos += int(s.items[i])
		if i < len(s.methods)-1 {
			pos++ // the comma
		}
		if i == len(s.methods)-1 || endsPiece(s.methods[i].Slug) || pos-start >= listPieceMax {
			cuts = append(cuts, pos)
			start = pos
		}
	}
	return append(cuts, size)
}

// listForms are what a snapshot holds of its unfiltered list: its encoded forms, and
// its body's length and hash, with its body when the snapshot holds it.
type listForms struct {
	res    *resource.Resource
	sum    [sha256.Size]byte
	size   int
	tail   []byte // what follows the items (see appendListEnd)
	pieces listPieces
}

// encodeList makes the unfiltered list's forms as its bytes are made, from the
// methods' detail bodies, by position, and its tail: its SHA-256 and CRC-32, its
// gzip form in pieces (the ones prev holds taken from there, the others deflated on
// every processor as they come), and its brotli form, made beside them. With hold,
// the resource holds the body; without, the body is never held whole (at a hundred
// thousand methods it is 45 MB), and the publisher writes it out (see WriteList).
func (s *Snapshot) encodeList(details [][]byte, tail []byte, prev listPieces, hold bool) (listForms, error) {
	size := len(listHead) + len(tail) + max(len(s.items)-1, 0)
	for _, k := range s.items {
		size += int(k)
	}
	e := newListEncoder(s.listCuts(size), prev, resource.LevelsFor(size).Brotli, min(size, resource.BrotliBlock))
	var body []byte
	write := e.write
	if hold {
		body = make([]byte, 0, size)
		write = func(p []byte) {
			e.write(p)
			body = append(body, p...)
		}
	}
	s.writeList(write, details, tail)
	f := listForms{size: size, tail: tail}
	gz, br, sum, pieces, err := e.close()
	if err != nil {
		return listForms{}, err
	}
	f.sum, f.pieces = sum, pieces
	if hold {
		f.res = resource.NewForms(resource.JSON, body, gz, br)
	} else {
		f.res = resource.NewFormsUnheld(resource.JSON, f.sum, size, gz, br)
	}
	return f, nil
}

// writeList writes the unfiltered list to write, in parts: its head, every item (from
// details, or from the detail bodies the snapshot holds when details is nil), and tail.
func (s *Snapshot) writeList(write func([]byte), details [][]byte, tail []byte) {
	write(listHeadBytes)
	for i := range s.items {
		var detail []byte
		if details != nil {
			detail = details[i]
		} else {
			detail = s.slugs[i].Body
		}
		if i > 0 {
			write(comma)
		}
		write(detail[:s.items[i]-1])
		write(closeBrace)
	}
	write(tail)
}

var listHeadBytes, comma, closeBrace = []byte(listHead), []byte{','}, []byte{'}'}

// WriteList writes the unfiltered list's body to w, the bytes its forms encode: a
// snapshot made to be published does not hold it (see NewSnapshotUnencoded). It
// returns the bytes written.
func (s *Snapshot) WriteList(w io.Writer) (int64, error) {
	var n int64
	var err error
	s.writeList(func(p []byte) {
		if err == nil {
			var k int
			k, err = w.Write(p)
			n += int64(k)
		}
	}, nil, s.list.tail)
	return n, err
}

// listEncoder makes the list's forms from its bytes as they come (see encodeList).
// The bytes are cut into the gzip form's pieces, each deflated by a worker unless prev
// holds it, and gathered into the brotli writer's blocks, hashed and compressed on
// a goroutine of their own: at most a few pieces and three blocks are held at a time.
type listEncoder struct {
	cuts     []int
	at       int // bytes written before piece
	piece    []byte
	n        int // the piece's index
	keys     []pieceKey
	deflated [][]byte
	prev     listPieces

	jobs  chan int // pieces to deflate, by index, their bytes in raw
	raw   [][]byte
	spare chan []byte // piece buffers free again
	work  sync.WaitGroup

	block     []byte
	blockSize int
	blocks    chan []byte // full blocks, to hash and compress
	free      chan []byte // blocks done with
	stream    sync.WaitGroup
	over      bool // more bytes came than the cuts end
	crc       uint32
	sum       [sha256.Size]byte
	br        []byte
}

func newListEncoder(cuts []int, prev listPieces, quality, blockSize int) *listEncoder {
	workers := runtime.GOMAXPROCS(0)
	e := &listEncoder{
		cuts: cuts, keys: make([]pieceKey, len(cuts)), deflated: make([][]byte, len(cuts)), raw: make([][]byte, len(cuts)),
		prev: prev, jobs: make(chan int, 2*workers), spare: make(chan []byte, 3*workers+1),
		blockSize: blockSize, blocks: make(chan []byte, 1), free: make(chan []byte, 2),
	}
	for range workers {
		e.work.Go(func() {
			for i := range e.jobs {
				e.deflated[i] = resource.DeflatePiece(e.raw[i])
				select {
				case e.spare <- e.raw[i][:0]:
				default:
				}
				e.raw[i] = nil
			}
		})
	}
	e.stream.Go(func() {
		h, crc := sha256.New(), crc32.NewIEEE()
		bw := resource.NewBrotliWriter(quality)
		for b := range e.blocks {
			h.Write(b)
			crc.Write(b)
			bw.Write(b)
			select {
			case e.free <- b[:0]:
			default:
			}
		}
		h.Sum(e.sum[:0])
		e.crc = crc.Sum32()
		e.br = bw.Bytes()
	})
	e.piece = e.buffer()
	return e
}

// buffer is a piece buffer free again, or a new one.
func (e *listEncoder) buffer() []byte {
	select {
	case b := <-e.spare:
		return b
	default:
		return make([]byte, 0, 32<<10)
	}
}

// write takes the list's next bytes.
func (e *listEncoder) write(p []byte) {
	for len(p) > 0 {
		if e.n == len(e.cuts) {
			e.over = true
			return
		}
		k := min(len(p), e.cuts[e.n]-e.at-len(e.piece))
		e.piece = append(e.piece, p[:k]...)
		p = p[k:]
		if e.at+len(e.piece) == e.cuts[e.n] {
			e.endPiece()
		}
	}
}

// endPiece hands the piece on: to the stream, then to a worker unless prev holds it.
func (e *listEncoder) endPiece() {
	raw := e.piece
	e.toStream(raw)
	e.keys[e.n] = sha256.Sum256(raw)
	if d, ok := e.prev[e.keys[e.n]]; ok {
		e.deflated[e.n] = d
		e.piece = raw[:0]
	} else {
		e.raw[e.n] = raw
		e.jobs <- e.n
		e.piece = e.buffer()
	}
	e.at += len(raw)
	e.n++
}

// toStream copies p into the blocks, sending each one filled.
func (e *listEncoder) toStream(p []byte) {
	for len(p) > 0 {
		if e.block == nil {
			select {
			case e.block = <-e.free:
			default:
				e.block = make([]byte, 0, e.blockSize)
			}
		}
		k := min(len(p), e.blockSize-len(e.block))
		e.block = append(e.block, p[:k]...)
		p = p[k:]
		if len(e.block) == e.blockSize {
			e.blocks <- e.block
			e.block = nil
		}
	}
}

// close waits for the forms, once every byte was written: the gzip form, the brotli
// form, the body's SHA-256 and the gzip form's pieces; an error when the bytes did
// not end where the cuts do.
func (e *listEncoder) close() (gz, br []byte, sum [sha256.Size]byte, pieces listPieces, err error) {
	if e.block != nil {
		e.blocks <- e.block
	}
	close(e.blocks)
	close(e.jobs)
	e.work.Wait()
	e.stream.Wait()
	if e.over || e.n != len(e.cuts) {
		return nil, nil, sum, nil, fmt.Errorf("directory: the list's %d bytes do not end where its pieces do", e.at+len(e.piece))
	}
	size := 10 + 2 + 8
	for _, d := range e.deflated {
		size += len(d)
	}
	// The header of Go's gzip writer at the default level, with no name nor time.
	gz = make([]byte, 0, size)
	gz = append(gz, 0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff)
	pieces = make(listPieces, len(e.cuts))
	for i, d := range e.deflated {
		pieces[e.keys[i]] = gz[len(gz) : len(gz)+len(d) : len(gz)+len(d)]
		gz = append(gz, d...)
	}
	gz = append(gz, 3, 0) // an empty final block
	gz = binary.LittleEndian.AppendUint32(gz, e.crc)
	gz = binary.LittleEndian.AppendUint32(gz, uint32(e.at))
	return gz, e.br, e.sum, pieces, nil
}
