// Package catalog describes the sellers the directory lists, as they come in from
// outside: the demo catalog the project ships and catalogs imported from the x402
// Bazaar discovery format. The store turns a Catalog into rows; nothing here talks to
// the database.
package catalog

import (
	"encoding/json"
	"time"
)

// Kinds a provider method can be paid by.
const (
	KindX402         = "x402"
	KindCheckout     = "checkout"
	KindSubscription = "subscription"
	KindAccount      = "account"
)

// Kinds lists every kind, in the order the documentation gives them.
var Kinds = []string{KindX402, KindCheckout, KindSubscription, KindAccount}

// Categories is the small documented set a method's category is drawn from.
var Categories = []string{
	"ai", "blockchain", "commerce", "communication", "data", "developer", "finance",
	"geo", "media", "news", "search", "security", "social", "travel", "weather", "other",
}

// Catalog is a batch of providers, their methods and what is known about the
// merchants (hostnames) behind them.
type Catalog struct {
	Providers []Provider `json:"providers"`
	Merchants []Merchant `json:"merchants,omitempty"`
	// Delisted are the methods a listing says it no longer holds (the Bazaar's event
	// log says so of each resource that left it): a load disables them, as a
	// complete sync disables what vanished, and deletes nothing.
	Delisted []Delisting `json:"delisted,omitempty"`
}

// Delisting names the methods of a source that left its listing: every method of
// that source at the resource URL SourceKey, whatever its MCP tool.
type Delisting struct {
	Source    string `json:"source"`
	SourceKey string `json:"source_key"`
}

// Provider is a seller: one name, one or more methods.
type Provider struct {
	Name    string   `json:"name"`
	Methods []Method `json:"methods"`
}

// Method is one payable operation of a provider: an HTTP endpoint and how to pay it.
type Method struct {
	// Slug is unique and stable; left empty, the loader derives it from the endpoint.
	Slug        string          `json:"slug,omitempty"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Category    string          `json:"category"`
	Kind        string          `json:"kind"`
	Endpoint    Endpoint        `json:"endpoint"`
	Disabled    bool            `json:"disabled,omitempty"`
	Guidance    json.RawMessage `json:"guidance,omitempty"`
	Offers      []Offer         `json:"offers,omitempty"`
	// SourceKey identifies the method across imports of the same source (the Bazaar
	// resource URL); re-importing updates the row with the same key in place. An MCP
	// server multiplexes its tools over one URL, so Tool joins the key: (SourceKey,
	// Tool) is unique, and Tool is empty for a plain HTTP endpoint.
	SourceKey string `json:"source_key,omitempty"`
	Tool      string `json:"tool,omitempty"`
	// Source names the listing the method was imported from (SourceBazaar), so that
	// a complete sync of that listing can disable what it no longer lists without
	// touching methods that came from anywhere else. Empty for hand-written catalogs.
	Source string `json:"source,omitempty"`
	// Listing is what that listing says about the method beyond how to call it.
	Listing *Listing `json:"listing,omitempty"`
	// Sparse marks a method read from a record that gives its URL and description
	// alone, no offer and no call details (a line of the Bazaar's event log): loaded
	// over an earlier import of the same method, it keeps what that one knew (see
	// Over).
	Sparse bool `json:"sparse,omitempty"`
}

// SourceBazaar is the Source of methods imported from an x402 Bazaar discovery
// listing, from a file or from a discovery endpoint.
const SourceBazaar = "x402-bazaar"

// SourceOrigin is the Source of methods an origin lists itself, in its discovery
// manifest (/.well-known/x402.json): the owner's word, which stands over a
// listing's copy of the same hostname.
const SourceOrigin = "origin"

// Listing holds the facts a discovery listing reports about a method: its own counts
// of paid calls and payers over the last 30 days and its dates. They are the
// listing's word, kept apart from the payments Waystation settles itself. A nil
// field is one the listing did not give.
type Listing struct {
	Calls30d     *int64     `json:"calls_30d,omitempty"`
	Payers30d    *int64     `json:"unique_payers_30d,omitempty"`
	LastCalledAt *time.Time `json:"last_called_at,omitempty"`
	UpdatedAt    *time.Time `json:"updated_at,omitempty"`
}

// Endpoint is the HTTP method and URL an agent calls, as a catalog gives them (the
// method in any case). It is not directory.Endpoint, the listing's: the import format
// and the wire contract change apart and meet only in the store.
type Endpoint struct {
	Method string `json:"method"`
	URL    string `json:"url"`
}

// Offer is a payment requirement a seller lists for a method (an x402 `accepts`
// entry). Amount is the atomic amount as a decimal string; nil when unreadable.
type Offer struct {
	Scheme            string          `json:"scheme"`
	Network           string          `json:"network"`
	Asset             string          `json:"asset,omitempty"`
	PayTo             string          `json:"pay_to,omitempty"`
	Amount            *string         `json:"amount"`
	MaxTimeoutSeconds int             `json:"max_timeout_seconds,omitempty"`
	MimeType          string          `json:"mime_type,omitempty"`
	Extra             json.RawMessage `json:"extra,omitempty"`
}

// Merchant carries the facts about a hostname that the demo catalog ships with:
// probe history, settled payments and an operator override.
type Merchant struct {
	Hostname string    `json:"hostname"`
	Probes   []Probe   `json:"probes,omitempty"`
	Payments Payments  `json:"payments"`
	Override *Override `json:"override,omitempty"`
}

// Probe is one recorded probe of a method's endpoint. Age is how long before loading
// it happened, so a freshly loaded demo catalog has fresh probes. A payment_required
// probe names the offer it saw (Scheme to Amount); an invalid_offer probe names the
// Reason no x402 client could pay it.
type Probe struct {
	Slug       string   `json:"slug"`
	Age        Duration `json:"age"`
	Outcome    string   `json:"outcome"`
	HTTPStatus int      `json:"http_status,omitempty"`
	LatencyMS  int      `json:"latency_ms,omitempty"`
	Scheme     string   `json:"scheme,omitempty"`
	Network    string   `json:"network,omitempty"`
	Asset      string   `json:"asset,omitempty"`
	PayTo      string   `json:"pay_to,omitempty"`
	Amount     *string  `json:"amount,omitempty"`
	Reason     string   `json:"reason,omitempty"`
}

// Payments summarises settled payments to a hostname: how many settled, how many of
// those delivered what was paid for.
type Payments struct {
	Settled   int `json:"settled"`
	Delivered int `json:"delivered"`
}

// Override is an operator's verdict on a hostname, with its reason.
type Override struct {
	Verdict   string    `json:"verdict"`
	Reason    string    `json:"reason"`
	ExpiresIn *Duration `json:"expires_in,omitempty"`
}

// Duration is a time.Duration written as Go duration text ("36h", "90m") in JSON.
type Duration time.Duration

// MarshalJSON writes the duration as text.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON reads duration text such as "2h30m".
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}
