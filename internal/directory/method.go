// Package directory holds the public seller directory's domain: listing items, trust
// blocks, merchant records, list filters, and the immutable snapshot that answers
// every directory read from memory.
package directory

import (
	"encoding/json"
	"time"
)

// Verdicts a trust block can carry. Unknown means never probed, or probed too long ago.
const (
	VerdictProceed = "proceed"
	VerdictCaution = "caution"
	VerdictAvoid   = "avoid"
	VerdictUnknown = "unknown"
)

// Verdicts lists every verdict, best first.
var Verdicts = []string{VerdictProceed, VerdictCaution, VerdictAvoid, VerdictUnknown}

// StatsFloor is the number of settled payments below which stats are withheld: too
// few payments say nothing about a seller.
const StatsFloor = 5

// Method is one enabled provider method as the directory lists it. Its JSON form is
// the listing item of the wire contract; Guidance is only encoded on the slug route.
type Method struct {
	Slug        string   `json:"slug"`
	Name        string   `json:"name"`
	Provider    string   `json:"provider"`
	Hostname    string   `json:"hostname"`
	Description string   `json:"description"`
	Category    string   `json:"category"`
	Kind        string   `json:"kind"`
	Payable     bool     `json:"payable"`
	Endpoint    Endpoint `json:"endpoint"`
	Trust       Trust    `json:"trust"`
	Stats       *Stats   `json:"stats"`
	// SourceListing is what the discovery listing the method was imported from
	// reports about it; absent for a method of no listing.
	SourceListing *Listing `json:"source_listing,omitempty"`

	Guidance json.RawMessage `json:"-"`
}

// Demand is the organic demand the listing reports for the method: its paid calls
// and unique payers over the last 30 days, 0 when it gives none. It is the listing's
// word, which the service cannot check, so it only breaks ties between methods the
// service's own evidence cannot tell apart.
func (m *Method) Demand() (calls, payers int64) {
	if l := m.SourceListing; l != nil {
		if l.Calls30d != nil {
			calls = *l.Calls30d
		}
		if l.Payers30d != nil {
			payers = *l.Payers30d
		}
	}
	return calls, payers
}

// Use is the evidence of real use that breaks ties between methods the service's
// trust cannot tell apart: payers, the listing's 30-day unique payers and the
// service's own organic payers of the seller (Trust.Demand) beside them, then
// calls, the listing's alone. The service's settled payments never count as calls:
// one payer paying many times is one payer, and one who came on a single day only a
// quarter of one (see ServiceDemand).
func (m *Method) Use() (payers, calls int64) {
	calls, payers = m.Demand()
	return payers + m.Trust.Demand.OrganicPayers(), calls
}

// Listing is what a discovery listing (the x402 Bazaar) reports about a method: its
// own counts of paid calls and of payers over the last 30 days, when it saw the
// last call and when it last updated the entry. It is the listing's word, not
// something the service observed: it never feeds the trust block or Stats, which
// count the payments the service settled itself. A figure the listing does not give
// is null.
type Listing struct {
	Source       string     `json:"source"`
	Calls30d     *int64     `json:"calls_30d"`
	Payers30d    *int64     `json:"unique_payers_30d"`
	LastCalledAt *time.Time `json:"last_called_at"`
	UpdatedAt    *time.Time `json:"updated_at"`
}

// Endpoint is the HTTP method and URL an agent calls, as the listing item of the wire
// contract tells them (the method upper-case, as the store keeps it). It is not
// catalog.Endpoint, an import's: the two change apart and meet only in the store.
type Endpoint struct {
	Method string `json:"method"`
	URL    string `json:"url"`
}

// Trust is the advisory trust block. It never authorises a payment.
type Trust struct {
	Verdict  string    `json:"verdict"`
	Score    *int      `json:"score"`
	Advisory bool      `json:"advisory"`
	Probe    *Probe    `json:"probe"`
	Override *Override `json:"override"`
	// Owner is present when the seller proved it owns the origin that lists the
	// method: the origin's manifest carries its signature by the payee the newest
	// valid offer names.
	Owner *Owner `json:"owner,omitempty"`
	// NotYetProbed is set while the service has never probed the seller: the
	// verdict is unknown and nothing but the listing's word says what it asks to be
	// paid (a listing without an offer says nothing). Absent once a probe is kept.
	NotYetProbed bool `json:"not_yet_probed,omitempty"`
	// Reports are the merchant record's: what payers reported of the seller's
	// deliveries; absent without any. Demand is the use the service saw of the
	// seller, on its merchant record and on each of its methods (where it breaks
	// ties, see Method.Use); absent without any.
	Reports *Reports       `json:"reports,omitempty"`
	Demand  *ServiceDemand `json:"service_demand,omitempty"`
	// Lookalike is present when the seller resembles an established one (see
	// Lookalike): capped at caution while it stands.
	Lookalike *Lookalike `json:"lookalike,omitempty"`
}

