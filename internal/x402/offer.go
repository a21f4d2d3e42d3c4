package x402

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
)

// HeaderPaymentRequired is the x402 v2 response header that carries the offer: a
// base64-encoded PaymentRequired JSON document.
const HeaderPaymentRequired = "PAYMENT-REQUIRED"

// Offer is the payment requirement a seller advertised in a 402 answer: the accepts
// entry the service would pay, with the network in CAIP-2 form and the amount in
// atomic units of the asset.
type Offer struct {
	// Version is the x402 protocol version of the document (1 or 2).
	Version int
	// FromHeader reports whether the offer came from the PAYMENT-REQUIRED header
	// rather than the body.
	FromHeader        bool
	Scheme            string
	Network           string
	Asset             string
	PayTo             string
	Amount            string
	MaxTimeoutSeconds int
	// Resource is the URL the offer says it is for, when it says.
	Resource string
	// Entries is how many accepts entries the document listed.
	Entries int
}

// Reasons an answer carries no usable offer.
const (
	ReasonNoDocument     = "no_document"     // neither header nor body holds an x402 document
	ReasonBadHeader      = "bad_header"      // PAYMENT-REQUIRED is not base64 JSON
	ReasonBadJSON        = "bad_json"        // the document is not a JSON object
	ReasonBadVersion     = "bad_version"     // x402Version is neither 1 nor 2
	ReasonNoAccepts      = "no_accepts"      // accepts is missing, not a list, or empty
	ReasonIncompleteTerm = "incomplete_term" // no entry names scheme, network, asset, payee and a readable amount
)

// OfferError says why an answer carries no usable offer.
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

// maxOfferDocument bounds the header or body ParseOffer decodes.
const maxOfferDocument = 256 << 10

// ParseOffer reads the x402 offer of a 402 answer as sellers really send it: v2 puts
// a base64 PaymentRequired document in the PAYMENT-REQUIRED header (with `amount`
// and CAIP-2 networks); v1 puts `{x402Version: 1, accepts: [...]}` in the body (with
// `maxAmountRequired` and legacy network names). The header is read first and the
// body is the fallback. Any input gives an Offer or an *OfferError, never a panic.
//
// Among the accepts entries, the first one priced in a known mainnet asset wins,
// else the first complete one.
func ParseOffer(header http.Header, body []byte) (Offer, error) {
	var headerErr error
	if v := strings.TrimSpace(header.Get(HeaderPaymentRequired)); v != "" {
		doc, err := decodeBase64(v)
		if err != nil {
			headerErr = &OfferError{ReasonBadHeader, "not base64"}
		} else {
			o, err := parseDocument(doc, 2)
			if err == nil {
				o.FromHeader = true
				return o, nil
			}
			headerErr = err
		}
	}
	body = bytes.TrimSpace(body)
	if len(body) > 0 && body[0] == '{' {
		o, err := parseDocument(body, 1)
		if err == nil {
			return o, nil
		}
		if headerErr == nil {
			if errorIs(err, ReasonBadJSON) || (errorIs(err, ReasonNoAccepts) && !declaresVersion(body)) {
				// A body that is no x402 document (an error object, say).
				return Offer{}, &OfferError{ReasonNoDocument, "body holds no x402 document"}
			}
			return Offer{}, err
		}
	}
	if headerErr != nil {
		return Offer{}, headerErr
	}
	return Offer{}, &OfferError{Reason: ReasonNoDocument}
}

func errorIs(err error, reasons ...string) bool {
	var oe *OfferError
	if !errors.As(err, &oe) {
		return false
	}
	for _, r := range reasons {
		if oe.Reason == r {
			return true
		}
	}
	return false
}

// declaresVersion reports whether a JSON object has an x402Version member.
func declaresVersion(doc []byte) bool {
	var d struct {
		Version json.RawMessage `json:"x402Version"`
	}
	return json.Unmarshal(doc, &d) == nil && len(d.Version) > 0
}

func decodeBase64(v string) ([]byte, error) {
	if len(v) > maxOfferDocument {
		return nil, errors.New("too long")
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(v); err == nil {
			return b, nil
		}
	}
	return nil, errors.New("not base64")
}

// parseDocument reads one PaymentRequired document; version is assumed when the
// document does not say.
func parseDocument(doc []byte, version int) (Offer, error) {
	if len(doc) > maxOfferDocument {
		return Offer{}, &OfferError{ReasonBadJSON, "document too large"}
	}
	var pr PaymentRequired
	if err := json.Unmarshal(doc, &pr); err != nil {
		return Offer{}, &OfferError{ReasonBadJSON, "not a JSON object"}
	}
	if len(pr.Version) > 0 && !bytes.Equal(pr.Version, []byte("null")) {
		var v float64
		if json.Unmarshal(pr.Version, &v) != nil || (v != 1 && v != 2) {
			return Offer{}, &OfferError{ReasonBadVersion, Clean(string(pr.Version), 20)}
		}
		version = int(v)
	}
	var entries []json.RawMessage
	if json.Unmarshal(pr.Accepts, &entries) != nil || len(entries) == 0 {
		return Offer{}, &OfferError{Reason: ReasonNoAccepts}
	}
	resource := ""
	var ri struct {
		URL String `json:"url"`
	}
	if json.Unmarshal(pr.Resource, &ri) == nil {
		resource = string(ri.URL)
	} else {
		var s String
		if json.Unmarshal(pr.Resource, &s) == nil {
			resource = string(s)
		}
	}

	var first *Offer
	for _, e := range entries {
		var r Requirement
		if e = bytes.TrimSpace(e); len(e) == 0 || e[0] != '{' || json.Unmarshal(e, &r) != nil {
			continue
		}
		amount, ok := r.AtomicAmount()
		if !ok {
			continue
		}
		o := Offer{
			Version:           version,
			Scheme:            Clean(string(r.Scheme), 64),
			Network:           NormalizeNetwork(Clean(string(r.Network), 128)),
			Asset:             Clean(string(r.Asset), 128),
			PayTo:             Clean(string(r.PayTo), 128),
			Amount:            amount,
			MaxTimeoutSeconds: ReadSeconds(r.MaxTimeoutSeconds),
			Resource:          Clean(resource, 2048),
			Entries:           len(entries),
		}
		// Checked after cleaning: a field of only control or invalid bytes is empty.
		if o.Scheme == "" || o.Network == "" || o.Asset == "" || o.PayTo == "" {
			continue
		}
		if r.Resource != "" {
			o.Resource = Clean(string(r.Resource), 2048)
		}
		if a, known := LookupAsset(o.Network, o.Asset); known && !a.Testnet {
			return o, nil
		}
		if first == nil {
			first = &o
		}
	}
	if first == nil {
		return Offer{}, &OfferError{ReasonIncompleteTerm, "no accepts entry names scheme, network, asset, payTo and an amount"}
	}
	return *first, nil
}
