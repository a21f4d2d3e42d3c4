package directory

import (
	"time"

	"github.com/waystation/waystation/internal/blocks"
)

// held copies methods for a snapshot that is held as long as it is served: their
// strings one copy each of a few large blocks, a string that recurs (a hostname, a
// category, a verdict, a network) once for all, and what their pointers point to in
// blocks of its kind. What the build made them from, read from the catalog among
// the garbage of the build in a few small allocations each, is then dropped whole:
// a page of the heap that held one of them would otherwise not go back to the
// system, and at a hundred thousand methods they are hundreds of thousands.
func held(methods []Method) []Method {
	var h copies
	h.strings = map[string]string{}
	out := make([]Method, len(methods))
	for i, m := range methods {
		m.Slug, m.Name, m.Provider, m.Hostname = h.string(m.Slug), h.string(m.Name), h.string(m.Provider), h.string(m.Hostname)
		m.Description, m.Category, m.Kind = h.string(m.Description), h.string(m.Category), h.string(m.Kind)
		m.Endpoint = Endpoint{Method: h.string(m.Endpoint.Method), URL: h.string(m.Endpoint.URL)}
		m.Trust = h.trust(m.Trust)
		if m.Stats != nil {
			m.Stats = blocks.Put(&h.stats, *m.Stats)
		}
		if l := m.SourceListing; l != nil {
			m.SourceListing = blocks.Put(&h.listings, Listing{Source: h.string(l.Source), Calls30d: h.int64(l.Calls30d),
				Payers30d: h.int64(l.Payers30d), LastCalledAt: h.time(l.LastCalledAt), UpdatedAt: h.time(l.UpdatedAt)})
		}
		out[i] = m
	}
	return out
}

// copies is where held makes its copies: the rest of the current block of each kind.
type copies struct {
	strings    map[string]string
	text       blocks.Bytes
	ints       []int
	int64s     []int64
	times      []time.Time
	stringPtrs []string
	probes     []Probe
	prices     []Price
	overrides  []Override
	owners     []Owner
	stats      []Stats
	listings   []Listing
}

func (h *copies) string(s string) string {
	if s == "" {
		return ""
	}
	if c, ok := h.strings[s]; ok {
		return c
	}
	if len(s) > blocks.BytesSize/4 {
		h.strings[s] = s // its own allocation already
		return s
	}
	c := h.text.String(s)
	h.strings[c] = c
	return c
}

func (h *copies) stringPtr(s *string) *string {
	if s == nil {
		return nil
	}
	return blocks.Put(&h.stringPtrs, h.string(*s))
}

func (h *copies) int(v *int) *int {
	if v == nil {
		return nil
	}
	return blocks.Put(&h.ints, *v)
}

func (h *copies) int64(v *int64) *int64 {
	if v == nil {
		return nil
	}
	return blocks.Put(&h.int64s, *v)
}

func (h *copies) time(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	return blocks.Put(&h.times, *t)
}

func (h *copies) trust(t Trust) Trust {
	t.Verdict, t.Score = h.string(t.Verdict), h.int(t.Score)
	if p := t.Probe; p != nil {
		c := *p
		c.Outcome, c.Network, c.Asset, c.AssetSymbol, c.Reason = h.string(p.Outcome), h.stringPtr(p.Network), h.stringPtr(p.Asset),
			h.stringPtr(p.AssetSymbol), h.stringPtr(p.Reason)
		if pr := p.Price; pr != nil {
			c.Price = blocks.Put(&h.prices, Price{Amount: h.stringPtr(pr.Amount), Decimals: h.int(pr.Decimals), Value: h.stringPtr(pr.Value)})
		}
		t.Probe = blocks.Put(&h.probes, c)
	}
	if o := t.Override; o != nil {
		t.Override = blocks.Put(&h.overrides, Override{Verdict: h.string(o.Verdict), Reason: h.string(o.Reason), SetAt: o.SetAt,
			ExpiresAt: h.time(o.ExpiresAt)})
	}
	if o := t.Owner; o != nil {
		t.Owner = blocks.Put(&h.owners, Owner{Verified: o.Verified, PayTo: h.string(o.PayTo), Origin: h.string(o.Origin), Points: o.Points})
	}
	return t
}
