package captcha

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"image"
	"image/gif"
	"image/jpeg"
	"image/png"
	"io"

	"github.com/waystation/waystation/internal/problem"
)

// MaxSide bounds each side of an image, in pixels: a CAPTCHA is small, and an image
// is decoded to be cleaned, so that a few compressed bytes may not ask for
// gigabytes.
const MaxSide = 4096

// maxText bounds what one compressed text chunk of a PNG is inflated to for the
// check: no honest CAPTCHA carries more.
const maxText = 64 << 10

// errBadImage refuses an image that cannot be read and cleaned.
var errBadImage = problem.Invalid("image must be a PNG, JPEG or GIF image of at most 256 KiB and 4096 pixels a side, in base64, that decodes whole.")

// Clean reads img, a PNG, JPEG or GIF image as an agent sent it, and answers it
// drawn again as a PNG with nothing but its pixels: every chunk, segment and
// extension that is not needed to draw it (text, Exif, XMP, colour profiles,
// comments, application data, a second frame) is gone, so that what is stored, shown
// and sent to a solver can carry nothing but the picture. text is what the
// dropped parts held, inflated where they were compressed, so that the caller can
// check it for protected values: an agent may hide one there. An image that cannot
// be decoded whole, or of another format (WebP, whose metadata this cannot strip), is
// invalid.
func Clean(img []byte) (clean []byte, text []string, err error) {
	var decode func(io.Reader) (image.Image, error)
	var config func(io.Reader) (image.Config, error)
	switch imageType(img) {
	case "image/png":
		text, err = pngText(img)
		decode, config = png.Decode, png.DecodeConfig
	case "image/jpeg":
		text, err = jpegText(img)
		decode, config = jpeg.Decode, jpeg.DecodeConfig
	case "image/gif":
		// A GIF's comments and application data are stored as they were written:
		// the whole file is checked.
		text = []string{string(img)}
		decode, config = gif.Decode, gif.DecodeConfig
	default:
		return nil, nil, errBadImage
	}
	if err != nil {
		return nil, nil, errBadImage
	}
	c, err := config(bytes.NewReader(img))
	if err != nil || c.Width <= 0 || c.Height <= 0 || c.Width > MaxSide || c.Height > MaxSide {
		return nil, nil, errBadImage
	}
	m, err := decode(bytes.NewReader(img))
	if err != nil {
		return nil, nil, errBadImage
	}
	var b bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestCompression}).Encode(&b, m); err != nil {
		return nil, nil, errBadImage
	}
	return b.Bytes(), text, nil
}

// pngText is what the ancillary chunks of a PNG hold (all but IHDR, PLTE, IDAT and
// IEND), the text chunks' compressed text inflated.
func pngText(img []byte) ([]string, error) {
	var out []string
	for rest := img[8:]; len(rest) > 0; {
		if len(rest) < 12 {
			return nil, errBadImage
		}
		n := binary.BigEndian.Uint32(rest)
		if uint64(n)+12 > uint64(len(rest)) {
			return nil, errBadImage
		}
		typ, data := string(rest[4:8]), rest[8:8+n]
		rest = rest[12+n:]
		switch typ {
		case "IHDR", "PLTE", "IDAT", "IEND":
			continue
		case "zTXt":
			// keyword, NUL, method, then the compressed text
			if k := bytes.IndexByte(data, 0); k >= 0 && k+2 <= len(data) {
				out = append(out, string(data[:k]), inflate(data[k+2:]))
				continue
			}
		case "iTXt":
			// keyword, NUL, compressed flag, method, language, NUL, translated
			// keyword, NUL, then the text, compressed when the flag says so
			if k := bytes.IndexByte(data, 0); k >= 0 && k+3 <= len(data) && data[k+1] == 1 {
				tail := data[k+3:]
				if l := bytes.IndexByte(tail, 0); l >= 0 {
					if m := bytes.IndexByte(tail[l+1:], 0); m >= 0 {
						head := string(data[:k]) + " " + string(tail[:l]) + " " + string(tail[l+1:l+1+m])
						out = append(out, head, inflate(tail[l+2+m:]))
						continue
					}
				}
			}
		}
		out = append(out, string(data))
	}
	return out, nil
}

// inflate is zlib data inflated, at most maxText bytes of it; what cannot be
// inflated is checked as it is.
func inflate(b []byte) string {
	r, err := zlib.NewReader(bytes.NewReader(b))
	if err != nil {
		return string(b)
	}
	defer r.Close()
	out, _ := io.ReadAll(io.LimitReader(r, maxText))
	return string(out)
}

// jpegText is what the application segments (APP0 to APP15: JFIF, Exif, XMP, ICC
// profiles, ...) and comments of a JPEG hold, read up to its first scan.
func jpegText(img []byte) ([]string, error) {
	var out []string
	for i := 2; ; {
		if i+4 > len(img) || img[i] != 0xff {
			return nil, errBadImage
		}
		marker := img[i+1]
		if marker == 0xff { // fill bytes
			i++
			continue
		}
		if marker == 0xda || marker == 0xd9 { // the scan, or the end
			return out, nil
		}
		n := int(binary.BigEndian.Uint16(img[i+2:]))
		if n < 2 || i+2+n > len(img) {
			return nil, errBadImage
		}
		if marker >= 0xe0 && marker <= 0xef || marker == 0xfe {
			out = append(out, string(img[i+4:i+2+n]))
		}
		i += 2 + n
	}
}
