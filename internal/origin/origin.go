// Package origin lets a seller list itself: an origin (https://host) serves its own
// discovery manifest at /.well-known/x402.json, the x402 per-origin counterpart of a
// facilitator's discovery listing (an x402Version 2 document whose items each carry a
// resource, its accepts and how to call it). The service reads it through the
// guarded outbound client, holds every item to the rules a live 402 is held to,
// probes each, and lists what passes with source "origin". Those items are the
// owner's word for the hostname: they take the place of a listing's copies of it.
// An item whose live 402 names the payee that signed the origin (EIP-191, in the
// manifest's ownershipProofs, as x402scan checks) is owner-verified.
package origin

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"
	"unicode"

	"github.com/ethereum/go-ethereum/accounts"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/waystation/waystation/internal/catalog"
	"github.com/waystation/waystation/internal/problem"
	"github.com/waystation/waystation/internal/trust"
	"github.com/waystation/waystation/internal/x402"
)

// WellKnownPath is where an origin serves its manifest (RFC 8615).
const WellKnownPath = "/.well-known/x402.json"

// Bounds of a manifest: its size in bytes, how deeply its JSON may nest, how many
// items and ownership proofs it may hold.
const (
	MaxManifest = 256 << 10
	MaxDepth    = 24
	MaxItems    = 100
	MaxProofs   = 8
)

// Statuses of a listed origin. A stale one could not be fetched for StaleAfter and
// stays listed, with the reason shown; a delisted one was gone for DelistAfter (or
// its manifest now lists nothing) and its items are no longer listed.
const (
	StatusListed   = "listed"
	StatusStale    = "stale"
	StatusDelisted = "delisted"
)

// Reasons a manifest is refused as a whole. Nothing of a refused manifest is listed.
const (
	ReasonUnreachable    = "unreachable"     // no answer: DNS, connection, TLS or time
	ReasonBlockedAddress = "blocked_address" // the origin resolves to a non-public address
	ReasonRedirect       = "redirect"        // a redirect to another origin, never followed
	ReasonHTTPStatus     = "http_status"     // an answer other than 200
	ReasonTooLarge       = "too_large"       // over MaxManifest bytes
	ReasonTooDeep        = "too_deep"        // JSON nested deeper than MaxDepth
	ReasonBadJSON        = "bad_json"        // not one JSON object
	ReasonBadVersion     = "bad_version"     // x402Version is not 2
	ReasonNoItems        = "no_items"        // items missing, not a list, or empty
	ReasonTooManyItems   = "too_many_items"  // over MaxItems items
	ReasonBadProof       = "bad_proof"       // an ownership proof that is malformed or signed by no item's payee
	ReasonNothingListed  = "nothing_listed"  // every item was refused
)

// Reasons one item is refused; the others of its manifest may still be listed.
const (
	ItemNotObject    = "not_an_object"
	ItemBadURL       = "bad_url"       // resource.url missing, not a URL, or not http(s)
	ItemOtherOrigin  = "other_origin"  // the item's URL is on another scheme, host or port
	ItemBadMethod    = "bad_method"    // input.method is not an HTTP method
	ItemBadType      = "bad_type"      // type is neither http nor mcp
	ItemDuplicate    = "duplicate"     // an earlier item has the same URL (and MCP tool)
	ItemInvalidOffer = "invalid_offer" // accepts break the x402 rules; offer_reason says which
	ItemProbeFailed  = "probe_failed"  // the live endpoint did not answer a valid 402
)

// Refusal is a manifest refused as a whole.
type Refusal struct {
	Reason string
	Detail string
}

func (r *Refusal) Error() string { return r.Reason + ": " + r.Detail }

// Problem is the refusal as the API answers it: manifest_refused, the detail
// starting with the reason's code.
func (r *Refusal) Problem() *problem.Error {
	return problem.New(problem.ManifestRefused, r.Reason+": "+r.Detail)
}

func refuse(reason, format string, args ...any) *Refusal {
	return &Refusal{Reason: reason, Detail: x402.Clean(fmt.Sprintf(format, args...), 300)}
}

