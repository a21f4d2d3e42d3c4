package x402

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
)

const (
	usdcBase    = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"
	usdcSepolia = "0x036CbD53842c5426634e7929541eC2318f3dCF7e"
	payee       = "0x209693Bc6afc0C5328bA36FaF03C514EF312287C"
	usdcSolana  = "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v"
	solanaPayee = "2wKupLR9q6wXYppw8Gr2NvWxKBUqm4PPJKkQfoxHDBg4"
	feePayer    = "EwWqGE4ZFKLofuestmU4LDdK7XM1N4ALgdZccwYugwGd"

	v1Body = `{"x402Version":1,"error":"X-PAYMENT header is required","accepts":[{"scheme":"exact","network":"base",
		"maxAmountRequired":"1000","resource":"https://api.seller.test/v1/thing","description":"a thing",
		"mimeType":"application/json","payTo":"0xfa3F54AE9C4287CA09a486dfaFaCe7d1d4095d93","maxTimeoutSeconds":300,
		"asset":"0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913","outputSchema":null,"extra":{"name":"USD Coin","version":"2"}}]}`
	v2Doc = `{"x402Version":2,"error":"PAYMENT-SIGNATURE header is required",
		"resource":{"url":"https://api.seller.test/v2/thing","description":"a thing","mimeType":"application/json"},
		"accepts":[
		 {"scheme":"exact","network":"eip155:84532","amount":"10000","asset":"0x036CbD53842c5426634e7929541eC2318f3dCF7e","payTo":"0x209693Bc6afc0C5328bA36FaF03C514EF312287C","maxTimeoutSeconds":60,"extra":{"name":"USDC","version":"2"}},
		 {"scheme":"exact","network":"eip155:8453","amount":"2500","asset":"0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913","payTo":"0x209693Bc6afc0C5328bA36FaF03C514EF312287C","maxTimeoutSeconds":60,"extra":{"name":"USD Coin","version":"2"}}],
		"extensions":{"bazaar":{"info":{"input":{"type":"http","method":"GET"}},"schema":{"type":"object"}}}}`
)

func header(k, v string) http.Header {
	h := http.Header{}
	h.Set(k, v)
	return h
}

func b64(doc string) http.Header {
	return header(HeaderPaymentRequired, base64.StdEncoding.EncodeToString([]byte(doc)))
}

func TestParseOfferReadsV1Bodies(t *testing.T) {
	o, err := ParseOffer(http.Header{}, []byte(v1Body))
	if err != nil {
		t.Fatal(err)
	}
	if o.Version != 1 || o.FromHeader || o.Network != "eip155:8453" || o.Amount != "1000" || o.Ceiling != "" ||
		o.PayTo != "0xfa3F54AE9C4287CA09a486dfaFaCe7d1d4095d93" || o.Scheme != "exact" ||
		o.MaxTimeoutSeconds != 300 || o.Resource != "https://api.seller.test/v1/thing" ||
		string(o.Extra) != `{"name":"USD Coin","version":"2"}` {
		t.Fatalf("%+v", o)
	}
}

