package x402

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
)

// entry is one accepts entry with every field kept raw, so that a missing field, a
// field of the wrong type and an empty one can be told apart.
type entry struct {
	Scheme            json.RawMessage `json:"scheme"`
	Network           json.RawMessage `json:"network"`
	Asset             json.RawMessage `json:"asset"`
	PayTo             json.RawMessage `json:"payTo"`
	Amount            json.RawMessage `json:"amount"`            // v2
	MaxAmountRequired json.RawMessage `json:"maxAmountRequired"` // v1
	MaxTimeoutSeconds json.RawMessage `json:"maxTimeoutSeconds"`
	Resource          json.RawMessage `json:"resource"`    // v1
	Description       json.RawMessage `json:"description"` // v1
	Extra             json.RawMessage `json:"extra"`
}

// exactNamespaces are the network families x402 defines the exact scheme on, one
// document each under specs/schemes/exact; upto is defined on EVM only.
var exactNamespaces = map[string]bool{
	"eip155": true, "solana": true, "algorand": true, "aptos": true,
	"hedera": true, "keeta": true, "stellar": true, "sui": true,
}

// EVM asset transfer methods of the exact scheme (scheme_exact_evm.md); the absent
// value means eip3009.
const (
	transferEIP3009 = "eip3009"
	transferPermit2 = "permit2"
	transferERC7710 = "erc7710"
)

// checkEntry judges one accepts entry by the rules of its document's version (base
// carries the version and what the document itself says) and returns the offer it
// makes: the entryRules, in their order.
func checkEntry(base Offer, raw json.RawMessage) (Offer, *OfferError) {
	raw = bytes.TrimSpace(raw)
	c := entryCheck{o: base, v1: base.Version == 1}
	if !isObject(raw) || json.Unmarshal(raw, &c.e) != nil {
		return Offer{}, refuse(ReasonIncompleteTerm, "not an object")
	}
	for _, rule := range entryRules {
		if err := rule(&c); err != nil {
			return Offer{}, err
		}
	}
	return c.o, nil
}

// entryCheck is one accepts entry being judged: the entry as sent, and the offer
// its rules have vouched for so far.
type entryCheck struct {
	e      entry
	o      Offer
	v1     bool
	amount string // the atomic amount, before the scheme says what it means
	ns     string // the network's CAIP-2 namespace
}

// entryRules are the rules an accepts entry is held to, in the order they are
// checked, so that an entry breaking several is refused for the first:
//
//   - The entry is an object using its own version's names: v2 never sends v1's
//     maxAmountRequired, v1 never sends v2's amount.
//   - scheme, network, asset and payTo are non-empty strings; the amount (v2 amount,
//     v1 maxAmountRequired) is a string holding an atomic integer; maxTimeoutSeconds
//     is a positive number. v1 also requires resource (a non-empty string) and
//     description (a string).
//   - The network is CAIP-2 in v2 and one of x402 v1's names in v1; a v1 name in v2
//     or a CAIP-2 identifier in v1 mixes the versions.
//   - The scheme is one x402 defines on that network: exact on the families with an
//     exact binding, upto on EVM in v2.
//   - On EVM the asset and payee are 0x addresses, on Solana base58 public keys.
//   - extra, when sent, is an object, and holds what the scheme needs on that
//     network (see extraRules).
var entryRules = []func(*entryCheck) *OfferError{
	checkVersionNames,
	checkTerms,
	checkAmount,
	checkTimeout,
	checkV1Resource,
	checkNetwork,
	checkScheme,
	checkAddresses,
	checkEntryExtra,
}

// amountField is the name the entry's version gives the amount, and its value.
func (c *entryCheck) amountField() (string, json.RawMessage) {
	if c.v1 {
		return "maxAmountRequired", c.e.MaxAmountRequired
	}
	return "amount", c.e.Amount
}

// checkVersionNames refuses an entry that mixes versions by its amount's name.
func checkVersionNames(c *entryCheck) *OfferError {
	if c.v1 && present(c.e.Amount) {
		return refuse(ReasonMixedVersions, "a v1 entry with v2's amount")
	}
	if !c.v1 && present(c.e.MaxAmountRequired) {
		return refuse(ReasonMixedVersions, "a v2 entry with v1's maxAmountRequired")
	}
	return nil
}

