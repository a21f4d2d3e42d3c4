package directory

import (
	"slices"
	"strconv"
	"strings"
)

// Filter narrows the list of enabled methods. Within a field the values are ORed;
// the fields are ANDed. Zero values do not filter.
type Filter struct {
	Categories []string
	Verdicts   []string
	Kinds      []string
	Payable    *bool
	Hostname   string
	// Limit caps the items returned; 0 means all of them.
	Limit  int
	Offset int
}

// IsZero reports whether the filter selects the whole unpaged list.
func (f Filter) IsZero() bool {
	return len(f.Categories) == 0 && len(f.Verdicts) == 0 && len(f.Kinds) == 0 &&
		f.Payable == nil && f.Hostname == "" && f.Limit == 0 && f.Offset == 0
}

// Key is a canonical text of the filter: two filters with the same key select the
// same items in the same order, whatever order their values came in.
func (f Filter) Key() string {
	var b strings.Builder
	field := func(name string, vs []string) {
		if len(vs) == 0 {
			return
		}
		vs = slices.Clone(vs)
		slices.Sort(vs)
		vs = slices.Compact(vs)
		b.WriteString(name)
		b.WriteByte('=')
		b.WriteString(strings.Join(vs, ","))
		b.WriteByte('&')
	}
	field("category", f.Categories)
	field("verdict", f.Verdicts)
	field("kind", f.Kinds)
	if f.Payable != nil {
		b.WriteString("payable=" + strconv.FormatBool(*f.Payable) + "&")
	}
	if f.Hostname != "" {
		b.WriteString("hostname=" + f.Hostname + "&")
	}
	if f.Limit != 0 {
		b.WriteString("limit=" + strconv.Itoa(f.Limit) + "&")
	}
	if f.Offset != 0 {
		b.WriteString("offset=" + strconv.Itoa(f.Offset) + "&")
	}
	return b.String()
}
