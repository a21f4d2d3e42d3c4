package directory

import (
	"bytes"
	"strings"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/waystation/waystation/internal/blocks"
)

// held copies methods for a snapshot that is held as long as it is served: their
// strings one copy each of a few large blocks, a string that recurs (a hostname, a
// category, a verdict, a network) once for all, and what their pointers point to in
// blocks of its kind. What the build made them from, read from the catalog among
// the garbage of the build in a few small allocations each, is then dropped whole:
// a page of the heap that held one of them would otherwise not go back to the
// system, and at a hundred thousand methods they are hundreds of thousands.
//
// bodies, when not nil, are the methods' detail bodies the snapshot holds anyway, by
// position: a leading string field (the slug, name, provider, hostname, description,
// category, kind and the endpoint's method and URL) that its body holds as it is, a
// JSON string needing no escape, is a slice of the body instead of a copy, so that
// the text of a hundred thousand methods is held once, not twice.
//
// The copies are made in out, of the methods' length, which may be methods itself:
// each is equal to the method it copies.
func held(out, methods []Method, bodies [][]byte) []Method {
	var h copies
	h.strings = map[string]string{}
	out = out[:len(methods)]
	for i, m := range methods {
		var b inBody
		if bodies != nil {
			b = inBody{body: bodies[i], ok: true}
		}
		m.Slug, m.Name = h.from(&b, `{"slug":"`, m.Slug), h.from(&b, `,"name":"`, m.Name)
		m.Provider, m.Hostname = h.from(&b, `,"provider":"`, m.Provider), h.from(&b, `,"hostname":"`, m.Hostname)
		m.Description = h.from(&b, `,"description":"`, m.Description)
		m.Category, m.Kind = h.from(&b, `,"category":"`, m.Category), h.from(&b, `,"kind":"`, m.Kind)
		b.skip(payableKeys[b2i(m.Payable)])
		m.Endpoint.Method = h.from(&b, `,"endpoint":{"method":"`, m.Endpoint.Method)
		m.Endpoint.URL = h.from(&b, `,"url":"`, m.Endpoint.URL)
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

// payableKeys are what a detail body holds after the kind: payable false, then true.
var payableKeys = [2]string{`,"payable":false`, `,"payable":true`}

// inBody reads a detail body's leading fields in the order a Method encodes them,
// from at; once one is not where it is expected, ok is false and the rest are copied.
type inBody struct {
	body []byte
	at   int
	ok   bool
}

// skip moves past want when the body holds it next.
func (b *inBody) skip(want string) {
	if b.ok && bytes.HasPrefix(b.body[b.at:], []byte(want)) {
		b.at += len(want)
		return
	}
	b.ok = false
}

// from is s as a slice of the body, when the body holds key then s itself, else a
// copy (see string). The slice is equal to s whatever the body: the bytes compared
// are its bytes.
func (h *copies) from(b *inBody, key, s string) string {
	if !b.ok || !bytes.HasPrefix(b.body[b.at:], []byte(key)) || !plainJSON(s) {
		b.ok = false
		return h.string(s)
	}
	start := b.at + len(key)
	end := start + len(s)
	if end >= len(b.body) || string(b.body[start:end]) != s || b.body[end] != '"' {
		b.ok = false
		return h.string(s)
	}
	b.at = end + 1
	if s == "" {
		return ""
	}
	return unsafe.String(&b.body[start], len(s))
}

// plainJSON reports whether encoding/json writes s as it is between quotes: no byte
// it escapes (a control, a quote, a backslash, <, > or &), valid UTF-8 without U+2028
// or U+2029.
func plainJSON(s string) bool {
	ascii := true
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&':
			return false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return ascii || (utf8.ValidString(s) && !strings.ContainsAny(s, "\u2028\u2029"))
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
	demands    []ServiceDemand
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
	if d := t.Demand; d != nil {
		t.Demand = blocks.Put(&h.demands, *d)
	}
	if l := t.Lookalike; l != nil {
		c := Lookalike{Cleared: h.stringPtr(l.Cleared)}
		if l.Resembles != nil {
			c.Resembles = make([]Resemblance, len(l.Resembles))
		}
		for i, r := range l.Resembles {
			c.Resembles[i] = Resemblance{Hostname: h.string(r.Hostname), Signal: h.string(r.Signal), Mine: h.string(r.Mine), Theirs: h.string(r.Theirs)}
		}
		t.Lookalike = &c
	}
	return t
}
