package directory

import (
	"crypto/sha256"
	"encoding/binary"
	"hash/crc32"
	"hash/fnv"

	"github.com/waystation/waystation/internal/parallel"
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

// gzipList makes body's gzip form from the pieces that end at cuts, taking a piece
// prev holds from there, and returns it with its pieces.
func gzipList(body []byte, cuts []int, prev listPieces) ([]byte, listPieces) {
	keys := make([]pieceKey, len(cuts))
	deflated := make([][]byte, len(cuts))
	start := func(i int) int {
		if i == 0 {
			return 0
		}
		return cuts[i-1]
	}
	parallel.Each(len(cuts), func(i int) {
		raw := body[start(i):cuts[i]]
		keys[i] = sha256.Sum256(raw)
		if d, ok := prev[keys[i]]; ok {
			deflated[i] = d
			return
		}
		deflated[i] = resource.DeflatePiece(raw)
	})
	size := 10 + 2 + 8
	for _, d := range deflated {
		size += len(d)
	}
	// The header of Go's gzip writer at the default level, with no name nor time.
	gz := make([]byte, 0, size)
	gz = append(gz, 0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff)
	pieces := make(listPieces, len(cuts))
	for i, d := range deflated {
		pieces[keys[i]] = gz[len(gz) : len(gz)+len(d) : len(gz)+len(d)]
		gz = append(gz, d...)
	}
	gz = append(gz, 3, 0) // an empty final block
	gz = binary.LittleEndian.AppendUint32(gz, crc32.ChecksumIEEE(body))
	gz = binary.LittleEndian.AppendUint32(gz, uint32(len(body)))
	return gz, pieces
}
