package x402

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// HeaderPaymentRequired is the x402 v2 response header that carries the offer: a
// base64-encoded PaymentRequired JSON document.
const HeaderPaymentRequired = "PAYMENT-REQUIRED"

// Schemes x402 defines that the service can judge. Exact charges the amount it names;
// upto names a ceiling and charges what the call used, so its amount is never a price.
const (
	SchemeExact = "exact"
	SchemeUpto  = "upto"
)

// Offer is the payment requirement a seller advertised in a 402 answer: the accepts
// entry an x402 client would pay, with the network in CAIP-2 form. Only entries that
// follow x402 v1 or v2 to the letter make an Offer.
type Offer struct {
	// Version is the x402 protocol version of the document (1 or 2).
	Version int
	// FromHeader reports whether the offer came from the PAYMENT-REQUIRED header
	// (v2) rather than the body (v1).
	FromHeader bool
	Scheme     string
	Network    string
	Asset      string
	PayTo      string
	// Amount is the price in atomic units of the asset, for the exact scheme; empty
	// otherwise.
	Amount string
	// Ceiling is the most an upto offer may charge, in atomic units; empty otherwise.
	Ceiling           string
	MaxTimeoutSeconds int
	// Resource is the URL the offer says it is for.
	Resource string
	// Extra is the entry's scheme-specific object (the token's EIP-712 domain, the
	// Solana fee payer, ...), as the seller sent it; nil when absent.
	Extra json.RawMessage
	// Extensions is the v2 document's extensions object, as the seller sent it; nil
	// when absent.
	Extensions json.RawMessage
	// Entries is how many accepts entries the document listed.
	Entries int
	// Raw is the accepts entry as the seller sent it (compacted), and ResourceRaw the
	// v2 document's resource object: a v2 payment repeats both.
	Raw         json.RawMessage
	ResourceRaw json.RawMessage
}

// Most is the most the offer may charge, in atomic units: its price, or its
// ceiling.
func (o Offer) Most() string {
	if o.Scheme == SchemeUpto {
		return o.Ceiling
	}
	return o.Amount
}

// Reasons an answer carries no offer an x402 client could pay. The first two say
// there is no x402 document at all; the others name what breaks the document or,
// when every accepts entry is refused, the first entry.
const (
	ReasonNoDocument     = "no_document"     // neither header nor body holds an x402 document
	ReasonBadHeader      = "bad_header"      // PAYMENT-REQUIRED is not standard base64
	ReasonBadJSON        = "bad_json"        // the document is not a JSON object
	ReasonBadVersion     = "bad_version"     // x402Version is missing, or neither 1 nor 2
	ReasonWrongTransport = "wrong_transport" // a v1 document in the header, or a v2 one only in the body
	ReasonBadDocument    = "bad_document"    // error or extensions of the wrong type
	ReasonNoAccepts      = "no_accepts"      // accepts is missing, not a list, or empty
	ReasonNoResource     = "no_resource"     // v2: the document's resource has no url; v1: an entry names no resource
	ReasonIncompleteTerm = "incomplete_term" // an entry lacks a required field, or has one of the wrong type
	ReasonBadAmount      = "bad_amount"      // the amount is not a string holding an atomic integer
	ReasonMixedVersions  = "mixed_versions"  // an entry uses the other version's field or network names
	ReasonBadNetwork     = "bad_network"     // v2: not CAIP-2; v1: not a network name of x402 v1
	ReasonUnknownScheme  = "unknown_scheme"  // a scheme x402 does not define on that network
	ReasonBadExtra       = "bad_extra"       // extra lacks what the scheme needs on that network
	ReasonBadAddress     = "bad_address"     // the asset or payee is not an address of that network
)

// Reasons lists every reason, in the order a document is checked.
var Reasons = []string{
	ReasonNoDocument, ReasonBadHeader, ReasonBadJSON, ReasonBadVersion, ReasonWrongTransport,
	ReasonBadDocument, ReasonNoAccepts, ReasonNoResource, ReasonIncompleteTerm, ReasonBadAmount,
	ReasonMixedVersions, ReasonBadNetwork, ReasonUnknownScheme, ReasonBadExtra, ReasonBadAddress,
}

