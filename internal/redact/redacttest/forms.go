// Package redacttest writes a value in every form the redaction must see, for the
// tests that plant canaries: what one of them finds in an answer, a table or an
// upstream's request, in any of these forms, is a leak.
package redacttest

import (
	"encoding/base64"
	"fmt"
	"strings"
)

// Forms are v as it is, in full-width letters and digits, in base64 (the standard
// alphabet padded, the URL one not) and percent-encoded byte by byte, by name.
func Forms(v string) map[string]string {
	var pct strings.Builder
	for i := range len(v) {
		fmt.Fprintf(&pct, "%%%02X", v[i])
	}
	return map[string]string{
		"plain":         v,
		"full-width":    FullWidth(v),
		"base64":        base64.StdEncoding.EncodeToString([]byte(v)),
		"base64url":     base64.RawURLEncoding.EncodeToString([]byte(v)),
		"percent":       pct.String(),
		"percent lower": strings.ToLower(pct.String()),
	}
}

// FullWidth writes the ASCII letters and digits of v in their full-width forms (Ａ
// for A, １ for 1), as some keyboards and models do.
func FullWidth(v string) string {
	return strings.Map(func(r rune) rune {
		if 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' {
			return r - '!' + '！'
		}
		return r
	}, v)
}