// Item is one item of a manifest that the reader accepted: on the origin, of a known
// type and method, with at least one offer x402 clients could pay.
type Item struct {
	// Index is the item's place in the manifest's items, from 0.
	Index  int
	URL    string
	Method string
	Tool   string
	// Offers are its valid accepts entries, best first.
	Offers []x402.Offer
	// Bazaar is the item in the discovery listing form the catalog reads.
	Bazaar json.RawMessage
}

// PayTo is the payee of the item's best offer.
func (it *Item) PayTo() string { return it.Offers[0].PayTo }

// Manifest is a manifest as read: its accepted items, the refused ones with their
// reasons, and the addresses its ownership proofs recover to.
type Manifest struct {
	Items   []Item
	Refused []Report
	// Signers are the addresses that signed the origin, lower case.
	Signers map[string]bool
}

// Statuses of an item in a submission's report.
const (
	ItemListed  = "listed"
	ItemRefused = "refused"
)

// Report is what became of one item of a manifest.
type Report struct {
	Index  int    `json:"index"`
	URL    string `json:"url"`
	Method string `json:"method"`
	Status string `json:"status"`
	// Slug is where a listed item is listed.
	Slug string `json:"slug,omitempty"`
	// OwnerVerified: its live 402 names a payee that signed the origin.
	OwnerVerified bool `json:"owner_verified"`
	// Reason and Detail say why a refused item was refused; OfferReason is the x402
	// rule an invalid_offer broke (one of the probe's reasons).
	Reason      string `json:"reason,omitempty"`
	OfferReason string `json:"offer_reason,omitempty"`
	Detail      string `json:"detail,omitempty"`
}

// Origin is a listed origin as the store keeps it.
type Origin struct {
	Origin   string `json:"origin"`
	Hostname string `json:"hostname"`
	Status   string `json:"status"`
	// Reason says why the origin is stale or delisted; empty while listed.
	Reason string `json:"reason"`
	// Owner is the payee that signed the origin and whose offers the live 402s
	// name, when one did; empty otherwise.
	Owner       string    `json:"owner"`
	ListedAt    time.Time `json:"listed_at"`
	CheckedAt   time.Time `json:"checked_at"`
	LastFetched time.Time `json:"last_fetched_at"`
	SubmittedBy string    `json:"-"`
	ETag        string    `json:"-"`
	ID          int64     `json:"-"`
}

// Listing is what a read manifest lists, for the store to record in one go.
type Listing struct {
	Origin Origin
	// Catalog holds the listed items as methods of source origin.
	Catalog catalog.Catalog
	// Verified holds the source keys of the owner-verified methods.
	Verified map[string]bool
	// Probes are the listing's probes by source key, recorded against the methods.
	Probes map[string]trust.Result
	At     time.Time
}

