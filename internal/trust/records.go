package trust

import (
	"context"
	"strings"
	"time"

	"github.com/waystation/waystation/internal/directory"
)

// MethodRecord is an enabled method as stored, before trust is computed.
type MethodRecord struct {
	ID     int64
	Method directory.Method
	// Owner is the payee that signed the origin listing the method, when the
	// method's live 402 named it at listing; Origin is that origin.
	Owner, Origin string
	// Version names the versions of the stored rows the record was read from, so
	// that a later read can tell it unchanged; "" when the store tells none.
	Version string
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
	// Origins are the hostnames listed by their own origin (listed or stale).
	Origins map[string]*directory.OriginListing
	// Reports are each hostname's delivery evidence (see Tally), and Demand the use
	// the service saw of it over 30 days.
	Reports map[string][]ReportRecord
	Demand  map[string]*directory.ServiceDemand
	// Listed is when each hostname was first listed, for the look-alike rule.
	Listed map[string]time.Time
}

// RecordStore reads the records a directory snapshot is built from.
type RecordStore interface {
	// DirectoryRecords reads the enabled methods and the facts their trust is
	// computed from, all as of one moment, so that they agree with each other.
	DirectoryRecords(ctx context.Context, now time.Time) (Records, error)
}

// OwnerOf is the method's proof of ownership, when it holds: the origin listing it
// was signed by the payee its newest valid offer names. A payee that changed since
// loses the proof until the origin is signed again by the new one.
func OwnerOf(r MethodRecord, probes []Observation) *directory.Owner {
	if r.Owner == "" {
		return nil
	}
	for _, p := range probes {
		if p.Outcome == OutcomePaymentRequired {
			if !strings.EqualFold(p.PayTo, r.Owner) {
				return nil
			}
			return &directory.Owner{Verified: true, PayTo: r.Owner, Origin: r.Origin}
		}
	}
	return nil
}