func TestParseOfferPrefersTheV2HeaderAndAMainnetEntry(t *testing.T) {
	o, err := ParseOffer(b64(v2Doc), []byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	if o.Version != 2 || !o.FromHeader || o.Network != "eip155:8453" || o.Amount != "2500" || o.Entries != 2 ||
		o.Resource != "https://api.seller.test/v2/thing" {
		t.Fatalf("%+v", o)
	}
	// The document's extensions stay on the offer, as sent.
	var ext map[string]json.RawMessage
	if json.Unmarshal(o.Extensions, &ext) != nil || ext["bazaar"] == nil {
		t.Fatalf("extensions %s", o.Extensions)
	}
}

func TestParseOfferFallsBackToTheBodyForAV1Client(t *testing.T) {
	// A broken header with a good v1 body: a v1 client still pays the body.
	o, err := ParseOffer(header(HeaderPaymentRequired, "%%% not base64"), []byte(v1Body))
	if err != nil || o.Version != 1 {
		t.Fatalf("%+v %v", o, err)
	}
	// A header that breaks the rules and a body with no document: the header's reason.
	_, err = ParseOffer(b64(strings.Replace(v2Doc, `"x402Version":2`, `"x402Version":1`, 1)), []byte(`{"error":"pay"}`))
	if reasonOf(err) != ReasonWrongTransport {
		t.Fatalf("err %v", err)
	}
}

func reasonOf(err error) string {
	var oe *OfferError
	if errors.As(err, &oe) {
		return oe.Reason
	}
	return ""
}

// doc is a PaymentRequired document under construction: its members and its first
// accepts entry, both editable.
type doc struct {
	members map[string]any
	entry   map[string]any
}

func (d doc) send() (http.Header, []byte) {
	b, err := json.Marshal(d.members)
	if err != nil {
		panic(err)
	}
	if d.members["x402Version"] == 2 {
		return b64(string(b)), nil
	}
	return http.Header{}, b
}

// v2EVM is an offer as x402's reference server sends it for USDC on Base.
func v2EVM() doc {
	e := map[string]any{"scheme": "exact", "network": "eip155:8453", "amount": "2500", "asset": usdcBase,
		"payTo": payee, "maxTimeoutSeconds": 60, "extra": map[string]any{"name": "USD Coin", "version": "2"}}
	return doc{map[string]any{"x402Version": 2, "error": "PAYMENT-SIGNATURE header is required",
		"resource": map[string]any{"url": "https://api.seller.test/v2/thing", "description": "a thing", "mimeType": "application/json"},
		"accepts":  []any{e}, "extensions": map[string]any{}}, e}
}

// v2Solana is the exact offer of scheme_exact_svm.md.
func v2Solana() doc {
	d := v2EVM()
	e := map[string]any{"scheme": "exact", "network": "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp", "amount": "1000",
		"asset": usdcSolana, "payTo": solanaPayee, "maxTimeoutSeconds": 60,
		"extra": map[string]any{"feePayer": feePayer, "memo": "pi_3abc123def456"}}
	d.members["accepts"], d.entry = []any{e}, e
	return d
}

// v2SolanaUpto is an upto offer on Solana as @x402/svm's upto server sends it.
func v2SolanaUpto() doc {
	d := v2Solana()
	d.entry["scheme"] = "upto"
	d.entry["extra"] = map[string]any{"feePayer": feePayer, "receiverAuthorizer": solanaPayee, "withdrawDelay": 900,
		"tokenProgram": "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA", "recentSlot": "345678901", "paymentFlow": "escrow"}
	return d
}

// v2Upto is the upto offer of scheme_upto_evm.md.
func v2Upto() doc {
	d := v2EVM()
	e := map[string]any{"scheme": "upto", "network": "eip155:84532", "amount": "5000000", "asset": usdcSepolia,
		"payTo": payee, "maxTimeoutSeconds": 300, "extra": map[string]any{"name": "USDC", "version": "2",
			"facilitatorAddress": "0x1234567890abcdef1234567890abcdef12345678"}}
	d.members["accepts"], d.entry = []any{e}, e
	return d
}

// v1EVM is the v1 offer of x402-specification-v1.md §5.1.1, on Base.
func v1EVM() doc {
	e := map[string]any{"scheme": "exact", "network": "base", "maxAmountRequired": "10000", "asset": usdcBase,
		"payTo": payee, "resource": "https://api.example.com/premium-data", "description": "Access to premium market data",
		"mimeType": "application/json", "outputSchema": nil, "maxTimeoutSeconds": 60,
		"extra": map[string]any{"name": "USD Coin", "version": "2"}}
	return doc{map[string]any{"x402Version": 1, "error": "X-PAYMENT header is required", "accepts": []any{e}}, e}
}

// v1Solana is a v1 offer on Solana, as the v1 Solana client reads it.
func v1Solana() doc {
	d := v1EVM()
	d.entry["network"], d.entry["asset"], d.entry["payTo"] = "solana", usdcSolana, solanaPayee
	d.entry["extra"] = map[string]any{"feePayer": feePayer}
	return d
}

// TestParseOfferFollowsX402 holds one case per rule, each on an offer shaped as x402's
// specification and reference implementation send it, changed in one place.
func TestParseOfferFollowsX402(t *testing.T) {
	set := func(k string, v any) func(doc) { return func(d doc) { d.entry[k] = v } }
	del := func(k string) func(doc) { return func(d doc) { delete(d.entry, k) } }
	setDoc := func(k string, v any) func(doc) { return func(d doc) { d.members[k] = v } }
	delDoc := func(k string) func(doc) { return func(d doc) { delete(d.members, k) } }
	extra := func(m map[string]any) func(doc) { return set("extra", m) }
	none := func(doc) {}

	cases := []struct {
		name   string
		offer  func() doc
		change func(doc)
		reason string // empty: a valid offer
		check  func(Offer) bool
	}{
		// Valid offers of every kind the service reads.
		{"v2 exact on EVM", v2EVM, none, "", func(o Offer) bool { return o.Amount == "2500" && o.Network == "eip155:8453" }},
		{"v2 exact on Solana", v2Solana, none, "", func(o Offer) bool {
			return o.Amount == "1000" && o.Network == "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp" && strings.Contains(string(o.Extra), feePayer)
		}},
		{"v1 exact on EVM", v1EVM, none, "", func(o Offer) bool { return o.Version == 1 && o.Amount == "10000" }},
		{"v1 exact on Solana", v1Solana, none, "", func(o Offer) bool { return o.Network == "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp" }},
		{"v1 description may be empty", v1EVM, set("description", ""), "", nil},
		{"v1 without the optional mimeType and outputSchema", v1EVM, func(d doc) { delete(d.entry, "mimeType"); delete(d.entry, "outputSchema") }, "", nil},
		{"v2 without error and extensions", v2EVM, func(d doc) { delete(d.members, "error"); delete(d.members, "extensions") }, "", nil},
		{"fractional maxTimeoutSeconds", v2EVM, set("maxTimeoutSeconds", 30.5), "", func(o Offer) bool { return o.MaxTimeoutSeconds == 30 }},

		// Scheme: exact is a price, upto a ceiling, anything else no offer.
		{"upto is a ceiling, never a price", v2Upto, none, "", func(o Offer) bool { return o.Scheme == "upto" && o.Amount == "" && o.Ceiling == "5000000" }},
		{"exact wins over upto", v2Upto, func(d doc) {
			d.members["accepts"] = append(d.members["accepts"].([]any), v2EVM().entry)
		}, "", func(o Offer) bool { return o.Scheme == "exact" && o.Amount == "2500" }},
		{"upto is not defined in v1", v1EVM, set("scheme", "upto"), ReasonUnknownScheme, nil},
		{"upto on Solana is a ceiling", v2SolanaUpto, none, "", func(o Offer) bool { return o.Scheme == "upto" && o.Amount == "" && o.Ceiling == "1000" }},
		{"upto on Solana without receiverAuthorizer", v2SolanaUpto, extra(map[string]any{"feePayer": feePayer, "withdrawDelay": 900}), ReasonBadExtra, nil},
		{"upto on Solana without withdrawDelay", v2SolanaUpto, extra(map[string]any{"feePayer": feePayer, "receiverAuthorizer": solanaPayee}), ReasonBadExtra, nil},
		{"upto on Solana with exact's extra", v2Solana, set("scheme", "upto"), ReasonBadExtra, nil},
		{"unknown scheme", v2EVM, set("scheme", "deferred"), ReasonUnknownScheme, nil},
		{"scheme in another case", v2EVM, set("scheme", "Exact"), ReasonUnknownScheme, nil},
		{"exact on a family x402 does not bind", v2EVM, set("network", "cosmos:cosmoshub-4"), ReasonUnknownScheme, nil},

		// extra per scheme and network family.
		{"exact on EVM without extra", v2EVM, del("extra"), ReasonBadExtra, nil},
		{"exact on EVM without the domain version", v2EVM, extra(map[string]any{"name": "USD Coin"}), ReasonBadExtra, nil},
		{"exact on EVM with an empty domain name", v2EVM, extra(map[string]any{"name": "", "version": "2"}), ReasonBadExtra, nil},
		{"exact on EVM, eip3009 named", v2EVM, extra(map[string]any{"name": "USD Coin", "version": "2", "assetTransferMethod": "eip3009"}), "", nil},
		{"exact on EVM by permit2 needs no domain", v2EVM, extra(map[string]any{"assetTransferMethod": "permit2"}), "", nil},
		{"exact on EVM by erc7710", v2EVM, extra(map[string]any{"assetTransferMethod": "erc7710", "name": "USDC", "version": "2"}), "", nil},
		{"exact on EVM by an unknown transfer method", v2EVM, extra(map[string]any{"assetTransferMethod": "eip2612", "name": "USD Coin", "version": "2"}), ReasonBadExtra, nil},
		{"v1 pays by EIP-3009 only", v1EVM, extra(map[string]any{"assetTransferMethod": "permit2", "name": "USD Coin", "version": "2"}), ReasonBadExtra, nil},
		{"extra not an object", v2EVM, set("extra", "USD Coin"), ReasonBadExtra, nil},
		{"exact on Solana without feePayer", v2Solana, extra(map[string]any{}), ReasonBadExtra, nil},
		{"exact on Solana with a feePayer that is no key", v2Solana, extra(map[string]any{"feePayer": "0xabc"}), ReasonBadExtra, nil},
		{"exact on Solana with a memo over 256 bytes", v2Solana, extra(map[string]any{"feePayer": feePayer, "memo": strings.Repeat("m", 257)}), ReasonBadExtra, nil},
		{"v1 exact on Solana without feePayer", v1Solana, del("extra"), ReasonBadExtra, nil},
		{"exact on Hedera", v2EVM, func(d doc) {
			d.entry["network"], d.entry["asset"], d.entry["payTo"] = "hedera:mainnet", "0.0.456858", "0.0.12345"
			d.entry["extra"] = map[string]any{"feePayer": "0.0.98765"}
		}, "", nil},
		{"exact on Hedera without feePayer", v2EVM, func(d doc) {
			d.entry["network"], d.entry["asset"], d.entry["payTo"], d.entry["extra"] = "hedera:mainnet", "0.0.456858", "0.0.12345", map[string]any{}
		}, ReasonBadExtra, nil},
		{"exact on Stellar", v2EVM, func(d doc) {
			d.entry["network"], d.entry["asset"] = "stellar:pubnet", "CCW67TSZV3SSS2HXMBQ5JFGCKJNXKZM7UQUWUZPUTHXSTZLEO7SJMI75"
			d.entry["payTo"], d.entry["extra"] = "GBZXN7PIRZGNMHGA7MUUUF4GWPY5AYPV6LY4UV2GL6VJGIQRXFDNMADI", map[string]any{"areFeesSponsored": true}
		}, "", nil},
		{"exact on Stellar without areFeesSponsored", v2EVM, func(d doc) {
			d.entry["network"], d.entry["asset"] = "stellar:pubnet", "CCW67TSZV3SSS2HXMBQ5JFGCKJNXKZM7UQUWUZPUTHXSTZLEO7SJMI75"
			d.entry["payTo"], d.entry["extra"] = "GBZXN7PIRZGNMHGA7MUUUF4GWPY5AYPV6LY4UV2GL6VJGIQRXFDNMADI", map[string]any{"areFeesSponsored": "yes"}
		}, ReasonBadExtra, nil},
		{"upto without facilitatorAddress", v2Upto, extra(map[string]any{"name": "USDC", "version": "2"}), ReasonBadExtra, nil},

		// Required fields per version.
		{"v2 without maxTimeoutSeconds", v2EVM, del("maxTimeoutSeconds"), ReasonIncompleteTerm, nil},
		{"v2 maxTimeoutSeconds zero", v2EVM, set("maxTimeoutSeconds", 0), ReasonIncompleteTerm, nil},
		{"v2 maxTimeoutSeconds as a string", v2EVM, set("maxTimeoutSeconds", "60"), ReasonIncompleteTerm, nil},
		{"v2 without payTo", v2EVM, del("payTo"), ReasonIncompleteTerm, nil},
		{"v2 without asset", v2EVM, del("asset"), ReasonIncompleteTerm, nil},
		{"v2 scheme not a string", v2EVM, set("scheme", 1), ReasonIncompleteTerm, nil},
		{"v2 without amount", v2EVM, del("amount"), ReasonIncompleteTerm, nil},
		{"v2 without resource", v2EVM, delDoc("resource"), ReasonNoResource, nil},
		{"v2 resource without url", v2EVM, setDoc("resource", map[string]any{"description": "a thing"}), ReasonNoResource, nil},
		{"v2 resource as a bare URL", v2EVM, setDoc("resource", "https://api.seller.test/v2/thing"), ReasonNoResource, nil},
		{"v1 without resource", v1EVM, del("resource"), ReasonNoResource, nil},
		{"v1 without description", v1EVM, del("description"), ReasonIncompleteTerm, nil},
		{"v1 without maxTimeoutSeconds", v1EVM, del("maxTimeoutSeconds"), ReasonIncompleteTerm, nil},
		{"payee with a control character", v2Solana, set("payTo", solanaPayee+"\u0000"), ReasonIncompleteTerm, nil},
		{"entries of the wrong type", v2EVM, setDoc("accepts", []any{1, "x", nil, []any{}}), ReasonIncompleteTerm, nil},

		// Amounts are strings of atomic units.
		{"amount as a JSON number", v2EVM, set("amount", 2500), ReasonBadAmount, nil},
		{"amount in decimal units", v2EVM, set("amount", "0.0025"), ReasonBadAmount, nil},
		{"amount in exponent form", v1EVM, set("maxAmountRequired", "1e3"), ReasonBadAmount, nil},
		{"amount negative", v2EVM, set("amount", "-1"), ReasonBadAmount, nil},

		// No cross-version names.
		{"v2 entry with maxAmountRequired", v2EVM, func(d doc) { delete(d.entry, "amount"); d.entry["maxAmountRequired"] = "2500" }, ReasonMixedVersions, nil},
		{"v2 entry with both amounts", v2EVM, set("maxAmountRequired", "2500"), ReasonMixedVersions, nil},
		{"v2 entry with a v1 network name", v2EVM, set("network", "base"), ReasonMixedVersions, nil},
		{"v1 entry with amount", v1EVM, func(d doc) { delete(d.entry, "maxAmountRequired"); d.entry["amount"] = "1000" }, ReasonMixedVersions, nil},
		{"v1 entry with a CAIP-2 network", v1EVM, set("network", "eip155:8453"), ReasonMixedVersions, nil},

		// CAIP-2 syntax in v2.
		{"chain ID in hexadecimal", v2EVM, set("network", "eip155:0x2105"), ReasonBadNetwork, nil},
		{"namespace in capitals", v2EVM, set("network", "EIP155:8453"), ReasonBadNetwork, nil},
		{"namespace too short", v2EVM, set("network", "ev:8453"), ReasonBadNetwork, nil},
		{"reference too long", v2EVM, set("network", "eip155:"+strings.Repeat("1", 33)), ReasonBadNetwork, nil},
		{"no reference", v2EVM, set("network", "eip155:"), ReasonBadNetwork, nil},
		{"a name no version knows", v2EVM, set("network", "base-mainnet"), ReasonBadNetwork, nil},
		{"Algorand as x402 names it", v2EVM, func(d doc) {
			d.entry["network"], d.entry["asset"], d.entry["payTo"] = "algorand:wGHE2Pwdvd7S12BL5FaOP20EGYesN73ktiC1qzkkit8=", "31566704", "RESOURCESERVERADDRESSAAAAAAAAAAAAAAAAAAAAAAAAAAAAAALTSRPAE"
			delete(d.entry, "extra")
		}, "", nil},

		// v1 network names: x402 v1's table only, exactly as written.
		{"v1 name in capitals", v1EVM, set("network", "Base"), ReasonBadNetwork, nil},
		{"v1 name the reference never had", v1EVM, set("network", "arbitrum"), ReasonBadNetwork, nil},
		{"v1 name of X Layer", v1EVM, set("network", "x-layer"), ReasonBadNetwork, nil},

		// Addresses of the network family.
		{"EVM asset that is no address", v2EVM, set("asset", "USDC"), ReasonBadAddress, nil},
		{"EVM payee too short", v2EVM, set("payTo", "0x2096"), ReasonBadAddress, nil},
		{"Solana payee in EVM form", v2Solana, set("payTo", payee), ReasonBadAddress, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := c.offer()
			c.change(d)
			h, body := d.send()
			o, err := ParseOffer(h, body)
			if got := reasonOf(err); got != c.reason || (err != nil && c.reason == "") {
				t.Fatalf("reason %q (%v), want %q", got, err, c.reason)
			}
			if c.check != nil && !c.check(o) {
				t.Fatalf("offer %+v", o)
			}
		})
	}
}

