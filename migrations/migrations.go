// Package migrations holds the database schema as forward-only SQL files, applied in
// order by number.
package migrations

import "embed"

// FS holds every NNN_name.sql migration.
//
//go:embed *.sql
var FS embed.FS
