package redact

import (
	"strconv"
	"strings"
	"testing"
)

// BenchmarkRedact scans a 4 KiB chat message against a user with 100 protected
// values (every tenth a date, so with its other forms): building the set once per
// call, as the proxy does, and scanning with a built set a message that holds no
// value (the common case) and one that holds one (blanked, then scanned again).
func BenchmarkRedact(b *testing.B) {
	values := make([]string, 100)
	for i := range values {
		if i%10 == 0 {
			values[i] = "19" + strconv.Itoa(50+i/10) + "-04-17"
			continue
		}
		values[i] = "value-" + strconv.Itoa(1000000+i*7919) + "-secret"
	}
	text := strings.Repeat("Please ship the parcel to the address we discussed and pay with the usual card. ", 50)[:4000] + values[42]
	b.Run("build", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			New(values)
		}
	})
	s := New(values)
	clean := text[:4000]
	b.Run("scan-4KiB-clean", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(clean)))
		for b.Loop() {
			if _, n := s.Redact(clean); n != 0 {
				b.Fatal(n)
			}
		}
	})
	b.Run("scan-4KiB", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(text)))
		for b.Loop() {
			if _, n := s.Redact(text); n != 1 {
				b.Fatal(n)
			}
		}
	})
}