// OfferError says why an answer carries no offer an x402 client could pay.
type OfferError struct {
	Reason string
	Detail string
}

func (e *OfferError) Error() string {
	if e.Detail == "" {
		return "x402 offer: " + e.Reason
	}
	return "x402 offer: " + e.Reason + ": " + e.Detail
}

func refuse(reason, format string, args ...any) *OfferError {
	return &OfferError{Reason: reason, Detail: fmt.Sprintf(format, args...)}
}

// maxOfferDocument bounds the header or body ParseOffer decodes.
const maxOfferDocument = 256 << 10

// ParseOffer reads the x402 offer of a 402 answer the way x402 defines it for HTTP: a
// v2 PaymentRequired document, base64-encoded, in the PAYMENT-REQUIRED header; a v1
// one as the JSON body. The header is read first; a body is read when there is no
// header or the header holds no valid offer, since a v1 client would still pay it.
// Any input gives an Offer or an *OfferError, never a panic.
//
// Every accepts entry is checked against its version's rules (see checkEntry); among
// the valid ones an exact offer in a known mainnet asset wins, then any exact offer,
// then an upto offer. When none is valid the first entry's fault is the reason.
func ParseOffer(header http.Header, body []byte) (Offer, error) {
	offers, err := ParseOffers(header, body)
	if err != nil {
		return Offer{}, err
	}
	return offers[0], nil
}

// ParseOffers is ParseOffer's reading with every valid offer of the document, best
// first: a payer takes the first it can pay.
func ParseOffers(header http.Header, body []byte) ([]Offer, error) {
	var headerErr error
	if v := strings.TrimSpace(header.Get(HeaderPaymentRequired)); v != "" {
		doc, err := decodeBase64(v)
		if err != nil {
			headerErr = refuse(ReasonBadHeader, "%v", err)
		} else {
			o, err := parseDocument(doc, true)
			if err == nil {
				return o, nil
			}
			headerErr = err
		}
	}
	body = bytes.TrimSpace(body)
	if isDocument(body) {
		o, err := parseDocument(body, false)
		if err == nil || headerErr == nil {
			return o, err
		}
	}
	if headerErr != nil {
		return nil, headerErr
	}
	if len(body) > 0 {
		return nil, refuse(ReasonNoDocument, "the body holds no x402 document")
	}
	return nil, &OfferError{Reason: ReasonNoDocument}
}

// isDocument reports whether a body is an x402 document, valid or not: a JSON object
// with an x402Version or an accepts member. An error object or a page is not one.
func isDocument(body []byte) bool {
	if len(body) == 0 || body[0] != '{' || len(body) > maxOfferDocument {
		return false
	}
	var d struct {
		Version json.RawMessage `json:"x402Version"`
		Accepts json.RawMessage `json:"accepts"`
	}
	return json.Unmarshal(body, &d) == nil && (len(d.Version) > 0 || len(d.Accepts) > 0)
}

// decodeBase64 decodes the header as x402 clients do: the standard alphabet, padded
// or not.
func decodeBase64(v string) ([]byte, error) {
	if len(v) > maxOfferDocument {
		return nil, errors.New("header too long")
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding} {
		if b, err := enc.DecodeString(v); err == nil {
			return b, nil
		}
	}
	return nil, errors.New("not standard base64")
}

