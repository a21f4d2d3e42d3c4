package trust

import (
	"context"
	"time"

	"github.com/waystation/waystation/internal/catalog"
	"github.com/waystation/waystation/internal/directory"
)

// MethodRecord is an enabled method as stored, before trust is computed.
type MethodRecord struct {
	ID     int64
	Method directory.Method
	Offers []catalog.Offer
}

// Payments counts settled payments to a hostname.
type Payments struct {
	Settled   int
	Delivered int
}

// Records is everything the directory snapshot is computed from.
type Records struct {
	Methods []MethodRecord
	// Probes of each method, newest first: every probe within Window, and at
	// least the newest.
	Probes map[int64][]Observation
	// HostProbes are each hostname's most recent probes, newest first.
	HostProbes map[string][]Observation
	Overrides  map[string]*directory.Override
	Payments   map[string]Payments
}

// RecordStore reads the records a directory snapshot is built from.
type RecordStore interface {
	// DirectoryRecords reads the enabled methods and the facts their trust is
	// computed from, all as of one moment, so that they agree with each other.
	DirectoryRecords(ctx context.Context, now time.Time) (Records, error)
}