// TestParseOfferKnowsEveryV1Network checks the whole v1 table of x402's reference
// clients, mainnets and test networks, and that each maps to its CAIP-2 chain.
func TestParseOfferKnowsEveryV1Network(t *testing.T) {
	evm := map[string]string{
		"ethereum": "1", "sepolia": "11155111", "base": "8453", "base-sepolia": "84532",
		"avalanche": "43114", "avalanche-fuji": "43113", "polygon": "137", "polygon-amoy": "80002",
		"abstract": "2741", "abstract-testnet": "11124", "iotex": "4689", "sei": "1329", "sei-testnet": "1328",
		"peaq": "3338", "story": "1514", "educhain": "41923", "skale-base-sepolia": "324705682",
		"megaeth": "4326", "monad": "143", "stable": "988", "stable-testnet": "2201",
	}
	solana := map[string]string{
		"solana":         "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp",
		"solana-devnet":  "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1",
		"solana-testnet": "solana:4uhcVJyU9pJkvQyS88uRDiswHXSCkY3z",
	}
	if len(v1Networks) != len(evm)+len(solana) {
		t.Errorf("%d v1 networks, want %d", len(v1Networks), len(evm)+len(solana))
	}
	check := func(d doc, want string) {
		t.Helper()
		h, body := d.send()
		o, err := ParseOffer(h, body)
		if err != nil || o.Network != want {
			t.Errorf("%s: %q, %v; want %s", d.entry["network"], o.Network, err, want)
		}
	}
	for name, chain := range evm {
		d := v1EVM()
		d.entry["network"] = name
		check(d, "eip155:"+chain)
	}
	for name, caip := range solana {
		d := v1Solana()
		d.entry["network"] = name
		check(d, caip)
	}
}

