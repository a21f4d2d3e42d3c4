package catalog

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/waystation/waystation/internal/x402"
)

// The events a line of the Bazaar's event log ends on: the resource joined the
// listing, left it, or came back to it.
const (
	EventListed     = "LISTED"
	EventDelisted   = "DELISTED"
	EventReappeared = "REAPPEARED"
)

// addEvent reads a line of the Bazaar's event log, {resource, description,
// truncated, first_date, last_event, last_date}: a resource's latest event and
// description as the listing served it, with no offer. A listed (or reappeared)
// resource becomes a sparse method: its URL and description, called with GET until
// an offer or a probe says more. A delisted one is a Delisting, which a load applies
// to the methods already kept for that URL.
func (b *bazaarBuilder) addEvent(it *bazaarItem, at LineError) {
	var event string
	if json.Unmarshal(it.LastEvent, &event) != nil {
		b.skip(at, errors.New("event log: last_event is not a string"))
		return
	}
	switch event {
	case EventListed, EventReappeared:
		p, err := it.parse()
		if err != nil {
			b.skip(at, err)
			return
		}
		p.method.Sparse = true
		if d := readDate(it.LastDate); d != nil {
			p.method.Listing.UpdatedAt = d
		}
		b.put(p)
	case EventDelisted:
		resource, err := it.resourceURL(&x402.Requirement{})
		if err == nil {
			_, _, err = parseResource(resource)
		}
		if err != nil {
			b.skip(at, err)
			return
		}
		b.delist(resource)
	default:
		b.skip(at, fmt.Errorf("event log: last_event %q: want %s, %s or %s", event, EventListed, EventDelisted, EventReappeared))
	}
}

// delist marks the items read so far at the resource URL (any MCP tool) gone, and
// the resource delisted, until a later item at that URL lists it again.
func (b *bazaarBuilder) delist(resource string) {
	for i := range b.items {
		if b.items[i].method.SourceKey == resource {
			b.items[i].gone = true
		}
	}
	if _, seen := b.delisted[resource]; !seen {
		b.delistOrder = append(b.delistOrder, resource)
	}
	b.delisted[resource] = true
}

// readDate reads a calendar date (2026-09-03, as the event log writes them) as
// midnight UTC, or a date-time as readTime does; anything else is nil.
func readDate(raw json.RawMessage) *time.Time {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if d, err := time.Parse(time.DateOnly, strings.TrimSpace(s)); err == nil {
			return &d
		}
	}
	return readTime(raw)
}

// Over returns m as a load should store it over prev, the import of the same method
// already kept. A method of a full record replaces prev whole. A sparse one, a URL
// and a description, keeps what prev knew that it does not say: the offers, the
// HTTP method, the guidance and the listing's figures; and prev's description, with
// its name and category, when m's is prev's cut short (ended with "…", as the event
// log cuts them) or empty. A description that says something new replaces prev's,
// with the name and category made of it, and becomes the guidance's summary.
func (m Method) Over(prev Method) Method {
	if !m.Sparse {
		return m
	}
	out := m
	out.Offers = prev.Offers
	if prev.Endpoint.Method != "" {
		out.Endpoint.Method = prev.Endpoint.Method
	}
	if prev.Description != "" && cutShort(m.Description, prev.Description) {
		out.Name, out.Description, out.Category = prev.Name, prev.Description, prev.Category
	}
	if g, ok := withSummary(prev.Guidance, out); ok {
		out.Guidance = g
	}
	l := Listing{}
	if prev.Listing != nil {
		l = *prev.Listing
	}
	if n := m.Listing; n != nil {
		if n.Calls30d != nil {
			l.Calls30d = n.Calls30d
		}
		if n.Payers30d != nil {
			l.Payers30d = n.Payers30d
		}
		if n.LastCalledAt != nil {
			l.LastCalledAt = n.LastCalledAt
		}
		if n.UpdatedAt != nil && (l.UpdatedAt == nil || n.UpdatedAt.After(*l.UpdatedAt)) {
			l.UpdatedAt = n.UpdatedAt
		}
	}
	out.Listing = &l
	return out
}

// cutShort reports whether desc says no more than full: it is empty, or full cut
// short and marked so with an ellipsis.
func cutShort(desc, full string) bool {
	if desc == "" {
		return true
	}
	cut, ok := strings.CutSuffix(desc, "…")
	if !ok {
		cut, ok = strings.CutSuffix(desc, "...")
	}
	cut = strings.TrimSpace(cut)
	return ok && len(cut) < len(full) && strings.HasPrefix(full, cut)
}

// withSummary is guidance, an object, with its summary made of m's description
// (else its name), as buildGuidance writes it; ok is false when guidance is not an
// object.
func withSummary(g json.RawMessage, m Method) (json.RawMessage, bool) {
	var obj map[string]json.RawMessage
	if len(g) == 0 || json.Unmarshal(g, &obj) != nil || len(obj) == 0 {
		return nil, false
	}
	summary := truncateWords(m.Description, maxSummaryLen)
	if summary == "" {
		summary = m.Name
	}
	s, err := json.Marshal(summary)
	if err != nil {
		return nil, false
	}
	obj["summary"] = s
	out, err := json.Marshal(obj)
	if err != nil {
		return nil, false
	}
	return out, true
}