// Owner is a proof of ownership: the payee that signed the origin (EIP-191, over
// the origin's text, as its manifest's ownershipProofs carry it) is the one the
// live 402 names.
type Owner struct {
	Verified bool   `json:"verified"`
	PayTo    string `json:"pay_to"`
	Origin   string `json:"origin"`
	// Points is what the proof added to the score (trust.OwnerPoints while the
	// newest probe gets a valid offer, else 0).
	Points int `json:"points"`
}

// Probe is what the last probe of a seller saw.
type Probe struct {
	Outcome     string    `json:"outcome"`
	ProbedAt    time.Time `json:"probed_at"`
	AgeSeconds  int64     `json:"age_seconds"`
	Network     *string   `json:"network"`
	Asset       *string   `json:"asset"`
	AssetSymbol *string   `json:"asset_symbol"`
	Price       *Price    `json:"price"`
	// Reason says why an invalid_offer answer could not be paid; nil otherwise.
	Reason *string `json:"reason"`
}

// Price is an advertised amount: atomic units as given, and the decimal value when the
// asset's decimals are known.
type Price struct {
	Amount   *string `json:"amount"`
	Decimals *int    `json:"decimals"`
	Value    *string `json:"value"`
}

// Override is an operator's verdict on a hostname; it decides the verdict while it lasts.
type Override struct {
	Verdict   string     `json:"verdict"`
	Reason    string     `json:"reason"`
	SetAt     time.Time  `json:"set_at"`
	ExpiresAt *time.Time `json:"expires_at"`
}

// Stats are settled-payment counts for a hostname, shown from StatsFloor payments on.
type Stats struct {
	SettledPayments int     `json:"settled_payments"`
	Delivered       int     `json:"delivered"`
	DeliveryRate    float64 `json:"delivery_rate"`
}

// NewStats returns the stats for a hostname, or nil under the floor.
func NewStats(settled, delivered int) *Stats {
	if settled < StatsFloor {
		return nil
	}
	rate := float64(delivered) / float64(settled)
	rate = float64(int64(rate*10000+0.5)) / 10000
	return &Stats{SettledPayments: settled, Delivered: delivered, DeliveryRate: rate}
}

// Merchant is the trust record behind a hostname.
type Merchant struct {
	Hostname  string          `json:"hostname"`
	Providers []string        `json:"providers"`
	Trust     Trust           `json:"trust"`
	Stats     *Stats          `json:"stats"`
	Methods   []MerchantEntry `json:"methods"`
	Probes    []ProbeRecord   `json:"probes"`
	// Origin is present when the hostname lists itself, through its origin's own
	// manifest: its methods are the owner's word, in place of any listing's copies.
	Origin *OriginListing `json:"origin,omitempty"`
	// ListingDemand is present when a listing reports the use of any of the
	// hostname's methods.
	ListingDemand *Demand `json:"listing_demand,omitempty"`
}

// Demand is a hostname's organic demand as the listings its methods were imported
// from report it: paid calls and unique payers over the last 30 days, summed over
// the methods whose listing gives them (Methods counts those), so a payer of two
// methods counts twice. It is the listing's word, never the service's Stats, and
// never counted in the trust score.
type Demand struct {
	Calls30d  int64 `json:"calls_30d"`
	Payers30d int64 `json:"unique_payers_30d"`
	Methods   int   `json:"methods"`
}

// Add counts m's listing figures into d, when the listing gives any.
func (d *Demand) Add(m *Method) {
	l := m.SourceListing
	if l == nil || l.Calls30d == nil && l.Payers30d == nil {
		return
	}
	calls, payers := m.Demand()
	d.Calls30d += calls
	d.Payers30d += payers
	d.Methods++
}

// OriginListing is a hostname's listing by its own origin: listed, or stale (its
// manifest could not be fetched for a while; Reason says why) while its methods
// stay listed.
type OriginListing struct {
	Origin    string    `json:"origin"`
	Status    string    `json:"status"`
	Reason    *string   `json:"reason"`
	Owner     *string   `json:"owner"`
	ListedAt  time.Time `json:"listed_at"`
	CheckedAt time.Time `json:"checked_at"`
}

// MerchantEntry is a method as the merchant record lists it.
type MerchantEntry struct {
	Slug     string `json:"slug"`
	Name     string `json:"name"`
	Category string `json:"category"`
	Payable  bool   `json:"payable"`
	// NotYetProbed is the method's trust block's: set while it was never probed.
	NotYetProbed bool `json:"not_yet_probed,omitempty"`
}

// ProbeRecord is one probe in a merchant's history.
type ProbeRecord struct {
	Outcome    string    `json:"outcome"`
	ProbedAt   time.Time `json:"probed_at"`
	HTTPStatus *int      `json:"http_status"`
	LatencyMS  *int      `json:"latency_ms"`
	Network    *string   `json:"network"`
	Asset      *string   `json:"asset"`
	Price      *Price    `json:"price"`
	Reason     *string   `json:"reason"`
}
