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
// makes. The rules, in the order they are checked:
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
//     network (see checkExtra).
func checkEntry(base Offer, raw json.RawMessage) (Offer, *OfferError) {
	raw = bytes.TrimSpace(raw)
	var e entry
	if !isObject(raw) || json.Unmarshal(raw, &e) != nil {
		return Offer{}, refuse(ReasonIncompleteTerm, "not an object")
	}
	v1 := base.Version == 1
	amountField, amountRaw := "amount", e.Amount
	if v1 {
		amountField, amountRaw = "maxAmountRequired", e.MaxAmountRequired
		if present(e.Amount) {
			return Offer{}, refuse(ReasonMixedVersions, "a v1 entry with v2's amount")
		}
	} else if present(e.MaxAmountRequired) {
		return Offer{}, refuse(ReasonMixedVersions, "a v2 entry with v1's maxAmountRequired")
	}

	o := base
	for _, f := range []struct {
		name string
		raw  json.RawMessage
		dst  *string
	}{{"scheme", e.Scheme, &o.Scheme}, {"network", e.Network, &o.Network}, {"asset", e.Asset, &o.Asset}, {"payTo", e.PayTo, &o.PayTo}} {
		s, ok := jsonString(f.raw)
		switch {
		case !present(f.raw):
			return Offer{}, refuse(ReasonIncompleteTerm, "%s is missing", f.name)
		case !ok || s == "":
			return Offer{}, refuse(ReasonIncompleteTerm, "%s is not a non-empty string", f.name)
		case Clean(s, 128) != s:
			return Offer{}, refuse(ReasonIncompleteTerm, "%s holds control characters or is over 128 bytes", f.name)
		}
		*f.dst = s
	}

	if !present(amountRaw) {
		return Offer{}, refuse(ReasonIncompleteTerm, "%s is missing", amountField)
	}
	s, ok := jsonString(amountRaw)
	if !ok {
		return Offer{}, refuse(ReasonBadAmount, "%s is not a string", amountField)
	}
	amount, ok := ReadAmount(json.RawMessage(amountRaw))
	if !ok || s != strings.TrimSpace(s) {
		return Offer{}, refuse(ReasonBadAmount, "%s %q is not an atomic integer", amountField, Clean(s, 40))
	}
	seconds, ok := positiveSeconds(e.MaxTimeoutSeconds)
	if !ok {
		return Offer{}, refuse(ReasonIncompleteTerm, "maxTimeoutSeconds is missing or not a positive number")
	}
	o.MaxTimeoutSeconds = seconds

	if v1 {
		res, ok := jsonString(e.Resource)
		if !ok || res == "" {
			return Offer{}, refuse(ReasonNoResource, "resource is missing")
		}
		o.Resource = Clean(res, 2048)
		if _, ok := jsonString(e.Description); !ok {
			return Offer{}, refuse(ReasonIncompleteTerm, "description is missing or not a string")
		}
	}

	if v1 {
		c, ok := v1Networks[o.Network]
		switch {
		case ok:
			o.Network = c
		case IsCAIP2(o.Network):
			return Offer{}, refuse(ReasonMixedVersions, "the CAIP-2 network %q in a v1 entry", o.Network)
		default:
			return Offer{}, refuse(ReasonBadNetwork, "%q is not a network of x402 v1", o.Network)
		}
	} else if _, ok := v1Networks[o.Network]; ok {
		return Offer{}, refuse(ReasonMixedVersions, "the v1 network name %q in a v2 entry", o.Network)
	} else if !IsCAIP2(o.Network) {
		return Offer{}, refuse(ReasonBadNetwork, "%q is not a CAIP-2 network", o.Network)
	}
	ns, _, _ := strings.Cut(o.Network, ":")

	switch {
	case o.Scheme == SchemeExact && exactNamespaces[ns]:
		o.Amount = amount
	case o.Scheme == SchemeUpto && ns == "eip155" && !v1:
		o.Ceiling = amount
	default:
		return Offer{}, refuse(ReasonUnknownScheme, "x402 v%d defines no scheme %q on %s", base.Version, o.Scheme, ns)
	}

	switch ns {
	case "eip155":
		if !isEVMAddress(o.Asset) || !isEVMAddress(o.PayTo) {
			return Offer{}, refuse(ReasonBadAddress, "asset and payTo must be 0x addresses of 20 bytes on %s", o.Network)
		}
	case "solana":
		if !isSolanaAddress(o.Asset) || !isSolanaAddress(o.PayTo) {
			return Offer{}, refuse(ReasonBadAddress, "asset and payTo must be base58 public keys on %s", o.Network)
		}
	}

	var extra map[string]json.RawMessage
	if present(e.Extra) {
		if !isObject(e.Extra) || json.Unmarshal(e.Extra, &extra) != nil {
			return Offer{}, refuse(ReasonBadExtra, "extra is not an object")
		}
		o.Extra = compact(e.Extra)
	}
	if err := checkExtra(base.Version, o.Scheme, ns, extra); err != nil {
		return Offer{}, err
	}
	return o, nil
}

