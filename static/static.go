// Package static holds the files the human pages link to: one small stylesheet, embedded
// into the binary and served under versioned URLs.
package static

import "embed"

// FS holds the static files.
//
//go:embed *.css
var FS embed.FS
