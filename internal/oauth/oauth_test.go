package oauth

import (
	"strings"
	"testing"
)

// S256 is RFC 7636's: its appendix B's verifier gives its challenge.
func TestS256IsTheChallengeOfRFC7636(t *testing.T) {
	if got := S256("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"); got != "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM" {
		t.Fatalf("S256 = %s", got)
	}
}

// A verifier must be 43 to 128 unreserved characters whose S256 is the challenge.
func TestVerifiersOutsideRFC7636AreRefused(t *testing.T) {
	good := "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
	challenge := S256(good)
	if !verifierOK(good, challenge) {
		t.Fatal("the RFC's verifier is refused")
	}
	for _, v := range []string{good[:42], strings.Repeat("a", 129), good[:42] + "+", good[:42] + "b"} {
		if verifierOK(v, S256(v)) && (len(v) < 43 || len(v) > 128 || strings.Contains(v, "+")) {
			t.Errorf("%q passes", v)
		}
		if verifierOK(v, challenge) {
			t.Errorf("%q passes for another verifier's challenge", v)
		}
	}
	if challengeOK("plain-challenge") || !challengeOK(challenge) {
		t.Error("a challenge's form is misread")
	}
}

// Redirect URIs are https, or http on loopback, without fragments or user
// information; the metadata's other fields are bounded.
func TestClientMetadataIsBounded(t *testing.T) {
	ok := []string{"https://host.example/cb", "http://127.0.0.1:8123/cb", "http://[::1]/cb", "http://localhost:9/cb", "https://host.example/cb?x=1"}
	for _, u := range ok {
		if err := (ClientMetadata{RedirectURIs: []string{u}}).Check(); err != nil {
			t.Errorf("%s: %v", u, err)
		}
	}
	for _, u := range []string{"http://host.example/cb", "https://host.example/cb#f", "https://host.example/cb#", "https://u:p@host.example/cb", "custom:/cb",
		"//host.example/cb", "http://127.0.0.1.evil.example/cb", "https://host.example/" + strings.Repeat("a", 2000)} {
		err := (ClientMetadata{RedirectURIs: []string{u}}).Check()
		if e, isOAuth := AsError(err); !isOAuth || e.Code != InvalidRedirectURI {
			t.Errorf("%s: %v", u, err)
		}
	}
	for _, m := range []ClientMetadata{
		{RedirectURIs: ok[:1], ClientName: strings.Repeat("n", 201)},
		{RedirectURIs: ok[:1], ClientName: "tab\tin name"},
		{RedirectURIs: ok[:1], GrantTypes: []string{"client_credentials"}},
		{RedirectURIs: ok[:1], ResponseTypes: []string{"token"}},
		{RedirectURIs: ok[:1], TokenEndpointAuthMethod: "client_secret_post"},
	} {
		if e, isOAuth := AsError(m.Check()); !isOAuth || e.Code != InvalidClientMetadata {
			t.Errorf("%+v passes", m)
		}
	}
	if e, _ := AsError((ClientMetadata{RedirectURIs: append(ok, "https://sixth.example/cb")}).Check()); e == nil || e.Code != InvalidRedirectURI {
		t.Error("six redirect URIs pass")
	}
}
