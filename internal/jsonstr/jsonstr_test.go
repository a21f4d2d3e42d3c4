package jsonstr

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// tricky holds the strings whose encoding json.Marshal does not leave alone, and
// the plain ones a URL, a path or an ETag holds.
var tricky = []string{
	"", "/methods/a-b", `"abc-gzip"`, `W/"abc"`, `back\slash`, "/categories/caf%C3%A9",
	"café", "日本語", "emoji 🦊", "a<b>&c", "</script>",
	"tab\there", "nl\ncr\r", "\b\f", "\x00\x01\x1f\x7f", "nul\x00inside",
	"line\u2028sep", "para\u2029sep", "\u2027\u202a",
	"\xff invalid", "\xc3", "ab\xc3(", "\xed\xa0\x80 surrogate", "\xf4\x90\x80\x80 beyond U+10FFFF",
	"\xef\xbf\xbd", "\xe2\x80", "/merchants/xn--bcher-kva.example",
	strings.Repeat("long plain ", 100),
}

func TestAppendWritesJSONMarshalsBytes(t *testing.T) {
	for _, s := range tricky {
		want, _ := json.Marshal(s)
		if got := Append(nil, s); !bytes.Equal(got, want) {
			t.Errorf("%q encodes as %s, not %s", s, got, want)
		}
	}
}

func TestAppendKeepsWhatItAppendsTo(t *testing.T) {
	if got := Append([]byte(`{"q":`), "a\nb"); string(got) != `{"q":"a\nb"` {
		t.Errorf("got %s", got)
	}
}

func TestAppendDoesNotAllocateIntoRoom(t *testing.T) {
	buf := make([]byte, 0, 256)
	s := "café <b>\u2028\xff"
	if n := testing.AllocsPerRun(100, func() { buf = Append(buf[:0], s) }); n != 0 {
		t.Errorf("%v allocations per string, want 0", n)
	}
}

func FuzzAppend(f *testing.F) {
	for _, s := range tricky {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := Append(nil, s); !bytes.Equal(got, want) {
			t.Errorf("%q encodes as %s, not %s", s, got, want)
		}
	})
}

func BenchmarkAppend(b *testing.B) {
	for _, c := range []struct{ name, s string }{
		{"ascii", "/functions/v1/api/api/public/v1/services/ethereum-block-height"},
		{"unicode", "prix du café à Zürich <aujourd'hui>"},
	} {
		b.Run(c.name, func(b *testing.B) {
			buf := make([]byte, 0, 256)
			b.ReportAllocs()
			for b.Loop() {
				buf = Append(buf[:0], c.s)
			}
		})
		b.Run(c.name+" json.Marshal", func(b *testing.B) {
			buf := make([]byte, 0, 256)
			b.ReportAllocs()
			for b.Loop() {
				m, _ := json.Marshal(c.s)
				buf = append(buf[:0], m...)
			}
		})
	}
}
