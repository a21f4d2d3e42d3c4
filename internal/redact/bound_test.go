package redact

import (
	"encoding/base64"
	"encoding/hex"
	"math/rand/v2"
	"net/url"
	"strings"
	"testing"
	"time"
)

const mib = 1 << 20

// prose is n bytes of English-like text made of common words, without any value.
func prose(n int) string {
	words := strings.Fields(`the a of to and in is it you that he was for on are with as his they be at
		one have this from or had by word but what some we can out other were all there when up use
		your how said an each she which do their time if will way about many then them write would
		like so these her long make thing see him two has look more day could go come did number
		sound no most people my over know water than call first who may down side been now find`)
	r := rand.New(rand.NewPCG(1, 2))
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(words[r.IntN(len(words))])
		if r.IntN(12) == 0 {
			b.WriteString(". ")
		} else {
			b.WriteByte(' ')
		}
	}
	return b.String()[:n]
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.NewChaCha8([32]byte{1}).Read(b)
	return b
}

// nested is s base64-encoded again and again while it stays under n bytes, cut to n.
func nested(s string, n int) string {
	for len(s)*4/3 < n {
		s = base64.StdEncoding.EncodeToString([]byte(s))
	}
	return fill(s, n)
}

// fill is s repeated to n bytes.
func fill(s string, n int) string {
	for len(s) < n {
		s += s
	}
	return s[:n]
}

// hostile are texts of 1 MiB shaped to make a scan work hardest: encodings nested as
// deep as the text allows, runs that decode at every offset, look-alikes on every
// rune, compatibility forms that decompose to many letters.
var hostile = map[string]func() string{
	"base64 nested to the end": func() string { return nested(prose(4096), mib) },
	"base64 nested, wrapped by 4": func() string {
		return fill(wrap(nested(prose(4096), mib*4/5), 4, " "), mib)
	},
	"percent of percent": func() string { return strings.Repeat("%25", mib/3) },
	"hex spaced of As":   func() string { return strings.Repeat("41 ", mib/3) },
	"hex of hex of hex": func() string {
		return nested2(func(s string) string { return hex.EncodeToString([]byte(s)) }, prose(4096), mib)
	},
	"0x everywhere":                 func() string { return strings.Repeat("0x41,", mib/5) },
	"base32 words":                  func() string { return strings.Repeat("MFRGGZDFMZTWQ2LK ", mib/17) },
	"digits":                        func() string { return strings.Repeat("4111111111111111 ", mib/17) },
	"look-alikes":                   func() string { return strings.Repeat("һеllо wоrld ", mib/18) },
	"wide decompositions":           func() string { return strings.Repeat("\ufdfa", mib/3) },
	"letters and digits":            func() string { return strings.Repeat("a1", mib/2) },
	"query escape of base64 nested": func() string { return fill(url.QueryEscape(nested(prose(2048), mib*3/4)), mib) },
	"percent of percent of base64":  func() string { return nested2(encodings["percent every byte"], nested(prose(512), 4096), mib) },
}

func nested2(enc func(string) string, s string, n int) string {
	for len(enc(s)) < n {
		s = enc(s)
	}
	return fill(s, n)
}

// TestHostileTextsStayBounded: however a 1 MiB text is shaped, a scan does at most
// a small constant times its length in work; and ordinary texts of that kind (prose,
// an encoded document, random bytes encoded) find nothing and stay well within the
// budget, so that the budget never refuses them.
func TestHostileTextsStayBounded(t *testing.T) {
	s := New(attackValues)
	for name, make := range hostile {
		text := make()
		start := time.Now()
		w := newWork(len(text))
		s.spans(text, 0, w, nil)
		t.Logf("%s: %d bytes, %d scanned, %v", name, len(text), w.scanned, time.Since(start))
		// The projection of a text is at most 18 bytes a byte (U+FDFA), and its even
		// and odd halves as much again; decoded texts are bounded by the budget.
		if limit := 2 * 18 * (len(text) + workFactor*len(text) + workSlack); w.scanned > limit {
			t.Errorf("%s: scanned %d bytes for %d", name, w.scanned, len(text))
		}
	}
	const size = mib / 4 // what holds for a quarter holds for the whole: the scan is linear
	for name, text := range map[string]string{
		"prose":                prose(size),
		"base64 of prose":      base64.StdEncoding.EncodeToString([]byte(prose(size * 3 / 4))),
		"base64 of base64":     base64.StdEncoding.EncodeToString([]byte(base64.StdEncoding.EncodeToString([]byte(prose(size / 2))))),
		"base64 of random":     base64.StdEncoding.EncodeToString(randomBytes(size * 3 / 4)),
		"base64 wrapped by 76": wrap(base64.StdEncoding.EncodeToString([]byte(prose(size/2))), 76, "\r\n"),
		"hex of random":        hex.EncodeToString(randomBytes(size / 2)),
		"hex of prose, spaced": hexWith(prose(size/4), "", " ", false),
	} {
		w := newWork(len(text))
		if found := s.spans(text, 0, w, nil); found != nil {
			t.Errorf("%s: found %d, %q", name, len(found), text[found[0][0]:min(found[0][1], found[0][0]+80)])
		}
		if w.left < 0 {
			t.Errorf("%s: ran out of work", name)
		}
	}
}

// BenchmarkHostile scans each hostile text of 1 MiB.
func BenchmarkHostile(b *testing.B) {
	s := New(attackValues)
	for name, make := range hostile {
		text := make()
		b.Run(strings.ReplaceAll(name, " ", "-"), func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				s.Contains(text)
			}
		})
	}
}