// checkExtra holds each scheme's needs on each network family, from its document under
// specs/schemes:
//
//   - exact on EVM (scheme_exact_evm.md): assetTransferMethod, when sent, is eip3009,
//     permit2 or erc7710 (v1 pays by EIP-3009 only). EIP-3009, the default, signs
//     with the token's EIP-712 domain, so name and version must be non-empty strings;
//     the other methods may send them.
//   - exact on Solana (scheme_exact_svm.md): feePayer, the base58 key that pays the
//     fees; memo, when sent, a string of at most 256 bytes.
//   - exact on Hedera (scheme_exact_hedera.md): feePayer, the paying account.
//   - exact on Stellar (scheme_exact_stellar.md): areFeesSponsored, a boolean.
//   - upto on EVM (scheme_upto_evm.md): name, version and facilitatorAddress.
//
// The other families' exact bindings take only optional fields.
func checkExtra(version int, scheme, ns string, extra map[string]json.RawMessage) *OfferError {
	str := func(k string) (string, bool) {
		s, ok := jsonString(extra[k])
		return s, ok && s != ""
	}
	switch {
	case scheme == SchemeExact && ns == "eip155":
		method := transferEIP3009
		if raw, ok := extra["assetTransferMethod"]; ok && present(raw) {
			m, ok := jsonString(raw)
			if !ok || (m != transferEIP3009 && m != transferPermit2 && m != transferERC7710) {
				return refuse(ReasonBadExtra, "extra.assetTransferMethod %s is not eip3009, permit2 or erc7710", Clean(string(raw), 40))
			}
			if version == 1 && m != transferEIP3009 {
				return refuse(ReasonBadExtra, "extra.assetTransferMethod %q: x402 v1 pays by EIP-3009 only", m)
			}
			method = m
		}
		_, hasName := str("name")
		_, hasVersion := str("version")
		if method == transferEIP3009 && (!hasName || !hasVersion) {
			return refuse(ReasonBadExtra, "exact on EVM by EIP-3009 needs extra.name and extra.version, the token's EIP-712 domain")
		}
	case scheme == SchemeExact && ns == "solana":
		fp, ok := str("feePayer")
		if !ok || !isSolanaAddress(fp) {
			return refuse(ReasonBadExtra, "exact on Solana needs extra.feePayer, the base58 key that pays the fees")
		}
		if raw, ok := extra["memo"]; ok && present(raw) {
			if m, ok := jsonString(raw); !ok || len(m) > 256 {
				return refuse(ReasonBadExtra, "extra.memo is not a string of at most 256 bytes")
			}
		}
	case scheme == SchemeExact && ns == "hedera":
		if _, ok := str("feePayer"); !ok {
			return refuse(ReasonBadExtra, "exact on Hedera needs extra.feePayer, the account that pays the fees")
		}
	case scheme == SchemeExact && ns == "stellar":
		if raw := bytes.TrimSpace(extra["areFeesSponsored"]); !bytes.Equal(raw, []byte("true")) && !bytes.Equal(raw, []byte("false")) {
			return refuse(ReasonBadExtra, "exact on Stellar needs extra.areFeesSponsored, a boolean")
		}
	case scheme == SchemeUpto:
		_, hasName := str("name")
		_, hasVersion := str("version")
		fa, hasFA := str("facilitatorAddress")
		if !hasName || !hasVersion || !hasFA || !isEVMAddress(fa) {
			return refuse(ReasonBadExtra, "upto on EVM needs extra.name, extra.version and extra.facilitatorAddress")
		}
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