// checkTerms takes scheme, network, asset and payTo, each a short printable string.
func checkTerms(c *entryCheck) *OfferError {
	for _, f := range []struct {
		name string
		raw  json.RawMessage
		dst  *string
	}{{"scheme", c.e.Scheme, &c.o.Scheme}, {"network", c.e.Network, &c.o.Network}, {"asset", c.e.Asset, &c.o.Asset}, {"payTo", c.e.PayTo, &c.o.PayTo}} {
		s, ok := jsonString(f.raw)
		switch {
		case !present(f.raw):
			return refuse(ReasonIncompleteTerm, "%s is missing", f.name)
		case !ok || s == "":
			return refuse(ReasonIncompleteTerm, "%s is not a non-empty string", f.name)
		case Clean(s, 128) != s:
			return refuse(ReasonIncompleteTerm, "%s holds control characters or is over 128 bytes", f.name)
		}
		*f.dst = s
	}
	return nil
}

// checkAmount takes the amount, a string holding an atomic integer.
func checkAmount(c *entryCheck) *OfferError {
	field, raw := c.amountField()
	if !present(raw) {
		return refuse(ReasonIncompleteTerm, "%s is missing", field)
	}
	s, ok := jsonString(raw)
	if !ok {
		return refuse(ReasonBadAmount, "%s is not a string", field)
	}
	amount, ok := ReadAmount(raw)
	if !ok || s != strings.TrimSpace(s) {
		return refuse(ReasonBadAmount, "%s %q is not an atomic integer", field, Clean(s, 40))
	}
	c.amount = amount
	return nil
}

// checkTimeout takes maxTimeoutSeconds, a positive number.
func checkTimeout(c *entryCheck) *OfferError {
	seconds, ok := positiveSeconds(c.e.MaxTimeoutSeconds)
	if !ok {
		return refuse(ReasonIncompleteTerm, "maxTimeoutSeconds is missing or not a positive number")
	}
	c.o.MaxTimeoutSeconds = seconds
	return nil
}

// checkV1Resource takes v1's resource and requires its description, which v2
// moved out of the entry.
func checkV1Resource(c *entryCheck) *OfferError {
	if !c.v1 {
		return nil
	}
	res, ok := jsonString(c.e.Resource)
	if !ok || res == "" {
		return refuse(ReasonNoResource, "resource is missing")
	}
	c.o.Resource = Clean(res, 2048)
	if _, ok := jsonString(c.e.Description); !ok {
		return refuse(ReasonIncompleteTerm, "description is missing or not a string")
	}
	return nil
}

// checkNetwork holds the network to its version's form, a v1 name becoming its
// CAIP-2 identifier.
func checkNetwork(c *entryCheck) *OfferError {
	caip2, isV1Name := v1Networks[c.o.Network]
	switch {
	case c.v1 && isV1Name:
		c.o.Network = caip2
	case c.v1 && IsCAIP2(c.o.Network):
		return refuse(ReasonMixedVersions, "the CAIP-2 network %q in a v1 entry", c.o.Network)
	case c.v1:
		return refuse(ReasonBadNetwork, "%q is not a network of x402 v1", c.o.Network)
	case isV1Name:
		return refuse(ReasonMixedVersions, "the v1 network name %q in a v2 entry", c.o.Network)
	case !IsCAIP2(c.o.Network):
		return refuse(ReasonBadNetwork, "%q is not a CAIP-2 network", c.o.Network)
	}
	c.ns, _, _ = strings.Cut(c.o.Network, ":")
	return nil
}

// checkScheme gives the amount its meaning: the price of exact, the ceiling of upto.
func checkScheme(c *entryCheck) *OfferError {
	switch {
	case c.o.Scheme == SchemeExact && exactNamespaces[c.ns]:
		c.o.Amount = c.amount
	case c.o.Scheme == SchemeUpto && (c.ns == "eip155" || c.ns == "solana") && !c.v1:
		c.o.Ceiling = c.amount
	default:
		return refuse(ReasonUnknownScheme, "x402 v%d defines no scheme %q on %s", c.o.Version, c.o.Scheme, c.ns)
	}
	return nil
}