// ParseOrigin reads what a seller submits: an origin (http(s)://host[:port]), and,
// leniently, any URL of it, whose path is dropped. The answer is canonical: the
// scheme and hostname in lower case, the hostname in punycode, no default port.
func ParseOrigin(raw string) (string, string, error) {
	raw = strings.TrimSpace(raw)
	if err := problem.Text("origin", raw, true, 2048); err != nil {
		return "", "", err
	}
	if strings.ContainsFunc(raw, unicode.IsControl) {
		return "", "", problem.Invalid("origin holds a control character.")
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "" {
		return "", "", problem.Invalid("origin must be an http or https URL such as https://api.example.com.")
	}
	if u.User != nil {
		return "", "", problem.Invalid("origin must not carry user information.")
	}
	host, err := catalog.NormalizeHostname(u.Hostname())
	if err != nil {
		return "", "", problem.Invalid("origin's hostname is not a valid hostname.")
	}
	scheme := strings.ToLower(u.Scheme)
	port := u.Port()
	if (scheme == "https" && port == "443") || (scheme == "http" && port == "80") {
		port = ""
	}
	o := scheme + "://" + host
	if port != "" {
		o += ":" + port
	}
	return o, host, nil
}

// manifestDoc is a manifest's top level; every member is kept raw so that a value of
// the wrong type is told apart from a missing one.
type manifestDoc struct {
	Version json.RawMessage `json:"x402Version"`
	Items   json.RawMessage `json:"items"`
	Proofs  json.RawMessage `json:"ownershipProofs"`
	Updated json.RawMessage `json:"lastUpdated"`
}

type manifestItem struct {
	Resource json.RawMessage `json:"resource"`
	Type     json.RawMessage `json:"type"`
	Accepts  json.RawMessage `json:"accepts"`
	Input    json.RawMessage `json:"input"`
	Output   json.RawMessage `json:"output"`
}

// ReadManifest reads the manifest served by origin (canonical, from ParseOrigin).
// It refuses the document as a whole when it is too large or deep, not an x402 v2
// manifest, or carries an ownership proof that is malformed or recovers to no
// item's payee; else each item is accepted or refused on its own. Any input gives
// a Manifest or a *Refusal, never a panic.
func ReadManifest(data []byte, origin string) (Manifest, error) {
	var m Manifest
	if len(data) > MaxManifest {
		return m, refuse(ReasonTooLarge, "the manifest is over %d bytes", MaxManifest)
	}
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '{' {
		return m, refuse(ReasonBadJSON, "the manifest is not a JSON object")
	}
	if d := depth(data); d > MaxDepth {
		return m, refuse(ReasonTooDeep, "the manifest nests %d levels deep, over %d", d, MaxDepth)
	}
	var doc manifestDoc
	if !json.Valid(data) || json.Unmarshal(data, &doc) != nil {
		return m, refuse(ReasonBadJSON, "the manifest is not a JSON object")
	}
	var version float64
	if json.Unmarshal(doc.Version, &version) != nil || version != 2 {
		return m, refuse(ReasonBadVersion, "x402Version must be 2, the number")
	}
	var items []json.RawMessage
	if json.Unmarshal(doc.Items, &items) != nil || len(items) == 0 {
		return m, refuse(ReasonNoItems, "items must be a list of at least one item")
	}
	if len(items) > MaxItems {
		return m, refuse(ReasonTooManyItems, "%d items, over %d", len(items), MaxItems)
	}
	signers, err := readProofs(doc.Proofs, origin)
	if err != nil {
		return m, err
	}
	m.Signers = signers
	var updated *time.Time
	if t, ok := unixTime(doc.Updated); ok {
		updated = &t
	}
	seen := map[string]int{}
	for i, raw := range items {
		it, rep := readItem(i, raw, origin, updated)
		if rep != nil {
			m.Refused = append(m.Refused, *rep)
			continue
		}
		// The directory knows a method by its URL (and an MCP server's tool).
		key := it.URL + "\n" + it.Tool
		if first, dup := seen[key]; dup {
			m.Refused = append(m.Refused, Report{Index: i, URL: it.URL, Method: it.Method, Status: ItemRefused,
				Reason: ItemDuplicate, Detail: fmt.Sprintf("items[%d] lists the same URL", first)})
			continue
		}
		seen[key] = i
		m.Items = append(m.Items, it)
	}
	// A proof must be the owner's: signed by the payee of an item that passed.
	for addr := range signers {
		found := false
		for i := range m.Items {
			for _, o := range m.Items[i].Offers {
				found = found || strings.EqualFold(o.PayTo, addr)
			}
		}
		if !found {
			return Manifest{}, refuse(ReasonBadProof, "an ownership proof is signed by %s, the payee of no item", common.HexToAddress(addr).Hex())
		}
	}
	return m, nil
}

// readItem reads one item; a refused one comes back as its report.
func readItem(i int, raw json.RawMessage, origin string, updated *time.Time) (Item, *Report) {
	rep := &Report{Index: i, Status: ItemRefused, Method: "GET"}
	mi, res, f := decodeItem(raw)
	if f != nil {
		return Item{}, f.report(rep)
	}
	rep.URL = x402.Clean(*res.URL, 2048)
	if f := checkItemURL(*res.URL, origin); f != nil {
		return Item{}, f.report(rep)
	}
	typ, f := itemType(mi.Type)
	if f != nil {
		return Item{}, f.report(rep)
	}
	method, tool, f := itemInput(mi.Input, typ)
	if f != nil {
		return Item{}, f.report(rep)
	}
	rep.Method = method
	offers, err := x402.CheckRequirements(mi.Resource, mi.Accepts)
	if err != nil {
		f := &itemFault{reason: ItemInvalidOffer, detail: x402.Clean(err.Error(), 300)}
		var oe *x402.OfferError
		if errors.As(err, &oe) {
			f.offerReason = oe.Reason
		}
		return Item{}, f.report(rep)
	}
	b, err := json.Marshal(itemListing(mi, res, typ, method, updated))
	if err != nil {
		return Item{}, (&itemFault{reason: ItemNotObject, detail: "the item cannot be read"}).report(rep)
	}
	return Item{Index: i, URL: *res.URL, Method: method, Tool: tool, Offers: offers, Bazaar: b}, nil
}

// itemFault is why one item is refused: a Report's reason, detail and x402 rule.
type itemFault struct{ reason, detail, offerReason string }

// report writes f into rep, the refused item's report, and answers it.
func (f *itemFault) report(rep *Report) *Report {
	rep.Reason, rep.Detail, rep.OfferReason = f.reason, f.detail, f.offerReason
	return rep
}

// itemResource is an item's resource object, in the names of a discovery listing.
type itemResource struct {
	URL         *string         `json:"url"`
	Description x402.String     `json:"description"`
	MimeType    x402.String     `json:"mimeType"`
	ServiceName x402.String     `json:"serviceName"`
	Tags        json.RawMessage `json:"tags"`
}

// decodeItem decodes an item that is a JSON object whose resource names a url.
func decodeItem(raw json.RawMessage) (manifestItem, itemResource, *itemFault) {
	var mi manifestItem
	var res itemResource
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, &mi) != nil {
		return mi, res, &itemFault{reason: ItemNotObject, detail: "the item is not a JSON object"}
	}
	if len(bytes.TrimSpace(mi.Resource)) == 0 || mi.Resource[0] != '{' || json.Unmarshal(mi.Resource, &res) != nil || res.URL == nil {
		return mi, res, &itemFault{reason: ItemBadURL, detail: "resource.url is missing"}
	}
	return mi, res, nil
}

