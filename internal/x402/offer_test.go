package x402

import (
	"encoding/base64"
	"errors"
	"net/http"
	"testing"
)

const (
	v1Body = `{"x402Version":1,"error":"X-PAYMENT header is required","accepts":[{"scheme":"exact","network":"base",
		"maxAmountRequired":"1000","resource":"https://api.seller.test/v1/thing","description":"a thing",
		"mimeType":"application/json","payTo":"0xfa3F54AE9C4287CA09a486dfaFaCe7d1d4095d93","maxTimeoutSeconds":300,
		"asset":"0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913","outputSchema":null,"extra":{"name":"USD Coin","version":"2"}}]}`
	v2Doc = `{"x402Version":2,"error":"PAYMENT-SIGNATURE header is required",
		"resource":{"url":"https://api.seller.test/v2/thing","description":"a thing","mimeType":"application/json"},
		"accepts":[
		 {"scheme":"exact","network":"eip155:84532","amount":"10000","asset":"0x036CbD53842c5426634e7929541eC2318f3dCF7e","payTo":"0xtest","maxTimeoutSeconds":60},
		 {"scheme":"exact","network":"eip155:8453","amount":"2500","asset":"0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913","payTo":"0x209693Bc6afc0C5328bA36FaF03C514EF312287C","maxTimeoutSeconds":60,"extra":{"name":"USD Coin","version":"2"}}],
		"extensions":{}}`
)

func header(k, v string) http.Header {
	h := http.Header{}
	h.Set(k, v)
	return h
}

func TestParseOfferReadsV1BodiesWithLegacyNetworks(t *testing.T) {
	o, err := ParseOffer(http.Header{}, []byte(v1Body))
	if err != nil {
		t.Fatal(err)
	}
	if o.Version != 1 || o.FromHeader || o.Network != "eip155:8453" || o.Amount != "1000" ||
		o.PayTo != "0xfa3F54AE9C4287CA09a486dfaFaCe7d1d4095d93" || o.Scheme != "exact" ||
		o.MaxTimeoutSeconds != 300 || o.Resource != "https://api.seller.test/v1/thing" {
		t.Fatalf("%+v", o)
	}
}

func TestParseOfferPrefersTheV2HeaderAndAMainnetEntry(t *testing.T) {
	h := header("Payment-Required", base64.StdEncoding.EncodeToString([]byte(v2Doc)))
	o, err := ParseOffer(h, []byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	if o.Version != 2 || !o.FromHeader || o.Network != "eip155:8453" || o.Amount != "2500" || o.Entries != 2 ||
		o.Resource != "https://api.seller.test/v2/thing" {
		t.Fatalf("%+v", o)
	}
}

func TestParseOfferFallsBackToTheBody(t *testing.T) {
	// A broken header with a good body: the body's offer counts.
	o, err := ParseOffer(header(HeaderPaymentRequired, "%%% not base64"), []byte(v1Body))
	if err != nil || o.Version != 1 {
		t.Fatalf("%+v %v", o, err)
	}
	// A v2 document in the body, as some sellers also send it.
	o, err = ParseOffer(http.Header{}, []byte(v2Doc))
	if err != nil || o.Version != 2 || o.Amount != "2500" {
		t.Fatalf("%+v %v", o, err)
	}
}

func TestParseOfferClassifiesMalformedOffers(t *testing.T) {
	b64 := func(s string) http.Header {
		return header(HeaderPaymentRequired, base64.StdEncoding.EncodeToString([]byte(s)))
	}
	cases := []struct {
		name   string
		h      http.Header
		body   string
		reason string
	}{
		{"nothing", http.Header{}, "", ReasonNoDocument},
		{"html body", http.Header{}, "<html>pay me</html>", ReasonNoDocument},
		{"JSON error body", http.Header{}, `{"error":"payment required"}`, ReasonNoDocument},
		{"header not base64", header(HeaderPaymentRequired, "***"), "", ReasonBadHeader},
		{"header not JSON", b64("hello"), "", ReasonBadJSON},
		{"unknown version", b64(`{"x402Version":7,"accepts":[]}`), "", ReasonBadVersion},
		{"empty accepts", b64(`{"x402Version":2,"accepts":[]}`), "", ReasonNoAccepts},
		{"accepts not a list", http.Header{}, `{"x402Version":1,"accepts":{"scheme":"exact"}}`, ReasonNoAccepts},
		{"broken JSON body", http.Header{}, `{"x402Version":1,"accepts":[`, ReasonNoDocument},
		{"amount not a number", http.Header{}, `{"x402Version":1,"accepts":[{"scheme":"exact","network":"base","maxAmountRequired":"1e3","asset":"0x1","payTo":"0x2"}]}`, ReasonIncompleteTerm},
		{"no payee", b64(`{"x402Version":2,"accepts":[{"scheme":"exact","network":"eip155:8453","amount":"1","asset":"0x1"}]}`), "", ReasonIncompleteTerm},
		{"entries of the wrong type", http.Header{}, `{"x402Version":1,"accepts":[1,"x",null,[]]}`, ReasonIncompleteTerm},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseOffer(c.h, []byte(c.body))
			var oe *OfferError
			if !errors.As(err, &oe) || oe.Reason != c.reason {
				t.Fatalf("err %v, want reason %s", err, c.reason)
			}
		})
	}
}

func TestParseOfferKeepsUnknownNetworksAsAdvertised(t *testing.T) {
	body := `{"x402Version":1,"accepts":[{"scheme":"exact","network":"algorand:wGHE2Pwdvd7S12BL5FaOP20EGYesN73ktiC1qzkkit8=","maxAmountRequired":10,"asset":"31566704","payTo":"ALGO"}]}`
	o, err := ParseOffer(http.Header{}, []byte(body))
	if err != nil || o.Network != "algorand:wGHE2Pwdvd7S12BL5FaOP20EGYesN73ktiC1qzkkit8=" || o.Amount != "10" {
		t.Fatalf("%+v %v", o, err)
	}
	if _, known := LookupAsset(o.Network, o.Asset); known {
		t.Fatal("an unknown asset reads as known")
	}
}

// FuzzParseOffer ensures any header and body give an offer or an OfferError, never a
// panic, and that an offer always carries what a probe stores.
func FuzzParseOffer(f *testing.F) {
	f.Add("", []byte(v1Body))
	f.Add(base64.StdEncoding.EncodeToString([]byte(v2Doc)), []byte(""))
	f.Add("e30=", []byte("{"))
	f.Add("", []byte(`{"x402Version":1,"accepts":[{"scheme":"x","network":"base","maxAmountRequired":"007","asset":"a","payTo":"b"}]}`))
	f.Fuzz(func(t *testing.T, h string, body []byte) {
		hdr := http.Header{}
		hdr.Set(HeaderPaymentRequired, h)
		o, err := ParseOffer(hdr, body)
		if err != nil {
			var oe *OfferError
			if !errors.As(err, &oe) || oe.Reason == "" {
				t.Fatalf("unclassified error %v", err)
			}
			return
		}
		if o.Network == "" || o.Asset == "" || o.PayTo == "" || o.Scheme == "" || (o.Version != 1 && o.Version != 2) {
			t.Fatalf("incomplete offer %+v", o)
		}
		if _, ok := DecimalValue(o.Amount, 0); !ok {
			t.Fatalf("amount %q is not an atomic amount", o.Amount)
		}
	})
}