func TestParseOfferTellsNoDocumentFromAnInvalidOne(t *testing.T) {
	cases := []struct {
		name   string
		h      http.Header
		body   string
		reason string
	}{
		// No x402 document at all.
		{"nothing", http.Header{}, "", ReasonNoDocument},
		{"html body", http.Header{}, "<html>pay me</html>", ReasonNoDocument},
		{"JSON error body", http.Header{}, `{"error":"payment required"}`, ReasonNoDocument},
		{"broken JSON body", http.Header{}, `{"x402Version":1,"accepts":[`, ReasonNoDocument},
		// An x402 document that no client could pay.
		{"header not base64", header(HeaderPaymentRequired, "***"), "", ReasonBadHeader},
		{"header in the URL-safe alphabet", header(HeaderPaymentRequired, base64.URLEncoding.EncodeToString([]byte(`{"x402Version":2,"a":"?>?>"}`))), "", ReasonBadHeader},
		{"header not JSON", b64("hello"), "", ReasonBadJSON},
		{"header holding null", b64("null"), "", ReasonBadJSON},
		{"unknown version", b64(`{"x402Version":7,"accepts":[]}`), "", ReasonBadVersion},
		{"version as a string", b64(`{"x402Version":"2","accepts":[]}`), "", ReasonBadVersion},
		{"body without a version", http.Header{}, `{"accepts":[{"scheme":"exact"}]}`, ReasonBadVersion},
		{"v1 document in the header", b64(v1Body), "", ReasonWrongTransport},
		{"v2 document only in the body", http.Header{}, v2Doc, ReasonWrongTransport},
		{"error not a string", b64(strings.Replace(v2Doc, `"error":"PAYMENT-SIGNATURE header is required"`, `"error":{"code":1}`, 1)), "", ReasonBadDocument},
		{"extensions a list", b64(`{"x402Version":2,"resource":{"url":"https://a.test/"},"accepts":[{}],"extensions":[]}`), "", ReasonBadDocument},
		{"empty accepts", b64(`{"x402Version":2,"accepts":[]}`), "", ReasonNoAccepts},
		{"accepts not a list", http.Header{}, `{"x402Version":1,"accepts":{"scheme":"exact"}}`, ReasonNoAccepts},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseOffer(c.h, []byte(c.body))
			if reasonOf(err) != c.reason {
				t.Fatalf("err %v, want reason %s", err, c.reason)
			}
		})
	}
}