// checkItemURL requires an item's URL to be a plain http or https URL on origin: an
// origin lists only its own resources.
func checkItemURL(raw, origin string) *itemFault {
	u, err := url.Parse(raw)
	if err != nil || strings.ContainsFunc(raw, unicode.IsControl) || len(raw) > 2048 ||
		(u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.Fragment != "" {
		return &itemFault{reason: ItemBadURL, detail: "resource.url is not an http or https URL of at most 2048 bytes without user or fragment"}
	}
	if o, _, err := ParseOrigin(u.Scheme + "://" + u.Host); err != nil || o != origin {
		return &itemFault{reason: ItemOtherOrigin, detail: "resource.url is not on " + origin + "; an origin lists only its own resources"}
	}
	return nil
}

// itemType is an item's type, http when it names none.
func itemType(raw json.RawMessage) (string, *itemFault) {
	if len(raw) == 0 {
		return "http", nil
	}
	var s *string
	if json.Unmarshal(raw, &s) != nil || s == nil || (*s != "http" && *s != "mcp") {
		return "", &itemFault{reason: ItemBadType, detail: "type must be http or mcp"}
	}
	return *s, nil
}

// itemInput is the HTTP method an item of type typ is called with (GET, or POST for
// an MCP server, unless its input names one) and, for an MCP server, its tool.
func itemInput(raw json.RawMessage, typ string) (method, tool string, f *itemFault) {
	var in struct {
		Method   *string `json:"method"`
		ToolName *string `json:"toolName"`
	}
	if len(bytes.TrimSpace(raw)) > 0 && !bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		if raw[0] != '{' || json.Unmarshal(raw, &in) != nil {
			return "", "", &itemFault{reason: ItemBadMethod, detail: "input is not an object"}
		}
	}
	method = "GET"
	if typ == "mcp" {
		method = "POST"
	}
	if in.Method != nil {
		method = strings.ToUpper(strings.TrimSpace(*in.Method))
		switch method {
		case "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE":
		default:
			return "", "", &itemFault{reason: ItemBadMethod, detail: "input.method is not an HTTP method"}
		}
	}
	if typ == "mcp" && in.ToolName != nil {
		tool = strings.TrimSpace(*in.ToolName)
	}
	return method, tool, nil
}

