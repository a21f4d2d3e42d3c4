package origin_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/waystation/waystation/internal/origin"
	"github.com/waystation/waystation/internal/x402"
)

const (
	site = "https://api.seller.example"
	// payeeKey is a throwaway key; payee is its address.
	payeeKey = "4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318"
	asset    = "0x036CbD53842c5426634e7929541eC2318f3dCF7e"
)

var payee = func() string {
	s, err := x402.ParseSigner(payeeKey)
	if err != nil {
		panic(err)
	}
	return s.Address()
}()

// entry is a valid x402 v2 accepts entry paying to.
func entry(to string) map[string]any {
	return map[string]any{"scheme": "exact", "network": "eip155:84532", "amount": "10000", "asset": asset,
		"payTo": to, "maxTimeoutSeconds": 60, "extra": map[string]any{"name": "USDC", "version": "2"}}
}

func item(url string) map[string]any {
	return map[string]any{"resource": map[string]any{"url": url, "description": "A thing."}, "type": "http",
		"accepts": []any{entry(payee)}, "input": map[string]any{"method": "GET"}}
}

func manifest(items ...any) map[string]any {
	return map[string]any{"x402Version": 2, "items": items}
}

func encode(t testing.TB, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseOriginIsCanonical(t *testing.T) {
	for in, want := range map[string]string{
		"https://API.Seller.Example":         site,
		"https://api.seller.example:443/x?y": site,
		"http://api.seller.example:80":       "http://api.seller.example",
		"https://bücher.example:8443/":       "https://xn--bcher-kva.example:8443",
	} {
		got, _, err := origin.ParseOrigin(in)
		if err != nil || got != want {
			t.Errorf("%q: %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "api.seller.example", "ftp://api.seller.example", "https://user@api.seller.example",
		"https://127.0.0.1", "https://[::1]:8080", "https://bad_host.example", "https://x.example/\x00"} {
		if o, _, err := origin.ParseOrigin(bad); err == nil {
			t.Errorf("%q accepted as %q", bad, o)
		}
	}
}

// TestHostileManifestsAreRefusedWithAReason holds the reader to its bounds: each
// hostile manifest is refused as a whole with its reason and yields no item.
func TestHostileManifestsAreRefusedWithAReason(t *testing.T) {
	many := make([]any, origin.MaxItems+1)
	for i := range many {
		many[i] = item(fmt.Sprintf("%s/r%d", site, i))
	}
	deep := strings.Repeat(`{"a":`, origin.MaxDepth+1) + "1" + strings.Repeat("}", origin.MaxDepth+1)
	otherSig, err := origin.SignOrigin("https://elsewhere.example", payeeKey)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, reason string
		doc          []byte
	}{
		{"huge", origin.ReasonTooLarge, []byte(`{"x402Version":2,"items":[],"pad":"` + strings.Repeat("a", origin.MaxManifest) + `"}`)},
		{"deep", origin.ReasonTooDeep, []byte(`{"x402Version":2,"items":[` + deep + `]}`)},
		{"very deep", origin.ReasonTooDeep, []byte(`{"x402Version":2,"items":` + strings.Repeat("[", 20000))},
		{"not JSON", origin.ReasonBadJSON, []byte(`{"x402Version":2,`)},
		{"a list", origin.ReasonBadJSON, []byte(`[{"x402Version":2}]`)},
		{"version 1", origin.ReasonBadVersion, encode(t, map[string]any{"x402Version": 1, "items": []any{item(site + "/a")}})},
		{"version as text", origin.ReasonBadVersion, encode(t, map[string]any{"x402Version": "2", "items": []any{item(site + "/a")}})},
		{"items an object", origin.ReasonNoItems, encode(t, map[string]any{"x402Version": 2, "items": map[string]any{"a": 1}})},
		{"no items", origin.ReasonNoItems, encode(t, manifest())},
		{"too many items", origin.ReasonTooManyItems, encode(t, manifest(many...))},
		{"proofs of the wrong type", origin.ReasonBadProof, encode(t, map[string]any{"x402Version": 2, "items": []any{item(site + "/a")}, "ownershipProofs": "0x00"})},
		{"a malformed proof", origin.ReasonBadProof, encode(t, map[string]any{"x402Version": 2, "items": []any{item(site + "/a")}, "ownershipProofs": []string{"0x1234"}})},
		{"a proof of another origin", origin.ReasonBadProof, encode(t, map[string]any{"x402Version": 2, "items": []any{item(site + "/a")}, "ownershipProofs": []string{otherSig}})},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, err := origin.ReadManifest(c.doc, site)
			var ref *origin.Refusal
			if !errors.As(err, &ref) || ref.Reason != c.reason {
				t.Fatalf("got %v; want refusal %s", err, c.reason)
			}
			if len(m.Items) != 0 {
				t.Fatalf("items read from a refused manifest: %d", len(m.Items))
			}
			if p := ref.Problem(); p.Code != "manifest_refused" || !strings.HasPrefix(p.Detail, c.reason+": ") {
				t.Fatalf("problem %v", p)
			}
		})
	}
}

