package trust

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"unicode/utf8"
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

// paymentRequired is the part of a PaymentRequired document (v1 or v2) the parser
// reads. Fields are read leniently: a value of the wrong type counts as absent.
type paymentRequired struct {
	Version  json.RawMessage `json:"x402Version"`
	Accepts  json.RawMessage `json:"accepts"`
	Resource json.RawMessage `json:"resource"`
}

type requirement struct {
	Scheme            lenientString   `json:"scheme"`
	Network           lenientString   `json:"network"`
	Asset             lenientString   `json:"asset"`
	PayTo             lenientString   `json:"payTo"`
	Amount            json.RawMessage `json:"amount"`            // v2
	MaxAmountRequired json.RawMessage `json:"maxAmountRequired"` // v1
	MaxTimeoutSeconds json.RawMessage `json:"maxTimeoutSeconds"`
	Resource          lenientString   `json:"resource"` // v1
}

type lenientString string

func (s *lenientString) UnmarshalJSON(b []byte) error {
	var v string
	if json.Unmarshal(b, &v) == nil {
		*s = lenientString(strings.TrimSpace(v))
	}
	return nil
}

// parseDocument reads one PaymentRequired document; version is assumed when the
// document does not say.
func parseDocument(doc []byte, version int) (Offer, error) {
	if len(doc) > maxOfferDocument {
		return Offer{}, &OfferError{ReasonBadJSON, "document too large"}
	}
	var pr paymentRequired
	if err := json.Unmarshal(doc, &pr); err != nil {
		return Offer{}, &OfferError{ReasonBadJSON, "not a JSON object"}
	}
	if len(pr.Version) > 0 && !bytes.Equal(pr.Version, []byte("null")) {
		var v float64
		if json.Unmarshal(pr.Version, &v) != nil || (v != 1 && v != 2) {
			return Offer{}, &OfferError{ReasonBadVersion, truncate(string(pr.Version), 20)}
		}
		version = int(v)
	}
	var entries []json.RawMessage
	if json.Unmarshal(pr.Accepts, &entries) != nil || len(entries) == 0 {
		return Offer{}, &OfferError{Reason: ReasonNoAccepts}
	}
	resource := ""
	var ri struct {
		URL lenientString `json:"url"`
	}
	if json.Unmarshal(pr.Resource, &ri) == nil {
		resource = string(ri.URL)
	} else {
		var s lenientString
		if json.Unmarshal(pr.Resource, &s) == nil {
			resource = string(s)
		}
	}

	var first *Offer
	for _, e := range entries {
		var r requirement
		if e = bytes.TrimSpace(e); len(e) == 0 || e[0] != '{' || json.Unmarshal(e, &r) != nil {
			continue
		}
		amount, ok := readAmount(r.Amount)
		if !ok {
			amount, ok = readAmount(r.MaxAmountRequired)
		}
		if !ok {
			continue
		}
		o := Offer{
			Version:           version,
			Scheme:            truncate(string(r.Scheme), 64),
			Network:           NormalizeNetwork(truncate(string(r.Network), 128)),
			Asset:             truncate(string(r.Asset), 128),
			PayTo:             truncate(string(r.PayTo), 128),
			Amount:            amount,
			MaxTimeoutSeconds: readSeconds(r.MaxTimeoutSeconds),
			Resource:          truncate(resource, 2048),
			Entries:           len(entries),
		}
		// Checked after cleaning: a field of only control or invalid bytes is empty.
		if o.Scheme == "" || o.Network == "" || o.Asset == "" || o.PayTo == "" {
			continue
		}
		if r.Resource != "" {
			o.Resource = truncate(string(r.Resource), 2048)
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

// readAmount reads an atomic amount: a JSON string or number holding a non-negative
// integer of at most 78 digits (a uint256). Leading zeros are dropped.
func readAmount(raw json.RawMessage) (string, bool) {
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

func readSeconds(raw json.RawMessage) int {
	var f float64
	if json.Unmarshal(raw, &f) != nil || f < 0 || f > 1<<31-1 {
		return 0
	}
	return int(f)
}

// truncate cuts s to at most n bytes without splitting a UTF-8 sequence, after
// dropping invalid UTF-8 and control characters (the store's text holds no NUL).
func truncate(s string, n int) string {
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