// itemListing is the item as a discovery listing: the catalog reads it in the same
// names, the invocation contract as its discovery info.
func itemListing(mi manifestItem, res itemResource, typ, method string, updated *time.Time) map[string]any {
	input := map[string]json.RawMessage{}
	if len(mi.Input) > 0 && mi.Input[0] == '{' {
		json.Unmarshal(mi.Input, &input)
	}
	input["type"], _ = json.Marshal(typ)
	input["method"], _ = json.Marshal(method)
	info := map[string]any{"input": input}
	if len(bytes.TrimSpace(mi.Output)) > 0 && mi.Output[0] == '{' {
		info["output"] = mi.Output
	}
	listing := map[string]any{
		"resource": *res.URL, "type": typ, "method": method, "accepts": mi.Accepts,
		"description": string(res.Description), "mimeType": string(res.MimeType),
		"serviceName": string(res.ServiceName), "discoveryInfo": info,
	}
	if len(res.Tags) > 0 {
		listing["tags"] = res.Tags
	}
	if updated != nil {
		listing["lastUpdated"] = updated.Format(time.RFC3339)
	}
	return listing
}

// readProofs checks the ownership proofs: each an EIP-191 signature (personal_sign)
// of the origin, 65 bytes in hex; it answers the addresses they recover to.
func readProofs(raw json.RawMessage, origin string) (map[string]bool, error) {
	signers := map[string]bool{}
	if len(bytes.TrimSpace(raw)) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return signers, nil
	}
	var proofs []string
	if json.Unmarshal(raw, &proofs) != nil {
		return nil, refuse(ReasonBadProof, "ownershipProofs must be a list of hex signatures")
	}
	if len(proofs) > MaxProofs {
		return nil, refuse(ReasonBadProof, "%d ownership proofs, over %d", len(proofs), MaxProofs)
	}
	for i, p := range proofs {
		addr, err := RecoverOwner(origin, p)
		if err != nil {
			return nil, refuse(ReasonBadProof, "ownershipProofs[%d]: %v", i, err)
		}
		signers[strings.ToLower(addr)] = true
	}
	return signers, nil
}

// RecoverOwner is the address whose EIP-191 signature (personal_sign) of the origin
// text sig is.
func RecoverOwner(origin, sig string) (string, error) {
	b, err := hex.DecodeString(strings.TrimPrefix(strings.TrimSpace(sig), "0x"))
	if err != nil || len(b) != 65 {
		return "", errors.New("not 65 bytes of hex")
	}
	if b[64] >= 27 {
		b[64] -= 27
	}
	if b[64] > 1 {
		return "", errors.New("its recovery id is neither 27 nor 28")
	}
	pub, err := crypto.SigToPub(accounts.TextHash([]byte(origin)), b)
	if err != nil {
		return "", errors.New("no signer recovers from it")
	}
	return crypto.PubkeyToAddress(*pub).Hex(), nil
}

// SignOrigin is the EIP-191 signature of origin by key (hex), as ownershipProofs
// carries it: what a seller's payee signs to prove it owns the origin.
func SignOrigin(origin, hexKey string) (string, error) {
	key, err := crypto.HexToECDSA(strings.TrimPrefix(hexKey, "0x"))
	if err != nil {
		return "", errors.New("origin: the key is not a secp256k1 private key in hex")
	}
	sig, err := crypto.Sign(accounts.TextHash([]byte(origin)), key)
	if err != nil {
		return "", err
	}
	sig[64] += 27
	return "0x" + hex.EncodeToString(sig), nil
}

// depth is how deeply data's JSON nests, read before it is decoded: it scans the
// bytes once, so a hostile document costs one pass and no allocation.
func depth(data []byte) int {
	d, most, inString, escaped := 0, 0, false, false
	for _, c := range data {
		switch {
		case inString:
			if escaped {
				escaped = false
			} else if c == '\\' {
				escaped = true
			} else if c == '"' {
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			d++
			most = max(most, d)
		case c == '}' || c == ']':
			d--
		}
	}
	return most
}

// unixTime reads lastUpdated: whole Unix seconds, as the reference middleware writes it.
func unixTime(raw json.RawMessage) (time.Time, bool) {
	var secs int64
	if json.Unmarshal(raw, &secs) != nil || secs <= 0 || secs > 253402300799 {
		return time.Time{}, false
	}
	return time.Unix(secs, 0).UTC(), true
}
