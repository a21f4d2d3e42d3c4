package generator

import (
	"github.com/waystation/waystation/internal/directory"
	"github.com/waystation/waystation/internal/trust"
)

// ownOrigin is the origin listing a merchant record shows as the hostname's own:
// listed, the record's methods idx (of records) all its word. An origin proves
// itself, scheme, hostname and port, and nothing more: beside methods of another
// port or scheme of the hostname, or a listing's copies, it speaks for none of them,
// and the record names no origin.
func ownOrigin(listed *directory.OriginListing, records []trust.MethodRecord, idx []int) *directory.OriginListing {
	if listed == nil {
		return nil
	}
	for _, i := range idx {
		if records[i].Origin != listed.Origin {
			return nil
		}
	}
	return listed
}