// parseDocument reads one PaymentRequired document, from the header or the body.
func parseDocument(doc []byte, fromHeader bool) ([]Offer, error) {
	doc = bytes.TrimSpace(doc)
	if len(doc) > maxOfferDocument {
		return nil, refuse(ReasonBadJSON, "document too large")
	}
	var pr PaymentRequired
	if len(doc) == 0 || doc[0] != '{' || json.Unmarshal(doc, &pr) != nil {
		return nil, refuse(ReasonBadJSON, "not a JSON object")
	}
	version, err := readVersion(pr.Version)
	if err != nil {
		return nil, err
	}
	switch {
	case fromHeader && version != 2:
		return nil, refuse(ReasonWrongTransport, "a v%d document in the PAYMENT-REQUIRED header, which carries v2 only", version)
	case !fromHeader && version != 1:
		return nil, refuse(ReasonWrongTransport, "a v%d document in the body without the PAYMENT-REQUIRED header", version)
	}
	if present(pr.Error) {
		if _, ok := jsonString(pr.Error); !ok {
			return nil, refuse(ReasonBadDocument, "error is not a string")
		}
	}
	var entries []json.RawMessage
	if json.Unmarshal(pr.Accepts, &entries) != nil || len(entries) == 0 {
		return nil, &OfferError{Reason: ReasonNoAccepts}
	}
	base := Offer{Version: version, FromHeader: fromHeader, Entries: len(entries)}
	if version == 2 {
		if present(pr.Extensions) {
			if !isObject(pr.Extensions) {
				return nil, refuse(ReasonBadDocument, "extensions is not an object")
			}
			base.Extensions = compact(pr.Extensions)
		}
		var ri struct {
			URL json.RawMessage `json:"url"`
		}
		url, ok := "", false
		if isObject(pr.Resource) && json.Unmarshal(pr.Resource, &ri) == nil {
			url, ok = jsonString(ri.URL)
		}
		if !ok || url == "" {
			return nil, refuse(ReasonNoResource, "resource.url is missing")
		}
		base.Resource = Clean(url, 2048)
		base.ResourceRaw = compact(pr.Resource)
	}

	var valid []Offer
	var first *OfferError
	for i, raw := range entries {
		o, err := checkEntry(base, raw)
		if err != nil {
			if first == nil {
				err.Detail = fmt.Sprintf("accepts[%d]: %s", i, err.Detail)
				first = err
			}
			continue
		}
		o.Raw = compact(raw)
		valid = append(valid, o)
	}
	if len(valid) == 0 {
		if len(entries) > 1 {
			first.Detail += fmt.Sprintf(" (none of the %d entries is valid)", len(entries))
		}
		return nil, first
	}
	slices.SortStableFunc(valid, func(a, b Offer) int { return rank(&a) - rank(&b) })
	return valid, nil
}

// rank orders valid offers, lowest first: an exact price in a known mainnet asset,
// any exact price, a ceiling.
func rank(o *Offer) int {
	if o.Scheme != SchemeExact {
		return 2
	}
	if a, ok := LookupAsset(o.Network, o.Asset); ok && !a.Testnet {
		return 0
	}
	return 1
}

func readVersion(raw json.RawMessage) (int, error) {
	if !present(raw) {
		return 0, refuse(ReasonBadVersion, "x402Version is missing")
	}
	var v float64
	if json.Unmarshal(raw, &v) != nil || (v != 1 && v != 2) {
		return 0, refuse(ReasonBadVersion, "x402Version is %s", Clean(string(raw), 20))
	}
	return int(v), nil
}

// present reports whether a member was given a value other than null.
func present(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && !bytes.Equal(raw, []byte("null"))
}

func isObject(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return false
	}
	var m map[string]json.RawMessage
	return json.Unmarshal(raw, &m) == nil
}

// jsonString reads a JSON string exactly as sent; ok is false for any other value.
func jsonString(raw json.RawMessage) (string, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

func compact(raw json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return nil
	}
	return json.RawMessage(b.Bytes())
}

// CheckRequirements judges a resource and its accepts list by the rules of an x402 v2
// PaymentRequired document, as if a 402 had carried them in its header: resource is
// the document's resource object (with its url), accepts its list. An origin's
// discovery manifest lists its items this way, so each is held to the rules a live
// offer is. It gives every valid offer, best first, or an *OfferError.
func CheckRequirements(resource, accepts json.RawMessage) ([]Offer, error) {
	doc, err := json.Marshal(struct {
		Version  int             `json:"x402Version"`
		Resource json.RawMessage `json:"resource,omitempty"`
		Accepts  json.RawMessage `json:"accepts,omitempty"`
	}{2, compact(resource), compact(accepts)})
	if err != nil {
		return nil, refuse(ReasonBadJSON, "not JSON")
	}
	return parseDocument(doc, true)
}