// checkAddresses holds the asset and payee to their network's form of address.
func checkAddresses(c *entryCheck) *OfferError {
	switch c.ns {
	case "eip155":
		if !isEVMAddress(c.o.Asset) || !isEVMAddress(c.o.PayTo) {
			return refuse(ReasonBadAddress, "asset and payTo must be 0x addresses of 20 bytes on %s", c.o.Network)
		}
	case "solana":
		if !isSolanaAddress(c.o.Asset) || !isSolanaAddress(c.o.PayTo) {
			return refuse(ReasonBadAddress, "asset and payTo must be base58 public keys on %s", c.o.Network)
		}
	}
	return nil
}

// checkEntryExtra takes extra, an object when sent, and holds it to extraRules.
func checkEntryExtra(c *entryCheck) *OfferError {
	var extra map[string]json.RawMessage
	if present(c.e.Extra) {
		if !isObject(c.e.Extra) || json.Unmarshal(c.e.Extra, &extra) != nil {
			return refuse(ReasonBadExtra, "extra is not an object")
		}
		c.o.Extra = compact(c.e.Extra)
	}
	return checkExtra(c.o.Version, c.o.Scheme, c.ns, extra)
}

// extraFields is an entry's extra, its fields kept raw.
type extraFields map[string]json.RawMessage

// str is the field k when it is a non-empty string.
func (x extraFields) str(k string) (string, bool) {
	s, ok := jsonString(x[k])
	return s, ok && s != ""
}

// sent is the field k when it was sent and is not null.
func (x extraFields) sent(k string) (json.RawMessage, bool) {
	raw, ok := x[k]
	return raw, ok && present(raw)
}

// extraRules hold each scheme's needs on each network family (ns, empty for every
// family), from its document under specs/schemes. The other families' exact
// bindings take only optional fields.
var extraRules = []struct {
	scheme, ns string
	check      func(version int, x extraFields) *OfferError
}{
	{SchemeExact, "eip155", exactEVMExtra},
	{SchemeExact, "solana", exactSolanaExtra},
	{SchemeExact, "hedera", exactHederaExtra},
	{SchemeExact, "stellar", exactStellarExtra},
	{SchemeUpto, "solana", uptoSolanaExtra},
	{SchemeUpto, "", uptoExtra},
}

// checkExtra holds extra to the first of extraRules for scheme on ns.
func checkExtra(version int, scheme, ns string, extra map[string]json.RawMessage) *OfferError {
	for _, r := range extraRules {
		if r.scheme == scheme && (r.ns == "" || r.ns == ns) {
			return r.check(version, extra)
		}
	}
	return nil
}

// exactEVMExtra (scheme_exact_evm.md): assetTransferMethod, when sent, is eip3009,
// permit2 or erc7710 (v1 pays by EIP-3009 only). EIP-3009, the default, signs with
// the token's EIP-712 domain, so name and version must be non-empty strings; the
// other methods may send them.
func exactEVMExtra(version int, x extraFields) *OfferError {
	method := transferEIP3009
	if raw, ok := x.sent("assetTransferMethod"); ok {
		m, ok := jsonString(raw)
		if !ok || (m != transferEIP3009 && m != transferPermit2 && m != transferERC7710) {
			return refuse(ReasonBadExtra, "extra.assetTransferMethod %s is not eip3009, permit2 or erc7710", Clean(string(raw), 40))
		}
		if version == 1 && m != transferEIP3009 {
			return refuse(ReasonBadExtra, "extra.assetTransferMethod %q: x402 v1 pays by EIP-3009 only", m)
		}
		method = m
	}
	_, hasName := x.str("name")
	_, hasVersion := x.str("version")
	if method == transferEIP3009 && (!hasName || !hasVersion) {
		return refuse(ReasonBadExtra, "exact on EVM by EIP-3009 needs extra.name and extra.version, the token's EIP-712 domain")
	}
	return nil
}

