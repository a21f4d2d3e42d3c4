// Package x402 reads the x402 payment protocol: the PaymentRequired document of a 402
// answer (v1 in the body, v2 in the PAYMENT-REQUIRED header) and its accepts entries,
// the same entries the Bazaar discovery API lists, with their amounts, networks and
// assets. ParseOffer holds an offer to the x402 v1 and v2 specifications, so that an
// offer it accepts is one an x402 client could pay; Requirement reads entries
// leniently, for listing what a discovery service says. The catalog importer, the
// prober and the payer all read offers here, so they agree on what an offer says.
package x402

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// String reads a JSON string, trimmed of surrounding white space; any other JSON value
// leaves it empty. Sellers' documents are read leniently: a field of the wrong type
// counts as absent rather than failing the whole document.
type String string

func (s *String) UnmarshalJSON(b []byte) error {
	var v string
	if json.Unmarshal(b, &v) == nil {
		*s = String(strings.TrimSpace(v))
	}
	return nil
}

// PaymentRequired is a PaymentRequired document, v1 or v2, with every member kept raw
// so that ParseOffer can tell a missing member from one of the wrong type.
type PaymentRequired struct {
	Version    json.RawMessage `json:"x402Version"`
	Error      json.RawMessage `json:"error"`
	Accepts    json.RawMessage `json:"accepts"`
	Resource   json.RawMessage `json:"resource"`   // v2: an object with url; v1 puts it in each entry
	Extensions json.RawMessage `json:"extensions"` // v2
}

// Requirement is one accepts entry read leniently, in the field names of v1 or of v2:
// the catalog importer lists what a discovery service says with it. ParseOffer judges
// an entry strictly instead.
type Requirement struct {
	Scheme            String          `json:"scheme"`
	Network           String          `json:"network"`
	Asset             String          `json:"asset"`
	PayTo             String          `json:"payTo"`
	Amount            json.RawMessage `json:"amount"`            // v2
	MaxAmountRequired json.RawMessage `json:"maxAmountRequired"` // v1
	MaxTimeoutSeconds json.RawMessage `json:"maxTimeoutSeconds"`
	Resource          String          `json:"resource"`    // v1
	Description       String          `json:"description"` // v1
	MimeType          String          `json:"mimeType"`
	Extra             json.RawMessage `json:"extra"`
	OutputSchema      json.RawMessage `json:"outputSchema"`
}

// AtomicAmount is the entry's price in atomic units of its asset: v2's amount, else
// v1's maxAmountRequired.
func (r *Requirement) AtomicAmount() (string, bool) {
	if a, ok := ReadAmount(r.Amount); ok {
		return a, true
	}
	return ReadAmount(r.MaxAmountRequired)
}

// ReadRequirements reads an accepts array, skipping entries that are not objects; a
// value that is not an array gives none.
func ReadRequirements(raw json.RawMessage) []Requirement {
	var elems []json.RawMessage
	if json.Unmarshal(raw, &elems) != nil {
		return nil
	}
	var out []Requirement
	for _, e := range elems {
		var r Requirement
		if e = bytes.TrimSpace(e); len(e) == 0 || e[0] != '{' || json.Unmarshal(e, &r) != nil {
			continue
		}
		out = append(out, r)
	}
	return out
}

// ReadAmount reads an atomic amount: a JSON string or number holding a non-negative
// integer of at most 78 digits (enough for a uint256). Leading zeros are dropped.
func ReadAmount(raw json.RawMessage) (string, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "", false
	}
	s := string(raw)
	if raw[0] == '"' {
		if json.Unmarshal(raw, &s) != nil {
			return "", false
		}
		s = strings.TrimSpace(s)
	}
	if s == "" || len(s) > 78 {
		return "", false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return "", false
		}
	}
	if s = strings.TrimLeft(s, "0"); s == "" {
		s = "0"
	}
	return s, true
}

// ReadSeconds reads a non-negative whole number of seconds; anything else is 0.
func ReadSeconds(raw json.RawMessage) int {
	var f float64
	if json.Unmarshal(raw, &f) != nil || f < 0 || f > 1<<31-1 {
		return 0
	}
	return int(f)
}

// Clean cuts s to at most n bytes without splitting a UTF-8 sequence, after dropping
// invalid UTF-8 and control characters: what a seller sent, made fit to store and
// show (PostgreSQL's text holds no NUL).
func Clean(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r == utf8.RuneError {
			return -1
		}
		return r
	}, strings.ToValidUTF8(s, ""))
	if len(s) <= n {
		return s
	}
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}
