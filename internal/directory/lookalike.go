package directory

// Lookalike is a seller whose name, provider or hostname is confusable with an
// established seller's on another registrable domain: the shape an impostor takes to
// be paid in a known seller's place. While it stands (Cleared null) it caps the trust
// block at caution; a proof that one owner answers for both, or an operator's
// override, clears it, and the flag stays shown with what cleared it.
type Lookalike struct {
	// Resembles names the established sellers it resembles, and how.
	Resembles []Resemblance `json:"resembles"`
	// Cleared is null while the flag caps the verdict; else owner_proof (both
	// origins' manifests are signed by one payee that their live offers name) or
	// override (an operator's override decides the verdict).
	Cleared *string `json:"cleared"`
}

// Resemblance is one established seller a look-alike resembles.
type Resemblance struct {
	// Hostname is the established seller's.
	Hostname string `json:"hostname"`
	// Signal is how it resembles it (one of the Signal constants).
	Signal string `json:"signal"`
	// Mine and Theirs are what resembles what: the two registrable names, provider
	// names or the brand and the hostname holding it, as Unicode.
	Mine   string `json:"mine"`
	Theirs string `json:"theirs"`
}

// Signals of a resemblance, and what clears a look-alike.
const (
	// SignalConfusable: the two names have one Unicode confusable skeleton
	// (UTS #39), identical ones included: a provider name or registrable name
	// that reads as the established seller's.
	SignalConfusable = "confusable"
	// SignalNearDomain: the registrable names are a small edit apart.
	SignalNearDomain = "near_domain"
	// SignalBrandInHost: the established seller's registrable name stands inside
	// the hostname, on another registrable domain.
	SignalBrandInHost = "brand_in_host"

	ClearedByOwnerProof = "owner_proof"
	ClearedByOverride   = "override"
)