func TestParseOfferNamesTheFirstEntrysFault(t *testing.T) {
	d := v2EVM()
	bad := v2EVM().entry
	delete(bad, "extra")
	worse := v2Solana().entry
	worse["scheme"] = "deferred"
	d.members["accepts"] = []any{bad, worse}
	h, _ := d.send()
	_, err := ParseOffer(h, nil)
	var oe *OfferError
	if !errors.As(err, &oe) || oe.Reason != ReasonBadExtra || !strings.HasPrefix(oe.Detail, "accepts[0]: ") ||
		!strings.Contains(oe.Detail, "none of the 2 entries") {
		t.Fatalf("%v", err)
	}
}

// FuzzParseOffer ensures any header and body give an offer or an OfferError with a
// known reason, never a panic, and that an offer always carries what a probe stores.
func FuzzParseOffer(f *testing.F) {
	f.Add("", []byte(v1Body))
	f.Add(base64.StdEncoding.EncodeToString([]byte(v2Doc)), []byte(""))
	f.Add("e30=", []byte("{"))
	f.Add("", []byte(`{"x402Version":1,"accepts":[{"scheme":"x","network":"base","maxAmountRequired":"007","asset":"a","payTo":"b"}]}`))
	for _, d := range []doc{v2Upto(), v2Solana(), v1Solana()} {
		h, body := d.send()
		f.Add(h.Get(HeaderPaymentRequired), body)
	}
	f.Fuzz(func(t *testing.T, h string, body []byte) {
		hdr := http.Header{}
		hdr.Set(HeaderPaymentRequired, h)
		o, err := ParseOffer(hdr, body)
		if err != nil {
			var oe *OfferError
			if !errors.As(err, &oe) || !contains(Reasons, oe.Reason) {
				t.Fatalf("unclassified error %v", err)
			}
			return
		}
		if o.Asset == "" || o.PayTo == "" || !IsCAIP2(o.Network) || (o.Version != 1 && o.Version != 2) ||
			o.FromHeader != (o.Version == 2) || o.MaxTimeoutSeconds <= 0 {
			t.Fatalf("incomplete offer %+v", o)
		}
		switch o.Scheme {
		case SchemeExact:
			if _, ok := DecimalValue(o.Amount, 0); !ok || o.Ceiling != "" {
				t.Fatalf("exact offer without a price: %+v", o)
			}
		case SchemeUpto:
			if _, ok := DecimalValue(o.Ceiling, 0); !ok || o.Amount != "" {
				t.Fatalf("upto offer read as a price: %+v", o)
			}
		default:
			t.Fatalf("offer in scheme %q", o.Scheme)
		}
	})
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