// TestHostileItemsAreRefusedOneByOne keeps the good items of a manifest whose other
// items are wrong, each refused with its reason.
func TestHostileItemsAreRefusedOneByOne(t *testing.T) {
	wrongType := item(site + "/typed")
	wrongType["type"] = 7
	badMethod := item(site + "/method")
	badMethod["input"] = map[string]any{"method": "BREW"}
	badOffer := item(site + "/offer")
	badOffer["accepts"] = []any{map[string]any{"scheme": "exact", "network": "base", "amount": "1", "asset": asset, "payTo": payee, "maxTimeoutSeconds": 60}}
	noAccepts := item(site + "/none")
	delete(noAccepts, "accepts")
	doc := encode(t, manifest(
		item(site+"/good"),
		"a string",
		map[string]any{"resource": "https://api.seller.example/flat"},
		item("https://evil.example/steal"),
		item("http://api.seller.example/plain"),
		item("https://api.seller.example:8443/port"),
		item("javascript:alert(1)"),
		wrongType,
		badMethod,
		badOffer,
		noAccepts,
		item(site+"/good"),
	))
	m, err := origin.ReadManifest(doc, site)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Items) != 1 || m.Items[0].URL != site+"/good" || m.Items[0].PayTo() != payee {
		t.Fatalf("items %+v", m.Items)
	}
	want := []string{origin.ItemNotObject, origin.ItemBadURL, origin.ItemOtherOrigin, origin.ItemOtherOrigin, origin.ItemOtherOrigin,
		origin.ItemBadURL, origin.ItemBadType, origin.ItemBadMethod, origin.ItemInvalidOffer, origin.ItemInvalidOffer, origin.ItemDuplicate}
	if len(m.Refused) != len(want) {
		t.Fatalf("refused %+v", m.Refused)
	}
	for i, r := range m.Refused {
		if r.Reason != want[i] || r.Index != i+1 || r.Status != origin.ItemRefused || r.Detail == "" {
			t.Errorf("items[%d]: %+v; want %s", i+1, r, want[i])
		}
	}
	if r := m.Refused[8]; r.OfferReason != x402.ReasonMixedVersions && r.OfferReason != x402.ReasonBadNetwork {
		t.Errorf("the invalid offer's x402 reason: %+v", r)
	}
	if r := m.Refused[9]; r.OfferReason != x402.ReasonNoAccepts {
		t.Errorf("the missing accepts' x402 reason: %+v", r)
	}
}

// TestOwnershipProofsRecoverThePayee signs the origin as x402scan checks it
// (EIP-191 over the origin's text) and finds the payee.
func TestOwnershipProofsRecoverThePayee(t *testing.T) {
	sig, err := origin.SignOrigin(site, payeeKey)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := origin.RecoverOwner(site, sig); err != nil || got != payee {
		t.Fatalf("recovered %s, %v; want %s", got, err, payee)
	}
	doc := encode(t, map[string]any{"x402Version": 2, "items": []any{item(site + "/a")}, "ownershipProofs": []string{sig}})
	m, err := origin.ReadManifest(doc, site)
	if err != nil || !m.Signers[strings.ToLower(payee)] {
		t.Fatalf("signers %v, %v", m.Signers, err)
	}
	// The same proof read for another origin recovers someone else: refused.
	if _, err := origin.ReadManifest(doc, "https://other.example"); err == nil {
		t.Fatal("a proof of another origin was accepted")
	}
	// A proof by a key that pays no item is refused too.
	stranger, _ := origin.SignOrigin(site, strings.Repeat("1", 64))
	doc = encode(t, map[string]any{"x402Version": 2, "items": []any{item(site + "/a")}, "ownershipProofs": []string{sig, stranger}})
	var ref *origin.Refusal
	if _, err := origin.ReadManifest(doc, site); !errors.As(err, &ref) || ref.Reason != origin.ReasonBadProof {
		t.Fatalf("a stranger's proof: %v", err)
	}
}

// FuzzReadManifest feeds the reader arbitrary documents: it answers a manifest or a
// refusal, never panics, and every item it keeps is on the origin with a valid offer.
func FuzzReadManifest(f *testing.F) {
	sig, _ := origin.SignOrigin(site, payeeKey)
	f.Add(encode(f, manifest(item(site+"/a"), item(site+"/b"))))
	f.Add(encode(f, map[string]any{"x402Version": 2, "items": []any{item(site + "/a")}, "ownershipProofs": []string{sig}}))
	f.Add(encode(f, manifest(item("https://evil.example/a"), "x", 1, nil)))
	f.Add([]byte(`{"x402Version":2,"items":[{"resource":{"url":"https://api.seller.example/x"},"type":"mcp","accepts":[],"input":{"toolName":"t"}}]}`))
	f.Add([]byte(strings.Repeat("[", 64)))
	f.Add([]byte(`{"x402Version":2,"items":[{"resource":{"url":"https://api.seller.example/\u0000"}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := origin.ReadManifest(data, site)
		if err != nil {
			var ref *origin.Refusal
			if !errors.As(err, &ref) || ref.Reason == "" {
				t.Fatalf("not a refusal: %v", err)
			}
			return
		}
		for _, it := range m.Items {
			if !strings.HasPrefix(it.URL, site+"/") && it.URL != site {
				t.Fatalf("an item off the origin: %q", it.URL)
			}
			if len(it.Offers) == 0 || !json.Valid(it.Bazaar) {
				t.Fatalf("an item without a valid offer or listing: %+v", it)
			}
		}
	})
}

// BenchmarkReadManifest reads a manifest of MaxItems items, each checked by the x402
// rules and made a listing item: what a submission costs before any probe.
func BenchmarkReadManifest(b *testing.B) {
	items := make([]any, origin.MaxItems)
	for i := range items {
		items[i] = item(fmt.Sprintf("%s/r%d", site, i))
	}
	sig, _ := origin.SignOrigin(site, payeeKey)
	doc := encode(b, map[string]any{"x402Version": 2, "items": items, "ownershipProofs": []string{sig}})
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		if m, err := origin.ReadManifest(doc, site); err != nil || len(m.Items) != origin.MaxItems {
			b.Fatal(err)
		}
	}
}
