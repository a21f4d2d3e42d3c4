// Package static holds the files the human pages link to: one small stylesheet and the
// console's passkey script, embedded into the binary and served under versioned URLs.
package static

import "embed"

// FS holds the static files.
//
//go:embed *.css *.js
var FS embed.FS