// exactSolanaExtra (scheme_exact_svm.md): feePayer, the base58 key that pays the
// fees; memo, when sent, a string of at most 256 bytes.
func exactSolanaExtra(_ int, x extraFields) *OfferError {
	if fp, ok := x.str("feePayer"); !ok || !isSolanaAddress(fp) {
		return refuse(ReasonBadExtra, "exact on Solana needs extra.feePayer, the base58 key that pays the fees")
	}
	if raw, ok := x.sent("memo"); ok {
		if m, ok := jsonString(raw); !ok || len(m) > 256 {
			return refuse(ReasonBadExtra, "extra.memo is not a string of at most 256 bytes")
		}
	}
	return nil
}

// exactHederaExtra (scheme_exact_hedera.md): feePayer, the paying account.
func exactHederaExtra(_ int, x extraFields) *OfferError {
	if _, ok := x.str("feePayer"); !ok {
		return refuse(ReasonBadExtra, "exact on Hedera needs extra.feePayer, the account that pays the fees")
	}
	return nil
}

// exactStellarExtra (scheme_exact_stellar.md): areFeesSponsored, a boolean.
func exactStellarExtra(_ int, x extraFields) *OfferError {
	if raw := bytes.TrimSpace(x["areFeesSponsored"]); !bytes.Equal(raw, []byte("true")) && !bytes.Equal(raw, []byte("false")) {
		return refuse(ReasonBadExtra, "exact on Stellar needs extra.areFeesSponsored, a boolean")
	}
	return nil
}

// uptoExtra (scheme_upto_evm.md): name, version and facilitatorAddress.
func uptoExtra(_ int, x extraFields) *OfferError {
	_, hasName := x.str("name")
	_, hasVersion := x.str("version")
	fa, hasFA := x.str("facilitatorAddress")
	if !hasName || !hasVersion || !hasFA || !isEVMAddress(fa) {
		return refuse(ReasonBadExtra, "upto on EVM needs extra.name, extra.version and extra.facilitatorAddress")
	}
	return nil
}

// uptoSolanaExtra (@x402/svm 2.27's upto): feePayer, the facilitator's key that pays
// the fees and is the channel's payee; receiverAuthorizer, the key that signs the
// seller's vouchers; withdrawDelay, the channel's grace period, a whole number of
// seconds above zero.
func uptoSolanaExtra(_ int, x extraFields) *OfferError {
	fp, hasFP := x.str("feePayer")
	ra, hasRA := x.str("receiverAuthorizer")
	if !hasFP || !hasRA || !isSolanaAddress(fp) || !isSolanaAddress(ra) {
		return refuse(ReasonBadExtra, "upto on Solana needs extra.feePayer and extra.receiverAuthorizer, base58 keys")
	}
	if d, ok := wholeNumber(x["withdrawDelay"]); !ok || d < 1 {
		return refuse(ReasonBadExtra, "upto on Solana needs extra.withdrawDelay, a whole number of seconds")
	}
	return nil
}

// positiveSeconds reads maxTimeoutSeconds: a JSON number above zero, whole or not,
// held as whole seconds (at least one, at most what an int32 holds).
func positiveSeconds(raw json.RawMessage) (int, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] == '"' {
		return 0, false
	}
	var f float64
	if json.Unmarshal(raw, &f) != nil || !(f > 0) || math.IsInf(f, 0) {
		return 0, false
	}
	return int(max(1, min(f, math.MaxInt32))), true
}

// isEVMAddress reports whether s is 0x and 40 hexadecimal digits of either case: what
// x402's EVM clients accept as an address.
func isEVMAddress(s string) bool {
	if len(s) != 42 || s[0] != '0' || s[1] != 'x' {
		return false
	}
	for i := 2; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

// isSolanaAddress reports whether s is 32 to 44 characters of the base58 alphabet,
// the form x402's Solana clients accept for a public key.
func isSolanaAddress(s string) bool {
	if len(s) < 32 || len(s) > 44 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '1' && c <= '9' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z') || c == 'I' || c == 'O' || c == 'l' {
			return false
		}
	}
	return true
}
